import COpenSSL

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Readiness of many descriptors at once, for one ``EventLoop``: `epoll(7)` on Linux,
/// `poll(2)` over the registered descriptors elsewhere (and on Linux when asked, so
/// that both kinds are tested here).
///
/// Level-triggered: a descriptor stays reported while it is readable (or writable, when
/// write interest is on). Each registration carries a `token` the loop chooses; ready
/// descriptors are reported by token, so a descriptor number reused after a close is
/// never mistaken for the old registration.
///
/// Not thread-safe: used only by its loop's thread.
final class IOPoller {
    /// How readiness is waited for.
    enum Kind: Sendable {
        /// `epoll(7)` (Linux only): cost per wait independent of how many descriptors are idle.
        case epoll
        /// `poll(2)` over every registered descriptor: portable, cost grows with their number.
        case poll

        /// `epoll` on Linux, `poll` elsewhere.
        static var platformDefault: Kind {
            #if os(Linux)
            .epoll
            #else
            .poll
            #endif
        }
    }

    /// One ready descriptor, by its registration token.
    struct Readiness {
        var token: UInt64
        var readable: Bool
        var writable: Bool
    }

    let kind: Kind
    #if os(Linux)
    private var epollDescriptor: Int32 = -1
    private var epollEvents: [epoll_event] = []
    #endif
    /// `poll` kind: the registered descriptors and their tokens, index for index.
    private var pollDescriptors: [pollfd] = []
    private var pollTokens: [UInt64] = []

    /// Creates a poller; `nil` when the system refuses (out of descriptors).
    init?(kind: Kind = .platformDefault) {
        #if os(Linux)
        self.kind = kind
        if kind == .epoll {
            epollDescriptor = epoll_create1(Int32(EPOLL_CLOEXEC))
            if epollDescriptor < 0 { return nil }
            epollEvents = Array(repeating: epoll_event(), count: 256)
        }
        #else
        self.kind = .poll
        #endif
    }

    deinit {
        #if os(Linux)
        if epollDescriptor >= 0 { close(epollDescriptor) }
        #endif
    }

    /// Watches `fd` for readability (and writability when `write`), reported as `token`.
    /// - Returns: `false` when the system refuses (the descriptor is then not watched).
    @discardableResult
    func add(_ fd: Int32, token: UInt64, write: Bool) -> Bool {
        switch kind {
        case .epoll:
            #if os(Linux)
            var event = Self.epollEvent(token: token, write: write)
            return epoll_ctl(epollDescriptor, EPOLL_CTL_ADD, fd, &event) == 0
            #else
            return false
            #endif
        case .poll:
            pollDescriptors.append(pollfd(fd: fd, events: Self.pollEvents(write: write), revents: 0))
            pollTokens.append(token)
            return true
        }
    }

    /// Changes whether `fd` (registered as `token`) is also watched for writability.
    func modify(_ fd: Int32, token: UInt64, write: Bool) {
        switch kind {
        case .epoll:
            #if os(Linux)
            var event = Self.epollEvent(token: token, write: write)
            _ = epoll_ctl(epollDescriptor, EPOLL_CTL_MOD, fd, &event)
            #endif
        case .poll:
            if let index = pollTokens.firstIndex(of: token) {
                pollDescriptors[index].events = Self.pollEvents(write: write)
            }
        }
    }

    /// Stops watching `fd` (registered as `token`). Call before closing it.
    func remove(_ fd: Int32, token: UInt64) {
        switch kind {
        case .epoll:
            #if os(Linux)
            var event = epoll_event()
            _ = epoll_ctl(epollDescriptor, EPOLL_CTL_DEL, fd, &event)
            #endif
        case .poll:
            if let index = pollTokens.firstIndex(of: token) {
                pollDescriptors.remove(at: index)
                pollTokens.remove(at: index)
            }
        }
    }

    /// Waits up to `milliseconds` (-1: no limit) for a watched descriptor to be ready and
    /// appends what is ready to `ready` (an error or hang-up counts as readable: the next
    /// read reports it).
    /// - Returns: `false` when waiting failed for another reason than a signal.
    func wait(milliseconds: Int32, into ready: inout [Readiness]) -> Bool {
        switch kind {
        case .epoll:
            #if os(Linux)
            let count = epollEvents.withUnsafeMutableBufferPointer { events in
                epoll_wait(epollDescriptor, events.baseAddress, Int32(events.count), milliseconds)
            }
            if count < 0 { return errno == EINTR }
            let readMask = EPOLLIN.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue | EPOLLRDHUP.rawValue
            for index in 0..<Int(count) {
                let event = epollEvents[index]
                ready.append(
                    Readiness(
                        token: event.data.u64,
                        readable: event.events & readMask != 0,
                        writable: event.events & (EPOLLOUT.rawValue | EPOLLERR.rawValue) != 0
                    )
                )
            }
            return true
            #else
            return false
            #endif
        case .poll:
            let count = pollDescriptors.withUnsafeMutableBufferPointer { fds in
                poll(fds.baseAddress, nfds_t(fds.count), milliseconds)
            }
            if count < 0 { return errno == EINTR }
            if count == 0 { return true }
            let readMask = Int16(POLLIN) | Int16(POLLHUP) | Int16(POLLERR) | Int16(POLLNVAL)
            for index in pollDescriptors.indices where pollDescriptors[index].revents != 0 {
                let events = pollDescriptors[index].revents
                ready.append(
                    Readiness(
                        token: pollTokens[index],
                        readable: events & readMask != 0,
                        writable: events & (Int16(POLLOUT) | Int16(POLLERR)) != 0
                    )
                )
                pollDescriptors[index].revents = 0
            }
            return true
        }
    }

    #if os(Linux)
    private static func epollEvent(token: UInt64, write: Bool) -> epoll_event {
        var event = epoll_event()
        event.events = EPOLLIN.rawValue | EPOLLRDHUP.rawValue | (write ? EPOLLOUT.rawValue : 0)
        event.data.u64 = token
        return event
    }
    #endif

    private static func pollEvents(write: Bool) -> Int16 {
        Int16(POLLIN) | (write ? Int16(POLLOUT) : 0)
    }
}
