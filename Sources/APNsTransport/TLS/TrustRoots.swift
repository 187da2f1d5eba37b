/// The certificates that a server's chain must lead to.
///
/// The default, ``system``, is the operating system's trust store, which holds the roots
/// that APNs certificates chain to. Pass ``certificates(_:)`` to trust a private CA
/// instead, such as the mock server's. Verification (chain, and host name against the
/// certificate's subjectAltName, never its subject's common name: RFC 9525) is always on,
/// except with the deliberately loud
/// ``insecureNoVerification_forTestingOnly``.
public struct TrustRoots: Sendable, Hashable {
    enum Source: Sendable, Hashable {
        case system
        case certificates(pem: String)
        case none
    }

    let source: Source

    private init(_ source: Source) { self.source = source }

    /// The system trust store (OpenSSL's default verify paths: on Debian,
    /// `/etc/ssl/certs`), which holds the roots APNs chains to.
    ///
    /// It is made once per process. A hashed certificate directory (OpenSSL's default or
    /// `SSL_CERT_DIR`) is searched when a handshake needs a root; the CA bundle is parsed
    /// up front only when `SSL_CERT_FILE` names another bundle than the default one, or no
    /// directory is hashed.
    public static let system = TrustRoots(.system)

    /// Trusts only the CA certificates in `pem` (one or more
    /// `-----BEGIN CERTIFICATE-----` blocks), not the system store.
    ///
    /// Each one is an anchor, a root or not: a chain that reaches an intermediate you list
    /// verifies without the root above it (as curl treats its CA file).
    ///
    /// The PEM is read when a connection is made; a PEM without a certificate fails that
    /// connection with ``APNsCore/APNsTransportError/Code/tlsFailure``, marked
    /// ``APNsCore/APNsTransportError/isPermanent``.
    public static func certificates(_ pem: String) -> TrustRoots {
        TrustRoots(.certificates(pem: pem))
    }

    /// Accepts any server certificate, for any name: FOR TESTS ONLY.
    ///
    /// Anyone on the network path can then read and change the traffic, including
    /// provider tokens. Never use it against APNs; to test against a local server, prefer
    /// ``certificates(_:)`` with that server's CA.
    ///
    /// So that it cannot reach production by accident, connections to Apple's hosts
    /// (`*.push.apple.com`) with it fail with
    /// ``APNsCore/APNsTransportError/Code/tlsFailure`` before anything is sent, and
    /// ``HTTP2Transport/init(configuration:)`` logs a warning when it is configured.
    public static let insecureNoVerification_forTestingOnly = TrustRoots(.none)

    /// Whether certificate verification is off.
    var verifiesNothing: Bool { source == .none }

    /// Whether `host` is one of Apple's push hosts, for which verification is never off.
    static func isApplePushHost(_ host: String) -> Bool {
        var name = host.lowercased()
        while name.hasSuffix(".") { name.removeLast() }
        return name == "push.apple.com" || name.hasSuffix(".push.apple.com")
    }
}
