import APNsCore
import COpenSSL
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Opens a non-blocking TCP connection with a deadline: name resolution (IPv4 and IPv6,
/// ``Resolver``), then a non-blocking `connect(2)` and `poll(2)` on each address in turn, then
/// `TCP_NODELAY` (HTTP/2 frames are small and latency matters more than packet count).
enum TCPConnector {
    /// Connects to `host:port` before `deadline`; the socket is non-blocking. The host is
    /// resolved afresh by `choice`'s resolver, and the attempt starts at the address its
    /// rotation names (see ``AddressChoice``).
    /// - Throws: ``APNsCore/APNsTransportError`` `.connectionFailed` with what went wrong.
    static func connect(
        host: String,
        port: Int,
        deadline: ContinuousClock.Instant,
        choice: AddressChoice = AddressChoice()
    ) throws(APNsTransportError) -> Int32 {
        guard (1...65535).contains(port) else {
            throw .connectionFailed("port \(port) of \(host) is outside 1...65535")
        }
        let addresses = try choice.addresses(host: host, port: port, deadline: deadline)
        var failures: [String] = []
        for (index, info) in addresses.enumerated() {
            let address = info.description
            // Each address gets an equal share of the time left, so one that drops packets
            // (an IPv6 route that goes nowhere) cannot use up the whole timeout.
            let remaining = ContinuousClock.now.duration(to: deadline)
            let share = remaining / (addresses.count - index)
            let attemptDeadline = index == addresses.count - 1 ? deadline : ContinuousClock.now + share
            switch attempt(info, deadline: attemptDeadline) {
            case .success(let fd):
                return fd
            case .failure(let reason):
                let target = TCPConnector.isIPLiteral(host) ? reason : "\(address): \(reason)"
                failures.append(target)
            }
            if ContinuousClock.now >= deadline { break }
        }
        throw .connectionFailed("cannot connect to \(host):\(port): " + failures.joined(separator: "; "))
    }

    private enum Attempt {
        case success(Int32)
        case failure(String)
    }

    private static func attempt(_ info: ResolvedAddress, deadline: ContinuousClock.Instant) -> Attempt {
        // Closed on exec from the start: a process the host starts on another thread
        // must not inherit (and keep open) a connection to APNs.
        let fd = capns_socket_cloexec(info.family, info.socketType, info.protocolNumber)
        guard fd >= 0 else { return .failure("socket: \(errorString(errno))") }
        var keep = false
        defer { if !keep { _ = close(fd) } }
        let flags = fcntl(fd, F_GETFL, 0)
        guard flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else {
            return .failure("fcntl: \(errorString(errno))")
        }
        #if canImport(Darwin)
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
        let started = info.socketAddress.withUnsafeBytes { raw -> Int32 in
            guard let base = raw.baseAddress else { return -1 }
            return Glibc_connect(fd, base.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
        }
        if started != 0 {
            guard errno == EINPROGRESS || errno == EINTR else {
                return .failure(connectFailure(errno))
            }
            guard wait(fd, for: Int16(POLLOUT), until: deadline) else {
                return .failure("timed out")
            }
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 else {
                return .failure("getsockopt: \(errorString(errno))")
            }
            guard error == 0 else { return .failure(connectFailure(error)) }
        }
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        keep = true
        return .success(fd)
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
