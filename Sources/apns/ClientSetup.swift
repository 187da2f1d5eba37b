import APNsCore
import APNsTransport
import Logging

/// Turns the credential and server flags into a client over the real transport: one place
/// for `send`, `channel` and `broadcast`.
struct ClientSetup {
    /// The client; shut it down when done.
    let client: APNsClient
    /// The TLS settings it connects with (its client identity, for certificate checks).
    let tls: TLSConfiguration
    /// The certificate files, when the credentials are a certificate.
    let certificate: TLSSetup.CertificateFiles?

    /// - Parameter environment: Where the client sends; `connection.environment` when `nil`.
    /// - Throws: ``CLIError`` when a CA file or certificate cannot be loaded.
    init(
        credentials loaded: CredentialOptions.Loaded, connection: ConnectionOptions, environment: APNsEnvironment? = nil, logger: Logger
    ) throws(CLIError) {
        let environment = environment ?? connection.environment
        let apnsCredentials: APNsCredentials
        var certificate: TLSSetup.CertificateFiles?
        switch loaded {
        case .providerToken(let cache): apnsCredentials = .providerToken(cache)
        case .certificate(let path, let keyPath, let password):
            apnsCredentials = .certificate
            certificate = TLSSetup.CertificateFiles(path: path, keyPath: keyPath, password: password)
        case .none: apnsCredentials = .certificate  // no authorization header
        }
        var tls = try TLSSetup.configuration(trustedCAPEM: try connection.trustedCAPEM(), certificate: certificate)
        tls.proxy = try connection.proxyConfiguration()
        let transport = TransportFactory.make(
            environment: environment, tls: tls, connections: connection.connections, logger: logger,
            connectTimeout: connection.connectTimeout)
        self.client = APNsClient(
            environment: environment, credentials: apnsCredentials, transport: transport,
            requestTimeout: connection.requestTimeout ?? APNsRequest.defaultTimeout, logger: logger)
        self.tls = tls
        self.certificate = certificate
    }
}
