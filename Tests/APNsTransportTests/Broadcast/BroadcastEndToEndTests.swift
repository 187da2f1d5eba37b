import APNsMockServer
import Foundation
import Logging
import Testing
@testable import APNsTransport

/// The whole stack for broadcasts: APNsClient signs ES256 provider tokens, HTTP2Transport
/// carries channel management and broadcast requests over TLS and HTTP/2, and the mock
/// server verifies every signature and keeps the channels. With a custom host, channel
/// management goes to the same host and port as pushes (the mock serves both).
@Suite("Broadcasts and channel management over HTTP2Transport")
struct BroadcastEndToEndTests {
    @Test("create channels, broadcast, list, delete; the server's channels match at every step")
    func channelLifecycle() async throws {
        let key = try ProviderKey.generate()
        var keys = ProviderTokenVerifier()
        keys.register(key, keyID: "ABC123DEFG")
        let bundleID = "com.example.scores"
        let configuration = MockAPNsServer.Configuration(
            bundleIDs: [bundleID],
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

            // The caller's apns-request-id goes out, and the mock server's echo comes back.
            let liveRequestID = APNsRequestID.random()
            let created = try await client.createChannel(bundleID: bundleID, storagePolicy: .noStorage, requestID: liveRequestID)
            #expect(created.requestID == liveRequestID)
            let live = created.value
            let stored = try await client.createChannel(bundleID: bundleID, storagePolicy: .mostRecentMessage).value
            #expect(server.channels(bundleID: bundleID).map(\.id) == [live.rawValue, stored.rawValue])
            #expect(try await client.channelConfiguration(stored, bundleID: bundleID).value.storagePolicy == .mostRecentMessage)
            #expect(try await client.channels(bundleID: bundleID).value == [live, stored])

            let update = Payload.liveActivityUpdate(timestamp: 1_700_000_000, contentState: ["home": 2, "away": 1])
            let accepted = try await client.broadcast(update, to: live, bundleID: bundleID)
            #expect(accepted.channel == live)
            #expect(accepted.uniqueID != nil)
            _ = try await client.broadcast(
                update, to: stored, bundleID: bundleID, priority: .powerConsiderate, expiration: .unixTime(1_900_000_000))
            // A channel that stores nothing takes only expiration 0.
            await #expect {
                try await client.broadcast(update, to: live, bundleID: bundleID, expiration: .unixTime(1_900_000_000))
            } throws: { ($0 as? APNsError)?.rejection?.reason == .badExpirationDate }

            try await client.deleteChannel(live, bundleID: bundleID)
            #expect(try await client.channels(bundleID: bundleID).value == [stored])
            await #expect {
                try await client.broadcast(update, to: live, bundleID: bundleID)
            } throws: { ($0 as? APNsError)?.rejection?.reason == .channelNotRegistered }
            await client.shutdown()

            let records = server.recordedRequests
            #expect(records.count == 10)
            #expect(records.allSatisfy { $0.providerToken != nil })
            // create, create, read, list, broadcast, broadcast, rejected broadcast, delete, list, rejected broadcast.
            #expect(records.map(\.status) == [201, 201, 200, 200, 200, 200, 400, 204, 200, 400])
            // Each request's apns-request-id is the one the server answered with.
            #expect(records.allSatisfy { $0.value(of: "apns-request-id") == $0.apnsID })
            #expect(records.first?.value(of: "apns-request-id") == liveRequestID.uuidString)
            let broadcasts = records.filter { $0.value(of: ":path") == "/4/broadcasts/apps/\(bundleID)" }
            #expect(broadcasts.map(\.status) == [200, 200, 400, 400])
            #expect(broadcasts.allSatisfy { $0.value(of: "apns-push-type") == "liveactivity" && $0.value(of: "apns-topic") == nil })
            #expect(transport.statistics.connectionsOpened == 1)
        }
    }
}
