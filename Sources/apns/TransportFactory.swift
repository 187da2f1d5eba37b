import APNsCore
import Logging

/// Makes the transport the tool sends through: `APNsTransport`'s `HTTP2Transport`
/// (TLS + HTTP/2 over OpenSSL and nghttp2).
///
/// Until the HTTP/2 transport is part of the build this says so; `apns demo` then sends
/// through ``APNsCore/MockTransport`` and says that too.
enum TransportFactory {
    /// Whether this build has the real HTTP/2 transport.
    static let hasHTTP2Transport = false

    /// A transport to `environment`.
    /// - Parameters:
    ///   - environment: Host and port.
    ///   - trustedCAPEM: CA certificates to trust instead of the system's (a mock server's CA).
    ///   - certificate: A client certificate (`.p12` or PEM) for certificate-based authentication.
    ///   - connections: HTTP/2 connections to open.
    ///   - logger: Where the transport logs.
    static func make(
        environment: APNsEnvironment,
        trustedCAPEM: String?,
        certificate: (path: String, keyPath: String?, password: String?)?,
        connections: Int,
        logger: Logger
    ) throws(CLIError) -> any PushTransport {
        if certificate != nil {
            throw CLIError("certificate-based authentication needs the TLS layer's ClientIdentity, which is not in this build yet: use a .p8 key (--key-file, --key-id, --team-id)")
        }
        throw CLIError("this build has no HTTP/2 transport yet (APNsTransport's HTTP2Transport): `apns send` cannot reach \(environment) until it lands")
    }
}
