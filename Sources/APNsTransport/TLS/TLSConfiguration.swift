/// How the transport sets up TLS with APNs: whom to trust, which client certificate to
/// present, and which proxy to go through.
///
/// Every connection uses TLS 1.2 or later and offers ALPN `h2` only, as APNs requires
/// ([Sending notification requests to APNs](https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns)).
/// The server's chain and host name are always verified against ``trustRoots``.
public struct TLSConfiguration: Sendable {
    /// The certificates the server's chain must lead to; ``TrustRoots/system`` by default.
    public var trustRoots: TrustRoots
    /// The client certificate for certificate-based authentication, or `nil` with
    /// token-based (`.p8`) authentication.
    public var clientIdentity: ClientIdentity?
    /// A proxy to tunnel through (HTTP `CONNECT` or SOCKS5), or `nil` to connect directly.
    public var proxy: ProxyConfiguration?

    /// Creates a configuration.
    /// - Parameters:
    ///   - trustRoots: Whom to trust; the system trust store by default.
    ///   - clientIdentity: A client certificate and key, for certificate-based connections.
    ///   - proxy: A proxy (HTTP `CONNECT` or SOCKS5), or `nil`.
    public init(trustRoots: TrustRoots = .system, clientIdentity: ClientIdentity? = nil, proxy: ProxyConfiguration? = nil) {
        self.trustRoots = trustRoots
        self.clientIdentity = clientIdentity
        self.proxy = proxy
    }

    /// Verifies APNs against the system trust store, with no client certificate and no proxy.
    public static let `default` = TLSConfiguration()
}
