import APNsCore
import COpenSSL
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Opens a non-blocking TCP connection with a deadline: name resolution (IPv4 and IPv6,
/// ``Resolver``), then non-blocking `connect(2)`s raced over the addresses as Happy
/// Eyeballs does (RFC 8305; see ``ConnectionRace``), then `TCP_NODELAY` (HTTP/2 frames are
/// small and latency matters more than packet count).
enum TCPConnector {
    /// Connects to `host:port` before `deadline`; the socket is non-blocking. The host is
    /// resolved afresh by `choice`'s resolver, and the attempt starts at the address its
    /// rotation names (see ``AddressChoice``); the families then alternate, and each
    /// further address starts 250 ms after the one before (at once when one fails) while
    /// the earlier ones keep trying. The first to connect is returned; the others are closed.
    /// - Throws: ``APNsCore/APNsTransportError`` `.connectionFailed` with what went wrong
    ///   at each address.
    static func connect(
        host: String,
        port: Int,
        deadline: ContinuousClock.Instant,
        choice: AddressChoice = AddressChoice()
    ) throws(APNsTransportError) -> Int32 {
        try connect(host: host, port: port, deadline: deadline, choice: choice, excluding: []).fd
    }

    /// ``connect(host:port:deadline:choice:)``, leaving out the addresses in `excluded`
    /// (by ``ResolvedAddress/description``); also returns the address that connected and
    /// how many other addresses were left to try.
    static func connect(
        host: String,
        port: Int,
        deadline: ContinuousClock.Instant,
        choice: AddressChoice,
        excluding excluded: Set<String>
    ) throws(APNsTransportError) -> (fd: Int32, address: String, others: Int) {
        guard (1...65535).contains(port) else {
            throw .connectionFailed("port \(port) of \(host) is outside 1...65535")
        }
        let addresses = ConnectionRace.interleavedByFamily(
            try choice.addresses(host: host, port: port, deadline: deadline).filter { !excluded.contains($0.description) },
            family: \.family)
        guard !addresses.isEmpty else {
            throw .connectionFailed("no address of \(host) is left to try")
        }
        func won(_ fd: Int32, _ index: Int) -> (fd: Int32, address: String, others: Int) {
            (finish(fd), addresses[index].description, addresses.count - 1)
        }
        var race = ConnectionRace(count: addresses.count)
        var running: [(fd: Int32, index: Int)] = []
        var failures: [(index: Int, reason: String)] = []
        defer { for attempt in running { _ = close(attempt.fd) } }
        func failure() -> APNsTransportError {
            let reasons = failures.sorted { $0.index < $1.index }.map { failure in
                TCPConnector.isIPLiteral(host) ? failure.reason : "\(addresses[failure.index].description): \(failure.reason)"
            }
            return .connectionFailed("cannot connect to \(host):\(port): " + reasons.joined(separator: "; "))
        }

        while true {
            while let index = race.start(now: ContinuousClock.now) {
                switch begin(addresses[index]) {
                case .connected(let fd):
                    return won(fd, index)
                case .inProgress(let fd):
                    running.append((fd, index))
                case .failed(let reason):
                    failures.append((index, reason))
                    race.failed()
                }
            }
            if race.isExhausted { throw failure() }
            guard ContinuousClock.now < deadline else {
                failures += running.map { ($0.index, "timed out") }
                throw failure()
            }
            var entries = running.map { pollfd(fd: $0.fd, events: Int16(POLLOUT), revents: 0) }
            let result = poll(&entries, nfds_t(entries.count), pollMilliseconds(until: race.wakeUp(deadline: deadline)))
            guard result > 0 else { continue }  // a timeout (start the next, or fail) or EINTR
            var stillRunning: [(fd: Int32, index: Int)] = []
            var winner: (fd: Int32, index: Int)?
            for (attempt, entry) in zip(running, entries) {
                guard winner == nil, entry.revents != 0 else {
                    stillRunning.append(attempt)
                    continue
                }
                var error: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                if getsockopt(attempt.fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 { error = errno }
                if error == 0 {
                    winner = attempt
                } else {
                    _ = close(attempt.fd)
                    failures.append((attempt.index, connectFailure(error)))
                    race.failed()
                }
            }
            running = stillRunning
            if let winner { return won(winner.fd, winner.index) }
        }
    }

    /// What starting one address's attempt led to.
    private enum Begun {
        case connected(Int32)
        case inProgress(Int32)
        case failed(String)
    }

    /// Opens a non-blocking socket for `info` and starts connecting it.
    private static func begin(_ info: ResolvedAddress) -> Begun {
        // Closed on exec from the start: a process the host starts on another thread
        // must not inherit (and keep open) a connection to APNs.
        let fd = capns_socket_cloexec(info.family, info.socketType, info.protocolNumber)
        guard fd >= 0 else { return .failed("socket: \(errorString(errno))") }
        let flags = fcntl(fd, F_GETFL, 0)
        guard flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else {
            let reason = "fcntl: \(errorString(errno))"
            _ = close(fd)
            return .failed(reason)
        }
        #if canImport(Darwin)
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
        let started = info.socketAddress.withUnsafeBytes { raw -> Int32 in
            guard let base = raw.baseAddress else { return -1 }
            return Glibc_connect(fd, base.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
        }
        if started == 0 { return .connected(fd) }
        guard errno == EINPROGRESS || errno == EINTR else {
            let reason = connectFailure(errno)
            _ = close(fd)
            return .failed(reason)
        }
        return .inProgress(fd)
    }

    /// The connected socket, with `TCP_NODELAY`.
    private static func finish(_ fd: Int32) -> Int32 {
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        return fd
    }

    /// `poll(2)`'s timeout for waiting until `instant` (0 when it has passed).
    private static func pollMilliseconds(until instant: ContinuousClock.Instant) -> Int32 {
        let remaining = ContinuousClock.now.duration(to: instant)
        guard remaining > .zero else { return 0 }
        let (seconds, attoseconds) = remaining.components
        return Int32(min(Int64(Int32.max), seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1))
    }

    private static func connectFailure(_ code: Int32) -> String {
        switch code {
        case ECONNREFUSED: "connection refused (nothing listens on that port)"
        case ENETUNREACH, EHOSTUNREACH: "\(errorString(code)) (check the network or the proxy settings)"
        default: errorString(code)
        }
    }

    /// Waits until `fd` is ready for `events` or `deadline` passes; whether it is ready
    /// (an error or hang-up on the socket also counts as ready: the next call reports it).
    static func wait(_ fd: Int32, for events: Int16, until deadline: ContinuousClock.Instant) -> Bool {
        while true {
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { return false }
            let (seconds, attoseconds) = remaining.components
            let milliseconds = min(Int64(Int32.max), seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
            var entry = pollfd(fd: fd, events: events, revents: 0)
            let result = poll(&entry, 1, Int32(milliseconds))
            if result > 0 { return true }
            if result < 0, errno != EINTR { return true }
        }
    }

    /// `host` without the brackets of an IPv6 literal (`[::1]` → `::1`).
    static func unbracketed(_ host: String) -> String {
        if host.hasPrefix("["), host.hasSuffix("]") { return String(host.dropFirst().dropLast()) }
        return host
    }

    /// Whether `host` is an IPv4 or IPv6 literal (no SNI for those: RFC 6066 §3).
    static func isIPLiteral(_ host: String) -> Bool {
        var storage = in6_addr()
        let name = unbracketed(host)
        return inet_pton(AF_INET, name, &storage) == 1 || inet_pton(AF_INET6, name, &storage) == 1
    }

    static func errorString(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}

/// `connect(2)`, named apart from ``TCPConnector/connect(host:port:deadline:)``.
private func Glibc_connect(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
    #if canImport(Glibc)
    Glibc.connect(fd, address, length)
    #else
    Darwin.connect(fd, address, length)
    #endif
}
