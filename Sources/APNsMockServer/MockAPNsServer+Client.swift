import APNsCore
import APNsTransport

extension MockAPNsServer {
    /// Where the running server listens, as an environment: `127.0.0.1` and ``port``
    /// (the generated certificate names `127.0.0.1`, so verification works normally).
    public var environment: APNsEnvironment {
        .custom(host: "127.0.0.1", port: port)
    }

    /// An `HTTP2Transport` to this running server: its ``environment``, trusting its
    /// generated CA (or the CA `trusting` gives, for a server configured with a
    /// certificate of yours); `configure` may change the rest (connections, timeouts).
    ///
    /// One line for the usual case:
    ///
    /// ```swift
    /// let client = APNsClient(credentials: .certificate, transport: try server.makeTransport())
    /// ```
    ///
    /// - Throws: ``MockAPNsServerError`` when the server is not running, or uses a
    ///   certificate of yours and `trusting` is `nil`.
    public func makeTransport(
        trusting caPEM: String? = nil,
        _ configure: (inout HTTP2Transport.Configuration) -> Void = { _ in }
    ) throws -> HTTP2Transport {
        guard port != 0 else { throw MockAPNsServerError("the server is not running: call start() first") }
        guard let trusted = caPEM ?? certificateAuthorityPEM else {
            throw MockAPNsServerError(
                "the server uses a certificate of yours: pass the CA that issued it as makeTransport(trusting:)"
            )
        }
        var configuration = HTTP2Transport.Configuration(
            environment: environment,
            tls: TLSConfiguration(trustRoots: .certificates(trusted))
        )
        configure(&configuration)
        return HTTP2Transport(configuration: configuration)
    }
}
