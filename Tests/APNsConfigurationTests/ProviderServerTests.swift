import APNsMockServer
import APNsTransport
import Configuration
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Testing

/// The Observability article's `runProvider` as a user runs it: settings from a
/// `ConfigReader`, a token signed with the openssl-made key and verified by the mock server
/// against openssl's public key, the transport and a sending service in a real `ServiceGroup`.
@Suite("A provider server configured from a ConfigReader")
struct ProviderServerTests {
    /// What the sender got back.
    final class Outcome: Sendable {
        let result = Mutex<Result<APNsAccepted, APNsError>?>(nil)
    }

    /// Sends one notification when the group starts it, then waits for the group to end.
    struct Sender: Service {
        let client: APNsClient
        let outcome: Outcome
        let sent: AsyncStream<Void>.Continuation

        func run() async throws {
            let notification = PushNotification(payload: .alert(body: "Hello"), topic: "com.example.app")
            let token = try DeviceToken(hex: String(repeating: "ab", count: 32))
            let result: Result<APNsAccepted, APNsError>
            do {
                result = .success(try await client.send(notification, to: token))
            } catch {
                result = .failure(error)
            }
            outcome.result.withLock { $0 = result }
            sent.yield()
            try? await gracefulShutdown()
        }
    }

    @Test("settings from an in-memory provider reach a token-checking mock server through a ServiceGroup")
    func sendsThroughTheGroup() async throws {
        let publicKeyPath = try #require(Bundle.module.path(forResource: "AuthKey_TEST.pub", ofType: "pem", inDirectory: "Fixtures"))
        var verifier = ProviderTokenVerifier()
        try verifier.register(publicKeyPEM: String(contentsOfFile: publicKeyPath, encoding: .utf8), keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
        let configuration = MockAPNsServer.Configuration(authentication: .providerToken(.signature(verifier)))
        try await withMockAPNsServer(configuration: configuration) { server in
            let ca = try #require(server.certificateAuthorityPEM)
            let caPath = FileManager.default.temporaryDirectory.appendingPathComponent("apns-config-ca-\(UUID()).pem").path
            try ca.write(toFile: caPath, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(atPath: caPath) }
            let config = ConfigReader(
                provider: InMemoryProvider(values: [
                    "apns.environment": .init(stringLiteral: "127.0.0.1:\(server.port)"),
                    "apns.keyFile": .init(stringLiteral: APNsSettingsConfigReaderTests.keyPath),
                    "apns.keyID": "ABC123DEFG",
                    "apns.teamID": "DEF123GHIJ",
                    // The mock server's CA, instead of the system's trust store.
                    "apns.caFile": .init(stringLiteral: caPath),
                ])
            )
            let outcome = Outcome()
            let (sent, sentContinuation) = AsyncStream<Void>.makeStream()
            let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
            let run = Task {
                try await runProvider(config: config, logger: logger) { client in
                    Sender(client: client, outcome: outcome, sent: sentContinuation)
                }
            }
            var iterator = sent.makeAsyncIterator()
            _ = await iterator.next()
            run.cancel()
            _ = await run.result
            let result = try #require(outcome.result.withLock { $0 })
            #expect(throws: Never.self) { try result.get() }
            #expect(server.statistics.accepted == 1)
        }
    }
}
