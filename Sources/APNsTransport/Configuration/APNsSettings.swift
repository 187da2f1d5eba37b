import APNsCore
import APNsOpenSSL
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import CoreMetrics
import Logging
import Tracing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
/// | `APNS_TOPIC` | a topic for your code (``topic``), usually the app's bundle ID; checked as one (optional) |
/// | `APNS_CA_FILE` | PEM CA certificates to trust instead of the system's, such as the mock server's (optional) |
/// | `APNS_PROXY` | a proxy to tunnel through: `http://[user:password@]host:port` (HTTP `CONNECT`) or `socks5://[user:password@]host:port` (optional; see ``ProxyConfiguration/init(url:)``) |
/// | `APNS_CONNECTIONS` | the most connections to APNs, 1 to 64, opened as load needs them (optional; the transport's default is 1) |
/// | `APNS_CONNECT_TIMEOUT` | seconds one TCP connect, proxy tunnel and TLS handshake may take, such as `10` or `2.5` (optional) |
/// | `APNS_REQUEST_TIMEOUT` | seconds a send may take, all its attempts included (optional; 30 by default) |
///
/// ```swift
/// let settings = try APNsSettings(environmentVariables: ProcessInfo.processInfo.environment)
/// let client = try settings.makeClient()
/// ```
///
/// Every problem is an ``APNsSettingsError`` that names the variable: a missing one, a
/// malformed one, a key or certificate that cannot be read. The `apns` tool reads the same
/// variables when its flags do not say otherwise. The `APNsConfiguration` product reads
/// the same settings from a swift-configuration `ConfigReader`, through the same parser.
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
    /// `APNS_TOPIC`, if set: a topic for your code to use (the client has no default
    /// topic; each ``APNsCore/PushNotification`` names its own).
    public var topic: String?
    /// Whom the transport trusts (`APNS_CA_FILE`): the system trust store, which holds the
    /// roots APNs chains to, unless a CA file is given (a mock server's, say).
    public var trustRoots: TrustRoots
    /// The proxy every connection tunnels through (`APNS_PROXY`), or `nil` to connect directly.
    public var proxy: ProxyConfiguration?
    /// The transport's ``HTTP2Transport/Configuration/connectionCount`` (`APNS_CONNECTIONS`),
    /// or `nil` for the transport's default.
    public var connectionCount: Int?
    /// The transport's ``HTTP2Transport/Configuration/connectTimeout`` (`APNS_CONNECT_TIMEOUT`),
    /// or `nil` for the transport's default.
    public var connectTimeout: Duration?
    /// How long a send may take, all its attempts included (`APNS_REQUEST_TIMEOUT`, the
    /// client's `requestTimeout`), or `nil` for the client's default of 30 seconds.
    public var requestTimeout: Duration?
    /// What works but should be fixed, found while reading the settings: a file holding a
    /// private key (`APNS_KEY_FILE`, `APNS_CERTIFICATE_FILE`, `APNS_CERTIFICATE_KEY_FILE`)
    /// that other users may read (`apns send` refuses such a file, as ssh does; a service
    /// keeps running). ``makeClient(logger:retryPolicy:metricsFactory:tracer:_:)`` logs each
    /// at `warning`.
    public var warnings: [String] = []

    /// Settings given in code.
    public init(
        environment: APNsEnvironment,
        credentials: Credentials,
        topic: String? = nil,
        trustRoots: TrustRoots = .system,
        proxy: ProxyConfiguration? = nil
    ) {
        self.environment = environment
        self.credentials = credentials
        self.topic = topic
        self.trustRoots = trustRoots
        self.proxy = proxy
    }

    /// Reads the variables in the table above from `variables` (by default the process's
    /// environment).
    ///
    /// - Throws: ``APNsSettingsError`` naming the variable that is missing or malformed.
    public init(environmentVariables variables: [String: String] = ProcessInfo.processInfo.environment) throws(APNsSettingsError) {
        try self.init(
            source: Source(
                name: \.environmentVariable,
                lookup: { setting in variables[setting.environmentVariable].map { .value($0) } ?? .absent }
            )
        )
    }

    /// The variable `name` of `variables` as these settings read it: without the white
    /// space and line breaks at either end, and `nil` when it is unset or blank. The `apns`
    /// tool reads its `APNS_*` variables through it, so that both take the same values.
    package static func variable(_ name: String, in variables: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        guard let raw = variables[name] else { return nil }
        let trimmed = trimmingWhitespace(raw)
        return trimmed.isEmpty ? nil : trimmed
    }

    /// `text` without the white space and line breaks at either end.
    static func trimmingWhitespace(_ text: String) -> String {
        guard let first = text.firstIndex(where: { !$0.isWhitespace }),
            let last = text.lastIndex(where: { !$0.isWhitespace })
        else { return "" }
        return String(text[first...last])
    }

    /// Why `value`, given for `setting`, is refused as key material in the wrong place (a
    /// `.p8` or PEM certificate pasted into a setting for a path, an identifier or a
    /// name), or `nil`. The message describes the value, never quotes it: settings errors
    /// are printed and logged. A path to a file that exists is never refused; `APNS_KEY`,
    /// the password and the proxy URL (shown redacted) are not checked.
    static func keyMaterialProblem(_ setting: Setting, _ value: String, _ source: Source) -> String? {
        switch setting {
        case .key, .certificatePassword, .proxy: return nil
        default: break
        }
        guard SecretText.mayBeKeyMaterial(value) else { return nil }
        // A long bundle ID of letters and digits alone is still a topic.
        if setting == .topic, (try? Topic.checkBundleID(value, header: "apns-topic")) != nil { return nil }
        let what = SecretText.describe(value)
        switch setting {
        case .keyFile:
            if FileManager.default.fileExists(atPath: value) { return nil }
            return "holds \(what), not a file path: put the key's text in \(source.name(.key)), or the path of its file in \(source.name(.keyFile))"
        case .certificateFile, .certificateKeyFile, .caFile:
            if FileManager.default.fileExists(atPath: value) { return nil }
            return "holds \(what), not a file path: write it to a file (readable by its owner alone) and name that file here"
        default:
            return "holds \(what), which looks like a key or certificate: check that the settings are not swapped"
        }
    }

    /// Reads every setting from `source`: the one parser behind
    /// ``init(environmentVariables:)`` and the `APNsConfiguration` module's `ConfigReader`
    /// initializer, so both accept the same values and report the same problems.
    package init(source: Source) throws(APNsSettingsError) {
        func value(_ setting: Setting) throws(APNsSettingsError) -> String? {
            switch source.lookup(setting) {
            case .absent:
                return nil
            case .value(let raw):
                let trimmed = Self.trimmingWhitespace(raw)
                if let problem = Self.keyMaterialProblem(setting, trimmed, source) {
                    throw APNsSettingsError(.malformed, setting: source.name(setting), problem)
                }
                return trimmed.isEmpty ? nil : trimmed
            case .notText(let found):
                throw APNsSettingsError(.malformed, setting: source.name(setting), "is \(found), not text")
            }
        }
        let name = source.name
        guard let environmentText = try value(.environment) else {
            throw APNsSettingsError(.missing, setting: name(.environment), "is not set: set it to production, sandbox, or host:port")
        }
        do {
            environment = try Self.parseEnvironment(environmentText)
        } catch {
            throw APNsSettingsError(error.code, setting: name(.environment), error.problem)
        }
        topic = try value(.topic)
        if let topic {
            do {
                try Topic.checkBundleID(topic, header: "apns-topic")
            } catch {
                throw APNsSettingsError(
                    .malformed, setting: name(.topic),
                    "is \"\(topic)\": a topic has only A-Z, a-z, 0-9, '-' and '.' (a bundle ID, with a push type's suffix or not)")
            }
        }
        trustRoots = .system
        if let caPath = try value(.caFile) {
            guard let pem = FileManager.default.contents(atPath: caPath).map({ String(decoding: $0, as: UTF8.self) }) else {
                throw APNsSettingsError(.unusable, setting: name(.caFile), "(\(caPath)) cannot be read: check the path and its permissions")
            }
            guard pem.contains("-----BEGIN CERTIFICATE-----") else {
                throw APNsSettingsError(.unusable, setting: name(.caFile), "(\(caPath)) holds no PEM certificate")
            }
            // Read as the transport will read it: a block that is not a certificate (damaged
            // base64 or DER) is named here, not as a TLS failure of every connection later.
            guard !X509Certificate.all(pem: pem).isEmpty else {
                throw APNsSettingsError(
                    .unusable, setting: name(.caFile),
                    "(\(caPath)) has a -----BEGIN CERTIFICATE----- block that is not a readable certificate (damaged base64 or DER)")
            }
            trustRoots = .certificates(pem)
        }
        connectionCount = try value(.connections).map { text throws(APNsSettingsError) in
            guard let count = Self.connectionCount(text) else {
                throw APNsSettingsError(.malformed, setting: name(.connections), "is '\(text)': expected a number of connections from 1 to 64")
            }
            return count
        }
        connectTimeout = try value(.connectTimeout).map { text throws(APNsSettingsError) in try Self.seconds(text, .connectTimeout, source) }
        requestTimeout = try value(.requestTimeout).map { text throws(APNsSettingsError) in try Self.seconds(text, .requestTimeout, source) }
        proxy = nil
        if let proxyURL = try value(.proxy) {
            do {
                proxy = try ProxyConfiguration(url: proxyURL)
            } catch {
                // The URL may hold a password: the error shows it redacted.
                throw APNsSettingsError(.malformed, setting: name(.proxy), "is '\(error.url)': it \(error.problem)")
            }
        }

        let keyFile = try value(.keyFile)
        let keyText = try value(.key)
        let certificateFile = try value(.certificateFile)
        switch (keyFile != nil || keyText != nil, certificateFile) {
        case (true, .some):
            throw APNsSettingsError(
                .conflicting,
                setting: name(.certificateFile),
                "is set together with a signing key (\(name(.keyFile)) or \(name(.key))): set one way of authenticating"
            )
        case (false, nil):
            throw APNsSettingsError(
                .missing,
                setting: name(.keyFile),
                "is not set, nor \(name(.key)) or \(name(.certificateFile)): set a signing key (with \(name(.keyID)) and \(name(.teamID))) or a client certificate"
            )
        case (true, nil):
            let key: ProviderKey
            if let path = keyFile {
                if keyText != nil {
                    throw APNsSettingsError(.conflicting, setting: name(.key), "is set together with \(name(.keyFile)): set one")
                }
                do {
                    key = try ProviderKey(contentsOfFile: path)
                } catch {
                    throw APNsSettingsError(.unusable, setting: name(.keyFile), "(\(path)) cannot be used: \(error)")
                }
            } else {
                do {
                    key = try ProviderKey(pemRepresentation: keyText ?? "")
                } catch {
                    throw APNsSettingsError(.unusable, setting: name(.key), "does not hold a usable key: \(error)")
                }
            }
            let keyID = try Self.identifier(.keyID, try value(.keyID), source)
            let teamID = try Self.identifier(.teamID, try value(.teamID), source)
            // A certificate's settings beside a signing key mean a half-finished switch
            // between the two ways: say so rather than ignore them.
            for stray in [Setting.certificateKeyFile, .certificatePassword] where try value(stray) != nil {
                throw APNsSettingsError(
                    .conflicting, setting: name(stray),
                    "is set together with a signing key: it belongs to a client certificate (\(name(.certificateFile))); unset one of them")
            }
            credentials = .providerToken(key: key, keyID: keyID, teamID: teamID)
        case (false, .some(let path)):
            for stray in [Setting.keyID, .teamID] where try value(stray) != nil {
                throw APNsSettingsError(
                    .conflicting, setting: name(stray),
                    "is set together with a client certificate (\(name(.certificateFile))): it belongs to a signing key; unset one of them")
            }
            let keyPath = try value(.certificateKeyFile)
            credentials = .certificate(
                try Self.identity(
                    path: path,
                    keyPath: keyPath,
                    password: try value(.certificatePassword),
                    source
                )
            )
            // The file that holds the private key: the key file, or the certificate's own.
            let exposed = keyPath.map { Self.exposure(of: $0, name(.certificateKeyFile)) } ?? Self.exposure(of: path, name(.certificateFile))
            if let exposed { warnings.append(exposed) }
        }
        if let keyFile, let warning = Self.exposure(of: keyFile, name(.keyFile)) { warnings.append(warning) }
    }

    /// A warning when the file at `path` (named by `setting`), which holds a private key,
    /// may be read or written by users other than its owner; `nil` otherwise, or when its
    /// mode cannot be read (opening it said what was wrong).
    static func exposure(of path: String, _ setting: String) -> String? {
        exposedMode(of: path).map {
            "\(setting) (\(path)) holds a private key and is accessible to other users (mode \(String($0, radix: 8))): run chmod 600 \(path)"
        }
    }

    /// The permission bits of the file at `path` when they grant its group or others any
    /// access; `nil` when they do not, or cannot be read (opening the file says why). The
    /// one check behind ``warnings`` and the `apns` tool's refusal of such a key file.
    package static func exposedMode(of path: String) -> Int? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        let mode = Int(status.st_mode) & 0o777
        return mode & 0o077 != 0 ? mode : nil
    }

    /// A client over a new `HTTP2Transport` to ``environment``, with these credentials;
    /// `configure` may change the rest of the transport's configuration. The client owns
    /// the transport: its `shutdown()` closes the connections.
    ///
    /// - Throws: ``APNsSettingsError`` when the key ID or team ID is refused by the token cache.
    ///
    /// `retryPolicy`, `metricsFactory` and `tracer` are the client's (see
    /// ``APNsCore/APNsClient/init(environment:credentials:transport:retryPolicy:requestTimeout:logger:metricsFactory:tracer:)``);
    /// `metricsFactory` also goes to the transport and the provider token cache, as a test
    /// with swift-metrics' `TestMetrics` needs.
    public func makeClient(
        logger: Logger = Logger(label: "swift-apns", factory: { _ in SwiftLogNoOpLogHandler() }),
        retryPolicy: RetryPolicy = .default,
        metricsFactory: (any MetricsFactory)? = nil,
        tracer: (any Tracer)? = nil,
        _ configure: (inout HTTP2Transport.Configuration) -> Void = { _ in }
    ) throws(APNsSettingsError) -> APNsClient {
        let clientCredentials = try makeCredentials(logger: logger, metricsFactory: metricsFactory)
        let transport = makeTransport(logger: logger) { configuration in
            if let metricsFactory { configuration.metricsFactory = metricsFactory }
            configure(&configuration)
        }
        return APNsClient(
            credentials: clientCredentials,
            transport: transport,
            retryPolicy: retryPolicy,
            requestTimeout: requestTimeout ?? APNsRequest.defaultTimeout,
            logger: logger,
            metricsFactory: metricsFactory,
            tracer: tracer
        )
    }

    /// A new `HTTP2Transport` to ``environment`` that trusts ``trustRoots`` and presents the
    /// client certificate when the credentials are one; `configure` may change the rest of its configuration.
    ///
    /// For a server that runs the transport as a `Service` (so that a `ServiceGroup` drains
    /// it on SIGTERM): make the transport here, give it to ``makeClient(transport:logger:retryPolicy:metricsFactory:tracer:)``,
    /// and put it in the group.
    public func makeTransport(
        logger: Logger = Logger(label: "swift-apns", factory: { _ in SwiftLogNoOpLogHandler() }),
        _ configure: (inout HTTP2Transport.Configuration) -> Void = { _ in }
    ) -> HTTP2Transport {
        var configuration = HTTP2Transport.Configuration(environment: environment, logger: logger)
        configuration.tls.trustRoots = trustRoots
        configuration.tls.proxy = proxy
        if let connectionCount { configuration.connectionCount = connectionCount }
        if let connectTimeout { configuration.connectTimeout = connectTimeout }
        if case .certificate(let identity) = credentials {
            configuration.tls.clientIdentity = identity
        }
        configure(&configuration)
        return HTTP2Transport(configuration: configuration)
    }

    /// A client with these credentials over `transport`, which should be one made by
    /// ``makeTransport(logger:_:)``: it sends where these settings say and presents their
    /// certificate. The client sends to the transport's environment.
    ///
    /// - Throws: ``APNsSettingsError`` when the key ID or team ID is refused by the token cache.
    /// `retryPolicy`, `metricsFactory` and `tracer` are the client's, as in
    /// ``makeClient(logger:retryPolicy:metricsFactory:tracer:_:)`` (the transport's metrics
    /// are the transport's own configuration).
    public func makeClient(
        transport: some PushTransport,
        logger: Logger = Logger(label: "swift-apns", factory: { _ in SwiftLogNoOpLogHandler() }),
        retryPolicy: RetryPolicy = .default,
        metricsFactory: (any MetricsFactory)? = nil,
        tracer: (any Tracer)? = nil
    ) throws(APNsSettingsError) -> APNsClient {
        APNsClient(
            credentials: try makeCredentials(logger: logger, metricsFactory: metricsFactory),
            transport: transport,
            retryPolicy: retryPolicy,
            requestTimeout: requestTimeout ?? APNsRequest.defaultTimeout,
            logger: logger,
            metricsFactory: metricsFactory,
            tracer: tracer
        )
    }

    /// The client's credentials: a token cache for a key (one signature every 50 minutes),
    /// or the certificate the transport presents.
    private func makeCredentials(logger: Logger, metricsFactory: (any MetricsFactory)?) throws(APNsSettingsError) -> APNsCredentials {
        for warning in warnings { logger.warning("\(warning)") }
        switch credentials {
        case .providerToken(let key, let keyID, let teamID):
            do {
                return .providerToken(try ProviderTokenCache(key: key, keyID: keyID, teamID: teamID, logger: logger, metricsFactory: metricsFactory))
            } catch {
                throw APNsSettingsError(.malformed, setting: Setting.keyID.environmentVariable, "or APNS_TEAM_ID is refused: \(error)")
            }
        case .certificate:
            return .certificate
        }
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
            if text.contains("://") || text.contains("/") || text.contains(where: \.isWhitespace) {
                throw APNsSettingsError(
                    .malformed,
                    setting: Setting.environment.environmentVariable,
                    "is \"\(text)\": expected production, sandbox, or host:port without a scheme or path (for example 127.0.0.1:2197)"
                )
            }
            if !text.hasPrefix("["), text.filter({ $0 == ":" }).count > 1 {
                throw APNsSettingsError(
                    .malformed,
                    setting: Setting.environment.environmentVariable,
                    "is \"\(text)\": write an IPv6 address in brackets, then the port (for example [::1]:2197)"
                )
            }
            // The port: decimal digits only (no sign), 1 to 65535.
            guard let colon = text.lastIndex(of: ":"), colon > text.startIndex,
                case let digits = text[text.index(after: colon)...], !digits.isEmpty,
                digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                let port = Int(digits), (1...65535).contains(port)
            else {
                throw APNsSettingsError(
                    .malformed,
                    setting: Setting.environment.environmentVariable,
                    "is \"\(text)\": expected production, sandbox, or host:port (for example 127.0.0.1:2197)"
                )
            }
            // The host: a name or IPv4 address as it is, an IPv6 address in brackets; never
            // empty, and brackets only around an IPv6 address (`[]:443`, `[::1:2197` and
            // `host]:443` would otherwise become a host no connection can reach).
            var host = String(text[..<colon])
            let bracketed = host.hasPrefix("[")
            if bracketed {
                let inner = host.dropFirst().dropLast()
                guard host.hasSuffix("]"), inner.contains(":"), !inner.contains(where: { $0 == "[" || $0 == "]" }) else {
                    throw APNsSettingsError(
                        .malformed,
                        setting: Setting.environment.environmentVariable,
                        "is \"\(text)\": only an IPv6 address goes in brackets, closed before the port (for example [::1]:2197)"
                    )
                }
                host = String(inner)
            } else if host.contains(where: { $0 == "[" || $0 == "]" }) {
                throw APNsSettingsError(
                    .malformed,
                    setting: Setting.environment.environmentVariable,
                    "is \"\(text)\": a bracket belongs only around an IPv6 address (for example [::1]:2197)"
                )
            }
            return .custom(host: host, port: port)
        }
    }

    /// A connection count as `APNS_CONNECTIONS` holds one: 1 to 64, or `nil`.
    package static func connectionCount(_ text: String) -> Int? {
        guard let count = Int(text), (1...64).contains(count) else { return nil }
        return count
    }

    /// A duration given in decimal seconds (`30`, `2.5`, `1e-3`), as the timeout settings hold one: at
    /// least a millisecond (`0.001`; less would round to no time at all), at most a day;
    /// `nil` otherwise.
    package static func duration(seconds text: String) -> Duration? {
        // Decimal only: `Double` also reads hexadecimal (`0x10` would be 16 seconds).
        guard text.allSatisfy({ $0.isASCII && ($0.isNumber || ".eE+-".contains($0)) }),
            let seconds = Double(text), seconds.isFinite, seconds >= 0.001, seconds <= 86_400 else { return nil }
        let milliseconds = Int64((seconds * 1000).rounded())
        guard milliseconds >= 1 else { return nil }
        return .milliseconds(milliseconds)
    }

    /// ``duration(seconds:)``, or an error naming `setting`.
    static func seconds(_ text: String, _ setting: Setting, _ source: Source) throws(APNsSettingsError) -> Duration {
        guard let duration = duration(seconds: text) else {
            throw APNsSettingsError(
                .malformed,
                setting: source.name(setting),
                "is '\(text)': expected a number of seconds from 0.001 to 86400 (for example 10 or 2.5)"
            )
        }
        return duration
    }

    /// A 10-character Apple identifier (digits and capital letters).
    static func identifier(_ setting: Setting, _ value: String?, _ source: Source) throws(APNsSettingsError) -> String {
        let name = source.name(setting)
        guard let value else {
            throw APNsSettingsError(
                .missing,
                setting: name,
                "is not set: a signing key needs \(source.name(.keyID)) and \(source.name(.teamID))"
            )
        }
        guard value.utf8.count == 10, value.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) }) else {
            throw APNsSettingsError(.malformed, setting: name, "is \"\(value)\": expected a 10-character Apple identifier (digits and capital letters)")
        }
        return value
    }

    static func identity(path: String, keyPath: String?, password: String?, _ source: Source) throws(APNsSettingsError) -> ClientIdentity {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw APNsSettingsError(.unusable, setting: source.name(.certificateFile), "(\(path)) cannot be read: check the path and its permissions")
        }
        let text = String(decoding: data, as: UTF8.self)
        do {
            guard text.contains("-----BEGIN") else {
                let opened = Result { () throws(ClientIdentityError) in try ClientIdentity(pkcs12Data: data, password: password ?? "") }
                // Only a password can open an archive that a wrong (or no) password did not:
                // a file that is no archive at all is the certificate file's problem.
                if password == nil, case .failure(let error) = opened, error.code == .wrongPassword || error.code == .passwordRequired {
                    throw APNsSettingsError(
                        .unusable, setting: source.name(.certificatePassword),
                        "is not set, and \(source.name(.certificateFile)) (\(path)) cannot be opened without a password: \(error)")
                }
                return try opened.get()
            }
            if keyPath == nil, !text.contains("PRIVATE KEY-----") {
                throw APNsSettingsError(
                    .unusable, setting: source.name(.certificateFile),
                    "(\(path)) holds a certificate but no private key: add the key to the file, or name the key's file in \(source.name(.certificateKeyFile))")
            }
            var keyText = text
            if let keyPath {
                guard let keyData = FileManager.default.contents(atPath: keyPath) else {
                    throw APNsSettingsError(
                        .unusable,
                        setting: source.name(.certificateKeyFile),
                        "(\(keyPath)) cannot be read: check the path and its permissions"
                    )
                }
                keyText = String(decoding: keyData, as: UTF8.self)
            }
            return try ClientIdentity(certificatePEM: text, privateKeyPEM: keyText, password: password)
        } catch let error as APNsSettingsError {
            throw error
        } catch {
            throw APNsSettingsError(.unusable, setting: source.name(.certificateFile), "(\(path)) cannot be used: \(error)")
        }
    }
}

