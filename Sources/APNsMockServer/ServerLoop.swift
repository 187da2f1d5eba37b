import CNGHTTP2
import COpenSSL
import Foundation
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// The server thread: one `poll(2)` loop over the listeners, the wake-up eventfd and every
/// connection. All TLS and HTTP/2 state lives on this thread, so the hot path takes one
/// lock per read (``ServerState/countFastAnswers(_:)``), and one per request only for the
/// requests that take the full path (``ServerState/decide(validation:deviceToken:apnsID:successStatus:broadcastChannel:record:)``).
///
/// One thread per server (rather than per connection) keeps a whole server on one core,
/// which is what the throughput goal measures, and makes stopping a single join.
final class ServerLoop {
    let state: ServerState
    let configuration: MockAPNsServer.Configuration
    /// Decides every connection's answers (routing, validation, token rules, faults, records).
    let handler: RequestHandler
    let tls: TLSServerContext
    let logger: Logger
    private(set) var listeners: [Int32] = []
    private(set) var port: Int = 0
    private(set) var addresses: [String] = []
    private var connections: [ServerConnection] = []
    private var nextConnectionNumber = 0
    private var running = true
    /// Scratch buffer for `SSL_read`, shared by all connections of this thread.
    @exclusivity(unchecked) var readBuffer = [UInt8](repeating: 0, count: 64 * 1024)

    /// Whether the fast path may answer valid device pushes (see
    /// ``ServerState/countFastAnswers(_:)``), as of the last read.
    @exclusivity(unchecked) private(set) var fastPathOpen = false
    /// Requests answered on the fast path and not yet counted in the statistics.
    @exclusivity(unchecked) var uncountedFastAnswers = 0

    /// Publishes the fast answers not yet counted, and learns whether the fast path stays
    /// open: one lock per read, not per request.
    func refreshFastPath() {
        fastPathOpen = state.countFastAnswers(uncountedFastAnswers)
        uncountedFastAnswers = 0
    }

    /// Publishes the fast answers not yet counted: before any answer is written, and
    /// before a request takes the full path (so sequence numbers stay in order).
    @inline(__always)
    func countFastAnswers() {
        guard uncountedFastAnswers > 0 else { return }
        fastPathOpen = state.countFastAnswers(uncountedFastAnswers)
        uncountedFastAnswers = 0
    }

    /// Whether requests may be recorded (a record limit, or someone iterating
    /// ``MockAPNsServer/requests()``): only then do connections keep raw header blocks.
    var recordsRequests: Bool {
        configuration.recordedRequestLimit > 0 || state.hasSubscribers.load(ordering: .relaxed)
    }

    /// nghttp2's callback table, shared by every session of this thread (sessions copy it).
    let callbacks: OpaquePointer

    /// Where every frame of every connection is logged, when the logger is at `.trace`
    /// (read once); `nil` logs none.
    let frameLog: Logger?

    init(state: ServerState, configuration: MockAPNsServer.Configuration, tls: TLSServerContext) throws {
        let frameLog = configuration.logger.logLevel <= .trace ? configuration.logger : nil
        guard let callbacks = Self.makeCallbacks(tracingFrames: frameLog != nil) else { throw MockAPNsServerError("nghttp2_session_callbacks_new failed") }
        self.frameLog = frameLog
        self.callbacks = callbacks
        self.state = state
        self.configuration = configuration
        self.tls = tls
        self.logger = configuration.logger
        self.handler = RequestHandler(state: state, configuration: configuration)
    }

    deinit {
        connections.removeAll()
        for fd in listeners { close(fd) }
        nghttp2_session_callbacks_del(callbacks)
    }

