import APNsMockServer
import APNsTesting
import Foundation
import TestTools
import Testing
import APNsTransport

// The swift-apns code of Documentation/SwiftAPNs.docc/MigratingFromAPNSwift.md. Each of the
// article's Swift blocks appears below line for line (indentation aside; a test checks it),
// so the guide compiles; the tests run it against MockTransport and check what was sent.

/// The article's "The client" block.
func migrationClient(privateKeyPEM: String) throws -> APNsClient {
    let key = try ProviderKey(pemRepresentation: privateKeyPEM)
    let tokens = try ProviderTokenCache(key: key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
    let client = APNsClient(
        credentials: .providerToken(tokens),
        transport: HTTP2Transport(configuration: .init(environment: .sandbox))  // the environment, stated once
    )
    return client
}

/// The article's "Notifications" and "Errors" blocks, sending through `client`.
func migrationSend(with client: APNsClient, deviceToken: String) async throws -> [String] {
    var said: [String] = []
    func print(_ items: Any...) { said.append(items.map { "\($0)" }.joined(separator: " ")) }

    var payload = Payload.alert(title: "Simple Alert", body: "Body")
    payload.aps.alert?.subtitle = "Subtitle"
    payload.aps.threadID = "thread"
    let alert = PushNotification(payload: payload, topic: "com.example.app", expiration: .immediately)
    let background = PushNotification(payload: .background(), pushType: .background, topic: "com.example.app")
    let call = PushNotification(payload: .voip(["caller": "Bob"]), pushType: .voip, topic: "com.example.app")
    for notification in [alert, background, call] {
        _ = try await client.send(notification, to: DeviceToken(hex: deviceToken))
    }

    let device = try DeviceToken(hex: deviceToken)
    do {
        _ = try await client.send(alert, to: device)
    } catch {
        switch error.rejection?.remedy {
        case .removeDeviceToken?: print("forget the token")  // Unregistered, ExpiredToken
        case .fixCredentials?: print("check the key, key ID, team ID and environment")
        case .retryLater?, .fixRequest?, nil: print("not sent:", error)
        }
    }
    return said
}

/// True when the lines of `block`, leading spaces removed, appear consecutively in `source`.
func containsLines(of block: String, in source: String) -> Bool {
    func lines(_ text: String) -> [String] {
        text.split(separator: "\n", omittingEmptySubsequences: false).map {
            String($0.drop { $0 == " " })
        }
    }
    var wanted = lines(block)
    if wanted.last == "" { wanted.removeLast() }
    let have = lines(source)
    guard !wanted.isEmpty, have.count >= wanted.count else { return false }
    return (0...(have.count - wanted.count)).contains { Array(have[$0..<$0 + wanted.count]) == wanted }
}

@Suite("MigratingFromAPNSwift article", .blockingIO)
struct MigrationArticleTests {
    static let token = "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0"

    @Test("every Swift block of the guide is in this compiled file")
    func guideCodeIsCompiled() throws {
        let article = try packageFile("Documentation/SwiftAPNs.docc/MigratingFromAPNSwift.md")
        let source = try packageFile("Tests/APNsTransportTests/Docs/MigrationArticleTests.swift")
        let blocks = swiftBlocks(of: article)
        #expect(blocks.count == 3)
        for block in blocks {
            #expect(containsLines(of: block, in: source), "a Swift block of MigratingFromAPNSwift.md is not in compiled code:\n\(block)")
        }
        #expect(!containsLines(of: "let client = APNSClient(", in: source))
    }

    @Test("the client block reads a PEM key and builds a sandbox client without connecting")
    func clientBlock() async throws {
        let openssl = ["/usr/bin/openssl", "/usr/local/bin/openssl"].first { FileManager.default.isExecutableFile(atPath: $0) }
        let path = try #require(openssl, "openssl is needed: scripts/bootstrap.sh --test")
        let process = Process()
        let pipe = Pipe()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]
        process.standardOutput = pipe
        try process.run()
        let pem = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        _ = exitStatus(of: process)
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))

        let client = try migrationClient(privateKeyPEM: pem)
        #expect(client.environment == .sandbox)
        await client.shutdown()
    }

    @Test("alert, background and VoIP go out with Apple's headers; Unregistered means forget the token")
    func notificationsAndErrors() async throws {
        let mock = MockTransport()
        let device = try DeviceToken(hex: Self.token)
        mock.respond(to: device, with: [.accepted, .accepted, .accepted, .rejected(.unregistered, timestamp: Date())])
        let tokens = try ProviderTokenCache(key: ProviderKey.generate(), keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
        let client = APNsClient(environment: .sandbox, credentials: .providerToken(tokens), transport: mock)

        let said = try await migrationSend(with: client, deviceToken: Self.token)
        await client.shutdown()

        #expect(said == ["forget the token"])
        let requests = mock.requests(to: device)
        #expect(requests.count == 4)
        func header(_ request: APNsRequest, _ name: String) -> String? {
            request.headers.first { $0.name == name }?.value
        }
        // Apple: background pushes use priority 5, VoIP topics end in ".voip",
        // apns-expiration 0 means "do not store".
        #expect(requests.map { header($0, "apns-push-type") } == ["alert", "background", "voip", "alert"])
        #expect(requests.map { header($0, "apns-topic") } == ["com.example.app", "com.example.app", "com.example.app.voip", "com.example.app"])
        #expect(header(requests[1], "apns-priority") == "5")
        #expect(header(requests[0], "apns-expiration") == "0")
        let json = try JSONSerialization.jsonObject(with: Data(requests[0].body)) as? [String: Any]
        let alert = (json?["aps"] as? [String: Any])?["alert"] as? [String: Any]
        #expect(alert?["subtitle"] as? String == "Subtitle")
        #expect((json?["aps"] as? [String: Any])?["thread-id"] as? String == "thread")
    }
}
