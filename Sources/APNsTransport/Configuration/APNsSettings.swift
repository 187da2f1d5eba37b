import APNsCore
import Foundation
import Logging

/// Where to send and how to authenticate, read from environment variables: the usual way
/// to configure a server process (a container, a systemd unit, a CI job) without code.
///
/// | variable | meaning |
/// |---|---|
/// | `APNS_ENVIRONMENT` | `production`, `sandbox` (or `development`), or `host:port` for a server of your own (required) |
/// | `APNS_KEY_FILE` | path of the `.p8` signing key (token-based authentication) |
/// | `APNS_KEY` | the key's PEM text itself, instead of `APNS_KEY_FILE` |
/// | `APNS_KEY_ID` | the key's 10-character ID (with a key) |
/// | `APNS_TEAM_ID` | your 10-character team ID (with a key) |
/// | `APNS_CERTIFICATE_FILE` | a client certificate, `.p12` or PEM (certificate-based authentication, instead of a key) |
/// | `APNS_CERTIFICATE_KEY_FILE` | the PEM private key of a PEM certificate, when it is not in the same file |
/// | `APNS_CERTIFICATE_PASSWORD` | the `.p12`'s password, or an encrypted PEM key's |
/// | `APNS_TOPIC` | the default topic, usually the app's bundle ID (optional) |
///
/// ```swift
/// let settings = try APNsSettings(environmentVariables: ProcessInfo.processInfo.environment)
/// let client = try settings.makeClient()
/// ```
///
/// Every problem is an ``APNsSettingsError`` that names the variable: a missing one, a
/// malformed one, a key or certificate that cannot be read. The `apns` tool reads the same
/// variables when its flags do not say otherwise.
public struct APNsSettings: Sendable {
    /// How the provider authenticates.
    public enum Credentials: Sendable {
        /// Token-based: a signing key, its ID and the team's.
        case providerToken(key: ProviderKey, keyID: String, teamID: String)
        /// Certificate-based: the client identity every connection presents.
        case certificate(ClientIdentity)
    }

    /// Where requests go.
    public var environment: APNsEnvironment
    /// How the provider authenticates.
    public var credentials: Credentials
    /// The default topic (`APNS_TOPIC`), if set.
    public var topic: String?

    /// Settings given in code.
    public init(environment: APNsEnvironment, credentials: Credentials, topic: String? = nil) {
        self.environment = environment
        self.credentials = credentials
        self.topic = topic
    }

    /// Reads the variables in the table above from `variables` (by default the process's
    /// environment).
    ///
    /// - Throws: ``APNsSettingsError`` naming the variable that is missing or malformed.
    public init(environmentVariables variables: [String: String] = ProcessInfo.processInfo.environment) throws(APNsSettingsError) {
        func value(_ name: String) -> String? {
            guard let raw = variables[name]?.trimmingCharacters(in: .whitespacesAndNewlines), !raw.isEmpty else { return nil }
            return raw
        }
        guard let environmentText = value("APNS_ENVIRONMENT") else {
            throw APNsSettingsError(variable: "APNS_ENVIRONMENT", "is not set: set it to production, sandbox, or host:port")
        }
        environment = try Self.parseEnvironment(environmentText)
        topic = value("APNS_TOPIC")

        let keyGiven = value("APNS_KEY_FILE") != nil || value("APNS_KEY") != nil
        let certificateGiven = value("APNS_CERTIFICATE_FILE") != nil
        switch (keyGiven, certificateGiven) {
        case (true, true):
            throw APNsSettingsError(
                variable: "APNS_CERTIFICATE_FILE",
                "is set together with a signing key (APNS_KEY_FILE or APNS_KEY): set one way of authenticating"
            )
        case (false, false):
            throw APNsSettingsError(
                variable: "APNS_KEY_FILE",
                "is not set, nor APNS_KEY or APNS_CERTIFICATE_FILE: set a signing key (with APNS_KEY_ID and APNS_TEAM_ID) or a client certificate"
            )
        case (true, false):
            let key: ProviderKey
            if let path = value("APNS_KEY_FILE") {
                if value("APNS_KEY") != nil {
                    throw APNsSettingsError(variable: "APNS_KEY", "is set together with APNS_KEY_FILE: set one")
                }
                do {
                    key = try ProviderKey(contentsOfFile: path)
                } catch {
                    throw APNsSettingsError(variable: "APNS_KEY_FILE", "(\(path)) cannot be used: \(error)")
                }
            } else {
                do {
                    key = try ProviderKey(pemRepresentation: value("APNS_KEY") ?? "")
                } catch {
                    throw APNsSettingsError(variable: "APNS_KEY", "does not hold a usable key: \(error)")
                }
            }
            let keyID = try Self.identifier("APNS_KEY_ID", value("APNS_KEY_ID"))
            let teamID = try Self.identifier("APNS_TEAM_ID", value("APNS_TEAM_ID"))
            credentials = .providerToken(key: key, keyID: keyID, teamID: teamID)
        case (false, true):
            let path = value("APNS_CERTIFICATE_FILE") ?? ""
            let password = value("APNS_CERTIFICATE_PASSWORD")
            credentials = .certificate(try Self.identity(path: path, keyPath: value("APNS_CERTIFICATE_KEY_FILE"), password: password))
        }
    }

