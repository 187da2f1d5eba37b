import APNsConfiguration
import APNsTransport
import Configuration
import Foundation
import Synchronization
import Testing

/// Settings from a swift-configuration `ConfigReader`: the same settings as the `APNS_*`
/// variables, read through swift-configuration's own providers. The key is a P-256 key
/// that `openssl genpkey` made (see APNsCoreTests/Fixtures/auth/generate.sh).
@Suite("APNsSettings from a ConfigReader")
struct APNsSettingsConfigReaderTests {
    static let keyPath = Bundle.module.path(forResource: "AuthKey_TEST", ofType: "p8", inDirectory: "Fixtures") ?? "missing"

    /// Complete token settings, under the scope `apns`.
    static let tokenValues: [AbsoluteConfigKey: ConfigValue] = [
        "apns.environment": "sandbox",
        "apns.keyFile": .init(stringLiteral: keyPath),
        "apns.keyID": "ABC123DEFG",
        "apns.teamID": "DEF123GHIJ",
        "apns.topic": "com.example.app",
    ]

    private func reader(_ values: [AbsoluteConfigKey: ConfigValue]) -> ConfigReader {
        ConfigReader(provider: InMemoryProvider(values: values)).scoped(to: "apns")
    }

    private func error(_ values: [AbsoluteConfigKey: ConfigValue]) -> APNsSettingsError? {
        do {
            _ = try APNsSettings(config: reader(values))
            return nil
        } catch {
            return error
        }
    }

    @Test("an in-memory provider: token settings, and a client that takes their environment")
    func tokenSettings() throws {
        let settings = try APNsSettings(config: reader(Self.tokenValues))
        #expect(settings.environment == .sandbox)
        #expect(settings.topic == "com.example.app")
        guard case .providerToken(_, let keyID, let teamID) = settings.credentials else {
            Issue.record("not token credentials")
            return
        }
        #expect(keyID == "ABC123DEFG" && teamID == "DEF123GHIJ")
        let client = try settings.makeClient()
        #expect(client.environment == .sandbox)

        // The key's PEM text itself, as a secret, instead of a path; host:port environments.
        var inline = Self.tokenValues
        inline["apns.keyFile"] = nil
        inline["apns.key"] = ConfigValue(.string(try String(contentsOfFile: Self.keyPath, encoding: .utf8)), isSecret: true)
        inline["apns.environment"] = "[::1]:8443"
        #expect(try APNsSettings(config: reader(inline)).environment == .custom(host: "::1", port: 8443))
    }

    @Test("each missing, malformed or conflicting key is named as the reader reads it")
    func namesTheKey() throws {
        let good = Self.tokenValues
        func without(_ key: AbsoluteConfigKey) -> [AbsoluteConfigKey: ConfigValue] { good.filter { $0.key != key } }
        func with(_ key: AbsoluteConfigKey, _ value: ConfigValue) -> [AbsoluteConfigKey: ConfigValue] {
            good.merging([key: value]) { $1 }
        }
        let cases: [([AbsoluteConfigKey: ConfigValue], String, APNsSettingsError.Code)] = [
            (without("apns.environment"), "environment", .missing),
            (with("apns.environment", "moon"), "environment", .malformed),
            (with("apns.environment", "127.0.0.1:99999"), "environment", .malformed),
            (with("apns.environment", 2197), "environment", .malformed),  // a number, not text
            (without("apns.keyID"), "keyID", .missing),
            (with("apns.keyID", "abc"), "keyID", .malformed),
            (with("apns.keyID", 1_234_567_890), "keyID", .malformed),
            (with("apns.teamID", "DEF123GHI!"), "teamID", .malformed),
            (with("apns.keyFile", "/nonexistent/AuthKey.p8"), "keyFile", .unusable),
            (without("apns.keyFile"), "keyFile", .missing),
            (with("apns.key", "not a key").filter { $0.key != "apns.keyFile" }, "key", .unusable),
            (with("apns.key", "not a key"), "key", .conflicting),
            (with("apns.certificateFile", "/x.p12"), "certificateFile", .conflicting),
            (with("apns.topic", true), "topic", .malformed),
            (with("apns.caFile", "/nonexistent/ca.pem"), "caFile", .unusable),
            (with("apns.caFile", .init(stringLiteral: Self.keyPath)), "caFile", .unusable),  // a key, not a certificate
        ]
        for (values, key, code) in cases {
            let problem = error(values)
            #expect(problem?.setting == key, "\(values.keys.map(\.description).sorted()): \(String(describing: problem))")
            #expect(problem?.code == code, "\(key): \(String(describing: problem))")
            #expect(problem?.description.hasPrefix(key + " ") == true)
        }
        // The messages name the other keys the same way.
        #expect(error(without("apns.keyFile"))?.problem.contains("certificateFile") == true)
        // An in-memory value did not come from the environment: the variable is offered as
        // where the setting lives there, not as where this value was read.
        let inMemory = error(with("apns.keyID", "abc"))
        #expect(inMemory?.problem.contains("from the environment") == false, "\(String(describing: inMemory))")
        #expect(inMemory?.problem.hasSuffix("(in the environment, under the scope apns: APNS_KEY_ID)") == true, "\(String(describing: inMemory))")
    }

