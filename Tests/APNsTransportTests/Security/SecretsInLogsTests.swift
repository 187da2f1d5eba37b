import APNsMockServer
import Foundation
import Logging
import Synchronization
import Testing
@testable import APNsTransport

/// Every log event and every error text of a full run, searched for secrets.
///
/// One run through the whole stack (APNsClient, the ES256 token cache, HTTP2Transport over
/// TLS, the mock server verifying every signature) with every logger at `trace`, through
/// the paths that log most: acceptances, rejections (Unregistered, BadDeviceToken,
/// ExpiredProviderToken with its token refresh), 503s retried, a GOAWAY, a dropped
/// connection, a connection that cannot be made, and a payload refused before sending.
/// The private key comes from the `openssl` command-line tool, the JWTs from a recording
/// token source, the device tokens from the test: none of the searched strings is derived
/// from what is logged.
@Suite("No secret in logs or error texts", .blockingIO)
struct SecretsInLogsTests {
    /// Hands out the cache's tokens and remembers every one.
    final class RecordingTokenSource: ProviderTokenSource {
        let cache: ProviderTokenCache
        let handedOut = Mutex<Set<String>>([])
        init(cache: ProviderTokenCache) { self.cache = cache }
        func token() throws -> ProviderToken {
            let token = try cache.token()
            handedOut.withLock { _ = $0.insert(token.jwt) }
            return token
        }
        func invalidate(_ token: ProviderToken) { cache.invalidate(token) }
    }

    static func device(_ index: Int) throws -> DeviceToken {
        // 64 hex digits that no counter or timestamp produces by accident.
        let hex = String(format: "%08x", 0x5eed_0000 + index)
        return try DeviceToken(hex: String(repeating: hex, count: 8))
    }

    @Test("a full run at trace level logs no JWT, no key material and no whole device token")
    func fullRunLeaksNothing() async throws {
        // The key, written by OpenSSL as Apple's .p8 files are (PKCS#8 PEM).
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("secrets-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyPath = directory.appendingPathComponent("AuthKey_ABC123DEFG.p8").path
        try run("openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", keyPath])
        let pem = try String(contentsOfFile: keyPath, encoding: .utf8)
        // The raw private scalar, as OpenSSL prints it ("priv:" block of `openssl ec -text`).
        let text = try run("openssl", ["ec", "-in", keyPath, "-noout", "-text"])
        let scalarHex = Self.privateScalarHex(fromOpenSSLText: text)
        #expect(scalarHex.count == 64, "\(scalarHex)")

        let key = try ProviderKey(contentsOfFile: keyPath)
        var keys = ProviderTokenVerifier()
        keys.register(key, keyID: "ABC123DEFG")
        let store = CapturingLogHandler.Store()
        func logger(_ label: String) -> Logger {
            var logger = Logger(label: label, factory: { label in CapturingLogHandler(store: store, label: label, logLevel: .trace) })
            logger.logLevel = .trace
            return logger
        }

        let devices = try (0..<240).map(Self.device)
        var secrets: [(what: String, value: String)] = []
        for (index, device) in devices.enumerated() {
            secrets.append(("device token \(index)", device.hexString))
            secrets.append(("device token \(index) in capitals", device.hexString.uppercased()))
        }
        let body = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }
        for line in body { secrets.append(("a line of the key's PEM", String(line))) }
        secrets.append(("the private scalar", scalarHex))
        secrets.append(("the private scalar in capitals", scalarHex.uppercased()))

