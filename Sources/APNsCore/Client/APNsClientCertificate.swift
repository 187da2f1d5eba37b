/// A client certificate (with its private key) that a request asks its transport to
/// present, as an opaque handle: APNsCore cannot see the TLS types that hold one, so a
/// transport wraps its own identity in this handle and unwraps it when it opens a
/// connection.
///
/// `APNsTransport`'s `ClientIdentity` makes one with its `clientCertificate` property;
/// pass it as ``APNsCredentials/clientCertificate(_:)`` so that several certificate
/// tenants share one transport, each on its own connections (a connection carries one
/// certificate for its whole life). A transport that does not understand the handle's
/// ``value`` fails the request with a `tlsFailure` that names it.
///
/// Two handles are equal when their ``id``s are: the transport keeps one set of
/// connections per `id`. The handle holds no secret in its description.
public struct APNsClientCertificate: Sendable, Hashable, CustomStringConvertible {
    /// What tells this identity apart from others (for example the certificate's SHA-256
    /// fingerprint): requests with equal ids share connections.
    public let id: String
    /// The transport's own identity object (private key included): never logged.
    public let value: any Sendable
    /// What logs and statistics show: the certificate's subject, never the key.
    public let description: String

    /// Wraps a transport's identity.
    ///
    /// - Parameters:
    ///   - id: A stable identifier of the certificate (equal ids share connections).
    ///   - value: The transport's identity object.
    ///   - description: A short, secret-free name for logs and statistics.
    public init(id: String, value: any Sendable, description: String) {
        self.id = id
        self.value = value
        self.description = description
    }

    /// Equal when the ids are.
    public static func == (lhs: APNsClientCertificate, rhs: APNsClientCertificate) -> Bool { lhs.id == rhs.id }

    /// Hashes the id.
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }
}
