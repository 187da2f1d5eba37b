import Foundation
import Testing

@testable import APNsPayload

/// One payload per kind of notification, compared (with JSONSerialization) with the
/// shape Apple documents for it, and accepted for its push type.
@Suite struct NotificationKindTests {
    @Test func alertContract() throws {
        let bytes = try Payload.alert(title: "Hello", body: "World").encoded(for: .alert)
        #expect(text(bytes) == #"{"aps":{"alert":{"title":"Hello","body":"World"}}}"#)
    }

    @Test func criticalSound() throws {
        // Apple's critical alert sound dictionary (seed 003 数据结构详细说明, sound).
        let payload = Payload.alert(Alert(body: "Leak detected"), sound: .critical(name: "default", volume: 0.5))
        expectSameJSON(
            try payload.encoded(for: .alert),
            #"{"aps":{"alert":{"body":"Leak detected"},"sound":{"critical":1,"name":"default","volume":0.5}}}"#)
    }

    /// Every `alert` key and the plain `aps` keys, as Apple names them. The expected
    /// dictionary is typed from the key lists of /work/shared/docs/APNS-PROTOCOL.md
    /// ("`aps` keys: …", "`alert` keys: …"), serialized by Foundation, and compared as
    /// parsed JSON: nothing in it comes from this SDK's encoder.
    @Test func everyAlertKeyAsAppleNamesIt() throws {
        let alert = Alert(
            title: "t", subtitle: "s", body: "b", launchImage: "l.png", titleLocKey: "TK", titleLocArgs: ["ta"],
            subtitleLocKey: "SK", subtitleLocArgs: ["sa"], locKey: "K", locArgs: ["a"], actionLocKey: "A",
            summaryArg: "Ann", summaryArgCount: 2)
        let aps = APS(
            alert: alert, badge: 3, sound: "s.aiff", threadID: "th", category: "C", contentAvailable: true,
            mutableContent: true, targetContentID: "w", interruptionLevel: .timeSensitive, relevanceScore: 0.75,
            filterCriteria: "work", urlArgs: ["a", "b"])
        let bytes = try Payload(aps: aps).encoded(for: .alert)

        let documentedAlertKeys: [(String, Any)] = [
            ("title", "t"), ("subtitle", "s"), ("body", "b"), ("launch-image", "l.png"),
            ("title-loc-key", "TK"), ("title-loc-args", ["ta"]), ("subtitle-loc-key", "SK"),
            ("subtitle-loc-args", ["sa"]), ("loc-key", "K"), ("loc-args", ["a"]), ("action-loc-key", "A"),
            ("summary-arg", "Ann"), ("summary-arg-count", 2),
        ]
        let documentedApsKeys: [(String, Any)] = [
            ("alert", Dictionary(uniqueKeysWithValues: documentedAlertKeys)), ("badge", 3), ("sound", "s.aiff"),
            ("thread-id", "th"), ("category", "C"), ("content-available", 1), ("mutable-content", 1),
            ("target-content-id", "w"), ("interruption-level", "time-sensitive"), ("relevance-score", 0.75),
            ("filter-criteria", "work"), ("url-args", ["a", "b"]),
        ]
        let expected = try JSONSerialization.data(
            withJSONObject: ["aps": Dictionary(uniqueKeysWithValues: documentedApsKeys)])
        let actual = try #require(FoundationJSON.parse(bytes), "Foundation refuses \(text(bytes))")
        #expect(actual == FoundationJSON.parse(Array(expected)))

        // The keys come out in the order the protocol page lists them (which is the
        // order ``Payload`` documents): find each quoted key in the output.
        let output = text(bytes)
        for list in [documentedAlertKeys.map(\.0), documentedApsKeys.map(\.0)] {
            let positions = list.map { output.range(of: "\"\($0)\":")?.lowerBound }
            #expect(!positions.contains(nil), "a key is missing from \(output)")
            let found = positions.compactMap { $0 }
            #expect(found == found.sorted(), "keys out of the documented order in \(output)")
        }
    }

    @Test(arguments: [
        (InterruptionLevel.passive, "passive"), (.active, "active"), (.timeSensitive, "time-sensitive"), (.critical, "critical"),
    ])
    func interruptionLevels(level: InterruptionLevel, raw: String) throws {
        let payload = Payload(aps: APS(alert: Alert(body: "b"), interruptionLevel: level))
        #expect(text(try payload.encoded(for: .alert)).contains(#""interruption-level":"\#(raw)""#))
    }

    @Test func background() throws {
        let bytes = try Payload.background().encoded(for: .background)
        #expect(text(bytes) == #"{"aps":{"content-available":1}}"#)
    }

    @Test func voip() throws {
        let bytes = try Payload.voip(["caller": "Ann", "handle": "+1 555 0100"]).encoded(for: .voip)
        expectSameJSON(bytes, #"{"aps":{},"caller":"Ann","handle":"+1 555 0100"}"#)
    }

    // APNs asks every payload for an aps dictionary but those of File Provider and MDM
    // pushes (APNS-PROTOCOL's "Payload"; Apple's File Provider and MDM payloads have none).
    @Test("an empty aps beside custom keys is written for every push type but fileprovider and mdm")
    func emptyAPSByPushType() throws {
        let custom = Payload(custom: ["ptt": "channel-7"])
        for type in [PushType.complication, .pushtotalk, .location, .voip] {
            #expect(text(try custom.encoded(for: type)) == #"{"aps":{},"ptt":"channel-7"}"#, "\(type)")
        }
        let files = Payload.fileProvider(containerIdentifier: "NSFileProviderWorkingSetContainerItemIdentifier", domain: "d")
        #expect(text(try files.encoded(for: .fileprovider)) == #"{"container-identifier":"NSFileProviderWorkingSetContainerItemIdentifier","domain":"d"}"#)
        #expect(text(try Payload.mdm(pushMagic: "M").encoded(for: .mdm)) == #"{"mdm":"M"}"#)
        // No push type: the form of the payload alone, as before.
        #expect(text(try custom.encoded()) == #"{"ptt":"channel-7"}"#)
        // Fitting writes what encoding writes.
        #expect(text(try custom.encoded(for: .pushtotalk, fitting: .truncatingBody)) == #"{"aps":{},"ptt":"channel-7"}"#)
    }

    // After Apple's "Starting and updating Live Activities with ActivityKit push notifications".
    @Test func liveActivityStart() throws {
        let payload = Payload.liveActivityStart(
            timestamp: 1_705_560_370, attributesType: "AdventureAttributes",
            attributes: ["currentHealthLevel": 100, "eventDescription": "Adventure has begun!"],
            contentState: ["currentHealthLevel": 100, "eventDescription": "Adventure has begun!"],
            alert: LiveActivityAlert(title: "Adventure Started!", body: "Power Panda is on an adventure!", sound: "chime.aiff"),
            inputPushToken: true)
        expectSameJSON(try payload.encoded(for: .liveactivity), """
            {"aps":{"timestamp":1705560370,"event":"start",
              "content-state":{"currentHealthLevel":100,"eventDescription":"Adventure has begun!"},
              "attributes-type":"AdventureAttributes",
              "attributes":{"currentHealthLevel":100,"eventDescription":"Adventure has begun!"},
              "input-push-token":1,
              "alert":{"title":"Adventure Started!","body":"Power Panda is on an adventure!","sound":"chime.aiff"}}}
            """)
    }

    @Test func liveActivityUpdateWithLocalizedAlert() throws {
        let payload = Payload.liveActivityUpdate(
            timestamp: 1_685_952_000,
            contentState: ["currentHealthLevel": 0.941, "eventDescription": "Power Panda found a sword!"],
            staleDate: 1_685_955_600,
            alert: LiveActivityAlert(
                title: .localized(key: "%@ is on an adventure!", arguments: ["Power Panda"]),
                body: .localized(key: "%@ found a sword!", arguments: ["Power Panda"]),
                sound: "chime.aiff"))
        expectSameJSON(try payload.encoded(for: .liveactivity), """
            {"aps":{"timestamp":1685952000,"event":"update",
              "content-state":{"currentHealthLevel":0.941,"eventDescription":"Power Panda found a sword!"},
              "stale-date":1685955600,
              "alert":{"title":{"loc-key":"%@ is on an adventure!","loc-args":["Power Panda"]},
                       "body":{"loc-key":"%@ found a sword!","loc-args":["Power Panda"]},
                       "sound":"chime.aiff"}}}
            """)
    }

    @Test func liveActivityEnd() throws {
        let payload = Payload.liveActivityEnd(
            timestamp: 1_685_952_000, contentState: ["currentHealthLevel": 0], dismissalDate: 1_685_959_200)
        expectSameJSON(try payload.encoded(for: .liveactivity), """
            {"aps":{"timestamp":1685952000,"event":"end","content-state":{"currentHealthLevel":0},"dismissal-date":1685959200}}
            """)
    }

    @Test func liveActivityBroadcastChannelStart() throws {
        let payload = Payload.liveActivityStart(
            timestamp: 1, attributesType: "Match", attributes: ["home": "A"], contentState: ["score": 0],
            inputPushChannel: "dHN0LXNyY2gtY2hubA==")
        let bytes = try payload.encoded(limit: .broadcast)
        #expect(text(bytes).contains(#""input-push-channel":"dHN0LXNyY2gtY2hubA==""#))
    }

    @Test(arguments: [PushType.widgets, .controls])
    func contentChanged(pushType: PushType) throws {
        #expect(text(try Payload.contentChanged().encoded(for: pushType)) == #"{"aps":{"content-changed":true}}"#)
    }

    @Test func fileProvider() throws {
        let bytes = try Payload.fileProvider(
            containerIdentifier: "NSFileProviderWorkingSetContainerItemIdentifier", domain: "com.example.docs"
        ).encoded(for: .fileprovider)
        #expect(text(bytes) == #"{"container-identifier":"NSFileProviderWorkingSetContainerItemIdentifier","domain":"com.example.docs"}"#)
    }

    @Test func mdm() throws {
        let bytes = try Payload.mdm(pushMagic: "5A7F2C9E-0000-4B1D-9C3A-1E2D3F4A5B6C").encoded(for: .mdm)
        #expect(text(bytes) == #"{"mdm":"5A7F2C9E-0000-4B1D-9C3A-1E2D3F4A5B6C"}"#)
    }

    @Test func safariURLArgs() throws {
        let payload = Payload(aps: APS(alert: Alert(title: "Flight A998 now boarding", body: "Boarding has begun."), urlArgs: ["boarding", "A998"]))
        expectSameJSON(try payload.encoded(for: .alert), """
            {"aps":{"alert":{"title":"Flight A998 now boarding","body":"Boarding has begun."},"url-args":["boarding","A998"]}}
            """)
    }

    @Test func emptyPayloadStillHasAps() throws {
        #expect(text(try Payload().encoded()) == #"{"aps":{}}"#)
    }

    /// A payload is a value: tasks that each change their own copy encode their own
    /// change, byte for byte what encoding the same change serially gives, and the
    /// shared original is untouched.
    @Test func payloadIsSendableAcrossTasks() async throws {
        var shared = Payload.alert(title: "t", body: "b")
        shared.custom["list"] = ["a", "b"]
        let original = shared
        let payload = shared
        let results = try await withThrowingTaskGroup(of: (Int, [UInt8]).self) { group in
            for i in 0..<8 {
                group.addTask {
                    var copy = payload
                    copy.aps.badge = i
                    copy.custom["list"] = [.string("task \(i)")]
                    return (i, try copy.encoded(for: .alert))
                }
            }
            return try await group.reduce(into: [Int: [UInt8]]()) { $0[$1.0] = $1.1 }
        }
        #expect(results.count == 8)
        for (i, bytes) in results {
            var expected = original
            expected.aps.badge = i
            expected.custom["list"] = [.string("task \(i)")]
            #expect(bytes == (try expected.encoded(for: .alert)))
            #expect(text(bytes).contains(#""badge":\#(i)"#))
        }
        #expect(payload == original)
        #expect(text(try payload.encoded(for: .alert)).contains(#""list":["a","b"]"#))
    }
}

/// Encoding for a push type with an explicit limit, and validating without encoding.
@Suite struct ExplicitLimitTests {
    @Test func broadcastLiveActivityMayUse5120Bytes() throws {
        let big = String(repeating: "x", count: 4500)
        let payload = Payload.liveActivityUpdate(timestamp: 1, contentState: ["log": .string(big)])
        #expect(throws: PayloadError.self) { try payload.encoded(for: .liveactivity) }
        let bytes = try payload.encoded(for: .liveactivity, limit: .broadcast)
        #expect(bytes.count > 4096 && bytes.count <= 5120)
        // The shape rules still apply with an explicit limit.
        #expect {
            try Payload.background().encoded(for: .liveactivity, limit: .broadcast)
        } throws: { ($0 as! PayloadError).keyPath == "aps.event" }
    }

    @Test func validateChecksShapeWithoutEncoding() throws {
        try Payload.contentChanged().validate(for: .widgets)
        #expect {
            try Payload(jsonBytes: Array(#"{"aps":{"content-available":1,"badge":2}}"#.utf8)).validate(for: .background)
        } throws: { ($0 as! PayloadError).keyPath == "aps.badge" }
    }
}