        let configuration = MockAPNsServer.Configuration(
            bundleIDs: ["com.example.app"],
            authentication: .providerToken(.signature(keys)),
            maxConcurrentStreams: 50,
            logger: logger("mock")
        )
        let tokens = RecordingTokenSource(cache: try ProviderTokenCache(key: key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ"))
        var errorTexts: [String] = []

        try await withMockAPNsServer(configuration: configuration) { server in
            let pem = try #require(server.certificateAuthorityPEM)
            let environment = APNsEnvironment.custom(host: "127.0.0.1", port: server.port)
            let transport = HTTP2Transport(configuration: .init(
                environment: environment,
                tls: TLSConfiguration(trustRoots: .certificates(pem)),
                logger: logger("transport")
            ))
            let client = APNsClient(
                environment: environment, credentials: .providerToken(tokens), transport: transport,
                retryPolicy: RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(1), maxDelay: .milliseconds(5)),
                requestTimeout: .seconds(120),  // the call's deadline, which its retries share: the whole suite at once stretches them
                logger: logger("client")
            )
            server.respond(toDeviceToken: devices[1].hexString, with: .unregistered())
            server.respond(toDeviceToken: devices[2].hexString, with: ScriptedResponse(status: 400, reason: "BadDeviceToken"))
            server.respond(toDeviceToken: devices[3].hexString, with: ScriptedResponse(status: 403, reason: "ExpiredProviderToken"))
            server.failNextRequests(3, with: .serviceUnavailable)
            let notification = PushNotification(payload: .alert(title: "Hello", body: "World"), topic: "com.example.app")
            var outcomes = await client.send(notification, to: Array(devices[0..<80]), maxConcurrency: 20)
            server.sendGoAway(afterRequests: 20)
            outcomes += await client.send(notification, to: Array(devices[80..<160]), maxConcurrency: 20)
            server.setResponseDelay(.seconds(30))
            async let dropped = client.send(notification, to: Array(devices[160..<200]), maxConcurrency: 20)
            while server.statistics.requests < 165 { try await Task.sleep(for: .milliseconds(5)) }
            // The answers waiting go down with their connections; the rest of the batch
            // (on a new connection) is released at once.
            server.dropAllConnections()
            server.setResponseDelay(.zero)
            outcomes += await dropped
            // Too large: refused before it is sent.
            let huge = PushNotification(payload: .alert(body: String(repeating: "x", count: 5000)), topic: "com.example.app")
            outcomes += await client.send(huge, to: [devices[200]], maxConcurrency: 1)
            await client.shutdown()

            #expect(outcomes.count == 201)
            #expect(outcomes.contains { $0.error?.rejection?.reason == .unregistered })
            #expect(outcomes.contains { $0.error?.rejection?.reason == .badDeviceToken })
            #expect(outcomes.contains { $0.error?.transportError?.mayHaveReachedAPNs == true })
            #expect(outcomes.contains { if case .invalid = $0.error { true } else { false } })
            #expect(server.statistics.goAways >= 1)
            for outcome in outcomes {
                if let error = outcome.error {
                    errorTexts += [String(describing: error), String(reflecting: error), error.localizedDescription]
                }
                errorTexts.append(String(describing: outcome.deviceToken))
                errorTexts.append(String(describing: outcome))
            }
        }

        // A connection that cannot be made, with its own client and errors.
        let port = try unusedLoopbackPort()
        let unreachable = APNsEnvironment.custom(host: "127.0.0.1", port: port)
        let deadTransport = HTTP2Transport(configuration: .init(environment: unreachable, logger: logger("transport-unreachable")))
        let deadClient = APNsClient(environment: unreachable, credentials: .providerToken(tokens), transport: deadTransport, logger: logger("client-unreachable"))
        do {
            _ = try await deadClient.send(PushNotification(payload: .alert(body: "Hi"), topic: "com.example.app"), to: devices[239])
            Issue.record("a send to a closed port succeeded")
        } catch {
            errorTexts += [String(describing: error), String(reflecting: error)]
        }
        await deadClient.shutdown()

        let jwts = tokens.handedOut.withLock { $0 }
        #expect(!jwts.isEmpty)
        for jwt in jwts {
            let parts = jwt.split(separator: ".")
            secrets.append(("a JWT", jwt))
            // The signature alone is the secret part; header and claims are not.
            if parts.count == 3 { secrets.append(("a JWT's signature", String(parts[2]))) }
        }

        let events = store.events.withLock { $0 }
        // The capture works and the run logged plenty, at debug and below.
        #expect(events.count > 200, "\(events.count) events")
        #expect(events.contains { $0.level == .trace || $0.level == .debug })
        let corpus = events.map(\.text) + errorTexts
        for (what, value) in secrets {
            let hits = corpus.filter { $0.contains(value) }
            #expect(hits.isEmpty, "\(what) appears in: \(hits.prefix(2))")
        }
        // Tokens are still identifiable: the logs carry their first characters.
        #expect(corpus.contains { $0.contains(String(devices[1].hexString.prefix(8))) })
    }

    /// The 32 bytes after `priv:` in `openssl ec -text` output, as 64 lowercase hex digits.
    static func privateScalarHex(fromOpenSSLText text: String) -> String {
        var hex = ""
        var inPriv = false
        for line in text.split(separator: "\n") {
            if line.hasPrefix("priv:") { inPriv = true; continue }
            if inPriv {
                guard line.hasPrefix(" ") else { break }
                hex += line.filter { $0.isHexDigit }
            }
        }
        // OpenSSL may print a leading 00 byte when the top bit is set.
        while hex.count > 64, hex.hasPrefix("00") { hex.removeFirst(2) }
        return hex.lowercased()
    }
}