    /// A client over a new `HTTP2Transport` to ``environment``, with these credentials;
    /// `configure` may change the rest of the transport's configuration.
    ///
    /// - Throws: ``APNsSettingsError`` when the key ID or team ID is refused by the token cache.
    public func makeClient(
        logger: Logger = Logger(label: "swift-apns", factory: { _ in SwiftLogNoOpLogHandler() }),
        _ configure: (inout HTTP2Transport.Configuration) -> Void = { _ in }
    ) throws(APNsSettingsError) -> APNsClient {
        var configuration = HTTP2Transport.Configuration(environment: environment, logger: logger)
        let clientCredentials: APNsCredentials
        switch credentials {
        case .providerToken(let key, let keyID, let teamID):
            do {
                clientCredentials = .providerToken(try ProviderTokenCache(key: key, keyID: keyID, teamID: teamID))
            } catch {
                throw APNsSettingsError(variable: "APNS_KEY_ID", "or APNS_TEAM_ID is refused: \(error)")
            }
        case .certificate(let identity):
            configuration.tls.clientIdentity = identity
            clientCredentials = .certificate
        }
        configure(&configuration)
        return APNsClient(credentials: clientCredentials, transport: HTTP2Transport(configuration: configuration), logger: logger)
    }

    // MARK: Parsing

    /// The environment `text` names, as `APNS_ENVIRONMENT` holds it: `production`,
    /// `sandbox` (or `development`), or `host:port` (`[::1]:port` for an IPv6 address).
    ///
    /// - Throws: ``APNsSettingsError`` for `APNS_ENVIRONMENT` when it names none of them.
    public static func parseEnvironment(_ text: String) throws(APNsSettingsError) -> APNsEnvironment {
        switch text.lowercased() {
        case "production": return .production
        case "sandbox", "development": return .sandbox
        default:
            guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
                (1...65535).contains(port), colon > text.startIndex
            else {
                throw APNsSettingsError(
                    variable: "APNS_ENVIRONMENT",
                    "is \"\(text)\": expected production, sandbox, or host:port (for example 127.0.0.1:2197)"
                )
            }
            var host = String(text[..<colon])
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            return .custom(host: host, port: port)
        }
    }

    /// A 10-character Apple identifier (digits and capital letters).
    static func identifier(_ name: String, _ value: String?) throws(APNsSettingsError) -> String {
        guard let value else { throw APNsSettingsError(variable: name, "is not set: a signing key needs APNS_KEY_ID and APNS_TEAM_ID") }
        guard value.utf8.count == 10, value.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) }) else {
            throw APNsSettingsError(variable: name, "is \"\(value)\": expected a 10-character Apple identifier (digits and capital letters)")
        }
        return value
    }

    static func identity(path: String, keyPath: String?, password: String?) throws(APNsSettingsError) -> ClientIdentity {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw APNsSettingsError(variable: "APNS_CERTIFICATE_FILE", "(\(path)) cannot be read: check the path and its permissions")
        }
        let text = String(decoding: data, as: UTF8.self)
        do {
            guard text.contains("-----BEGIN") else {
                return try ClientIdentity(pkcs12Data: data, password: password ?? "")
            }
            var keyText = text
            if let keyPath {
                guard let keyData = FileManager.default.contents(atPath: keyPath) else {
                    throw APNsSettingsError(variable: "APNS_CERTIFICATE_KEY_FILE", "(\(keyPath)) cannot be read: check the path and its permissions")
                }
                keyText = String(decoding: keyData, as: UTF8.self)
            }
            return try ClientIdentity(certificatePEM: text, privateKeyPEM: keyText, password: password)
        } catch let error as APNsSettingsError {
            throw error
        } catch {
            throw APNsSettingsError(variable: "APNS_CERTIFICATE_FILE", "(\(path)) cannot be used: \(error)")
        }
    }
}

/// A setting that is missing or malformed, named by its variable.
public struct APNsSettingsError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The variable, for example `APNS_KEY_ID`.
    public let variable: String
    /// What is wrong with it.
    public let problem: String

    init(variable: String, _ problem: String) {
        self.variable = variable
        self.problem = problem
    }

    /// `<variable> <problem>`, for example `APNS_KEY_ID is not set: …`.
    public var description: String { variable + " " + problem }
}
