import APNsCore
import Synchronization

/// How a host name becomes the addresses a new connection tries: the system's resolver
/// (`getaddrinfo`) by default, or a function of yours.
///
/// Apple's advice for providers that open many connections is to resolve the host again
/// for every new connection, use the addresses it returns rather than one cached address,
/// and spread connections over them. ``HTTP2Transport`` does exactly that: it asks the
/// resolver for every connection attempt (nothing is cached), and each attempt starts at
/// the next address in the list, so a pool's connections land on different addresses
/// when the name has several. The other addresses race it as Happy Eyeballs does
/// (RFC 8305): IPv6 and IPv4 alternate, and while no address has connected the next one
/// starts 250 ms after the one before (at once when one fails), so an address or a whole
/// family that drops packets delays a connection by a quarter of a second, not by the
/// connect timeout.
///
/// ```swift
/// var configuration = HTTP2Transport.Configuration(environment: .production, connectionCount: 4)
/// // Send to one APNs data center only (a debugging aid), or use a resolver of your own.
/// configuration.resolver = .custom { host, port in ["17.188.166.10"] }
/// ```
public struct HostResolver: Sendable {
    /// `nil`: the system resolver.
    let resolve: (@Sendable (_ host: String, _ port: Int) throws -> [String])?

    /// The system resolver (`getaddrinfo`), asked afresh for every connection: IPv6 and
    /// IPv4 addresses in the order the system prefers.
    public static let system = HostResolver(resolve: nil)

    /// A resolver of your own: `resolve(host, port)` returns the IP addresses to try, as
    /// literals (`"17.188.166.10"`, `"2620:149:208:4303::4"`, `"::1"`), in the order to
    /// try them.
    ///
    /// It is called on a connection-opening worker thread (never an I/O thread) for every
    /// connection attempt, so it may block for a short while (a look-up of your own), but it should return well within
    /// ``HTTP2Transport/Configuration/connectTimeout``. TLS still verifies the server's
    /// certificate against the host name, not the address. An error it throws, or an
    /// empty list, fails the attempt with ``APNsCore/APNsTransportError/Code/connectionFailed``.
    public static func custom(_ resolve: @escaping @Sendable (_ host: String, _ port: Int) throws -> [String]) -> HostResolver {
        HostResolver(resolve: resolve)
    }
}

/// Addresses that accepted a TCP connection but did not finish a TLS handshake in time,
/// or closed or reset it without a TLS alert (a load balancer node with no working
/// backend): later attempts try them last until
/// ``avoidance`` has passed, so the rotation does not keep sending new connections to
/// them. Shared by one transport's attempts.
final class AddressHealth: Sendable {
    /// How long an address that failed that way is tried last.
    static let avoidance: Duration = .seconds(60)

    private let avoided = Mutex<[String: ContinuousClock.Instant]>([:])

    /// `address` (`host:port`, as ``ResolvedAddress/description`` writes it) failed its
    /// handshake at `now`.
    func noteFailedHandshake(_ address: String, now: ContinuousClock.Instant = .now) {
        avoided.withLock { $0[address] = now + Self.avoidance }
    }

    /// `addresses` with the ones still avoided at `now` moved to the end, the order
    /// otherwise kept.
    func ordered(_ addresses: [ResolvedAddress], now: ContinuousClock.Instant = .now) -> [ResolvedAddress] {
        avoided.withLock { avoided in
            avoided = avoided.filter { $0.value > now }
            guard !avoided.isEmpty else { return addresses }
            return addresses.filter { avoided[$0.description] == nil } + addresses.filter { avoided[$0.description] != nil }
        }
    }
}

/// Which addresses one connection attempt tries, and from which one it starts.
struct AddressChoice: Sendable {
    /// Where the addresses come from.
    var resolver: HostResolver = .system
    /// The attempt's place in the transport's sequence of attempts: the attempt starts at
    /// address `rotation % count`, so consecutive connections spread over the addresses.
    var rotation: Int = 0
    /// Addresses to try last (their handshakes timed out lately); `nil`: none.
    var health: AddressHealth?

    /// The addresses to try for `host:port`, rotated; see the type's rules.
    func addresses(host: String, port: Int, deadline: ContinuousClock.Instant) throws(APNsTransportError) -> [ResolvedAddress] {
        var addresses: [ResolvedAddress]
        if let resolve = resolver.resolve {
            let literals: [String]
            do {
                literals = try resolve(TCPConnector.unbracketed(host), port)
            } catch {
                throw .connectionFailed("the resolver for \(host) failed: \(error)")
            }
            addresses = []
            for literal in literals {
                guard TCPConnector.isIPLiteral(literal) else {
                    throw .connectionFailed("the resolver for \(host) returned '\(literal)', which is not an IP address")
                }
                addresses += try Resolver.resolve(host: literal, port: port, deadline: deadline)
            }
            guard !addresses.isEmpty else {
                throw .connectionFailed("the resolver for \(host) returned no address")
            }
        } else {
            addresses = try Resolver.resolve(host: host, port: port, deadline: deadline)
        }
        let start = Self.startIndex(rotation: rotation, count: addresses.count)
        if start > 0 {
            addresses = Array(addresses[start...] + addresses[..<start])
        }
        return health?.ordered(addresses) ?? addresses
    }

    /// The address an attempt starts at: `rotation` modulo `count` (0 for no address).
    static func startIndex(rotation: Int, count: Int) -> Int {
        guard count > 0 else { return 0 }
        let remainder = rotation % count
        return remainder < 0 ? remainder + count : remainder
    }
}
