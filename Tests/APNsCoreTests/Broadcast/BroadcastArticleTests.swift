import APNsTesting
import Foundation
import Synchronization
import Testing

@testable import APNsCore

/// A transport that keeps channels like APNs: 201 + apns-channel-id, 200 JSON with the
/// channel's storage policy, 204, 400 ChannelNotRegistered for an unknown channel, and
/// 400 BadExpirationDate for a broadcast with a non-zero expiration on a channel that
/// stores nothing. Every answer echoes the request's apns-request-id.
final class ChannelKeepingTransport: PushTransport {
    final class Channels: Sendable {
        /// Channel IDs in creation order, with their storage policy.
        let channels = Mutex<[(id: String, policy: Int)]>([])
        func withLock<T>(_ body: (inout [(id: String, policy: Int)]) -> T) -> T { channels.withLock { body(&$0) } }
    }
    let mock: MockTransport
    /// Bound to the sandbox, as the article's `HTTP2Transport` is.
    var environment: APNsEnvironment? { .sandbox }

    init() {
        let channels = Channels()
        mock = MockTransport { request in
            let echo = [("apns-request-id", request.header("apns-request-id") ?? "")]
            let id = request.header("apns-channel-id")
            switch (request.method, request.path.hasSuffix("/all-channels")) {
            case (.post, _) where request.path.hasPrefix("/1/"):
                let new = Data(UUID().uuidString.utf8.prefix(12)).base64EncodedString()
                let body = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any]
                let policy = body?["message-storage-policy"] as? Int ?? 0
                channels.withLock { $0.append((new, policy)) }
                return response(201, echo + [("apns-channel-id", new)])
            case (.get, true):
                let list = channels.withLock { $0 }.map { "\"\($0.id)\"" }.joined(separator: ",")
                return response(200, echo, body: #"{"channels":["# + list + "]}")
            default:
                guard let id, let policy = channels.withLock({ $0.first { $0.id == id }?.policy }) else {
                    return response(400, echo, body: rejectionBody("ChannelNotRegistered"))
                }
                switch request.method {
                case .get:
                    return response(200, echo, body: #"{"message-storage-policy":"# + "\(policy)" + #","push-type":"LiveActivity"}"#)
                case .delete:
                    channels.withLock { $0.removeAll { $0.id == id } }
                    return response(204, echo)
                default:
                    if policy == 0 && request.header("apns-expiration") != "0" {
                        return response(400, echo, body: rejectionBody("BadExpirationDate"))
                    }
                    return response(200, echo)
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
        let client = APNsClient(credentials: .providerToken(tokens), transport: transport)  // the transport's environment
        let created = try await client.createChannel(bundleID: "com.example.scores", storagePolicy: .mostRecentMessage)
        var channel = created.value
        print(created.requestID)   // the apns-request-id APNs echoed, for Apple's support

        #expect(created.requestID.uuidString == transport.mock.requests.last?.header("apns-request-id"))

        // ## Broadcast an update
        let update = BroadcastNotification(
            payload: .liveActivityUpdate(timestamp: 1_700_000_000, contentState: ["home": 2, "away": 1]),
            priority: .powerConsiderate,
            expiration: .at(Date(timeIntervalSince1970: 1_700_003_600))
        )
        let accepted = try await client.broadcast(update, to: channel, bundleID: "com.example.scores")
        print(accepted.requestID?.uuidString ?? "-")

        // ## Read, list and delete channels
        let configuration = try await client.channelConfiguration(channel, bundleID: "com.example.scores").value
        let all = try await client.channels(bundleID: "com.example.scores").value
        let requestID = APNsRequestID(UUID())   // or one your own logs already carry
        try await client.deleteChannel(channel, bundleID: "com.example.scores", requestID: requestID)

        #expect(configuration.storagePolicy == .mostRecentMessage)
        #expect(all == [channel])
        let broadcast = try #require(transport.mock.requests.first { $0.path.hasPrefix("/4/") })
        #expect(broadcast.header("apns-priority") == "5")
        #expect(broadcast.header("apns-expiration") == "1700003600")
        #expect(accepted.requestID?.uuidString == broadcast.header("apns-request-id"))
        #expect(transport.mock.requests.last?.method == .delete)
        #expect(transport.mock.requests.last?.header("apns-request-id") == requestID.uuidString)

        // ## Handle errors
        let deleted = channel
        do {
            _ = try await client.broadcast(update, to: channel, bundleID: "com.example.scores")
        } catch {
            guard error.rejection?.reason == .channelNotRegistered else { throw error }
            // The channel was deleted, or belongs to the other environment: make a new one
            // with the same storage policy (the update's expiration needs storage), hand it
            // to your app, and send the update again.
            channel = try await client.createChannel(bundleID: "com.example.scores", storagePolicy: .mostRecentMessage).value
            _ = try await client.broadcast(update, to: channel, bundleID: "com.example.scores")
        }
        #expect(channel != deleted)
        #expect(try await client.channels(bundleID: "com.example.scores").value == [channel])
        let resent = transport.mock.requests.filter { $0.path.hasPrefix("/4/") }
        #expect(resent.count == 3)
        #expect(resent.last?.header("apns-channel-id") == channel.rawValue)
    }

    /// The transport answers like APNs where the article's advice matters: a replacement
    /// channel that stores nothing refuses the update's non-zero expiration.
    @Test func aChannelThatStoresNothingRefusesTheArticlesUpdate() async throws {
        let client = APNsClient(environment: .sandbox, credentials: .certificate, transport: ChannelKeepingTransport())
        let channel = try await client.createChannel(bundleID: "com.example.scores").value
        let update = BroadcastNotification(
            payload: .liveActivityUpdate(timestamp: 1_700_000_000, contentState: ["home": 2, "away": 1]),
            expiration: .at(Date(timeIntervalSince1970: 1_700_003_600))
        )
        await #expect {
            try await client.broadcast(update, to: channel, bundleID: "com.example.scores")
        } throws: { ($0 as? APNsError)?.rejection?.reason == .badExpirationDate }
        _ = try await client.broadcast(
            .liveActivityUpdate(timestamp: 1_700_000_000, contentState: ["home": 2, "away": 1]),
            to: channel,
            bundleID: "com.example.scores"
        )
    }
}
