import Foundation
import Testing

@testable import APNsCore

let sampleChannel: ChannelID = {
    // "dHN0LXNyY2gtY2hubA==" is base64 of "tst-srch-chnl" (Foundation decodes it below).
    (try? ChannelID("dHN0LXNyY2gtY2hubA==")) ?? { preconditionFailure("valid base64") }()
}()
let sampleUpdate = Payload.liveActivityUpdate(timestamp: 1_168_364_460, contentState: ["score": "2 – 1"])

/// Requests built for every broadcast and channel management endpoint, checked against
/// Apple's "Sending broadcast push notification requests to APNs" and "Sending channel
/// management requests to APNs".
@Suite struct BroadcastRequestTests {
    // MARK: ChannelID

    // RFC 4648 §10 test vectors (base64 of "f", "fo", "foo", "foob", "fooba", "foobar").
    @Test(arguments: ["Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy", "dHN0LXNyY2gtY2hubA==", "+/+/"])
    func channelIDAcceptsBase64(_ text: String) throws {
        #expect(try ChannelID(text).rawValue == text)
        // Foundation, an independent decoder, agrees it is base64.
        #expect(Data(base64Encoded: text) != nil)
    }

    @Test(arguments: [
        ("", 0), ("Zg=", 3), ("Zm9", 3), ("Zg=a", 3), ("Z===", 1), ("Zm9v\r\n", 4), ("Zm9-", 3), ("Zm9_", 3),
        ("Zm 9", 2), ("====", 0), ("Zm9vYg==\n", 8),
    ])
    func channelIDRefusesWhatIsNotBase64(_ text: String, position: Int) {
        // Foundation, an independent decoder, refuses them too; it is lenient about padding
        // in the middle ("Zg=a"), which RFC 4648 §3.3 lets a decoder reject, and we do.
        if text != "Zg=a" { #expect(Data(base64Encoded: text) == nil || text.isEmpty || text == "====") }
        do {
            _ = try ChannelID(text)
            Issue.record("accepted \(text.debugDescription)")
        } catch {
            #expect(error.code == .invalidHeaderValue)
            #expect(error.header == "apns-channel-id")
            #expect(error.position == position)
        }
    }

    @Test func channelIDRoundTripsThroughJSON() throws {
        let data = try JSONEncoder().encode([sampleChannel])
        #expect(String(decoding: data, as: UTF8.self) == #"["dHN0LXNyY2gtY2hubA=="]"#)
        #expect(try JSONDecoder().decode([ChannelID].self, from: data) == [sampleChannel])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([ChannelID].self, from: Data(#"["a\r"]"#.utf8)) }
    }

    @Test func storagePolicyValuesAreApples() {
        // Apple: 0 = No Message Stored, 1 = Most Recent Message Stored.
        #expect(MessageStoragePolicy.noStorage.rawValue == 0)
        #expect(MessageStoragePolicy.mostRecentMessage.rawValue == 1)
        #expect(MessageStoragePolicy(rawValue: 2) == nil)
    }

    @Test func requestIDIsACanonicalLowercaseUUID() throws {
        let id = try APNsRequestID("EABEAE54-14A8-11E5-B60B-1697F925EC7B")
        #expect(id.uuidString == "eabeae54-14a8-11e5-b60b-1697f925ec7b")
        #expect(UUID(uuidString: APNsRequestID.random().uuidString) != nil)
        #expect(throws: APNsRequestError.self) { try APNsRequestID("eabeae54") }
        do {
            _ = try APNsRequestID("eabeae54-14a8-11e5-b60b-1697f925ec7z")
        } catch {
            #expect(error.header == "apns-request-id")
            #expect(error.position == 35)
            #expect(error.description.contains("apns-request-id"))
        }
    }

    // MARK: Broadcast

    @Test func broadcastRequestFollowsApple() throws {
        let requestID = try APNsRequestID("6f1c9d2a-3b4e-4f5a-8b6c-7d8e9f0a1b2c")
        let request = try BroadcastNotification(payload: sampleUpdate).request(
            to: sampleChannel,
            bundleID: "com.example.scores",
            environment: .sandbox,
            authorization: "bearer a.b.c",
            requestID: requestID
        )
        #expect(request.method == .post)
        #expect(request.path == "/4/broadcasts/apps/com.example.scores")
        // The normal push host on 443: the port is left out of :authority.
        #expect(request.authority == "api.sandbox.push.apple.com")
        #expect(
            request.headers.map(\.name) == [
                ":method", ":scheme", ":path", ":authority", "authorization", "apns-channel-id", "apns-push-type",
                "apns-priority", "apns-expiration", "apns-request-id",
            ]
        )
        #expect(request.header("apns-channel-id") == "dHN0LXNyY2gtY2hubA==")
        #expect(request.header("apns-push-type") == "liveactivity")
        #expect(request.header("apns-priority") == "10")
        #expect(request.header("apns-expiration") == "0")
        #expect(request.header("apns-request-id") == requestID.uuidString)
        #expect(request.header("apns-topic") == nil)
        #expect(request.apnsID == nil && request.deviceToken == nil)
        // Foundation reads the body: a Live Activity update.
        let json = try #require(try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any])
        let aps = try #require(json["aps"] as? [String: Any])
        #expect(aps["event"] as? String == "update")
        #expect(aps["timestamp"] as? Int == 1_168_364_460)
        #expect((aps["content-state"] as? [String: Any])?["score"] as? String == "2 – 1")
    }

