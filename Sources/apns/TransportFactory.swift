import APNsCore
import APNsTransport
import Logging

/// Makes the transport the tool sends through: ``APNsTransport/HTTP2Transport`` (TLS +
/// HTTP/2 over OpenSSL and nghttp2), one place for `send`, `demo` and `bench`.
enum TransportFactory {
    /// A transport to `environment` with `tls`; no connection opens until the first request.
    /// - Parameters:
    ///   - environment: Host and port.
    ///   - tls: Trust and client certificate (see ``TLSSetup``).
    ///   - connections: HTTP/2 connections to open.
    ///   - logger: Where the transport logs.
    ///   - threadPlacement: Which I/O threads drive its connections.
    ///   - connectTimeout: How long a connection attempt may take; the transport's default when `nil`.
    static func make(
        environment: APNsEnvironment,
        tls: TLSConfiguration,
        connections: Int,
        logger: Logger,
        threadPlacement: HTTP2Transport.Configuration.ThreadPlacement = .spread,
        connectTimeout: Duration? = nil
    ) -> HTTP2Transport {
        var configuration = HTTP2Transport.Configuration(environment: environment, tls: tls, connectionCount: connections, logger: logger)
        configuration.threadPlacement = threadPlacement
        if let connectTimeout { configuration.connectTimeout = connectTimeout }
        return HTTP2Transport(configuration: configuration)
    }
}
