import APNsTesting
import Foundation
import Logging
import Synchronization
import Testing

@testable import APNsCore

/// Answers requests in order from a list (the last answer repeats), recording them.
final class ScriptedAnswers: Sendable {
    private let answers: Mutex<[MockTransport.Response]>
    init(_ answers: [MockTransport.Response]) { self.answers = Mutex(answers) }
    func next() -> MockTransport.Response {
        answers.withLock { $0.count > 1 ? $0.removeFirst() : $0[0] }
    }
}

extension MockTransport {
    /// A mock that answers with `answers` in order.
    static func answering(_ answers: MockTransport.Response...) -> MockTransport {
        let script = ScriptedAnswers(answers)
        return MockTransport { _ in script.next() }
    }
}

func response(_ status: Int, _ headers: [(String, String)] = [], body: String = "") -> MockTransport.Response {
    .response(
        APNsResponse(
            status: status,
            headers: headers.map { HeaderField(name: $0.0, value: $0.1) },
            body: Array(body.utf8)
        )
    )
}

func rejectionBody(_ reason: String) -> String { #"{"reason":""# + reason + #""}"# }

/// The client's broadcast and channel calls, over ``MockTransport``: the same attempt
/// loop as device pushes (token, retry, ExpiredProviderToken refresh).
@Suite struct BroadcastClientTests {
    static let bundle = "com.example.scores"

    @Test func broadcastGoesToThePushHostAndReadsTheAnswer() async throws {
        let mock = MockTransport.answering(
            response(
                200,
                [
                    ("apns-request-id", "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"),
                    ("apns-unique-id", "a3a9e2ae-9a43-4b1e-9d0a-3c3f0f6f1f2b"),
                ]
            )
        )
        let client = APNsClient.testing(transport: mock)
        let accepted = try await client.broadcast(sampleUpdate, to: sampleChannel, bundleID: Self.bundle)
        #expect(accepted.requestID?.uuidString == "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d")
        #expect(accepted.uniqueID == "a3a9e2ae-9a43-4b1e-9d0a-3c3f0f6f1f2b")
        #expect(accepted.channel == sampleChannel)
        let request = try #require(mock.requests.first)
        #expect(request.authority == "api.sandbox.push.apple.com")
        #expect(request.path == "/4/broadcasts/apps/com.example.scores")
        #expect(request.header("apns-expiration") == "0")
    }

    @Test(arguments: [
        (APNsEnvironment.sandbox.alternatePort, "api.sandbox.push.apple.com"),
        (.production.alternatePort, "api.push.apple.com"),
        (.production, "api.push.apple.com"),
        (.custom(host: "127.0.0.1", port: 2197), "127.0.0.1:2197"),
    ])
    func broadcastFromTheAlternatePortGoesToPort443(environment: APNsEnvironment, authority: String) async throws {
        let mock = MockTransport.answering(response(200))
        let client = APNsClient(environment: environment, credentials: .certificate, transport: mock)
        _ = try await client.broadcast(sampleUpdate, to: sampleChannel, bundleID: Self.bundle)
        #expect(mock.requests.first?.authority == authority)
    }

    @Test func broadcastWithoutEchoKeepsTheRequestsID() async throws {
        let mock = MockTransport.answering(response(200))
        let client = APNsClient.testing(transport: mock)
        let requestID = APNsRequestID.random()
        let accepted = try await client.broadcast(
            BroadcastNotification(payload: sampleUpdate, requestID: requestID),
            to: sampleChannel,
            bundleID: Self.bundle
        )
        #expect(accepted.requestID == requestID)
        #expect(mock.requests.first?.header("apns-request-id") == requestID.uuidString)
    }

    @Test(arguments: [APNsReason.serviceUnavailable, .internalServerError, .tooManyRequests])
    func broadcastRetriesLikeADevicePushWithTheSameRequestID(reason: APNsReason) async throws {
        let mock = MockTransport.answering(
            response(reason.status ?? 500, body: rejectionBody(reason.rawValue)),
            response(200)
        )
        let sleeper = CoreRecordingSleeper()
        let client = APNsClient.testing(transport: mock, sleeper: sleeper)
        _ = try await client.broadcast(sampleUpdate, to: sampleChannel, bundleID: Self.bundle)
        let requests = mock.requests
        #expect(requests.count == 2)
        #expect(requests[0].header("apns-request-id") == requests[1].header("apns-request-id"))
        #expect(requests[0].body == requests[1].body)
        // The default policy's first backoff with jitter 1: 250 ms.
        #expect(sleeper.durations == [.milliseconds(250)])
    }

    @Test(arguments: [
        ("ChannelNotRegistered", 410), ("ChannelNotRegistered", 400), ("BadChannelId", 400),
        ("FeatureNotEnabled", 400), ("BadExpirationDate", 400), ("PayloadTooLarge", 413),
    ])
    func broadcastRejectionIsNotRetried(reason: String, status: Int) async throws {
        let mock = MockTransport.answering(response(status, body: rejectionBody(reason)), response(200))
        let client = APNsClient.testing(transport: mock)
        do {
            _ = try await client.broadcast(sampleUpdate, to: sampleChannel, bundleID: Self.bundle)
            Issue.record("accepted")
        } catch {
            #expect(error.rejection?.reason == APNsReason(rawValue: reason))
            #expect(error.rejection?.status == status)
            #expect(error.rejection?.remedy == .fixRequest)
            #expect(error.rejection?.deviceToken == nil)
            // The rejection carries the request id that was sent, for Apple's logs.
            let sent = try #require(mock.requests.first?.header("apns-request-id"))
            #expect(error.rejection?.requestID?.uuidString == sent)
        }
        #expect(mock.requests.count == 1)
    }

    @Test func expiredProviderTokenIsRefreshedOnceForBroadcastsAndChannels() async throws {
        let expired = response(403, body: rejectionBody("ExpiredProviderToken"))
        let tokens = CoreCountingTokenSource()
        let sleeper = CoreRecordingSleeper()
        let mock = MockTransport.answering(
            expired,
            response(200),
            expired,
            response(201, [("apns-channel-id", "Zm9vYmFy")])
        )
        let client = APNsClient.testing(transport: mock, credentials: .providerToken(tokens), sleeper: sleeper)
        _ = try await client.broadcast(sampleUpdate, to: sampleChannel, bundleID: Self.bundle)
        let channel = try await client.createChannel(bundleID: Self.bundle).value
        #expect(channel.rawValue == "Zm9vYmFy")
        let authorizations = mock.requests.map { $0.header("authorization") }
        #expect(
            authorizations == [
                "bearer header.claims.signature-1", "bearer header.claims.signature-2",
                "bearer header.claims.signature-2", "bearer header.claims.signature-3",
            ]
        )
        #expect(tokens.invalidated == ["header.claims.signature-1", "header.claims.signature-2"])
        #expect(sleeper.durations.isEmpty)
        // The retry of the creation reuses its apns-request-id.
        #expect(mock.requests[2].header("apns-request-id") == mock.requests[3].header("apns-request-id"))
    }

    @Test func providerTokenFailureMakesTheCallInvalid() async {
        let mock = MockTransport.answering(response(200))
        let client = APNsClient.testing(transport: mock, credentials: .providerToken(CoreFailingTokenSource()))
        await #expect { try await client.channels(bundleID: Self.bundle) } throws: {
            ($0 as? APNsError)?.requestError?.code == .providerTokenUnavailable
        }
        #expect(mock.requests.isEmpty)
    }

    // MARK: Channel management

    @Test(arguments: [
        (APNsEnvironment.sandbox, "api-manage-broadcast.sandbox.push.apple.com:2195"),
        (.production, "api-manage-broadcast.push.apple.com:2196"),
        (.custom(host: "127.0.0.1", port: 8443), "127.0.0.1:8443"),
    ])
    func channelCallsGoToTheChannelManagementHost(environment: APNsEnvironment, authority: String) async throws {
        let mock = MockTransport.answering(response(201, [("apns-channel-id", "Zm9vYmFy")]))
        let client = APNsClient(environment: environment, credentials: .certificate, transport: mock)
        _ = try await client.createChannel(bundleID: Self.bundle, storagePolicy: .mostRecentMessage)
        #expect(mock.requests.first?.authority == authority)
    }

    @Test func createReadListDeleteParseApplesAnswers() async throws {
        let mock = MockTransport.answering(
            response(
                201,
                [
                    ("apns-request-id", "6f1c9d2a-3b4e-4f5a-8b6c-7d8e9f0a1b2c"),
                    ("apns-channel-id", "dHN0LXNyY2gtY2hubA=="),
                ]
            ),
            response(
                200,
                [("content-type", "application/json")],
                body: #"{"message-storage-policy": 1, "push-type": "LiveActivity"}"#
            ),
            response(200, body: #"{"channels": ["dHN0LXNyY2gtY2hubA==", "Zm9vYmFy"]}"#),
            response(204)
        )
        let client = APNsClient.testing(transport: mock)
        let created = try await client.createChannel(bundleID: Self.bundle, storagePolicy: .mostRecentMessage)
        let channel = created.value
        #expect(channel == sampleChannel)
        // The request ID of APNs' 201 answer, not the one the client sent.
        #expect(created.requestID.uuidString == "6f1c9d2a-3b4e-4f5a-8b6c-7d8e9f0a1b2c")
        #expect(mock.requests[0].header("apns-request-id") != "6f1c9d2a-3b4e-4f5a-8b6c-7d8e9f0a1b2c")
        let configuration = try await client.channelConfiguration(channel, bundleID: Self.bundle)
        #expect(configuration.value.storagePolicy == .mostRecentMessage)
        #expect(configuration.value.pushType == "LiveActivity")
        // No apns-request-id in the answer: the one the request carried.
        #expect(configuration.requestID.uuidString == mock.requests[1].header("apns-request-id"))
        let all = try await client.channels(bundleID: Self.bundle)
        #expect(all.value.map(\.rawValue) == ["dHN0LXNyY2gtY2hubA==", "Zm9vYmFy"])
        #expect(all.requestID.uuidString == mock.requests[2].header("apns-request-id"))
        let deleted = try await client.deleteChannel(channel, bundleID: Self.bundle)
        #expect(deleted.value == channel)
        #expect(deleted.requestID.uuidString == mock.requests[3].header("apns-request-id"))
        #expect(
            mock.requests.map { "\($0.method) \($0.path)" } == [
                "POST /1/apps/com.example.scores/channels", "GET /1/apps/com.example.scores/channels",
                "GET /1/apps/com.example.scores/all-channels", "DELETE /1/apps/com.example.scores/channels",
            ]
        )
        // Every channel call carries its own apns-request-id.
        #expect(Set(mock.requests.compactMap { $0.header("apns-request-id") }).count == 4)
    }

    @Test func channelCallsSendTheCallersRequestIDAndReturnTheEcho() async throws {
        let mock = MockTransport { request in
            let echo = request.header("apns-request-id") ?? ""
            switch request.method {
            case .post: return response(201, [("apns-request-id", echo), ("apns-channel-id", "Zm9vYmFy")])
            case .delete: return response(204, [("apns-request-id", echo)])
            default:
                if request.path.hasSuffix("/all-channels") {
                    return response(200, [("apns-request-id", echo)], body: #"{"channels": ["Zm9vYmFy"]}"#)
                }
                return response(
                    200, [("apns-request-id", echo)], body: #"{"message-storage-policy": 0, "push-type": "LiveActivity"}"#)
            }
        }
        let client = APNsClient.testing(transport: mock)
        let ids = (0..<4).map { _ in APNsRequestID.random() }
        let created = try await client.createChannel(bundleID: Self.bundle, requestID: ids[0])
        let read = try await client.channelConfiguration(created.value, bundleID: Self.bundle, requestID: ids[1])
        let listed = try await client.channels(bundleID: Self.bundle, requestID: ids[2])
        let deleted = try await client.deleteChannel(created.value, bundleID: Self.bundle, requestID: ids[3])
        #expect([created.requestID, read.requestID, listed.requestID, deleted.requestID] == ids)
        #expect(mock.requests.map { $0.header("apns-request-id") } == ids.map(\.uuidString))
        #expect(read.value == ChannelConfiguration(storagePolicy: .noStorage))
        #expect(listed == ChannelResponse(value: [created.value], requestID: ids[2]))
    }

    @Test func aRejectedChannelCallCarriesTheCallersRequestID() async throws {
        let mock = MockTransport.answering(response(400, body: rejectionBody("ChannelNotRegistered")))
        let client = APNsClient.testing(transport: mock)
        let requestID = APNsRequestID.random()
        do {
            _ = try await client.channelConfiguration(sampleChannel, bundleID: Self.bundle, requestID: requestID)
            Issue.record("read")
        } catch {
            #expect(error.rejection?.requestID == requestID)
        }
    }

    @Test func aRetriedChannelCallReusesTheCallersRequestID() async throws {
        let mock = MockTransport.answering(response(503, body: rejectionBody("ServiceUnavailable")), response(204))
        let client = APNsClient.testing(transport: mock)
        let requestID = APNsRequestID.random()
        let deleted = try await client.deleteChannel(sampleChannel, bundleID: Self.bundle, requestID: requestID)
        #expect(deleted.requestID == requestID)
        #expect(mock.requests.map { $0.header("apns-request-id") } == [requestID.uuidString, requestID.uuidString])
    }

    @Test func malformedSuccessIsAProtocolFailureAndIsNotRetried() async throws {
        for (answer, call) in [
            (response(201), "create"),
            (response(201, [("apns-channel-id", "not base64!")]), "create"),
            (response(200, body: #"{"channels": "x"}"#), "list"),
            (response(200, body: #"{"channels": ["ok==", 3]}"#), "list"),
            (response(200, body: "{}"), "read"),
        ] {
            let mock = MockTransport.answering(answer, response(201, [("apns-channel-id", "Zm9vYmFy")]))
            let client = APNsClient.testing(transport: mock)
            do {
                switch call {
                case "create": _ = try await client.createChannel(bundleID: Self.bundle)
                case "list": _ = try await client.channels(bundleID: Self.bundle)
                default: _ = try await client.channelConfiguration(sampleChannel, bundleID: Self.bundle)
                }
                Issue.record("\(call) succeeded")
            } catch {
                #expect(error.transportError?.code == .protocolError)
                #expect(error.transportError?.mayHaveReachedAPNs == true)
            }
            #expect(mock.requests.count == 1, "a create that may have succeeded must not be sent twice")
        }
    }

    /// A status APNs never answers these calls with (a 2xx the call does not expect, a
    /// 3xx) is what it is for a device push: a failure that may have reached APNs, not a
    /// rejection saying nothing was done, and not sent again.
    @Test(arguments: [202, 302, 600])
    func unexpectedStatusIsAFailureThatMayHaveReachedAPNs(status: Int) async throws {
        for call in ["broadcast", "create", "delete"] {
            let mock = MockTransport.answering(response(status), response(200))
            let client = APNsClient.testing(transport: mock)
            do {
                switch call {
                case "broadcast": _ = try await client.broadcast(sampleUpdate, to: sampleChannel, bundleID: Self.bundle)
                case "create": _ = try await client.createChannel(bundleID: Self.bundle)
                default: _ = try await client.deleteChannel(sampleChannel, bundleID: Self.bundle)
                }
                Issue.record("\(call) succeeded on \(status)")
            } catch {
                #expect(error.rejection == nil, "\(call): \(error)")
                #expect(error.transportError?.code == .protocolError, "\(call): \(error)")
                #expect(error.transportError?.mayHaveReachedAPNs == true, "\(call): \(error)")
            }
            #expect(mock.requests.count == 1, "\(call)")
        }
    }

    @Test func channelLimitIsARejectionToFix() async throws {
        let mock = MockTransport.answering(response(400, body: rejectionBody("CannotCreateChannelConfig")))
        let client = APNsClient.testing(transport: mock)
        do {
            _ = try await client.createChannel(bundleID: Self.bundle)
            Issue.record("created")
        } catch {
            #expect(error.rejection?.reason == .cannotCreateChannelConfig)
            #expect(error.rejection?.remedy == .fixRequest)
        }
        #expect(mock.requests.count == 1)
    }

    @Test func channelCallIsRetriedOn503WithTheSameRequestID() async throws {
        let mock = MockTransport.answering(response(503, body: rejectionBody("ServiceUnavailable")), response(204))
        let client = APNsClient.testing(transport: mock)
        try await client.deleteChannel(sampleChannel, bundleID: Self.bundle)
        #expect(mock.requests.count == 2)
        #expect(mock.requests[0].header("apns-request-id") == mock.requests[1].header("apns-request-id"))
    }

    @Test func invalidBroadcastIsNeverSent() async {
        let mock = MockTransport.answering(response(200))
        let client = APNsClient.testing(transport: mock)
        await #expect {
            try await client.broadcast(
                .alert(title: "Not", body: "a Live Activity"),
                to: sampleChannel,
                bundleID: Self.bundle
            )
        } throws: { ($0 as? APNsError)?.requestError?.code == .invalidPayload }
        #expect(mock.requests.isEmpty)
    }

    @Test func logsCarryTheRequestIDAndNeverTheToken() async throws {
        let store = CoreCapturingLogHandler.Store()
        let logger = Logger(label: "test") { _ in CoreCapturingLogHandler(store: store) }
        let tokens = CoreCountingTokenSource()
        let mock = MockTransport.answering(response(200))
        let client = APNsClient.testing(transport: mock, credentials: .providerToken(tokens), logger: logger)
        _ = try await client.broadcast(sampleUpdate, to: sampleChannel, bundleID: Self.bundle)
        let requestID = try #require(mock.requests.first?.header("apns-request-id"))
        #expect(store.all.contains { $0.contains("broadcast accepted") && $0.contains(requestID) })
        #expect(!store.all.contains { $0.contains("signature-1") })
    }
}
