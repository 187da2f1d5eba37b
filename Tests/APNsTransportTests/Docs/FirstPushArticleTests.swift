// The "Send your first push" code of Documentation/SwiftAPNs.docc/SwiftAPNs.md, verbatim
// from its import line on (a test below checks it), so the landing page's example always
// compiles. The tests run it: `makeClient` with a key file that OpenSSL wrote,
// `sendFirstPush` through HTTP2Transport and TLS to the mock server.
import APNsMockServer
import Foundation
import TestTools
import Logging
import Testing
import APNsTransport

/// Create once at startup and share: the client owns the transport's connections.
func makeClient(keyFile: String) throws -> APNsClient {
    let key = try ProviderKey(contentsOfFile: keyFile)  // AuthKey_ABC123DEFG.p8
    let tokens = try ProviderTokenCache(key: key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
    let transport = HTTP2Transport(configuration: .init(environment: .sandbox))
    return APNsClient(credentials: .providerToken(tokens), transport: transport)  // sends where the transport connects
}

/// Sends one alert; returns `false` when the app should forget the device token.
func sendFirstPush(to deviceToken: DeviceToken, with client: APNsClient) async -> Bool {
    let payload = Payload.alert(title: "Hello", body: "Your first push from Swift")
    let notification = PushNotification(payload: payload, topic: "com.example.app")
    do {
        let accepted = try await client.send(notification, to: deviceToken)
        print("accepted, apns-id:", accepted.apnsID?.description ?? "-")
    } catch {
        print("not sent:", error)  // Apple's reason, or why no answer came
        if error.rejection?.remedy == .removeDeviceToken { return false }
    }
    return true
}

/// Reads a file of the package, relative to its root.
func packageFile(_ path: String) throws -> String {
    let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    return try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
}

/// The Swift code blocks of a Markdown file, without their fences.
func swiftBlocks(of markdown: String) -> [String] {
    var blocks: [String] = []
    var rest = markdown[...]
    while let open = rest.range(of: "```swift\n") {
        guard let close = rest[open.upperBound...].range(of: "```") else { break }
        blocks.append(String(rest[open.upperBound..<close.lowerBound]))
        rest = rest[close.upperBound...]
    }
    return blocks
}

@Suite("SwiftAPNs landing page", .blockingIO)
struct FirstPushArticleTests {
    @Test("every Swift block of SwiftAPNs.md is quoted from this compiled file")
    func landingPageCodeIsCompiled() throws {
        let article = try packageFile("Documentation/SwiftAPNs.docc/SwiftAPNs.md")
        let source = try packageFile("Tests/APNsTransportTests/Docs/FirstPushArticleTests.swift")
        let blocks = swiftBlocks(of: article)
        #expect(blocks.count == 1)
        for block in blocks {
            #expect(source.contains(block), "a Swift block of SwiftAPNs.md is not in compiled code:\n\(block)")
        }
    }

    @Test("makeClient reads an EC P-256 key that OpenSSL wrote, as Apple's .p8 files are")
    func makeClientReadsAnOpenSSLKey() async throws {
        let openssl = ["/usr/bin/openssl", "/usr/local/bin/openssl"].first { FileManager.default.isExecutableFile(atPath: $0) }
        let path = try #require(openssl, "openssl is needed: scripts/bootstrap.sh --test")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("AuthKey_\(UUID().uuidString).p8").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", file]
        try process.run()
        #expect(exitStatus(of: process) == 0)

        let client = try makeClient(keyFile: file)
        #expect(client.environment == .sandbox)
        await client.shutdown()
        #expect(throws: ProviderKeyError.self) { try makeClient(keyFile: file + ".missing") }
    }

    @Test("sendFirstPush keeps an accepted token and drops an Unregistered one, over TLS and HTTP/2")
    func sendFirstPushAgainstTheMockServer() async throws {
        let key = try ProviderKey.generate()
        var keys = ProviderTokenVerifier()
        keys.register(key, keyID: "ABC123DEFG")
        let configuration = MockAPNsServer.Configuration(
            bundleIDs: ["com.example.app"],
            authentication: .providerToken(.signature(keys))
        )
        try await withMockAPNsServer(configuration: configuration) { server in
            let pem = try #require(server.certificateAuthorityPEM)
            let environment = APNsEnvironment.custom(host: "127.0.0.1", port: server.port)
            let transport = HTTP2Transport(
                configuration: .init(
                    environment: environment,
                    tls: TLSConfiguration(trustRoots: .certificates(pem)),
                    logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
                )
            )
            let tokens = try ProviderTokenCache(key: key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
            let client = APNsClient(environment: environment, credentials: .providerToken(tokens), transport: transport)
            let live = try DeviceToken(hex: "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0")
            let dead = try DeviceToken(hex: "11fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f1")
            server.respond(toDeviceToken: "11fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f1", with: .unregistered())

            #expect(await sendFirstPush(to: live, with: client))
            #expect(await sendFirstPush(to: dead, with: client) == false)
            await client.shutdown()

            let records = server.recordedRequests
            #expect(records.map(\.status) == [200, 410])
            #expect(records.allSatisfy { $0.providerToken != nil })
        }
    }
}