    @Test func broadcastWithCertificateHasNoAuthorizationAndProductionHost() throws {
        let request = try BroadcastNotification(
            payload: sampleUpdate,
            priority: .low,
            expiration: .unixTime(1_900_000_000)
        )
        .request(to: sampleChannel, bundleID: "com.example.scores", environment: .production)
        #expect(request.authority == "api.push.apple.com")
        #expect(request.header("authorization") == nil)
        #expect(request.header("apns-priority") == "1")
        #expect(request.header("apns-expiration") == "1900000000")
        #expect(request.header("apns-request-id").flatMap(UUID.init(uuidString:)) != nil)
    }

    @Test(arguments: [(5120, true), (5121, false), (4097, true)])
    func broadcastPayloadLimitIs5120Bytes(size: Int, accepted: Bool) throws {
        let frame = #"{"aps":{"timestamp":1,"event":"update","content-state":{"s":""}}}"#
        let body =
            #"{"aps":{"timestamp":1,"event":"update","content-state":{"s":""#
            + String(repeating: "x", count: size - frame.utf8.count) + #""}}}"#
        #expect(body.utf8.count == size)
        let notification = BroadcastNotification(body: .raw(Array(body.utf8)))
        let result = Result { () throws(APNsRequestError) in
            try notification.request(to: sampleChannel, bundleID: "com.example", environment: .sandbox)
        }
        if accepted {
            #expect(try result.get().body.count == size)
        } else {
            #expect(throws: APNsRequestError.self) { try result.get() }
        }
        // The same limit for an encoded payload: a 4097..5120-byte update is a valid broadcast.
        let big = Payload.liveActivityUpdate(
            timestamp: 1,
            contentState: ["s": .string(String(repeating: "x", count: size - frame.utf8.count))]
        )
        let encoded = Result { () throws(APNsRequestError) in
            try BroadcastNotification(payload: big).request(
                to: sampleChannel,
                bundleID: "com.example",
                environment: .sandbox
            )
        }
        #expect(((try? encoded.get()) != nil) == accepted)
    }

