/// An HTTP proxy that connections tunnel through with `CONNECT` (RFC 9110 §9.3.6), as
/// corporate networks often require.
///
/// The transport opens TCP to the proxy, sends `CONNECT api.push.apple.com:443`, and on a
/// 2xx answer runs TLS with APNs through the tunnel: the proxy sees only encrypted bytes.
public struct ProxyConfiguration: Sendable, Hashable {
    /// The proxy's host name or IP address.
    public var host: String
    /// The proxy's port.
    public var port: Int
    /// The user name for `Proxy-Authorization: Basic` (RFC 7617), or `nil` for none.
    /// It must not contain a colon (RFC 7617 §2).
    public var username: String?
    /// The password for `Proxy-Authorization: Basic`; used only with ``username``.
    public var password: String?

    /// Creates a proxy configuration.
    /// - Parameters:
    ///   - host: The proxy's host name or IP address.
    ///   - port: The proxy's port.
    ///   - username: A user name for Basic authentication, or `nil`.
    ///   - password: The password for `username`.
    public init(host: String, port: Int, username: String? = nil, password: String? = nil) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
    }
}
