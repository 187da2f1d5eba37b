import APNsMockServer
import Foundation
import Logging
import Testing
@testable import APNsTransport

/// Settings from environment variables: every missing or malformed variable is named,
/// and complete settings make a client that sends. Keys and certificates are made by
/// `openssl` (``TestPKI``), not by the SDK.
@Suite("APNsSettings from environment variables")
struct APNsSettingsTests {
    private func error(_ variables: [String: String]) -> APNsSettingsError? {
        do {
            _ = try APNsSettings(environmentVariables: variables)
            return nil
        } catch {
            return error
        }
    }

    private func tokenVariables() throws -> [String: String] {
        [
            "APNS_ENVIRONMENT": "sandbox",
            "APNS_KEY_FILE": try TestPKI.get().path("stray.key"),
            "APNS_KEY_ID": "ABC123DEFG",
            "APNS_TEAM_ID": "DEF123GHIJ",
            "APNS_TOPIC": "com.example.app",
        ]
    }

    @Test("each missing or malformed variable is named")
    func namesTheVariable() throws {
        let good = try tokenVariables()
        var cases: [([String: String], String)] = []
        cases.append((good.filter { $0.key != "APNS_ENVIRONMENT" }, "APNS_ENVIRONMENT"))
        cases.append((good.merging(["APNS_ENVIRONMENT": "moon"]) { $1 }, "APNS_ENVIRONMENT"))
        cases.append((good.merging(["APNS_ENVIRONMENT": "127.0.0.1:99999"]) { $1 }, "APNS_ENVIRONMENT"))
        cases.append((good.filter { $0.key != "APNS_KEY_ID" }, "APNS_KEY_ID"))
        cases.append((good.merging(["APNS_KEY_ID": "abc"]) { $1 }, "APNS_KEY_ID"))
        cases.append((good.merging(["APNS_TEAM_ID": "DEF123GHI!"]) { $1 }, "APNS_TEAM_ID"))
        cases.append((good.merging(["APNS_KEY_FILE": "/nonexistent/AuthKey.p8"]) { $1 }, "APNS_KEY_FILE"))
        cases.append((good.filter { $0.key != "APNS_KEY_FILE" }, "APNS_KEY_FILE"))
        cases.append((good.merging(["APNS_KEY": "not a key"]) { $1 }.filter { $0.key != "APNS_KEY_FILE" }, "APNS_KEY"))
        cases.append((good.merging(["APNS_CERTIFICATE_FILE": "/x.p12"]) { $1 }, "APNS_CERTIFICATE_FILE"))
        cases.append((good.merging(["APNS_PROXY": "socks4://proxy:1080"]) { $1 }, "APNS_PROXY"))
        cases.append((good.merging(["APNS_PROXY": "http://proxy:port"]) { $1 }, "APNS_PROXY"))
        // A URL where host:port belongs, and an IPv6 address without its brackets: named
        // when read, not as a name that does not resolve at the first send.
        cases.append((good.merging(["APNS_ENVIRONMENT": "https://127.0.0.1:2197"]) { $1 }, "APNS_ENVIRONMENT"))
        cases.append((good.merging(["APNS_ENVIRONMENT": "127.0.0.1:2197/3/device"]) { $1 }, "APNS_ENVIRONMENT"))
        cases.append((good.merging(["APNS_ENVIRONMENT": "2001:db8::1:2197"]) { $1 }, "APNS_ENVIRONMENT"))
        // A topic no bundle ID can be.
        cases.append((good.merging(["APNS_TOPIC": "com.example app"]) { $1 }, "APNS_TOPIC"))
        // The other way of authenticating's settings beside this one: a half-finished switch.
        cases.append((good.merging(["APNS_CERTIFICATE_PASSWORD": "secret"]) { $1 }, "APNS_CERTIFICATE_PASSWORD"))
        cases.append((good.merging(["APNS_CERTIFICATE_KEY_FILE": "/tmp/key.pem"]) { $1 }, "APNS_CERTIFICATE_KEY_FILE"))
        for (variables, name) in cases {
            let problem = error(variables)
            #expect(problem?.setting == name, "\(variables.keys.sorted()): \(String(describing: problem))")
            #expect(problem?.description.hasPrefix(name) == true)
        }
    }