    /// Binds 127.0.0.1 on the configured port (0: one the system picks), then ::1 on the
    /// same port if it can.
    func bind() throws {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        address.sin_port = UInt16(clamping: max(0, configuration.port)).bigEndian
        let v4 = try withUnsafeBytes(of: &address) { try listen(family: AF_INET, address: $0) }
        listeners.append(v4)
        var bound = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(v4, $0, &length) }
        }
        port = Int(UInt16(bigEndian: bound.sin_port))
        addresses = ["127.0.0.1"]
        guard configuration.listensOnIPv6 else { return }
        var address6 = sockaddr_in6()
        address6.sin6_family = sa_family_t(AF_INET6)
        address6.sin6_addr = in6addr_loopback
        address6.sin6_port = UInt16(port).bigEndian
        if let v6 = try? withUnsafeBytes(of: &address6, { try listen(family: AF_INET6, address: $0) }) {
            listeners.append(v6)
            addresses.append("::1")
        }
    }

    private func listen(family: Int32, address: UnsafeRawBufferPointer) throws -> Int32 {
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw MockAPNsServerError("socket() failed: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if family == AF_INET6 {
            setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size))
        }
        let result = address.withMemoryRebound(to: sockaddr.self) {
            Glibc.bind(fd, $0.baseAddress, socklen_t(address.count))
        }
        guard result == 0, Glibc.listen(fd, 512) == 0 else {
            let message = String(cString: strerror(errno))
            close(fd)
            throw MockAPNsServerError("binding the listener failed: \(message)")
        }
        return fd
    }

    /// Runs until a `.stop` command; closes everything before returning.
    func run() {
        var fds: [pollfd] = []
        while running {
            fds.removeAll(keepingCapacity: true)
            fds.append(pollfd(fd: state.wakeFD, events: Int16(POLLIN), revents: 0))
            for fd in listeners { fds.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
            for connection in connections {
                fds.append(pollfd(fd: connection.fd, events: connection.pollEvents, revents: 0))
            }
            let timeout = pollTimeout()
            let ready = poll(&fds, nfds_t(fds.count), timeout)
            if ready < 0 && errno != EINTR {
                logger.error("poll failed", metadata: ["errno": "\(errno)"])
                break
            }
            if fds[0].revents != 0 {
                var drain = [UInt8](repeating: 0, count: 64)
                while read(state.wakeFD, &drain, drain.count) > 0 {}
                runCommands()
                if !running { break }
            }
            for index in listeners.indices where fds[1 + index].revents != 0 {
                acceptAll(on: listeners[index])
            }
            let base = 1 + listeners.count
            // `connections` may grow during this pass (accepts above); only the polled ones have events.
            let polled = fds.count - base
            for index in 0..<polled {
                let revents = fds[base + index].revents
                let connection = connections[index]
                if revents != 0 { connection.handle(revents: revents) }
                connection.runTimers(now: .now)
            }
            let before = connections.count
            connections.removeAll { $0.isClosed }
            if connections.count != before { countOpenConnections() }
        }
        shutdownAll()
    }

    private func pollTimeout() -> Int32 {
        var earliest: ContinuousClock.Instant?
        for connection in connections {
            if let due = connection.nextDeadline, earliest.map({ due < $0 }) ?? true { earliest = due }
        }
        guard let earliest else { return -1 }
        let remaining = ContinuousClock.now.duration(to: earliest)
        if remaining <= .zero { return 0 }
        let (seconds, attoseconds) = remaining.components
        return Int32(min(60_000, seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1))
    }

    private func runCommands() {
        let commands = state.shared.withLock { shared in
            defer { shared.commands.removeAll() }
            return shared.commands
        }
        for command in commands {
            switch command {
            case .stop:
                running = false
            case .goAwayAll(let reason):
                for connection in connections { connection.goAway(reason: reason) }
            case .dropAll:
                for connection in connections { connection.close() }
            case .applyStreamLimit(let limit):
                for connection in connections { connection.applyStreamLimit(limit) }
            case .rescheduleDelayed(let delay):
                for connection in connections { connection.rescheduleDelayed(delay) }
            case .setLink(let link):
                for connection in connections { connection.setLink(link) }
            case .inspectSessionMemory(let report):
                report(connections.compactMap(\.sessionCachedBytes))
            }
        }
        // Closed connections stay in the array until the end of this pass, so the indices
        // of `connections` keep matching the pollfd array built before the commands ran.
    }

    private func acceptAll(on listener: Int32) {
        while true {
            // Non-blocking and closed on exec from the start: a process the host starts
            // on another thread at this moment must not inherit the connection.
            let fd = capns_accept_nonblocking_cloexec(listener)
            if fd < 0 {
                if errno == EINTR { continue }
                return  // EAGAIN, or a transient error such as EMFILE: try again on the next poll
            }
            let refuse = state.shared.withLock { shared -> Bool in
                if let until = shared.refuseUntil, ContinuousClock.now < until {
                    shared.statistics.connectionsRefused += 1
                    return true
                }
                shared.refuseUntil = nil
                shared.statistics.connections += 1
                return false
            }
            if refuse {
                close(fd)
                continue
            }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            guard let connection = ServerConnection(fd: fd, number: nextConnectionNumber, loop: self) else {
                close(fd)
                continue
            }
            nextConnectionNumber += 1
            connections.append(connection)
            countOpenConnections()
        }
    }

    /// Publishes how many connections are open (and the most so far) in the statistics.
    private func countOpenConnections() {
        let open = connections.count
        state.shared.withLock { shared in
            shared.statistics.openConnections = open
            shared.statistics.peakOpenConnections = max(shared.statistics.peakOpenConnections, open)
        }
    }

    private func shutdownAll() {
        for connection in connections {
            connection.goAway(reason: nil)
            connection.flushAndClose()
        }
        connections.removeAll()
        countOpenConnections()
        for fd in listeners { close(fd) }
        listeners.removeAll()
    }
}
