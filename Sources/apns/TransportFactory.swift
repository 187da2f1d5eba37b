import APNsCore
import APNsTransport
import Logging

/// Makes the transport the tool sends through: `APNsTransport`'s `HTTP2Transport`
/// (TLS + HTTP/2 over OpenSSL and nghttp2).
///
/// Until the HTTP/2 transport is part of the build this says so; `apns demo` then sends
/// through ``APNsCore/MockTransport`` and says that too.
enum TransportFactory {
    /// Whether this build has the real HTTP/2 transport.
    static let hasHTTP2Transport = false

    /// A transport to `environment` with `tls`.
    /// - Parameters:
    ///   - environment: Host and port.
    ///   - tls: Trust and client certificate (see ``TLSSetup``).
    ///   - connections: HTTP/2 connections to open.
    ///   - logger: Where the transport logs.
    static func make(
        environment: APNsEnvironment,
        tls: TLSConfiguration,
        connections: Int,
        logger: Logger
    ) throws(CLIError) -> any PushTransport {
        throw CLIError("this build has no HTTP/2 transport yet (APNsTransport's HTTP2Transport): `apns send` cannot reach \(environment) until it lands")
    }
}