    @Test("a key or certificate pasted where its path or an identifier goes is named, never quoted")
    func keyMaterialInTheWrongSettingIsNotEchoed() throws {
        let pki = try TestPKI.get()
        let good = try tokenVariables()
        let keyPEM = try pki.text("stray.key")
        let certificateAndKey = try pki.text("client.pem") + pki.text("client.key")
        // The base64 body alone, as a secret store may hold it.
        let keyBase64 = keyPEM.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        let bodyLines = (keyPEM + certificateAndKey).split(separator: "\n").filter { !$0.hasPrefix("-----") && $0.count > 16 }
        let cases: [([String: String], String)] = [
            (good.merging(["APNS_KEY_FILE": keyPEM]) { $1 }, "APNS_KEY_FILE"),
            (good.merging(["APNS_KEY_FILE": keyBase64]) { $1 }, "APNS_KEY_FILE"),
            (good.merging(["APNS_KEY_ID": keyPEM]) { $1 }, "APNS_KEY_ID"),
            (good.merging(["APNS_TEAM_ID": keyBase64]) { $1 }, "APNS_TEAM_ID"),
            (good.merging(["APNS_TOPIC": keyPEM]) { $1 }, "APNS_TOPIC"),
            (good.merging(["APNS_ENVIRONMENT": keyPEM]) { $1 }, "APNS_ENVIRONMENT"),
            (["APNS_ENVIRONMENT": "sandbox", "APNS_CERTIFICATE_FILE": certificateAndKey], "APNS_CERTIFICATE_FILE"),
            (["APNS_ENVIRONMENT": "sandbox", "APNS_CERTIFICATE_FILE": pki.path("client.pem"), "APNS_CERTIFICATE_KEY_FILE": try pki.text("client.key")],
             "APNS_CERTIFICATE_KEY_FILE"),
        ]
        for (variables, name) in cases {
            let problem = try #require(error(variables), "\(name)")
            #expect(problem.setting == name, "\(problem)")
            #expect(problem.description.contains("not shown"), "\(problem)")
            for line in bodyLines {
                #expect(!problem.description.contains(line), "\(name): the message quotes the key or certificate")
            }
        }
        // The key's text where it belongs, and a path to a file that exists, are read as ever.
        var asText = good
        asText["APNS_KEY_FILE"] = nil
        asText["APNS_KEY"] = keyPEM
        #expect(error(asText) == nil)
        #expect(error(good) == nil)
        // A long bundle ID of letters and digits alone is a topic, not a key.
        let longTopic = "Com" + String(repeating: "Example7", count: 8)
        #expect(error(good.merging(["APNS_TOPIC": longTopic]) { $1 }) == nil)

        // The same mistake in code: ProviderKey and ClientIdentity given the text as a path.
        do {
            _ = try ProviderKey(contentsOfFile: keyPEM)
            Issue.record("a PEM text read as a path")
        } catch {
            #expect(error.code == .fileNotReadable)
            #expect(!bodyLines.contains { error.description.contains($0) }, "\(error)")
        }
        do {
            _ = try ClientIdentity(pkcs12File: certificateAndKey, password: "")
            Issue.record("a PEM text read as a path")
        } catch {
            #expect(error.code == .fileNotReadable)
            #expect(!bodyLines.contains { error.description.contains($0) }, "\(error)")
        }
    }

