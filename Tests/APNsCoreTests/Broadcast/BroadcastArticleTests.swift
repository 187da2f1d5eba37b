import Foundation
import Synchronization
import Testing

@testable import APNsCore

/// A transport that keeps channels like APNs: 201 + apns-channel-id, 200 JSON, 204, and
/// 400 ChannelNotRegistered for an unknown channel.
final class ChannelKeepingTransport: PushTransport {
    final class Channels: Sendable {
        let ids = Mutex<[String]>([])
        func withLock<T>(_ body: (inout [String]) -> T) -> T { ids.withLock { body(&$0) } }
    }
    let mock: MockTransport

    init() {
        let channels = Channels()
        mock = MockTransport { request in
            let id = request.header("apns-channel-id")
            switch (request.method, request.path.hasSuffix("/all-channels")) {
            case (.post, _) where request.path.hasPrefix("/1/"):
                let new = Data(UUID().uuidString.utf8.prefix(12)).base64EncodedString()
                channels.withLock { $0.append(new) }
                return response(201, [("apns-channel-id", new)])
            case (.get, true):
                let list = channels.withLock { $0 }.map { "\"\($0)\"" }.joined(separator: ",")
                return response(200, body: #"{"channels":["# + list + "]}")
            default:
                guard let id, channels.withLock({ $0.contains(id) }) else {
                    return response(400, body: rejectionBody("ChannelNotRegistered"))
                }
                switch request.method {
                case .get: return response(200, body: #"{"message-storage-policy":1,"push-type":"LiveActivity"}"#)
                case .delete:
                    channels.withLock { $0.removeAll { $0 == id } }
                    return response(204)
                default: return response(200, [("apns-request-id", request.header("apns-request-id") ?? "")])
                }
            }
        }
    }

    func send(_ request: APNsRequest) async throws(APNsTransportError) -> APNsResponse { try await mock.send(request) }
    func shutdown() async { await mock.shutdown() }
}

/// The code of BroadcastingLiveActivityUpdates.md, as written there.
@Suite struct BroadcastArticleTests {
    @Test func articleCodeRuns() async throws {
        let tokens = CoreCountingTokenSource()
        let transport = ChannelKeepingTransport()

        // ## Create a channel for each event
        let client = APNsClient(environment: .sandbox, credentials: .providerToken(tokens), transport: transport)
        var channel = try await client.createChannel(bundleID: "com.example.scores", storagePolicy: .mostRecentMessage)

        // ## Broadcast an update
        let update = BroadcastNotification(
            payload: .liveActivityUpdate(timestamp: 1_700_000_000, contentState: ["home": 2, "away": 1]),
            priority: .powerConsiderate,
            expiration: .at(Date(timeIntervalSince1970: 1_700_003_600))
        )
        let accepted = try await client.broadcast(update, to: channel, bundleID: "com.example.scores")
        print(accepted.requestID?.uuidString ?? "-")

        // ## Read, list and delete channels
        let configuration = try await client.channelConfiguration(channel, bundleID: "com.example.scores")
        let all = try await client.channels(bundleID: "com.example.scores")
        try await client.deleteChannel(channel, bundleID: "com.example.scores")

        #expect(configuration.storagePolicy == .mostRecentMessage)
        #expect(all == [channel])
        let broadcast = try #require(transport.mock.requests.first { $0.path.hasPrefix("/4/") })
        #expect(broadcast.header("apns-priority") == "5")
        #expect(broadcast.header("apns-expiration") == "1700003600")
        #expect(accepted.requestID?.uuidString == broadcast.header("apns-request-id"))

        // ## Handle errors
        let deleted = channel
        do {
            _ = try await client.broadcast(update, to: channel, bundleID: "com.example.scores")
        } catch {
            guard error.rejection?.reason == .channelNotRegistered else { throw error }
            // The channel was deleted, or belongs to the other environment: make a new one.
            channel = try await client.createChannel(bundleID: "com.example.scores")
        }
        #expect(channel != deleted)
        #expect(try await client.channels(bundleID: "com.example.scores") == [channel])
    }
}
