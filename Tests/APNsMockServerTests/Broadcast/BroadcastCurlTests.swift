import Foundation
import Testing
@testable import APNsMockServer

/// A curl answer with its response headers (curl's `-D`), parsed by us from curl's text.
struct CurlAnswer {
    var status: Int
    var headers: [String: String]
    var body: String
    var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] }
    var reason: String? { json?["reason"] as? String }
}

extension CurlClient {
    /// Sends one request with curl and returns status, headers (lowercased names) and body.
    func exchange(
        port: Int, path: String, method: String, headers: [String] = [], body: String? = nil, extra: [String] = []
    ) async throws -> CurlAnswer {
        let headerFile = FileManager.default.temporaryDirectory
            .appendingPathComponent("apns-curl-headers-\(UUID().uuidString).txt").path
        defer { try? FileManager.default.removeItem(atPath: headerFile) }
        let response = try await send(port: port, path: path, method: method, headers: headers, body: body,
                                      extra: ["-D", headerFile] + extra)
        #expect(response.exitCode == 0, "curl failed: \(response.stderr)")
        #expect(response.httpVersion == "2", "curl did not speak HTTP/2")
        let text = (try? String(contentsOfFile: headerFile, encoding: .utf8)) ?? ""
        var fields: [String: String] = [:]
        for line in text.components(separatedBy: "\r\n") {
            guard let colon = line.firstIndex(of: ":"), !line.hasPrefix("HTTP/") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            fields[name] = value
        }
        return CurlAnswer(status: response.status, headers: fields, body: response.body)
    }
}

let bundle = "com.example.app"
let createBody = #"{"message-storage-policy": 1, "push-type": "LiveActivity"}"#
/// A Live Activity update as Apple's broadcast example shapes it.
let liveActivityBody = #"{"aps":{"timestamp":1168364460,"event":"update","content-state":{"score":"2-1"}}}"#