    @Test("swift-configuration's environment provider: APNS_* variables under the scope apns")
    func environmentProvider() throws {
        let variables = [
            "APNS_ENVIRONMENT": "127.0.0.1:2197",
            "APNS_KEY_FILE": Self.keyPath,
            "APNS_KEY_ID": "ABC123DEFG",
            "APNS_TEAM_ID": "DEF123GHIJ",
            "APNS_TOPIC": "com.example.app",
            "PATH": "/usr/bin",
        ]
        let config = ConfigReader(provider: EnvironmentVariablesProvider(environmentVariables: variables))
        let settings = try APNsSettings(config: config.scoped(to: "apns"))
        let direct = try APNsSettings(environmentVariables: variables)
        #expect(settings.environment == .custom(host: "127.0.0.1", port: 2197))
        #expect(settings.environment == direct.environment)
        #expect(settings.topic == direct.topic)

        // The same malformed value: the same problem, named once as a key (with the
        // variable that holds it in the environment), once as a variable.
        var bad = variables
        bad["APNS_TEAM_ID"] = "team"
        let fromConfig = #expect(throws: APNsSettingsError.self) {
            try APNsSettings(config: ConfigReader(provider: EnvironmentVariablesProvider(environmentVariables: bad)).scoped(to: "apns"))
        }
        let fromVariables = #expect(throws: APNsSettingsError.self) { try APNsSettings(environmentVariables: bad) }
        #expect(fromConfig?.setting == "teamID")
        #expect(fromVariables?.setting == "APNS_TEAM_ID")
        #expect(fromConfig?.problem == (fromVariables?.problem ?? "") + " (in the environment, under the scope apns: APNS_TEAM_ID)")
        #expect(fromConfig?.code == .malformed && fromVariables?.code == .malformed)
    }

    @Test("connections and the timeouts, as numbers or as text; a bad one is named by its key")
    func tuning() throws {
        var values = Self.tokenValues
        values["apns.connections"] = 3
        values["apns.connectTimeout"] = 1.5
        values["apns.requestTimeout"] = "20"
        let settings = try APNsSettings(config: reader(values))
        #expect(settings.connectionCount == 3)
        #expect(settings.connectTimeout == .milliseconds(1500))
        #expect(settings.requestTimeout == .seconds(20))
        values["apns.connections"] = 100
        #expect(error(values)?.setting == "connections")
        values["apns.connections"] = "2"
        values["apns.requestTimeout"] = true
        #expect(error(values)?.problem.contains("a boolean") == true)
    }

    @Test("proxy: the same URL forms and errors as APNS_PROXY")
    func proxy() throws {
        var values = Self.tokenValues
        values["apns.proxy"] = "socks5://apns:p%40ss@10.0.0.7"
        let settings = try APNsSettings(config: reader(values))
        #expect(settings.proxy == .socks5(host: "10.0.0.7", port: 1080, username: "apns", password: "p@ss"))
        values["apns.proxy"] = "ftp://apns:hunter2@proxy:21"
        let refused = error(values)
        #expect(refused?.setting == "proxy")
        #expect(refused?.problem.contains("unsupported scheme 'ftp'") == true, "\(String(describing: refused))")
        #expect(refused?.description.contains("hunter2") == false)
        values["apns.proxy"] = 1080
        #expect(error(values)?.problem.contains("a number") == true)
    }

    @Test("the key's PEM, the certificate password and the proxy URL are read as secrets")
    func secretsAreMarked() throws {
        let reporter = RecordingReporter()
        var values = Self.tokenValues
        values["apns.keyFile"] = nil
        values["apns.key"] = ConfigValue(.string(try String(contentsOfFile: Self.keyPath, encoding: .utf8)), isSecret: false)
        values["apns.proxy"] = ConfigValue(.string("socks5://apns:hunter2@10.0.0.7:1080"), isSecret: false)
        let config = ConfigReader(provider: InMemoryProvider(values: values), accessReporter: reporter)
        _ = try APNsSettings(config: config.scoped(to: "apns"))
        func reads(_ key: AbsoluteConfigKey) -> [ConfigValue] {
            reporter.events.filter { $0.metadata.key == key }.compactMap { (try? $0.result.get()) ?? nil }
        }
        // Given as not secret, read as secret: the reader marks it, and reporters redact it.
        #expect(!reads("apns.key").isEmpty)
        #expect(reads("apns.key").allSatisfy { $0.isSecret })
        #expect(!reads("apns.proxy").isEmpty)
        #expect(reads("apns.proxy").allSatisfy { $0.isSecret })
        #expect(!reads("apns.keyID").isEmpty)
        #expect(reads("apns.keyID").allSatisfy { !$0.isSecret })
    }
}

/// Records what the reader reports, to see how each value was read.
final class RecordingReporter: AccessReporter, Sendable {
    private let recorded = Mutex<[AccessEvent]>([])
    var events: [AccessEvent] { recorded.withLock { $0 } }
    func report(_ event: AccessEvent) { recorded.withLock { $0.append(event) } }
}
