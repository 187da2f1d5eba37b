/// How the client proves to APNs that it may push to a topic.
///
/// See [Establishing a token-based connection to APNs](https://developer.apple.com/documentation/usernotifications/establishing-a-token-based-connection-to-apns)
/// and [Establishing a certificate-based connection to APNs](https://developer.apple.com/documentation/usernotifications/establishing-a-certificate-based-connection-to-apns).
public enum APNsCredentials: Sendable {
    /// Token-based: every request carries `authorization: bearer <JWT>` from `source`
    /// (usually a ``ProviderTokenCache``). When APNs answers `ExpiredProviderToken`, the
    /// client calls ``ProviderTokenSource/invalidate(_:)`` and retries once with a new token.
    case providerToken(any ProviderTokenSource)
    /// Certificate-based: the transport presents the client certificate it was configured
    /// with during the TLS handshake, and requests carry no `authorization` header.
    case certificate
    /// Certificate-based with a certificate of this client's own: every request asks the
    /// transport to present `certificate`, so clients with different certificates (one per
    /// app or tenant) share one transport, each on its own connections. Requests carry no
    /// `authorization` header. Make the handle with `ClientIdentity.clientCertificate`
    /// (APNsTransport).
    case clientCertificate(APNsClientCertificate)
}