extension APNsSettings {
    /// One setting, as an environment variable and as a configuration key.
    package enum Setting: CaseIterable, Sendable {
        case environment, keyFile, key, keyID, teamID, certificateFile, certificateKeyFile, certificatePassword, topic, caFile, proxy
        case connections, connectTimeout, requestTimeout

        /// Its environment variable, such as `APNS_KEY_ID`.
        package var environmentVariable: String {
            switch self {
            case .environment: "APNS_ENVIRONMENT"
            case .keyFile: "APNS_KEY_FILE"
            case .key: "APNS_KEY"
            case .keyID: "APNS_KEY_ID"
            case .teamID: "APNS_TEAM_ID"
            case .certificateFile: "APNS_CERTIFICATE_FILE"
            case .certificateKeyFile: "APNS_CERTIFICATE_KEY_FILE"
            case .certificatePassword: "APNS_CERTIFICATE_PASSWORD"
            case .topic: "APNS_TOPIC"
            case .caFile: "APNS_CA_FILE"
            case .proxy: "APNS_PROXY"
            case .connections: "APNS_CONNECTIONS"
            case .connectTimeout: "APNS_CONNECT_TIMEOUT"
            case .requestTimeout: "APNS_REQUEST_TIMEOUT"
            }
        }

        /// Its configuration key, such as `keyID`: swift-configuration's environment
        /// provider maps `apns.keyID` to `APNS_KEY_ID`, so under the scope `apns` the keys
        /// and the variables are the same settings.
        package var configKey: String {
            switch self {
            case .environment: "environment"
            case .keyFile: "keyFile"
            case .key: "key"
            case .keyID: "keyID"
            case .teamID: "teamID"
            case .certificateFile: "certificateFile"
            case .certificateKeyFile: "certificateKeyFile"
            case .certificatePassword: "certificatePassword"
            case .topic: "topic"
            case .caFile: "caFile"
            case .proxy: "proxy"
            case .connections: "connections"
            case .connectTimeout: "connectTimeout"
            case .requestTimeout: "requestTimeout"
            }
        }

        /// Whether the value is a secret (a key's PEM, a password, a proxy URL that may hold
        /// one): never logged or shown.
        package var isSecret: Bool { self == .key || self == .certificatePassword || self == .proxy }

        /// Whether the value is a number (a configuration file may hold it as one).
        package var isNumber: Bool { self == .connections || self == .connectTimeout || self == .requestTimeout }
    }