    @Test("APNS_PROXY: an HTTP or SOCKS5 proxy URL for every connection; a refused one never shows its password")
    func proxy() throws {
        var variables = try tokenVariables()
        #expect(try APNsSettings(environmentVariables: variables).proxy == nil)
        variables["APNS_PROXY"] = "socks5://apns:p%40ss@10.0.0.7:1080"
        let settings = try APNsSettings(environmentVariables: variables)
        #expect(settings.proxy == .socks5(host: "10.0.0.7", port: 1080, username: "apns", password: "p@ss"))
        #expect(settings.makeTransport().configuration.tls.proxy == settings.proxy)
        variables["APNS_PROXY"] = "proxy.corp.example:3128"
        #expect(try APNsSettings(environmentVariables: variables).proxy == ProxyConfiguration(host: "proxy.corp.example", port: 3128))
        variables["APNS_PROXY"] = "https://apns:hunter2@proxy:443"
        let refused = error(variables)
        #expect(refused?.setting == "APNS_PROXY")
        #expect(refused?.code == .malformed)
        #expect(refused?.description.contains("https://apns:***@proxy:443") == true, "\(String(describing: refused))")
        #expect(refused?.description.contains("hunter2") == false)
    }

    @Test("APNS_CONNECTIONS, APNS_CONNECT_TIMEOUT and APNS_REQUEST_TIMEOUT reach the transport and the client; bad values are named")
    func tuning() throws {
        var variables = try tokenVariables()
        let defaults = try APNsSettings(environmentVariables: variables)
        #expect(defaults.connectionCount == nil && defaults.connectTimeout == nil && defaults.requestTimeout == nil)
        #expect(try defaults.makeClient().requestTimeout == APNsRequest.defaultTimeout)
        variables["APNS_CONNECTIONS"] = "4"
        variables["APNS_CONNECT_TIMEOUT"] = "2.5"
        variables["APNS_REQUEST_TIMEOUT"] = " 10 "
        let settings = try APNsSettings(environmentVariables: variables)
        #expect(settings.connectionCount == 4)
        #expect(settings.connectTimeout == .milliseconds(2500))
        #expect(settings.requestTimeout == .seconds(10))
        let transport = settings.makeTransport()
        #expect(transport.configuration.connectionCount == 4)
        #expect(transport.configuration.connectTimeout == .milliseconds(2500))
        #expect(try settings.makeClient().requestTimeout == .seconds(10))
        #expect(try settings.makeClient(transport: transport).requestTimeout == .seconds(10))
        // `configure` still has the last word.
        #expect(settings.makeTransport { $0.connectionCount = 2 }.configuration.connectionCount == 2)

        let refused: [(String, String)] = [
            ("APNS_CONNECTIONS", "0"), ("APNS_CONNECTIONS", "65"), ("APNS_CONNECTIONS", "four"), ("APNS_CONNECTIONS", "2.5"),
            ("APNS_CONNECT_TIMEOUT", "0"), ("APNS_CONNECT_TIMEOUT", "-1"), ("APNS_CONNECT_TIMEOUT", "ten"),
            ("APNS_REQUEST_TIMEOUT", "inf"), ("APNS_REQUEST_TIMEOUT", "nan"), ("APNS_REQUEST_TIMEOUT", "86401"), ("APNS_REQUEST_TIMEOUT", "30s"),
            // Above 0 but less than a millisecond: it would round to no time at all.
            ("APNS_REQUEST_TIMEOUT", "0.0000000001"), ("APNS_CONNECT_TIMEOUT", "0.0004"),
        ]
        for (name, value) in refused {
            let problem = error(try tokenVariables().merging([name: value]) { $1 })
            #expect(problem?.setting == name, "\(name)=\(value): \(String(describing: problem))")
            #expect(problem?.code == .malformed)
            #expect(problem?.problem.contains("'\(value)'") == true)
        }
    }

