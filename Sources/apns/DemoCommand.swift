import APNsCore
import ArgumentParser
import Foundation

/// `apns demo`: shows the SDK at work with no credentials and no network.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Build every kind of payload, encode request headers, and send through the mock transport.",
        discussion: """
            Needs no credentials and no network: provider tokens are signed with a key made \
            for the run, and notifications go to the in-memory MockTransport.
            """
    )

    func run() async throws {
        try showPayloads()
        try showHeaders()
        try await showOutcomes()
    }

    // MARK: Payloads

    private func showPayloads() throws {
        section("1. Payloads: compact JSON and the size limit of each push type")
        let now = Int(Date().timeIntervalSince1970)
        var localized = Payload(aps: APS(alert: Alert.localized("GAME_PLAY_REQUEST_FORMAT", arguments: ["Jenna", "Frank"])))
        localized.aps.sound = "chime.aiff"
        let kinds: [(String, Payload, PushType)] = [
            ("alert", .alert(title: "Game Request", body: "Bob wants to play poker"), .alert),
            ("localized alert", localized, .alert),
            ("background", .background(["sync": "inbox"]), .background),
            ("VoIP", .voip(["caller": "Jenna", "call-id": "4711"]), .voip),
            ("Live Activity update", .liveActivityUpdate(timestamp: now, contentState: ["score": "2-1"]), .liveactivity),
            ("widgets", .contentChanged(), .widgets),
            ("file provider", .fileProvider(containerIdentifier: "NSFileProviderWorkingSetContainerItemIdentifier", domain: "docs"), .fileprovider),
            ("MDM", .mdm(pushMagic: "6B5CE2D3-1D8F-4DB5-A4E4-F1F2A8E4B5C6"), .mdm),
        ]
        for (name, payload, pushType) in kinds {
            let bytes = try payload.encoded(for: pushType)
            let limit = PayloadLimit(for: pushType).bytes
            print("  \(pad(name, 21)) \(pad("\(bytes.count)/\(limit) B", 11)) \(String(decoding: bytes, as: UTF8.self))")
        }

        let long = Payload.alert(title: "Digest", body: String(repeating: "Ünïcödé news 📰 ", count: 400))
        do {
            _ = try long.encoded(for: .alert)
        } catch {
            print("  oversized alert       refused: \(error)")
        }
        let fitted = try long.encoded(for: .alert, fitting: .truncatingBody)
        print("  same alert, fitted    \(fitted.count)/4096 B, body shortened on a character boundary, ends with \"…\"")
    }

    // MARK: Headers

    private func showHeaders() throws {
        section("2. Request headers: what the HPACK policy sends on one connection")
        let tokens = try ProviderTokenCache(key: ProviderKey.generate(), keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
        let authorization = try tokens.token().authorizationValue
        var encoder = APNsHeaderEncoder()
        var block: [UInt8] = []
        var decisions: [HPACKIndexing] = []
        for n in 1...3 {
            let token = try DeviceToken(bytes: (0..<32).map { _ in UInt8.random(in: 0...255) })
            let request = try PushNotification(payload: .alert(body: "Hello"), topic: "com.example.app", expiration: .immediately)
                .request(to: token, environment: .sandbox, authorization: authorization)
            block.removeAll(keepingCapacity: true)
            encoder.encodeHeaderBlock(request.headers, into: &block, decisions: &decisions)
            print("  request \(n): \(request.headers.count) headers in \(block.count) bytes; server table holds \(encoder.tableSize) bytes in \(encoder.tableEntries.count) entries")
        }
        print("  device token, apns-id and authorization never enter the server's table; topic, push type and priority do, once.")
    }

    // MARK: Outcomes

    private func showOutcomes() async throws {
        section("3. Outcomes through the mock transport")
        let mock = MockTransport()
        let unregistered = try DeviceToken(hex: "11fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f1")
        mock.respond(to: unregistered, with: .rejected(.unregistered, timestamp: Date()))
        let tokens = try ProviderTokenCache(key: ProviderKey.generate(), keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
        let client = APNsClient(environment: .sandbox, credentials: .providerToken(tokens), transport: mock)

        let batch = try (0..<10_000).map { i in try DeviceToken(bytes: withUnsafeBytes(of: UInt64(i).bigEndian) { Array($0) } + Array(repeating: 0xA5, count: 24)) }
        let started = ContinuousClock.now
        let outcomes = await client.send(PushNotification(payload: .alert(body: "Batch"), topic: "com.example.app"), to: batch + [unregistered])
        let elapsed = ContinuousClock.now - started
        let accepted = outcomes.filter { $0.accepted != nil }.count
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print("  batch of \(outcomes.count): \(accepted) accepted in \(String(format: "%.2f", seconds)) s (\(Int(Double(outcomes.count) / seconds)) notifications/s, in memory)")
        for outcome in outcomes where outcome.error != nil {
            print("  \(outcome.deviceToken): \(outcome.error!) → \(outcome.error?.rejection?.remedy.description ?? "-")")
        }

        do {
            _ = try DeviceToken(hex: "00fc13adff78512zb4")
        } catch {
            print("  malformed token: \(error)")
        }
        do {
            let huge = Payload.alert(body: String(repeating: "x", count: 5000))
            _ = try await client.send(PushNotification(payload: huge, topic: "com.example.app"), to: batch[0])
        } catch {
            print("  oversized payload: \(error)")
        }
        await client.shutdown()
        print("\nNext: point the same code at APNs with APNsEnvironment.production and a real transport.")
    }

    private func section(_ title: String) {
        print("\n" + title)
    }

    private func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }
}