/// Every endpoint and rule driven with curl (HTTP/2 over TLS, nghttp2 underneath), so the
/// answers are checked by a client that is not ours. Facts from Apple's "Sending channel
/// management requests to APNs" and "Sending broadcast push notification requests to APNs".
@Suite(.serialized) struct BroadcastCurlTests {
    @Test func channelLifecycleCreateReadListDelete() async throws {
        try await withServerAndCurl { server, curl in
            // Create: 201 with apns-channel-id (base64) and the apns-request-id we sent.
            let requestID = "6f1c9d2a-3b4e-4f5a-8b6c-7d8e9f0a1b2c"
            let created = try await curl.exchange(
                port: server.port, path: "/1/apps/\(bundle)/channels", method: "POST",
                headers: ["apns-request-id: \(requestID)", "content-type: application/json"], body: createBody)
            #expect(created.status == 201)
            #expect(created.headers["apns-request-id"] == requestID)
            let channelID = try #require(created.headers["apns-channel-id"])
            // Foundation decodes it as base64: the mock's ID is what Apple describes.
            #expect(Data(base64Encoded: channelID) != nil)
            #expect(server.channels(bundleID: bundle).map(\.id) == [channelID])
            #expect(server.channels(bundleID: bundle).first?.storagePolicy == 1)

            // Read: 200 and the configuration as JSON.
            let read = try await curl.exchange(
                port: server.port, path: "/1/apps/\(bundle)/channels", method: "GET",
                headers: ["apns-channel-id: \(channelID)"])
            #expect(read.status == 200)
            #expect(read.json?["message-storage-policy"] as? Int == 1)
            #expect(read.json?["push-type"] as? String == "LiveActivity")
            // No apns-request-id sent: the server makes a UUID and returns it.
            let generated = try #require(read.headers["apns-request-id"])
            #expect(UUID(uuidString: generated) != nil)

            // List: 200 {"channels": [...]}.
            let second = try await curl.exchange(
                port: server.port, path: "/1/apps/\(bundle)/channels", method: "POST",
                body: #"{"message-storage-policy":0,"push-type":"LiveActivity"}"#)
            let secondID = try #require(second.headers["apns-channel-id"])
            #expect(secondID != channelID)
            let list = try await curl.exchange(port: server.port, path: "/1/apps/\(bundle)/all-channels", method: "GET")
            #expect(list.status == 200)
            #expect(list.json?["channels"] as? [String] == [channelID, secondID])

            // Delete: 204, then the channel is gone.
            let deleted = try await curl.exchange(
                port: server.port, path: "/1/apps/\(bundle)/channels", method: "DELETE",
                headers: ["apns-channel-id: \(channelID)"])
            #expect(deleted.status == 204)
            #expect(deleted.body.isEmpty)
            #expect(server.channels(bundleID: bundle).map(\.id) == [secondID])
            let again = try await curl.exchange(
                port: server.port, path: "/1/apps/\(bundle)/channels", method: "DELETE",
                headers: ["apns-channel-id: \(channelID)"])
            #expect(again.reason == "ChannelNotRegistered")

            // Recorded like device pushes, with the status answered.
            let statuses = server.recordedRequests.map(\.status)
            #expect(statuses == [201, 200, 201, 200, 204, 400])
        }
    }

    @Test func broadcastIsAcceptedAndRecorded() async throws {
        try await withServerAndCurl { server, curl in
            let channel = try #require(server.addChannel(bundleID: bundle, storagePolicy: 1))
            let requestID = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
            let answer = try await curl.exchange(
                port: server.port, path: "/4/broadcasts/apps/\(bundle)", method: "POST",
                headers: ["apns-channel-id: \(channel.id)", "apns-push-type: liveactivity", "apns-priority: 10",
                          "apns-expiration: 1900000000", "apns-request-id: \(requestID)"],
                body: liveActivityBody)
            #expect(answer.status == 200)
            #expect(answer.headers["apns-request-id"] == requestID)
            #expect(answer.headers["apns-unique-id"].flatMap(UUID.init(uuidString:)) != nil)
            #expect(answer.headers["apns-id"] == nil)
            let record = try #require(server.recordedRequests.last)
            #expect(record.value(of: ":path") == "/4/broadcasts/apps/\(bundle)")
            #expect(record.value(of: "apns-channel-id") == channel.id)
            #expect(String(decoding: record.body, as: UTF8.self) == liveActivityBody)
            #expect(record.status == 200)
            #expect(record.apnsID == requestID)
        }
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var path = "/4/broadcasts/apps/\(bundle)"
        var method = "POST"
        /// `$CHANNEL` becomes a registered no-storage channel, `$STORED` a most-recent-message one.
        var headers = ["apns-channel-id: $CHANNEL", "apns-push-type: liveactivity", "apns-priority: 10",
                       "apns-expiration: 0"]
        var body: String? = liveActivityBody
        var status: Int
        var reason: String?
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "valid broadcast", status: 200),
        Case(name: "no apns-channel-id", headers: ["apns-push-type: liveactivity", "apns-priority: 10", "apns-expiration: 0"],
             status: 400, reason: "MissingChannelId"),
        Case(name: "channel id not base64", headers: ["apns-channel-id: not*base64", "apns-push-type: liveactivity",
                                                     "apns-priority: 10", "apns-expiration: 0"],
             status: 400, reason: "BadChannelId"),
        Case(name: "unknown channel", headers: ["apns-channel-id: dW5rbm93bg==", "apns-push-type: liveactivity",
                                               "apns-priority: 10", "apns-expiration: 0"],
             status: 400, reason: "ChannelNotRegistered"),
        Case(name: "no push type", headers: ["apns-channel-id: $CHANNEL", "apns-priority: 10", "apns-expiration: 0"],
             status: 400, reason: "MissingPushType"),
        Case(name: "alert push type", headers: ["apns-channel-id: $CHANNEL", "apns-push-type: alert", "apns-priority: 10",
                                               "apns-expiration: 0"],
             status: 400, reason: "InvalidPushType"),
        Case(name: "no priority", headers: ["apns-channel-id: $CHANNEL", "apns-push-type: liveactivity", "apns-expiration: 0"],
             status: 400, reason: "BadPriority"),
        Case(name: "priority 7", headers: ["apns-channel-id: $CHANNEL", "apns-push-type: liveactivity", "apns-priority: 7",
                                          "apns-expiration: 0"],
             status: 400, reason: "BadPriority"),
        Case(name: "no expiration", headers: ["apns-channel-id: $CHANNEL", "apns-push-type: liveactivity", "apns-priority: 5"],
             status: 400, reason: "BadExpirationDate"),
        Case(name: "future expiration on a no-storage channel",
             headers: ["apns-channel-id: $CHANNEL", "apns-push-type: liveactivity", "apns-priority: 1",
                       "apns-expiration: 1900000000"],
             status: 400, reason: "BadExpirationDate"),
        Case(name: "future expiration on a most-recent-message channel",
             headers: ["apns-channel-id: $STORED", "apns-push-type: liveactivity", "apns-priority: 1",
                       "apns-expiration: 1900000000"],
             status: 200),
        Case(name: "payload of 5120 bytes", body: broadcastPayload(ofSize: 5120), status: 200),
        Case(name: "payload of 5121 bytes", body: broadcastPayload(ofSize: 5121), status: 413, reason: "PayloadTooLarge"),
        Case(name: "payload without aps", body: #"{"score":1}"#, status: 400, reason: "BadRequestPayload"),
        Case(name: "payload not JSON", body: "aps", status: 400, reason: "BadRequestPayload"),
        Case(name: "bad apns-request-id",
             headers: ["apns-channel-id: $CHANNEL", "apns-push-type: liveactivity", "apns-priority: 10",
                       "apns-expiration: 0", "apns-request-id: 1234"],
             status: 400, reason: "BadRequestParams"),
        Case(name: "broadcast with GET", method: "GET", body: nil, status: 405, reason: "MethodNotAllowed"),
        // Apple: 403 TopicMismatch, "The bundle IDs parsed from your token or certificate don't
        // include the topic present in the path".
        Case(name: "broadcast to another app", path: "/4/broadcasts/apps/com.other.app", status: 403, reason: "TopicMismatch"),
        // Apple: 400 TopicDisallowed, "Ensure that no push type suffix is added to the bundle ID".
        Case(name: "broadcast to the bundle ID with the liveactivity suffix",
             path: "/4/broadcasts/apps/\(bundle).push-type.liveactivity", status: 400, reason: "TopicDisallowed"),
        Case(name: "channel list of the bundle ID with the voip suffix", path: "/1/apps/\(bundle).voip/all-channels",
             method: "GET", headers: [], body: nil, status: 400, reason: "TopicDisallowed"),
        Case(name: "broadcast path with an extra segment", path: "/4/broadcasts/apps/\(bundle)/x", status: 404, reason: "BadPath"),
        Case(name: "read without apns-channel-id", path: "/1/apps/\(bundle)/channels", method: "GET", headers: [],
             body: nil, status: 400, reason: "MissingChannelId"),
        Case(name: "delete with a bad channel id", path: "/1/apps/\(bundle)/channels", method: "DELETE",
             headers: ["apns-channel-id: %%%"], body: nil, status: 400, reason: "BadChannelId"),
        Case(name: "PUT on channels", path: "/1/apps/\(bundle)/channels", method: "PUT", headers: [], body: "{}",
             status: 405, reason: "MethodNotAllowed"),
        Case(name: "POST on all-channels", path: "/1/apps/\(bundle)/all-channels", method: "POST", headers: [],
             body: "{}", status: 405, reason: "MethodNotAllowed"),
        Case(name: "unknown channel path", path: "/1/apps/\(bundle)/channel", method: "GET", headers: [], body: nil,
             status: 404, reason: "BadPath"),
        Case(name: "create with policy 2", path: "/1/apps/\(bundle)/channels", headers: [],
             body: #"{"message-storage-policy":2,"push-type":"LiveActivity"}"#, status: 400, reason: "BadRequestPayload"),
        Case(name: "create with policy true", path: "/1/apps/\(bundle)/channels", headers: [],
             body: #"{"message-storage-policy":true,"push-type":"LiveActivity"}"#, status: 400, reason: "BadRequestPayload"),
        Case(name: "create with policy 1.0", path: "/1/apps/\(bundle)/channels", headers: [],
             body: #"{"message-storage-policy":1.0,"push-type":"LiveActivity"}"#, status: 400, reason: "BadRequestPayload"),
        Case(name: "create without push-type", path: "/1/apps/\(bundle)/channels", headers: [],
             body: #"{"message-storage-policy":0}"#, status: 400, reason: "MissingPushType"),
        Case(name: "create with push-type alert", path: "/1/apps/\(bundle)/channels", headers: [],
             body: #"{"message-storage-policy":0,"push-type":"alert"}"#, status: 400, reason: "InvalidPushType"),
        Case(name: "create with a body that is not JSON", path: "/1/apps/\(bundle)/channels", headers: [],
             body: "policy=0", status: 400, reason: "BadRequestPayload"),
        // Apple: "BadRequestParams: The JSON Request payload contained an unrecognizable attribute."
        Case(name: "create with an attribute APNs does not know", path: "/1/apps/\(bundle)/channels", headers: [],
             body: #"{"message-storage-policy":0,"push-type":"LiveActivity","name":"final"}"#,
             status: 400, reason: "BadRequestParams"),
    ]

    @Test(arguments: cases)
    func rule(_ testCase: Case) async throws {
        try await withServerAndCurl { server, curl in
            let noStorage = try #require(server.addChannel(bundleID: bundle, storagePolicy: 0))
            let stored = try #require(server.addChannel(bundleID: bundle, storagePolicy: 1))
            let headers = testCase.headers.map {
                $0.replacingOccurrences(of: "$CHANNEL", with: noStorage.id).replacingOccurrences(of: "$STORED", with: stored.id)
            }
            let answer = try await curl.exchange(port: server.port, path: testCase.path, method: testCase.method,
                                                 headers: headers, body: testCase.body)
            #expect(answer.status == testCase.status)
            #expect(answer.reason == testCase.reason)
            #expect(answer.headers["apns-request-id"].flatMap(UUID.init(uuidString:)) != nil)
            // No rule case creates or deletes a channel.
            #expect(server.channels(bundleID: bundle) == [noStorage, stored])
        }
    }

    @Test func channelLimitIsCannotCreateChannelConfig() async throws {
        try await withServerAndCurl { server, curl in
            #expect(server.channelLimit == 10_000)  // Apple: up to 10,000 channels per app and environment.
            server.setChannelLimit(2)
            for expected in [201, 201, 400] {
                let answer = try await curl.exchange(port: server.port, path: "/1/apps/\(bundle)/channels",
                                                     method: "POST", body: createBody)
                #expect(answer.status == expected)
                if expected == 400 { #expect(answer.reason == "CannotCreateChannelConfig") }
            }
            #expect(server.channels(bundleID: bundle).count == 2)
            // Another app has its own limit.
            let other = try await withServerAndCurl(.init()) { otherServer, otherCurl in
                otherServer.setChannelLimit(2)
                _ = otherServer.addChannel(bundleID: "com.a")
                _ = otherServer.addChannel(bundleID: "com.a")
                return try await otherCurl.exchange(port: otherServer.port, path: "/1/apps/com.b/channels",
                                                    method: "POST", body: createBody).status
            }
            #expect(other == 201)
        }
    }

    @Test func scriptedFaultsApplyAndLeaveChannelsUnchanged() async throws {
        try await withServerAndCurl { server, curl in
            server.failNextRequests(1, with: .serviceUnavailable)
            let failed = try await curl.exchange(port: server.port, path: "/1/apps/\(bundle)/channels",
                                                 method: "POST", body: createBody)
            #expect(failed.status == 503)
            #expect(failed.reason == "ServiceUnavailable")
            #expect(failed.headers["apns-channel-id"] == nil)
            #expect(server.channels(bundleID: bundle).isEmpty)

            let channel = try #require(server.addChannel(bundleID: bundle))
            server.failNextRequests(1, with: .tooManyRequests)
            let broadcastHeaders = ["apns-channel-id: \(channel.id)", "apns-push-type: liveactivity",
                                    "apns-priority: 10", "apns-expiration: 0"]
            let throttled = try await curl.exchange(port: server.port, path: "/4/broadcasts/apps/\(bundle)",
                                                    method: "POST", headers: broadcastHeaders, body: liveActivityBody)
            #expect(throttled.status == 429)
            let accepted = try await curl.exchange(port: server.port, path: "/4/broadcasts/apps/\(bundle)",
                                                   method: "POST", headers: broadcastHeaders, body: liveActivityBody)
            #expect(accepted.status == 200)

            server.failNextRequests(1, with: .internalServerError)
            let notDeleted = try await curl.exchange(port: server.port, path: "/1/apps/\(bundle)/channels",
                                                     method: "DELETE", headers: ["apns-channel-id: \(channel.id)"])
            #expect(notDeleted.status == 500)
            #expect(server.channels(bundleID: bundle) == [channel])
            #expect(server.statistics.rejected == 3)
            #expect(server.statistics.accepted == 1)
        }
    }

    @Test func perChannelScriptAnswersBroadcastsToThatChannelOnly() async throws {
        try await withServerAndCurl { server, curl in
            let scripted = try #require(server.addChannel(bundleID: bundle))
            let other = try #require(server.addChannel(bundleID: bundle))
            server.respond(toChannel: scripted.id, with: .tooManyRequests)
            func broadcast(_ channel: MockChannel) async throws -> CurlAnswer {
                try await curl.exchange(
                    port: server.port, path: "/4/broadcasts/apps/\(bundle)", method: "POST",
                    headers: ["apns-channel-id: \(channel.id)", "apns-push-type: liveactivity", "apns-priority: 10",
                              "apns-expiration: 0"],
                    body: liveActivityBody)
            }
            for _ in 0..<2 {
                let answer = try await broadcast(scripted)
                #expect(answer.status == 429)
                #expect(answer.reason == "TooManyRequests")
            }
            #expect(try await broadcast(other).status == 200)
            // Validation comes first: an invalid broadcast to the channel gets its own reason.
            let invalid = try await curl.exchange(
                port: server.port, path: "/4/broadcasts/apps/\(bundle)", method: "POST",
                headers: ["apns-channel-id: \(scripted.id)", "apns-priority: 10", "apns-expiration: 0"],
                body: liveActivityBody)
            #expect(invalid.reason == "MissingPushType")
            server.resetScript()
            #expect(try await broadcast(scripted).status == 200)
        }
    }

    /// An app without the broadcast capability: every channel and broadcast request is
    /// 400 FeatureNotEnabled; another app on the same server is unaffected.
    @Test func appWithoutBroadcastCapabilityIsFeatureNotEnabled() async throws {
        let configuration = MockAPNsServer.Configuration(
            bundleIDs: [bundle, "com.example.other"], broadcastDisabledBundleIDs: [bundle])
        try await withServerAndCurl(configuration) { server, curl in
            let create = try await curl.exchange(
                port: server.port, path: "/1/apps/\(bundle)/channels", method: "POST",
                headers: ["content-type: application/json"], body: createBody)
            #expect(create.status == 400)
            #expect(create.reason == "FeatureNotEnabled")
            let list = try await curl.exchange(port: server.port, path: "/1/apps/\(bundle)/all-channels", method: "GET")
            #expect(list.reason == "FeatureNotEnabled")
            let broadcast = try await curl.exchange(
                port: server.port, path: "/4/broadcasts/apps/\(bundle)", method: "POST",
                headers: ["apns-channel-id: dHdpbmtsZQ==", "apns-push-type: liveactivity", "apns-priority: 10",
                          "apns-expiration: 0"],
                body: liveActivityBody)
            #expect(broadcast.status == 400)
            #expect(broadcast.reason == "FeatureNotEnabled")
            #expect(server.channels(bundleID: bundle).isEmpty)
            let other = try await curl.exchange(
                port: server.port, path: "/1/apps/com.example.other/channels", method: "POST",
                headers: ["content-type: application/json"], body: createBody)
            #expect(other.status == 201)
        }
    }

    @Test func devicePushesStillWorkBesideBroadcasts() async throws {
        try await withServerAndCurl { server, curl in
            let answer = try await curl.exchange(port: server.port, path: "/3/device/\(sampleDeviceToken)",
                                                 method: "POST", headers: ["apns-topic: \(bundle)"], body: samplePayload)
            #expect(answer.status == 200)
            #expect(answer.headers["apns-id"].flatMap(UUID.init(uuidString:)) != nil)
            #expect(answer.headers["apns-request-id"] == nil)
        }
    }

    @Test func certificateModeAllowsTheCertificatesBundleIDs() async throws {
        let certificates = try await ClientCertificates.make()
        defer { certificates.remove() }
        let configuration = MockAPNsServer.Configuration(authentication: .certificate(trustedCAPEM: certificates.caPEM))
        try await withServerAndCurl(configuration) { server, curl in
            let identity = ["--cert", certificates.path("multi.pem"), "--key", certificates.path("multi.key")]
            let created = try await curl.exchange(port: server.port, path: "/1/apps/com.example.app/channels",
                                                  method: "POST", body: createBody, extra: identity)
            #expect(created.status == 201)
            let channel = try #require(created.headers["apns-channel-id"])
            let sent = try await curl.exchange(
                port: server.port, path: "/4/broadcasts/apps/com.example.app", method: "POST",
                headers: ["apns-channel-id: \(channel)", "apns-push-type: liveactivity", "apns-priority: 10",
                          "apns-expiration: 0"],
                body: liveActivityBody, extra: identity)
            #expect(sent.status == 200)
            // The certificate lists com.example.app and its .voip topic, not com.other.app.
            let foreign = try await curl.exchange(port: server.port, path: "/1/apps/com.other.app/channels",
                                                  method: "POST", body: createBody, extra: identity)
            #expect(foreign.status == 403)
            #expect(foreign.reason == "TopicMismatch")
            #expect(server.channels(bundleID: "com.other.app").isEmpty)
        }
    }

    @Test func tokenModeChecksChannelRequestsLikePushes() async throws {
        let configuration = MockAPNsServer.Configuration(bundleIDs: [bundle],
                                                        authentication: .providerToken(.acceptingUnsigned(keyID: "ABC123DEFG", teamID: "DEF123GHIJ")))
        try await withServerAndCurl(configuration) { server, curl in
            let missing = try await curl.exchange(port: server.port, path: "/1/apps/\(bundle)/all-channels", method: "GET")
            #expect(missing.status == 403)
            #expect(missing.reason == "MissingProviderToken")
            let jwt = makeJWT(issuedAt: Int(Date().timeIntervalSince1970))
            let listed = try await curl.exchange(port: server.port, path: "/1/apps/\(bundle)/all-channels", method: "GET",
                                                 headers: ["authorization: bearer \(jwt)"])
            #expect(listed.status == 200)
            #expect(listed.json?["channels"] as? [String] == [])
        }
    }

    @Test("a topic-specific key manages and broadcasts on its own apps' channels only: 403 TopicMismatch for others")
    func topicSpecificKeyIsTopicMismatchForAnotherApp() async throws {
        let configuration = MockAPNsServer.Configuration(
            bundleIDs: [bundle, "com.example.other"],
            authentication: .providerToken(.acceptingUnsigned(keyID: "TOPICKEY01", teamID: "DEF123GHIJ")),
            keyScopes: ["TOPICKEY01": .topics([bundle])])
        try await withServerAndCurl(configuration) { server, curl in
            let auth = "authorization: bearer \(makeJWT(keyID: "TOPICKEY01", issuedAt: Int(Date().timeIntervalSince1970)))"
            let own = try await curl.exchange(port: server.port, path: "/1/apps/\(bundle)/channels", method: "POST",
                                              headers: [auth], body: createBody)
            #expect(own.status == 201)
            let other = try #require(server.addChannel(bundleID: "com.example.other", storagePolicy: 0))
            let requests: [(path: String, method: String, headers: [String], body: String?)] = [
                ("/1/apps/com.example.other/channels", "POST", [], createBody),
                ("/1/apps/com.example.other/all-channels", "GET", [], nil),
                ("/1/apps/com.example.other/channels", "DELETE", ["apns-channel-id: \(other.id)"], nil),
                ("/4/broadcasts/apps/com.example.other", "POST",
                 ["apns-channel-id: \(other.id)", "apns-push-type: liveactivity", "apns-priority: 10", "apns-expiration: 0"],
                 liveActivityBody),
            ]
            for request in requests {
                let answer = try await curl.exchange(port: server.port, path: request.path, method: request.method,
                                                     headers: [auth] + request.headers, body: request.body)
                #expect(answer.status == 403, "\(request.method) \(request.path): \(answer.body)")
                #expect(answer.reason == "TopicMismatch", "\(request.method) \(request.path)")
            }
            #expect(server.channels(bundleID: "com.example.other") == [other])
        }
    }
}

/// A broadcast body of exactly `size` bytes: `{"aps":{"timestamp":1,"event":"update","content-state":{"s":"xxx"}}}`.
func broadcastPayload(ofSize size: Int) -> String {
    let frame = #"{"aps":{"timestamp":1,"event":"update","content-state":{"s":""}}}"#
    return #"{"aps":{"timestamp":1,"event":"update","content-state":{"s":""#
        + String(repeating: "x", count: size - frame.utf8.count) + #""}}}"#

}
