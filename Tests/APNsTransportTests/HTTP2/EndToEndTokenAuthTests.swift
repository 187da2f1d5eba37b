import APNsMockServer
import Logging
import Testing
@testable import APNsTransport

/// The whole stack: APNsClient signs ES256 provider tokens, HTTP2Transport carries them
/// over TLS and HTTP/2, and the mock server verifies every signature with the public key
/// and, as APNs does in token mode, allows one stream until the first valid request has
/// been answered, then raises SETTINGS_MAX_CONCURRENT_STREAMS.
@Suite("APNsClient over HTTP2Transport with token authentication")
struct EndToEndTokenAuthTests {
    @Test("500 notifications to distinct devices, every token verified, every one accepted once")
    func tokenAuthenticatedBatch() async throws {
        let key = try ProviderKey.generate()
        var keys = ProviderTokenVerifier()
        keys.register(key, keyID: "ABC123DEFG")
        let configuration = MockAPNsServer.Configuration(
            bundleIDs: ["com.example.app"],
            authentication: .providerToken(.signature(keys)),
            maxConcurrentStreams: 100
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
            let devices = try (0..<500).map { index -> DeviceToken in
                let hex = String(index, radix: 16)
                return try DeviceToken(hex: String(repeating: "0", count: 64 - hex.count) + hex)
            }
            let notification = PushNotification(payload: .alert(title: "Hello", body: "World"), topic: "com.example.app")
            // The first notification alone: its answer raises the limit from 1.
            let firstOutcome = await client.send(notification, to: Array(devices.prefix(1)), maxConcurrency: 1)
            // Then the answers are held until the server has seen as many requests in
            // flight at once as its raised limit allows (a bounded wait, then release):
            // proof that the limit rose, observed at the server.
            server.setResponseDelay(.seconds(600))
            let rest = Task { await client.send(notification, to: Array(devices.dropFirst()), maxConcurrency: 200) }
            _ = await waitUntil { server.statistics.requests >= 1 + 100 }
            let inFlightAtOnce = server.statistics.requests - 1
            server.setResponseDelay(.zero)
            let outcomes = firstOutcome + (await rest.value)
            await client.shutdown()

            #expect(firstOutcome.count == 1)
            #expect(inFlightAtOnce == 100, "\(inFlightAtOnce) requests in flight at once after the first answer")
            #expect(outcomes.count == 500)
            #expect(outcomes.allSatisfy { (try? $0.result.get()) != nil })
            let records = server.recordedRequests
            #expect(records.count == 500)
            #expect(records.allSatisfy { $0.status == 200 && $0.providerToken != nil })
            #expect(Set(records.compactMap(\.deviceToken)).count == 500)
            // The limit started at 1 and then rose: the transport never opened a stream the
            // server had not allowed (a refused one would have been re-sent and counted).
            #expect(transport.statistics.connectionsOpened == 1)
            #expect(transport.statistics.requestsRequeued == 0)
        }
    }
}