    /// What a source holds for one setting.
    package enum Lookup: Sendable {
        /// Nothing.
        case absent
        /// Text.
        case value(String)
        /// A value that is not text (a number, a boolean), described for the error.
        case notText(String)
    }

    /// Where settings come from: how to read one, and how an error names it.
    package struct Source {
        /// The name of a setting in errors (a variable or a configuration key).
        package var name: (Setting) -> String
        /// What the source holds for a setting.
        package var lookup: (Setting) -> Lookup

        /// A source that names settings with `name` and reads them with `lookup`.
        package init(name: @escaping (Setting) -> String, lookup: @escaping (Setting) -> Lookup) {
            self.name = name
            self.lookup = lookup
        }
    }
}

/// A setting that is missing or malformed, named as it was given: an environment
/// variable (`APNS_KEY_ID`) or a configuration key (`keyID`).
public struct APNsSettingsError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of problem: an open set, so new kinds can be added without breaking callers.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case missing
            case malformed
            case conflicting
            case unusable
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A required setting is not set (or is empty).
        public static let missing = Code(.missing)
        /// A setting's value is not one the setting accepts (an unknown environment, an
        /// identifier of the wrong shape, a number where text belongs).
        public static let malformed = Code(.malformed)
        /// Two settings that exclude each other are both set (a signing key and a certificate).
        public static let conflicting = Code(.conflicting)
        /// A key or certificate that cannot be read or used (a missing file, a wrong password).
        public static let unusable = Code(.unusable)

        /// A short, stable name for the code, safe for metric labels.
        public var description: String { base.rawValue }
    }

    /// The kind of problem.
    public let code: Code
    /// The setting, as given: the variable (`APNS_KEY_ID`) or the configuration key (`keyID`).
    public let setting: String
    /// What is wrong with it.
    public let problem: String

    /// The setting's name; ``setting`` says the same for configuration keys too.
    @available(*, deprecated, renamed: "setting")
    public var variable: String { setting }

    package init(_ code: Code, setting: String, _ problem: String) {
        self.code = code
        self.setting = setting
        self.problem = problem
    }

    /// `<setting> <problem>`, for example `APNS_KEY_ID is not set: …`.
    public var description: String { setting + " " + problem }
}