    // Apple, "Starting and updating Live Activities with ActivityKit push notifications":
    // channels and broadcasts update or end Live Activities; push-to-start tokens start them.
    @Test func aBroadcastCannotStartALiveActivity() {
        let start = Payload.liveActivityStart(
            timestamp: 1, attributesType: "Match", attributes: ["home": "A"], contentState: ["score": 0])
        #expect {
            try BroadcastNotification(payload: start)
                .request(to: sampleChannel, bundleID: "com.example", environment: .sandbox)
        } throws: { error in
            let error = error as? APNsRequestError
            return error?.code == .invalidPayload && error?.description.contains("push-to-start") == true
        }
        #expect(throws: Never.self) {
            try BroadcastNotification(payload: .liveActivityEnd(timestamp: 2))
                .request(to: sampleChannel, bundleID: "com.example", environment: .sandbox)
        }
    }

    @Test func broadcastNeedsAnExpirationAndALiveActivityPayload() {
        #expect {
            try BroadcastNotification(payload: sampleUpdate, expiration: .none)
                .request(to: sampleChannel, bundleID: "com.example", environment: .sandbox)
        } throws: { ($0 as? APNsRequestError)?.code == .invalidExpiration }
        // An alert payload is not a Live Activity update (no event, no timestamp).
        #expect {
            try BroadcastNotification(payload: .alert(title: "Hi", body: "there"))
                .request(to: sampleChannel, bundleID: "com.example", environment: .sandbox)
        } throws: { ($0 as? APNsRequestError)?.code == .invalidPayload }
        #expect {
            try BroadcastNotification(body: .raw([])).request(
                to: sampleChannel,
                bundleID: "com.example",
                environment: .sandbox
            )
        } throws: { ($0 as? APNsRequestError)?.code == .invalidPayload }
    }

    @Test(arguments: ["", "com.example/../x", "com.example\r\nx-evil: 1", "com example", "com.example?x=1", "é.app"])
    func bundleIDThatCouldBendThePathIsRefused(_ bundleID: String) {
        #expect {
            try BroadcastNotification(payload: sampleUpdate).request(
                to: sampleChannel,
                bundleID: bundleID,
                environment: .sandbox
            )
        } throws: { ($0 as? APNsRequestError)?.code == .invalidTopic }
        #expect {
            try ChannelRequest.list.request(bundleID: bundleID, environment: .sandboxChannelManagement)
        } throws: { ($0 as? APNsRequestError)?.code == .invalidTopic }
    }

    // Apple ("Handling error responses from APNs"): 400 TopicDisallowed, "Ensure that no push
    // type suffix is added to the bundle ID". The topic of a Live Activity device push is
    // com.example.app.push-type.liveactivity; a broadcast's path takes com.example.app.
    @Test(arguments: ["com.example.app.push-type.liveactivity", "com.example.app.push-type.widgets",
                      "com.example.app.push-type.controls"])
    func bundleIDWithAPushTypeSuffixIsRefusedBeforeSending(_ bundleID: String) {
        let refused: (any Error) -> Bool = {
            guard let error = $0 as? APNsRequestError else { return false }
            return error.code == .invalidTopic && error.position == "com.example.app".utf8.count
                && error.description.contains("com.example.app")
        }
        #expect {
            try BroadcastNotification(payload: sampleUpdate).request(to: sampleChannel, bundleID: bundleID,
                                                                      environment: .sandbox)
        } throws: { refused($0) }
        for request in [ChannelRequest.create(storagePolicy: .noStorage), .list, .read(sampleChannel), .delete(sampleChannel)] {
            #expect {
                try request.request(bundleID: bundleID, environment: .sandboxChannelManagement)
            } throws: { refused($0) }
        }
    }

    @Test func aBundleIDThatOnlyLooksLikeASuffixIsSent() throws {
        // .voip and the like are also ordinary bundle ID components: only .push-type. suffixes are refused.
        for bundleID in ["com.example.voip", "com.example.complication", "com.example.push-type", "push-type.liveactivity.app"] {
            let request = try ChannelRequest.list.request(bundleID: bundleID, environment: .sandboxChannelManagement)
            #expect(request.path == "/1/apps/\(bundleID)/all-channels")
        }
    }

    @Test func headerInjectionIsStillRefusedByTheRequestModel() {
        #expect {
            try APNsRequest(
                method: .post,
                authority: "api.push.apple.com",
                path: "/4/broadcasts/apps/com.example",
                headers: [HeaderField(name: "apns-channel-id", value: "Zm9v\r\nx-evil: 1")],
                body: []
            )
        } throws: { ($0 as? APNsRequestError)?.header == "apns-channel-id" }
    }

    // MARK: Channel management

    @Test func createChannelRequest() throws {
        let requestID = APNsRequestID.random()
        let request = try ChannelRequest.create(storagePolicy: .mostRecentMessage).request(
            bundleID: "com.example.scores",
            environment: APNsEnvironment.sandbox.channelManagement,
            authorization: "bearer a.b.c",
            requestID: requestID
        )
        #expect(request.method == .post)
        #expect(request.path == "/1/apps/com.example.scores/channels")
        #expect(request.authority == "api-manage-broadcast.sandbox.push.apple.com:2195")
        #expect(
            request.headers.map(\.name) == [
                ":method", ":scheme", ":path", ":authority", "authorization", "apns-request-id", "content-type",
            ]
        )
        #expect(request.header("apns-request-id") == requestID.uuidString)
        let body = try #require(try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any])
        #expect(body.count == 2)
        #expect(body["message-storage-policy"] as? Int == 1)
        #expect(body["push-type"] as? String == "LiveActivity")
        #expect(ChannelRequest.create(storagePolicy: .noStorage).successStatus == 201)
    }

    @Test func readListAndDeleteRequests() throws {
        let production = APNsEnvironment.production.channelManagement
        let read = try ChannelRequest.read(sampleChannel).request(bundleID: "com.example", environment: production)
        #expect(read.method == .get)
        #expect(read.path == "/1/apps/com.example/channels")
        #expect(read.authority == "api-manage-broadcast.push.apple.com:2196")
        #expect(
            read.headers.map(\.name) == [
                ":method", ":scheme", ":path", ":authority", "apns-channel-id", "apns-request-id",
            ]
        )
        #expect(read.header("apns-channel-id") == sampleChannel.rawValue)
        #expect(read.body.isEmpty)

        let list = try ChannelRequest.list.request(bundleID: "com.example", environment: production)
        #expect(list.method == .get)
        #expect(list.path == "/1/apps/com.example/all-channels")
        #expect(list.header("apns-channel-id") == nil)
        #expect(list.header("apns-request-id") != nil)

        let delete = try ChannelRequest.delete(sampleChannel).request(bundleID: "com.example", environment: production)
        #expect(delete.method == .delete)
        #expect(delete.header(":method") == "DELETE")
        #expect(delete.path == "/1/apps/com.example/channels")
        #expect(delete.header("apns-channel-id") == sampleChannel.rawValue)
        #expect(
            [ChannelRequest.read(sampleChannel), .list, .delete(sampleChannel)].map(\.successStatus) == [200, 200, 204]
        )
    }

    @Test func channelConfigurationParsesApplesJSON() {
        #expect(
            ChannelConfiguration(json: Array(#"{"message-storage-policy": 1, "push-type": "LiveActivity"}"#.utf8))
                == ChannelConfiguration(storagePolicy: .mostRecentMessage)
        )
        #expect(
            ChannelConfiguration(json: Array(#"{"message-storage-policy": 0, "push-type": "LiveActivity"}"#.utf8))?
                .storagePolicy == .noStorage
        )
        #expect(
            ChannelConfiguration(json: Array(#"{"message-storage-policy": 3, "push-type": "LiveActivity"}"#.utf8))
                == nil
        )
        #expect(ChannelConfiguration(json: Array(#"{"push-type": "LiveActivity"}"#.utf8)) == nil)
        #expect(ChannelConfiguration(json: Array("not json".utf8)) == nil)
    }

    @Test func channelReasonsAreNeverRemoveDeviceTokenOrRetry() {
        let reasons: [APNsReason] = [
            .channelNotRegistered, .badChannelID, .missingChannelID, .featureNotEnabled, .cannotCreateChannelConfig,
            .badRequestParams, .badRequestPayload, .missingPushType, .topicMismatch,
        ]
        for reason in reasons {
            for status in [400, 404, 410] {
                #expect(APNsRemedy(reason: reason, status: status) == .fixRequest, "\(reason) \(status)")
            }
        }
        // Reasons that are not channel reasons keep their classification.
        #expect(APNsRemedy(reason: .unregistered, status: 410) == .removeDeviceToken)
        #expect(APNsRemedy(reason: .tooManyRequests, status: 429) == .retryLater)
    }
}
