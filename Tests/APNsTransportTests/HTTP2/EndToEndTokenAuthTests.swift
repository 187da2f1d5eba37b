import APNsMockServer
import Foundation
import Logging
import Synchronization
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
        try await withMockAPNsServer(configuration: Self.verifyingTokens(of: key)) { server in
            let environment = APNsEnvironment.custom(host: "127.0.0.1", port: server.port)
            let transport = try mockTransport(server)
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

    /// A mock server for `com.example.app` that verifies every provider token's signature
    /// with `key` (key id ABC123DEFG) and raises its stream limit to 100 after the first
    /// valid request.
    static func verifyingTokens(of key: ProviderKey) -> MockAPNsServer.Configuration {
        var keys = ProviderTokenVerifier()
        keys.register(key, keyID: "ABC123DEFG")
        return MockAPNsServer.Configuration(
            bundleIDs: ["com.example.app"],
            authentication: .providerToken(.signature(keys)),
            maxConcurrentStreams: 100
        )
    }

    @Test("a batch over HTTP2Transport: rejections final, 503s retried, an expired token replaced once; one outcome each")
    func batchWithRetriesAndExpiredToken() async throws {
        let key = try ProviderKey.generate()
        try await withMockAPNsServer(configuration: Self.verifyingTokens(of: key)) { server in
            let environment = APNsEnvironment.custom(host: "127.0.0.1", port: server.port)
            let transport = try mockTransport(server)
            // Tokens signed two hours ago until the client invalidates one: APNs (and the
            // mock) answer those with 403 ExpiredProviderToken.
            let source = try ExpiringOnceTokenSource(key: key)
            let client = APNsClient(
                environment: environment,
                credentials: .providerToken(source),
                transport: transport,
                retryPolicy: RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(1), maxDelay: .milliseconds(5)),
                // A call's retries end by this; the whole suite at once stretches them.
                requestTimeout: .seconds(120)
            )
            let devices = try (0..<2_000).map { index -> DeviceToken in
                let hex = String(index, radix: 16)
                return try DeviceToken(hex: String(repeating: "0", count: 64 - hex.count) + hex)
            }
            // Every 10th device is unregistered (final); after the expired token is
            // replaced, the next 50 valid requests get 503 (retried).
            for index in stride(from: 5, to: devices.count, by: 10) {
                server.respond(toDeviceToken: devices[index].hexString, with: ScriptedResponse(status: 410, reason: "Unregistered"))
            }
            let notification = PushNotification(payload: .alert(title: "Hello", body: "World"), topic: "com.example.app")
            // The first request alone meets the expired token (the mock allows one
            // stream until a request succeeded), and the batch goes on with the new one.
            server.failNextRequests(50, with: .serviceUnavailable)
            let outcomes = await client.send(notification, to: devices, maxConcurrency: 300)
            let statistics = client.statistics
            await client.shutdown()

            #expect(outcomes.count == devices.count)
            #expect(outcomes.map(\.deviceToken) == devices)
            for (index, outcome) in outcomes.enumerated() {
                if index % 10 == 5 {
                    #expect(outcome.error?.rejection?.reason == .unregistered, "device \(index): \(outcome.result)")
                } else {
                    #expect(outcome.accepted != nil, "device \(index): \(outcome.result)")
                }
            }
            #expect(source.invalidations == 1)
            #expect(statistics.providerTokenRefreshes >= 1)
            #expect(statistics.retriesByReason["ServiceUnavailable"] == 50)
            // What the server saw: each accepted device exactly once with a 200, each
            // notification's apns-id the same on every attempt.
            let records = server.recordedRequests
            var accepted: [String: Int] = [:]
            var idsByDevice: [String: Set<String>] = [:]
            for record in records {
                guard let device = record.deviceToken else { continue }
                idsByDevice[device, default: []].insert(record.apnsID.uppercased())
                if record.status == 200 { accepted[device, default: 0] += 1 }
            }
            #expect(accepted.count == devices.count - devices.count / 10)
            #expect(accepted.values.allSatisfy { $0 == 1 })
            #expect(idsByDevice.values.allSatisfy { $0.count == 1 })
            // The expired token was replaced as soon as its first refusal came back: only
            // requests already made (at most the window) carried it.
            let expired = records.filter { $0.reason == "ExpiredProviderToken" }.count
            #expect((1...300).contains(expired), "\(expired) requests carried the expired token")
        }
    }
}

/// A provider token source whose tokens are two hours old (expired for APNs) until one is
/// invalidated; afterwards it returns current tokens.
final class ExpiringOnceTokenSource: ProviderTokenSource {
    private let stale: ProviderTokenCache
    private let fresh: ProviderTokenCache
    private let state = Mutex((invalidated: false, invalidations: 0))

    init(key: ProviderKey) throws {
        stale = try ProviderTokenCache(
            key: key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ",
            clock: ProviderTokenClock { Date().addingTimeInterval(-7_200) }
        )
        fresh = try ProviderTokenCache(key: key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
    }

    var invalidations: Int { state.withLock { $0.invalidations } }

    func token() throws -> ProviderToken {
        try state.withLock { $0.invalidated } ? fresh.token() : stale.token()
    }

    func invalidate(_ token: ProviderToken) {
        state.withLock { state in
            guard !state.invalidated else { return }
            state.invalidated = true
            state.invalidations += 1
        }
    }
}

