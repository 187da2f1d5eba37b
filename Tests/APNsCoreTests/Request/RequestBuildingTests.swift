import Foundation
import Testing

@testable import APNsCore

@Suite struct RequestBuildingTests {
    // Seed 000 listings 8-1 and 8-2 (Apple, "Communicating with APNs").
    static let path = "/3/device/00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0"
    static let apnsID = "eabeae54-14a8-11e5-b60b-1697f925ec7b"
    static let host = "api.development.push.apple.com"
    static let body = #"{ "aps" : { "alert" : "Hello" } }"#
    static let authorization =
        "bearer eyAia2lkIjogIjhZTDNHM1JSWDciIH0.eyAiaXNzIjogIkM4Nk5WOUpYM0QiLCAiaWF0I"
        + "jogIjE0NTkxNDM1ODA2NTAiIH0.MEYCIQDzqyahmH1rz1s-LFNkylXEa2lZ_aOCX4daxxTZkVEGzwIhALvkClnx5m5eAT6"
        + "Lxw7LZtEQcH6JENhJTMArwLf3sXwi"

    static func appleNotification(topic: Topic = .explicit("com.example.MyApp")) throws -> PushNotification {
        PushNotification(
            body: .raw(Array(body.utf8)),
            topic: topic,
            priority: .immediate,
            expiration: .immediately,
            apnsID: try APNsID(apnsID)
        )
    }

    static func pairs(_ request: APNsRequest) -> [String] {
        request.headers.map { "\($0.name): \($0.value)" }
    }

