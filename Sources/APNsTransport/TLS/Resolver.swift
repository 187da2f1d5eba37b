import APNsCore
import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One address from `getaddrinfo`, copied out of its list.
struct ResolvedAddress: Sendable, CustomStringConvertible {
    var family: Int32
    var socketType: Int32
    var protocolNumber: Int32
    /// The `sockaddr_in` or `sockaddr_in6` bytes.
    var socketAddress: [UInt8]
    /// `192.0.2.1:443` or `[2001:db8::1]:443`.
    var description: String
}

/// Name resolution with a deadline.
///
/// `getaddrinfo` blocks and has no timeout of its own, so a host name is resolved on a
/// thread of its own while the caller waits at most until the deadline; a resolution that
/// outlives it finishes in the background and is dropped. IP literals resolve inline.
enum Resolver {
    /// The addresses of `host:port`, IPv6 and IPv4 in the system's preferred order.
    /// - Throws: ``APNsCore/APNsTransportError`` `.connectionFailed` when the name does not resolve
    ///   or the deadline passes first.
    static func resolve(host: String, port: Int, deadline: ContinuousClock.Instant) throws(APNsTransportError) -> [ResolvedAddress] {
        let name = TCPConnector.unbracketed(host)
        if TCPConnector.isIPLiteral(name) {
            return try lookUp(name, port: port, displayName: host).get()
        }
        let pending = PendingResolution()
        let started = OSThread.start(name: "apns-dns", stackSize: 0) {
            pending.finish(lookUp(name, port: port, displayName: host))
        }
        if !started { return try lookUp(name, port: port, displayName: host).get() }
        let remaining = ContinuousClock.now.duration(to: deadline)
        let (seconds, attoseconds) = max(remaining, .zero).components
        let nanoseconds = Int(clamping: seconds) &* 1_000_000_000 &+ Int(attoseconds / 1_000_000_000)
        guard pending.done.wait(timeout: .now() + .nanoseconds(max(nanoseconds, 0))) == .success,
              let result = pending.result.withLock({ $0 })
        else {
            throw .connectionFailed("resolving \(host) did not finish in time (check the DNS settings)")
        }
        return try result.get()
    }

    /// The result of a resolution, handed from its thread to the waiting caller.
    private final class PendingResolution: Sendable {
        let result = Mutex<Result<[ResolvedAddress], APNsTransportError>?>(nil)
        let done = DispatchSemaphore(value: 0)

        func finish(_ value: Result<[ResolvedAddress], APNsTransportError>) {
            result.withLock { $0 = value }
            done.signal()
        }
    }

    private static func lookUp(_ name: String, port: Int, displayName: String) -> Result<[ResolvedAddress], APNsTransportError> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(name, String(port), &hints, &list)
        guard status == 0, let first = list else {
            let reason = gai_strerror(status).map { String(cString: $0) } ?? "error \(status)"
            return .failure(.connectionFailed("cannot resolve \(displayName): \(reason)"))
        }
        defer { freeaddrinfo(list) }
        var addresses: [ResolvedAddress] = []
        var current: UnsafeMutablePointer<addrinfo>? = first
        while let info = current {
            current = info.pointee.ai_next
            guard let address = info.pointee.ai_addr else { continue }
            let bytes = Array(UnsafeRawBufferPointer(start: address, count: Int(info.pointee.ai_addrlen)))
            addresses.append(ResolvedAddress(
                family: info.pointee.ai_family,
                socketType: info.pointee.ai_socktype,
                protocolNumber: info.pointee.ai_protocol,
                socketAddress: bytes,
                description: describe(address, port: port)))
        }
        guard !addresses.isEmpty else {
            return .failure(.connectionFailed("\(displayName) has no IPv4 or IPv6 address"))
        }
        return .success(addresses)
    }

    private static func describe(_ address: UnsafeMutablePointer<sockaddr>, port: Int) -> String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        func string() -> String {
            String(decoding: text.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            var ip = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
            inet_ntop(AF_INET, &ip, &text, socklen_t(text.count))
            return string() + ":\(port)"
        case AF_INET6:
            var ip = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
            inet_ntop(AF_INET6, &ip, &text, socklen_t(text.count))
            return "[" + string() + "]:\(port)"
        default:
            return "?"
        }
    }
}