    @Test("APNS_REQUEST_TIMEOUT bounds a send: an answer a 2-second round trip away fails it with a timeout, not after 30 s")
    func requestTimeoutApplies() async throws {
        try await withCertificateServerSettings { server, variables, ca in
            let settings = try APNsSettings(environmentVariables: variables.merging(["APNS_REQUEST_TIMEOUT": "0.5"]) { $1 })
            let client = try settings.makeClient(transport: settings.makeTransport { $0.tls.trustRoots = .certificates(ca) })
            let notification = PushNotification(payload: .alert(body: "Hi"), topic: .bundleID("com.example.app"))
            // The connection opens on a fast link; then every byte is held a second each way.
            _ = try await client.send(notification, to: DeviceToken(bytes: [UInt8](repeating: 5, count: 32)))
            server.setLinkEmulation(.init(oneWayDelay: .seconds(1)))
            let start = ContinuousClock.now
            do {
                _ = try await client.send(notification, to: DeviceToken(bytes: [UInt8](repeating: 6, count: 32)))
                Issue.record("answered across a 2-second round trip within a 0.5 s request timeout")
            } catch let error as APNsError {
                guard case .failed(let failure) = error else {
                    Issue.record("not a failure: \(error)")
                    return
                }
                #expect(failure.code == .timeout, "\(failure)")
                #expect(failure.mayHaveReachedAPNs)
            }
            #expect(ContinuousClock.now - start < .seconds(15))
            server.setLinkEmulation(nil)
            await client.shutdown()
        }
    }

