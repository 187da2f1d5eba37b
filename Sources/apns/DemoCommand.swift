import APNsCore
import APNsMockServer
import ArgumentParser
import Foundation
import Logging

/// `apns demo`: the SDK at work with no credentials and no network.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Send a realistic set of notifications to a mock APNs server started for the run.",
        discussion: """
            Needs no credentials and no network. It starts the mock APNs server on loopback \
            (TLS + HTTP/2, checking every provider token's ES256 signature against a key made \
            for the run), then sends an alert, a localized alert, a background push, a VoIP \
            push, a Live Activity update, a batch of 10,000 alerts, and three notifications \
            that fail (an unregistered token, a malformed token, an oversized payload), and \
            says what each outcome means.

            Examples:
              apns demo
              apns demo --batch 100000 --connections 2
            """
    )

    @Option(help: "Alerts in the batch.")
    var batch = 10_000

    @Option(help: "HTTP/2 connections to the mock server.")
    var connections = 2

    /// Checks the values together; called from `run()` so that a misspelled flag is
    /// reported as such before any of these checks.
    func check() throws {
        if !(1...1_000_000).contains(batch) { throw ValidationError("--batch must be 1...1000000") }
        if !(1...64).contains(connections) { throw ValidationError("--connections must be 1...64") }
    }

    private static let bundleID = "com.example.demo"
    private static let keyID = "DEMOKEY123"
    private static let teamID = "DEMOTEAM45"
    private static let unregisteredToken = "11fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f1"

    func run() async throws {
        try check()
        Terminal.bootstrapLogging(level: .error)
        try showPayloads()
        try showHeaders()
        try await showSending()
    }

    // MARK: 1. Payloads

    private func showPayloads() throws {
        section("1. Payloads: compact JSON within each push type's limit")
        let kinds: [(String, Payload, PushType)] = [
            ("alert", .alert(title: "Game Request", body: "Bob wants to play poker"), .alert),
            ("background", .background(["sync": "inbox"]), .background),
            ("widgets", .contentChanged(), .widgets),
        ]
        for (name, payload, pushType) in kinds {
            let bytes = try payload.encoded(for: pushType)
            print("  \(pad(name, 11)) \(pad("\(bytes.count)/\(PayloadLimit(for: pushType).bytes) B", 11)) \(String(decoding: bytes, as: UTF8.self))")
        }
        let long = Payload.alert(title: "Digest", body: String(repeating: "Ünïcödé news 📰 ", count: 400))
        let fitted = try long.encoded(for: .alert, fitting: .truncatingBody)
        let size = (try? long.encoded(limit: PayloadLimit(bytes: 1 << 20)).count) ?? 0
        print("  an alert of \(size) B is refused, or fitted to \(fitted.count)/4096 B by shortening its body on a character boundary")
    }

    // MARK: 2. Headers

    private func showHeaders() throws {
        section("2. Request headers: what the HPACK policy sends on one connection")
        let tokens = try ProviderTokenCache(key: ProviderKey.generate(), keyID: Self.keyID, teamID: Self.teamID)
        let authorization = try tokens.token().authorizationValue
        var encoder = APNsHeaderEncoder()
        var block: [UInt8] = []
        var decisions: [HPACKIndexing] = []
        var sizes: [Int] = []
        for _ in 1...3 {
            let token = try DeviceToken(bytes: (0..<32).map { _ in UInt8.random(in: 0...255) })
            let request = try PushNotification(payload: .alert(body: "Hello"), topic: .bundleID(Self.bundleID), expiration: .immediately)
                .request(to: token, environment: .sandbox, authorization: authorization)
            block.removeAll(keepingCapacity: true)
            encoder.encodeHeaderBlock(request.headers, into: &block, decisions: &decisions)
            sizes.append(block.count)
        }
        print("  three requests: header blocks of \(sizes.map(String.init).joined(separator: ", ")) bytes; the server's table holds \(encoder.tableEntries.count) entries (\(encoder.tableSize) B)")
        print("  device token, apns-id and authorization never enter the server's table; topic, push type and priority do, once")
    }

    // MARK: 3. Sending

    private func showSending() async throws {
        let key = try ProviderKey.generate()
        let tokens = try ProviderTokenCache(key: key, keyID: Self.keyID, teamID: Self.teamID)
        var verifier = ProviderTokenVerifier()
        verifier.register(key, keyID: Self.keyID)

        let server = MockAPNsServer(configuration: .init(
            bundleIDs: [Self.bundleID],
            authentication: .providerToken(.signature(verifier)),
            recordedRequestLimit: 16
        ))
        try await server.start()
        do {
            server.respond(toDeviceToken: Self.unregisteredToken, with: .unregistered())
            section("3. Sending through HTTP2Transport (TLS + HTTP/2) to the mock APNs server on 127.0.0.1:\(server.port)")
            print("  provider token: ES256, key \(Self.keyID), team \(Self.teamID); the server verifies each signature with the public key")
            let environment = APNsEnvironment.custom(host: "127.0.0.1", port: server.port)
            let transport = TransportFactory.make(
                environment: environment,
                tls: try TLSSetup.configuration(trustedCAPEM: server.certificateAuthorityPEM, certificate: nil),
                connections: connections, logger: Logger(label: "apns.demo"))
            let client = APNsClient(environment: environment, credentials: .providerToken(tokens), transport: transport)
            try await sendAll(with: client, over: "TLS + HTTP/2 on loopback, a pool of up to \(connections) connection(s), opened as load needs them") {
                showWire(server.recordedRequests)
            }
            await client.shutdown()
            let stats = server.statistics
            print("  the server answered \(stats.requests) requests on \(stats.connections) connection(s): \(stats.accepted) accepted, \(stats.rejected) rejected")
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
        showNextSteps()
    }

    /// What the server decoded from the first requests: header block sizes and how the
    /// secrets and per-request values arrived.
    private func showWire(_ requests: [RecordedRequest]) {
        guard let first = requests.first else { return }
        let sameConnection = requests.filter { $0.connectionNumber == first.connectionNumber }
        let sizes = sameConnection.prefix(5).map { String($0.headerBlockLength) }.joined(separator: ", ")
        let neverIndexed = first.headers.filter { $0.representation == .neverIndexed }.map(\.name)
        print("  as the server decoded them: header blocks of \(sizes) bytes on one connection; sent never-indexed: \(neverIndexed.joined(separator: ", "))")
    }

    private func sendAll(with client: APNsClient, over medium: String, afterExamples: () -> Void) async throws {
        let device = try DeviceToken(hex: "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f1")
        let topic = Topic.bundleID(Self.bundleID)
        var localized = Payload(aps: APS(alert: .localized("GAME_PLAY_REQUEST_FORMAT", arguments: ["Jenna", "Frank"])))
        localized.aps.sound = "chime.aiff"
        let now = Int(Date().timeIntervalSince1970)
        let examples: [(String, PushNotification)] = [
            ("alert", PushNotification(payload: .alert(title: "Game Request", body: "Bob wants to play poker"), topic: topic)),
            ("localized alert", PushNotification(payload: localized, topic: topic)),
            ("background", PushNotification(payload: .background(["sync": "inbox"]), pushType: .background, topic: topic)),
            // APNs asks for an `aps` dictionary in every payload, and an empty one is what a
            // VoIP push carries; Payload omits an empty `aps`, so this one is sent as raw JSON.
            ("VoIP", PushNotification(
                body: .raw(Array(#"{"aps":{},"caller":"Jenna","call-id":"4711"}"#.utf8)), pushType: .voip, topic: topic)),
            ("Live Activity", PushNotification(
                payload: .liveActivityUpdate(timestamp: now, contentState: ["score": "2-1"]), pushType: .liveactivity, topic: topic)),
        ]
        for (name, push) in examples {
            let result: Result<APNsAccepted, APNsError>
            do throws(APNsError) { result = .success(try await client.send(push, to: device)) } catch { result = .failure(error) }
            let topicValue = (try? push.topic.value(for: push.pushType)) ?? "?"
            print("  \(pad(name, 15)) \(pad(push.pushType.rawValue, 13)) \(pad(topicValue, 41)) \(OutcomeText.line(result))")
        }

        afterExamples()

        // A batch to distinct tokens, spread over the connection pool.
        let batchTokens = try (0..<batch).map { i in
            try DeviceToken(bytes: withUnsafeBytes(of: UInt64(i).bigEndian) { Array($0) } + Array(repeating: 0xA5, count: 24))
        }
        let started = ContinuousClock.now
        let outcomes = await client.send(
            PushNotification(payload: .alert(title: "Flash sale", body: "Everything 20% off until midnight"), topic: topic),
            to: batchTokens, maxConcurrency: 1000)
        let seconds = Terminal.seconds(since: started)
        let accepted = outcomes.filter { $0.accepted != nil }.count
        print(String(format: "  batch          %d alerts to distinct tokens: %d accepted in %.2f s = %.0f notifications/s (%@)",
                     outcomes.count, accepted, seconds, Double(outcomes.count) / seconds, medium))
        for outcome in outcomes.prefix(3) where outcome.error != nil {
            print("    \(outcome.deviceToken): \(OutcomeText.line(outcome.result))")
        }

        // Three that fail, each for its own reason.
        section("4. What goes wrong, and what to do")
        let unregistered = try DeviceToken(hex: Self.unregisteredToken)
        do throws(APNsError) {
            _ = try await client.send(PushNotification(payload: .alert(body: "Are you there?"), topic: topic), to: unregistered)
            print("  unregistered token: accepted (unexpected)")
        } catch {
            print("  unregistered token \(unregistered): \(OutcomeText.line(.failure(error)))")
        }
        do {
            _ = try DeviceToken(hex: "00fc13adff78512zb4")
        } catch {
            print("  malformed token: \(error) → not sent: fix the token where it was stored")
        }
        do throws(APNsError) {
            let huge = Payload.alert(body: String(repeating: "x", count: 5000))
            _ = try await client.send(PushNotification(payload: huge, topic: topic), to: device)
            print("  oversized payload: accepted (unexpected)")
        } catch {
            print("  oversized payload: \(OutcomeText.line(.failure(error)))")
        }
    }

    private func showNextSteps() {
        section("5. The same code against APNs")
        print("""
              let key = try ProviderKey(contentsOfFile: "AuthKey_ABC123DEFG.p8")
              let tokens = try ProviderTokenCache(key: key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
              let transport = HTTP2Transport(configuration: .init(environment: .production))
              let client = APNsClient(credentials: .providerToken(tokens), transport: transport)  // the environment is the transport's
              let accepted = try await client.send(notification, to: deviceToken)
            or from the shell:
              apns send --production --key-file AuthKey_ABC123DEFG.p8 --key-id ABC123DEFG --team-id DEF123GHIJ \\
                --topic com.example.app --title Hello --body World <device-token>
            """)
    }

    private func section(_ title: String) {
        print("\n" + title)
    }

    private func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }
}