    @Test func certificateRequestMatchesListing8_1() throws {
        let token = try DeviceToken(hex: "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0")
        let request = try Self.appleNotification().request(
            to: token,
            environment: .custom(host: Self.host, port: 443)
        )
        // Every header of listing 8-1, with `host` as HTTP/2's `:authority`, plus the
        // apns-topic and apns-push-type headers Apple has required since.
        #expect(
            Self.pairs(request) == [
                ":method: POST",
                ":scheme: https",
                ":path: \(Self.path)",
                ":authority: \(Self.host)",
                "apns-topic: com.example.MyApp",
                "apns-push-type: alert",
                "apns-priority: 10",
                "apns-expiration: 0",
                "apns-id: \(Self.apnsID)",
            ]
        )
        #expect(request.method == .post)
        #expect(request.path == Self.path)
        #expect(request.authority == Self.host)
        #expect(request.body == Array(Self.body.utf8))
        #expect(request.apnsID?.uuidString == Self.apnsID)
        #expect(request.header("authorization") == nil)
    }

    @Test func tokenRequestMatchesListing8_2() throws {
        let token = try DeviceToken(hex: "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0")
        let request = try Self.appleNotification().request(
            to: token,
            environment: .custom(host: Self.host, port: 443),
            authorization: Self.authorization
        )
        #expect(
            Self.pairs(request) == [
                ":method: POST",
                ":scheme: https",
                ":path: \(Self.path)",
                ":authority: \(Self.host)",
                "authorization: \(Self.authorization)",
                "apns-topic: com.example.MyApp",
                "apns-push-type: alert",
                "apns-priority: 10",
                "apns-expiration: 0",
                "apns-id: \(Self.apnsID)",
            ]
        )
    }

    @Test("a notification is a value: a changed copy sends its own headers and body, the original its old ones, also after both were sent")
    func copiesAreIndependentAfterSending() throws {
        let token = try DeviceToken(hex: "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0")
        let original = try Self.appleNotification()
        // Sent once first, so that its checked and encoded form is made and kept.
        _ = try original.request(to: token, environment: .production)
        var copy = original
        copy.collapseID = "score-update"
        copy.priority = .powerConsiderate
        copy.body = .raw(Array(#"{"aps":{"alert":"Bye"}}"#.utf8))
        let changed = try copy.request(to: token, environment: .production)
        let unchanged = try original.request(to: token, environment: .production)
        #expect(Self.pairs(changed).contains("apns-collapse-id: score-update"))
        #expect(Self.pairs(changed).contains("apns-priority: 5"))
        #expect(changed.body == Array(#"{"aps":{"alert":"Bye"}}"#.utf8))
        #expect(!Self.pairs(unchanged).contains { $0.hasPrefix("apns-collapse-id") })
        #expect(Self.pairs(unchanged).contains("apns-priority: 10"))
        #expect(unchanged.body == Array(Self.body.utf8))
        // A value set back to what it was still sends it.
        copy.collapseID = nil
        #expect(!Self.pairs(try copy.request(to: token, environment: .production)).contains { $0.hasPrefix("apns-collapse-id") })
        // An invalid change is caught by the next send, though the old form was valid.
        copy.collapseID = ""
        #expect(throws: APNsRequestError.self) { try copy.request(to: token, environment: .production) }
    }

    @Test func collapseIDGoesBetweenExpirationAndID() throws {
        var notification = try Self.appleNotification()
        notification.collapseID = "score-update"
        let request = try notification.request(to: DeviceToken(hex: "abcd"), environment: .production)
        let names = request.headers.map(\.name)
        #expect(
            names == [
                ":method", ":scheme", ":path", ":authority", "apns-topic", "apns-push-type",
                "apns-priority", "apns-expiration", "apns-collapse-id", "apns-id",
            ]
        )
        #expect(request.header("apns-collapse-id") == "score-update")
    }

    @Test func defaultsOmitExpirationAndGenerateAnID() throws {
        let request = try PushNotification(payload: .alert(body: "Hi"), topic: "com.example.app")
            .request(to: DeviceToken(hex: "abcd"), environment: .production)
        #expect(request.header("apns-expiration") == nil)
        #expect(request.header("apns-priority") == "10")
        #expect(request.header("apns-push-type") == "alert")
        #expect(request.header("apns-topic") == "com.example.app")
        #expect(request.authority == "api.push.apple.com")
        let id = try #require(request.header("apns-id"))
        #expect(UUID(uuidString: id) != nil)
        #expect(request.apnsID?.uuidString == id)
        // The payload is JSON with an aps dictionary (checked by Foundation's parser).
        let json = try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any]
        #expect(json?["aps"] is [String: Any])
    }

    // Topic suffixes: APNS-PROTOCOL.md / Apple's "Sending notification requests to APNs".
    @Test(arguments: [
        ("alert", "com.example.app"),
        ("background", "com.example.app"),
        ("location", "com.example.app.location-query"),
        ("voip", "com.example.app.voip"),
        ("complication", "com.example.app.complication"),
        ("fileprovider", "com.example.app.pushkit.fileprovider"),
        ("liveactivity", "com.example.app.push-type.liveactivity"),
        ("pushtotalk", "com.example.app.voip-ptt"),
        ("widgets", "com.example.app.push-type.widgets"),
        ("controls", "com.example.app.push-type.controls"),
    ])
    func topicSuffixPerPushType(pushType: String, expected: String) throws {
        let type = PushType(rawValue: pushType)
        #expect(PushType.documented.contains(type))
        #expect(try Topic.bundleID("com.example.app").value(for: type) == expected)
        // Given with its suffix already (as Apple's curl examples write it), the topic
        // does not get the suffix twice.
        #expect(try Topic.bundleID(expected).value(for: type) == expected)
        let request = try PushNotification(
            body: .raw(Array("{\"aps\":{}}".utf8)),
            pushType: type,
            topic: "com.example.app",
            priority: type == .background ? .powerConsiderate : nil
        ).request(to: DeviceToken(hex: "abcd"), environment: .sandbox)
        #expect(request.header("apns-topic") == expected)
        #expect(request.header("apns-push-type") == pushType)
    }

    @Test func mdmNeedsTheExplicitTopic() throws {
        #expect(throws: APNsRequestError.self) { try Topic.bundleID("com.example.app").value(for: .mdm) }
        let mdmTopic = "com.apple.mgmt.External.0f1e2d3c-0000-4000-8000-000000000000"
        #expect(try Topic.explicit(mdmTopic).value(for: .mdm) == mdmTopic)
        // An explicit topic is sent as is whatever the push type.
        #expect(try Topic.explicit("com.example.app").value(for: .voip) == "com.example.app")
        #expect(throws: APNsRequestError.self) { try Topic.bundleID("").value(for: .alert) }
        // A bundle ID has only ASCII letters, digits, '-' and '.' (Apple's rule): a space or
        // a non-ASCII letter is refused at its offset, before APNs would answer BadTopic.
        for (bundleID, offset) in [("com.example app", 11), ("com.exämple.app", 6), ("com.example.app\n", 15)] {
            #expect {
                try Topic.bundleID(bundleID).value(for: .alert)
            } throws: { error in
                let error = error as? APNsRequestError
                return error?.code == .invalidTopic && error?.position == offset
            }
        }
        #expect(PushType.documented.count == 11)
    }

    @Test func priorityDefaultsAndBackgroundRule() throws {
        let token = try DeviceToken(hex: "abcd")
        let raw = PushNotification.Body.raw(Array("{\"aps\":{\"content-available\":1}}".utf8))
        let background = PushNotification(body: raw, pushType: .background, topic: "com.example.app")
        #expect(try background.request(to: token, environment: .sandbox).header("apns-priority") == "5")
        var explicitFive = background
        explicitFive.priority = .powerConsiderate
        #expect(try explicitFive.request(to: token, environment: .sandbox).header("apns-priority") == "5")
        // APNS-PROTOCOL.md and Apple's "Pushing background updates to your App": 5, only.
        for priority in [Priority.immediate, .low] {
            var other = background
            other.priority = priority
            do {
                _ = try other.request(to: token, environment: .sandbox)
                Issue.record("background push with priority \(priority) accepted")
            } catch {
                #expect(error.code == .invalidPriority)
                #expect(error.header == "apns-priority")
                #expect(error.description.contains("not \(priority.rawValue)"))
            }
        }
        let alert = PushNotification(body: raw, topic: "com.example.app", priority: .low)
        #expect(try alert.request(to: token, environment: .sandbox).header("apns-priority") == "1")
        // Apple's "Starting and updating Live Activities with ActivityKit push notifications":
        // apns-priority 5 or 10 for a liveactivity push.
        let update = Payload.liveActivityUpdate(timestamp: 1_700_000_000, contentState: ["score": 1])
        for (priority, allowed) in [(Priority.immediate, true), (.powerConsiderate, true), (.low, false)] {
            let liveActivity = PushNotification(payload: update, topic: "com.example.app", priority: priority)
            do {
                let request = try liveActivity.request(to: token, environment: .sandbox)
                #expect(allowed, "liveactivity push with priority \(priority) accepted")
                #expect(request.header("apns-priority") == priority.description)
            } catch {
                #expect(!allowed, "liveactivity push with priority \(priority) refused: \(error)")
                #expect(error.code == .invalidPriority)
                #expect(error.header == "apns-priority")
                #expect(error.description.contains("not 1"))
            }
        }
        #expect(Priority.allCases.map(\.rawValue).sorted() == [1, 5, 10])
    }

    @Test func expirationIsWholeUnixSeconds() throws {
        #expect(try Expiration.none.headerValue() == nil)
        #expect(try Expiration.immediately.headerValue() == "0")
        // 2016-02-02T08:35:13.750Z, computed independently with Python's datetime.
        #expect(try Expiration.at(Date(timeIntervalSince1970: 1_454_402_113.75)).headerValue() == "1454402113")
        #expect(try Expiration.unixTime(1_454_402_113).headerValue() == "1454402113")
        #expect(throws: APNsRequestError.self) { try Expiration.at(Date(timeIntervalSince1970: -1)).headerValue() }
        // A date no arithmetic should make, but a legal Date: a typed error, never a trap.
        for (date, named) in [(Date(timeIntervalSince1970: .nan), "NaN"), (Date.distantPast, "\(Int64(Date.distantPast.timeIntervalSince1970.rounded(.down))) seconds"),
                              (Date(timeIntervalSince1970: -.infinity), "-infinity")] {
            #expect {
                try Expiration.at(date).headerValue()
            } throws: { error in
                let error = error as? APNsRequestError
                return error?.code == .invalidExpiration && error?.description.contains(named) == true
            }
        }
        #expect(try Expiration.at(Date(timeIntervalSince1970: .infinity)).headerValue() == String(Int64.max))
    }

    // "é" is 2 bytes of UTF-8 and "😀" is 4: count bytes, not characters.
    @Test(arguments: [
        (String(repeating: "a", count: 64), true),
        (String(repeating: "a", count: 65), false),
        (String(repeating: "é", count: 32), true),  // 64 bytes, 32 characters
        (String(repeating: "é", count: 32) + "a", false),  // 65 bytes, 33 characters
        (String(repeating: "😀", count: 16), true),  // 64 bytes, 16 characters
        (String(repeating: "😀", count: 16) + "a", false),  // 65 bytes
        ("", false),
    ])
    func collapseIDLimitIs64BytesOfUTF8(collapseID: String, accepted: Bool) throws {
        let notification = PushNotification(
            body: .raw(Array("{\"aps\":{}}".utf8)),
            topic: "com.example.app",
            collapseID: collapseID
        )
        do {
            let request = try notification.request(to: DeviceToken(hex: "abcd"), environment: .sandbox)
            #expect(accepted)
            #expect(request.header("apns-collapse-id") == collapseID)
        } catch {
            #expect(!accepted)
            #expect(error.code == .invalidCollapseID)
            #expect(error.header == "apns-collapse-id")
        }
    }

    @Test(arguments: ["evil\r\nx-injected: 1", "evil\nx", "evil\u{0}x", "evil\rx"])
    func headerInjectionIsRefused(value: String) throws {
        let token = try DeviceToken(hex: "abcd")
        let viaTopic = PushNotification(body: .raw(Array("{}".utf8)), topic: .explicit(value))
        let viaCollapse = PushNotification(body: .raw(Array("{}".utf8)), topic: "com.example.app", collapseID: value)
        let clean = PushNotification(body: .raw(Array("{}".utf8)), topic: "com.example.app")
        for (notification, authorization, header) in [
            (viaTopic, nil, "apns-topic"),
            (viaCollapse, nil, "apns-collapse-id"),
            (clean, "bearer " + value, "authorization"),
        ] as [(PushNotification, String?, String)] {
            do {
                _ = try notification.request(to: token, environment: .sandbox, authorization: authorization)
                Issue.record("\(header) with \(value.debugDescription) accepted")
            } catch {
                #expect(error.code == .invalidHeaderValue)
                #expect(error.header == header)
                #expect(error.description.contains(header))
            }
        }
        #expect(throws: APNsRequestError.self) {
            try APNsRequest(
                method: .post,
                authority: "a",
                path: "/x",
                headers: [HeaderField(name: "x-custom", value: value)],
                body: []
            )
        }
    }

    /// The pseudo-headers are checked too: a custom host or a path cannot smuggle a line.
    @Test(arguments: ["evil\r\nx-injected: 1", "evil\nx", "evil\u{0}x"])
    func injectionThroughAuthorityOrPathIsRefused(value: String) throws {
        let token = try DeviceToken(hex: "abcd")
        let notification = PushNotification(body: .raw(Array("{}".utf8)), topic: "com.example.app")
        do {
            _ = try notification.request(to: token, environment: .custom(host: value, port: 443), authorization: nil)
            Issue.record(":authority with \(value.debugDescription) accepted")
        } catch {
            #expect(error.code == .invalidHeaderValue)
            #expect(error.header == ":authority")
        }
        do {
            _ = try APNsRequest(method: .post, authority: "api.push.apple.com", path: "/3/device/" + value, headers: [], body: [])
            Issue.record(":path with \(value.debugDescription) accepted")
        } catch {
            #expect(error.code == .invalidHeaderValue)
            #expect(error.header == ":path")
        }
    }

    /// A push type Apple adds later is sent as given: its name in `apns-push-type` and
    /// the bundle ID as the topic (no suffix is known for it).
    @Test func undocumentedPushTypeIsSentAsGiven() throws {
        let token = try DeviceToken(hex: "abcd")
        let notification = PushNotification(
            body: .raw(Array(#"{"aps":{}}"#.utf8)),
            pushType: PushType(rawValue: "newkind"),
            topic: "com.example.app"
        )
        let request = try notification.request(to: token, environment: .sandbox, authorization: nil)
        #expect(request.header("apns-push-type") == "newkind")
        #expect(request.header("apns-topic") == "com.example.app")
        #expect(request.path == "/3/device/abcd")
    }

    @Test(arguments: [" com.example.app", "com.example.app ", "com.example.app\t"])
    func surroundingWhitespaceIsRefused(topic: String) throws {
        let notification = PushNotification(body: .raw(Array("{}".utf8)), topic: .explicit(topic))
        do {
            _ = try notification.request(to: DeviceToken(hex: "abcd"), environment: .sandbox)
            Issue.record("accepted \(topic.debugDescription)")
        } catch {
            #expect(error.code == .invalidHeaderValue)
            #expect(error.header == "apns-topic")
        }
    }

    @Test func headerNamesMustBeLowercaseAndNotPseudo() {
        for name in ["Apns-Topic", ":path", "", "bad name"] {
            #expect(throws: APNsRequestError.self) {
                try APNsRequest(
                    method: .post,
                    authority: "a",
                    path: "/x",
                    headers: [HeaderField(name: name, value: "v")],
                    body: []
                )
            }
        }
    }

    @Test func rawPayloadIsSizeCheckedForItsPushType() throws {
        let token = try DeviceToken(hex: "abcd")
        let exactly4096 = PushNotification(body: .raw([UInt8](repeating: 0x20, count: 4096)), topic: "a")
        #expect(throws: Never.self) { try exactly4096.request(to: token, environment: .sandbox) }
        let tooLarge = PushNotification(body: .raw([UInt8](repeating: 0x20, count: 4097)), topic: "a")
        #expect(throws: APNsRequestError.self) { try tooLarge.request(to: token, environment: .sandbox) }
        // VoIP payloads may be 5120 bytes.
        let voip = PushNotification(body: .raw([UInt8](repeating: 0x20, count: 5120)), pushType: .voip, topic: "a")
        #expect(throws: Never.self) { try voip.request(to: token, environment: .sandbox) }
        let empty = PushNotification(body: .raw([]), topic: "a")
        #expect(throws: APNsRequestError.self) { try empty.request(to: token, environment: .sandbox) }
    }

    @Test func environments() {
        #expect(APNsEnvironment.production.host == "api.push.apple.com")
        #expect(APNsEnvironment.production.port == 443)
        #expect(APNsEnvironment.sandbox.host == "api.sandbox.push.apple.com")
        #expect(APNsEnvironment.sandbox.alternatePort.port == 2197)
        #expect(APNsEnvironment.production.alternatePort.authority == "api.push.apple.com:2197")
        #expect(APNsEnvironment.production.authority == "api.push.apple.com")
        #expect(
            APNsEnvironment.sandbox.channelManagement.description == "api-manage-broadcast.sandbox.push.apple.com:2195"
        )
        #expect(APNsEnvironment.production.channelManagement.description == "api-manage-broadcast.push.apple.com:2196")
        // An IPv6 address in brackets, as APNS_ENVIRONMENT reads it back.
        #expect(APNsEnvironment.custom(host: "::1", port: 2197).description == "[::1]:2197")
        #expect(APNsEnvironment.custom(host: "127.0.0.1", port: 2197).description == "127.0.0.1:2197")
        #expect(APNsEnvironment.custom(host: "127.0.0.1", port: 8443).authority == "127.0.0.1:8443")
    }

    @Test func broadcastsGoToPort443OfApplesHostsEvenFromTheAlternatePort() {
        #expect(APNsEnvironment.production.broadcast == .production)
        #expect(APNsEnvironment.sandbox.broadcast == .sandbox)
        #expect(APNsEnvironment.production.alternatePort.broadcast == .production)
        #expect(APNsEnvironment.sandbox.alternatePort.broadcast == .sandbox)
        #expect(APNsEnvironment.sandbox.alternatePort.broadcast.authority == "api.sandbox.push.apple.com")
        // A custom host (a mock server) keeps its port, 2197 included.
        #expect(APNsEnvironment.custom(host: "127.0.0.1", port: 2197).broadcast.authority == "127.0.0.1:2197")
        #expect(APNsEnvironment.custom(host: "127.0.0.1", port: 8443).alternatePort.broadcast.port == 2197)
        // The sandbox's old host name (APNS-PROTOCOL.md: "old alias api.development.push.apple.com").
        let development = APNsEnvironment.custom(host: "api.development.push.apple.com", port: 2197)
        #expect(development.broadcast.description == "api.development.push.apple.com:443")
        #expect(development.channelManagement == .sandboxChannelManagement)
        // A client made for channel management broadcasts to its environment's push host.
        #expect(APNsEnvironment.sandboxChannelManagement.broadcast == .sandbox)
        #expect(APNsEnvironment.productionChannelManagement.broadcast == .production)
        #expect(APNsEnvironment.sandboxChannelManagement.channelManagement == .sandboxChannelManagement)
    }

    @Test func requestTypeExpressesBroadcastAndChannelManagement() throws {
        // POST /4/broadcasts/apps/<bundle id> with apns-channel-id (Apple, iOS 18 broadcast push).
        let broadcast = try APNsRequest(
            method: .post,
            authority: APNsEnvironment.sandbox.authority,
            path: "/4/broadcasts/apps/com.example.app",
            headers: [
                HeaderField(name: "apns-channel-id", value: "dHN0LXNyY2gtY2hubA=="),
                HeaderField(name: "apns-push-type", value: "liveactivity"),
                HeaderField(name: "apns-expiration", value: "0"),
                HeaderField(name: "apns-priority", value: "10"),
            ],
            body: Array("{\"aps\":{}}".utf8)
        )
        #expect(broadcast.headers.first?.name == ":method")
        #expect(broadcast.header("apns-channel-id") == "dHN0LXNyY2gtY2hubA==")
        #expect(broadcast.apnsID == nil && broadcast.deviceToken == nil)
        let delete = try APNsRequest(
            method: .delete,
            authority: APNsEnvironment.sandbox.channelManagement.authority,
            path: "/1/apps/com.example.app/channels",
            headers: [HeaderField(name: "apns-channel-id", value: "dHN0LXNyY2gtY2hubA==")],
            body: []
        )
        #expect(delete.header(":method") == "DELETE")
        #expect(delete.header(":authority") == "api-manage-broadcast.sandbox.push.apple.com:2195")
    }
}