    @Test("environments: production, sandbox, development, host:port and [::1]:port")
    func environments() throws {
        #expect(try APNsSettings.parseEnvironment("production") == .production)
        #expect(try APNsSettings.parseEnvironment("Sandbox") == .sandbox)
        #expect(try APNsSettings.parseEnvironment("development") == .sandbox)
        #expect(try APNsSettings.parseEnvironment("127.0.0.1:2197") == .custom(host: "127.0.0.1", port: 2197))
        #expect(try APNsSettings.parseEnvironment("[::1]:8443") == .custom(host: "::1", port: 8443))
        #expect(try APNsSettings.parseEnvironment("[2001:db8::1]:2197") == .custom(host: "2001:db8::1", port: 2197))
        #expect(try APNsSettings(environmentVariables: try tokenVariables().merging(["APNS_REQUEST_TIMEOUT": "0.001"]) { $1 })
            .requestTimeout == .milliseconds(1))
    }

    @Test("APNS_ENVIRONMENT: an empty host, a bracket without its pair, brackets around a name, a signed port are malformed")
    func malformedHostPort() throws {
        for text in ["[]:443", "[::1:2197", "host]:443", "[foo]:443", "[::1]x:443", "[[::1]]:443", "host:+443", "[::1]:-1"] {
            #expect(throws: APNsSettingsError.self, "\(text)") { try APNsSettings.parseEnvironment(text) }
            let problem = error(try tokenVariables().merging(["APNS_ENVIRONMENT": text]) { $1 })
            #expect(problem?.setting == "APNS_ENVIRONMENT", "\(text): \(String(describing: problem))")
            #expect(problem?.code == .malformed)
        }
        // What is well formed stays so.
        #expect(try APNsSettings.parseEnvironment("localhost:0443") == .custom(host: "localhost", port: 443))
        #expect(try APNsSettings.parseEnvironment("[fe80::1%25eth0]:2197") == .custom(host: "fe80::1%25eth0", port: 2197))
        #expect(try APNsSettings.parseEnvironment("api.push.apple.com:2197") == APNsEnvironment.production.alternatePort)
    }

    /// A new empty directory under the temporary directory, for a test's files.
    static func makeDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apns-settings-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test("APNS_CA_FILE with a damaged certificate block is named when read, not a TLS failure of every connection later")
    func damagedCAFile() throws {
        let directory = try Self.makeDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let damaged = directory.appendingPathComponent("ca.pem").path
        try "-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n".write(toFile: damaged, atomically: true, encoding: .utf8)
        let ca = error(try tokenVariables().merging(["APNS_CA_FILE": damaged]) { $1 })
        #expect(ca?.setting == "APNS_CA_FILE", "\(String(describing: ca))")
        #expect(ca?.code == .unusable)
        // The test PKI's CA is read as before.
        #expect(throws: Never.self) { try APNsSettings(environmentVariables: try tokenVariables().merging(["APNS_CA_FILE": try TestPKI.get().path("ca.pem")]) { $1 }) }
    }

    @Test("APNS_CERTIFICATE_FILE that is neither PEM nor a .p12, without a password: the file is named, not the password")
    func notAnArchive() throws {
        let directory = try Self.makeDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // No password would open it, so the certificate file is named, not the password.
        let junk = directory.appendingPathComponent("client.p12").path
        try Data("hello, not a certificate".utf8).write(to: URL(fileURLWithPath: junk))
        let notArchive = error(["APNS_ENVIRONMENT": "sandbox", "APNS_CERTIFICATE_FILE": junk])
        #expect(notArchive?.setting == "APNS_CERTIFICATE_FILE", "\(String(describing: notArchive))")
        #expect(notArchive?.code == .unusable)
        #expect(notArchive?.problem.contains("not a PKCS#12") == true, "\(String(describing: notArchive))")
    }

    @Test("APNS_CONNECT_TIMEOUT and APNS_REQUEST_TIMEOUT are decimal seconds: hexadecimal is malformed, not read as a number")
    func decimalSeconds() throws {
        for (variable, text) in [("APNS_CONNECT_TIMEOUT", "0x10"), ("APNS_REQUEST_TIMEOUT", "0x1p3"), ("APNS_CONNECT_TIMEOUT", "0X1E")] {
            let problem = error(try tokenVariables().merging([variable: text]) { $1 })
            #expect(problem?.setting == variable, "\(text): \(String(describing: problem))")
            #expect(problem?.code == .malformed)
        }
        let settings = try APNsSettings(environmentVariables: try tokenVariables().merging(["APNS_CONNECT_TIMEOUT": "1e1", "APNS_REQUEST_TIMEOUT": "2.5"]) { $1 })
        #expect(settings.connectTimeout == .seconds(10))
        #expect(settings.requestTimeout == .milliseconds(2500))
    }

    @Test("a signing key from a file or from APNS_KEY's text; the client takes the environment")
    func tokenSettings() throws {
        let pki = try TestPKI.get()
        let settings = try APNsSettings(environmentVariables: tokenVariables())
        #expect(settings.environment == .sandbox)
        #expect(settings.topic == "com.example.app")
        guard case .providerToken(_, let keyID, let teamID) = settings.credentials else {
            Issue.record("not token credentials")
            return
        }
        #expect(keyID == "ABC123DEFG" && teamID == "DEF123GHIJ")
        let client = try settings.makeClient()
        #expect(client.environment == .sandbox)

        var inline = try tokenVariables()
        inline["APNS_KEY_FILE"] = nil
        inline["APNS_KEY"] = try pki.text("stray.key")
        #expect(throws: Never.self) { try APNsSettings(environmentVariables: inline) }
    }

    @Test("a key file other users may read is a warning (logged by makeClient), not an error; mode 600 is none")
    func exposedKeyFile() throws {
        let pki = try TestPKI.get()
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("apns-exposed-\(UUID().uuidString).p8").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try pki.text("stray.key").write(toFile: path, atomically: false, encoding: .utf8)
        var variables = try tokenVariables()
        variables["APNS_KEY_FILE"] = path

        // The mode set by the kernel's chmod(2), as `chmod 644` would.
        #expect(chmod(path, 0o644) == 0)
        let exposed = try APNsSettings(environmentVariables: variables)
        #expect(exposed.warnings.count == 1)
        #expect(exposed.warnings.first?.contains("APNS_KEY_FILE (\(path))") == true, "\(exposed.warnings)")
        #expect(exposed.warnings.first?.contains("mode 644") == true, "\(exposed.warnings)")
        #expect(exposed.warnings.first?.contains("chmod 600 \(path)") == true, "\(exposed.warnings)")
        let store = CapturingLogHandler.Store()
        _ = try exposed.makeClient(logger: Logger(label: "test") { _ in CapturingLogHandler(store: store) })
        #expect(store.events.withLock { $0 }.contains { $0.level == .warning && $0.text.contains("chmod 600") })

        #expect(chmod(path, 0o600) == 0)
        #expect(try APNsSettings(environmentVariables: variables).warnings.isEmpty)
    }

    @Test("a client certificate (.p12 with its password) sends to a mock server that requires one")
    func certificateSettingsSend() async throws {
        let pki = try TestPKI.get()
        // The .p12 made by openssl, with its password.
        try await withCertificateServerSettings { server, variables, ca in
            let settings = try APNsSettings(environmentVariables: variables.merging(["APNS_TOPIC": "com.example.app"]) { $1 })
            let client = try settings.makeClient { $0.tls.trustRoots = .certificates(ca) }
            let notification = PushNotification(payload: .alert(body: "Hi"), topic: .bundleID(try #require(settings.topic)))
            let accepted = try await client.send(notification, to: DeviceToken(bytes: [UInt8](repeating: 7, count: 32)))
            #expect(accepted.apnsID != nil)
            #expect(server.statistics.accepted == 1)
            await client.shutdown()
        }
        // PEM certificate and key in separate files; a wrong password is named.
        #expect(throws: Never.self) {
            try APNsSettings(environmentVariables: [
                "APNS_ENVIRONMENT": "sandbox",
                "APNS_CERTIFICATE_FILE": pki.path("client.pem"),
                "APNS_CERTIFICATE_KEY_FILE": pki.path("client.key"),
            ])
        }
        let wrong = error([
            "APNS_ENVIRONMENT": "sandbox",
            "APNS_CERTIFICATE_FILE": pki.path("client.p12"),
            "APNS_CERTIFICATE_PASSWORD": "wrong",
        ])
        #expect(wrong?.setting == "APNS_CERTIFICATE_FILE")
        // No password for a .p12 that needs one: the missing setting is named.
        let noPassword = error(["APNS_ENVIRONMENT": "sandbox", "APNS_CERTIFICATE_FILE": pki.path("client.p12")])
        #expect(noPassword?.setting == "APNS_CERTIFICATE_PASSWORD", "\(String(describing: noPassword))")
        #expect(noPassword?.description.contains("is not set") == true)
        // A PEM certificate without its key and no APNS_CERTIFICATE_KEY_FILE: both named,
        // not a parameter of the Swift API.
        let noKey = error(["APNS_ENVIRONMENT": "sandbox", "APNS_CERTIFICATE_FILE": pki.path("client.pem")])
        #expect(noKey?.setting == "APNS_CERTIFICATE_FILE")
        #expect(noKey?.description.contains("APNS_CERTIFICATE_KEY_FILE") == true, "\(String(describing: noKey))")
        #expect(noKey?.description.contains("privateKeyPEM") == false)
        // A signing key's settings beside a certificate: a half-finished switch, named.
        for stray in ["APNS_KEY_ID", "APNS_TEAM_ID"] {
            let problem = error([
                "APNS_ENVIRONMENT": "sandbox", "APNS_CERTIFICATE_FILE": pki.path("client.p12"),
                "APNS_CERTIFICATE_PASSWORD": TestPKI.password, stray: "ABC123DEFG",
            ])
            #expect(problem?.setting == stray, "\(String(describing: problem))")
            #expect(problem?.code == .conflicting)
        }
    }
}

/// A mock server that requires the test PKI's client certificate; `body` gets it, the
/// `APNS_*` variables that reach it with that certificate (the `.p12` made by openssl,
/// with its password), and the server's CA to trust.
func withCertificateServerSettings(_ body: (MockAPNsServer, [String: String], String) async throws -> Void) async throws {
    let pki = try TestPKI.get()
    let configuration = MockAPNsServer.Configuration(authentication: .certificate(trustedCAPEM: try pki.text("ca.pem")))
    try await withMockAPNsServer(configuration: configuration) { server in
        let variables = [
            "APNS_ENVIRONMENT": "127.0.0.1:\(server.port)",
            "APNS_CERTIFICATE_FILE": pki.path("client.p12"),
            "APNS_CERTIFICATE_PASSWORD": TestPKI.password,
        ]
        try await body(server, variables, try #require(server.certificateAuthorityPEM))
    }
}
