import Testing

@testable import APNsPayload

/// The code of Documentation/SwiftAPNs.docc/BuildingPayloads.md, so the article's
/// examples compile and do what the article says.
@Suite struct DocumentationExampleTests {
    @Test func anAlert() throws {
        var payload = Payload.alert(title: "Game Request", body: "Bob wants to play poker")
        payload.aps.badge = 5
        payload.aps.sound = "chime.aiff"
        payload.custom["gameID"] = "4711"
        let bytes = try payload.encoded(for: .alert)
        #expect(text(bytes) == #"{"aps":{"alert":{"title":"Game Request","body":"Bob wants to play poker"},"badge":5,"sound":"chime.aiff"},"gameID":"4711"}"#)

        let localized = Payload.alert(
            .localized("GAME_PLAY_REQUEST_FORMAT", arguments: ["Jenna", "Frank"]),
            sound: "chime.aiff")
        #expect(localized.aps.alert?.locArgs == ["Jenna", "Frank"])

        let short = Payload.alert(.text("You got your emails."), badge: 9, sound: "bingbong.aiff")
        #expect(text(try short.encoded(for: .alert)) == #"{"aps":{"alert":"You got your emails.","badge":9,"sound":"bingbong.aiff"}}"#)

        var urgent = Payload.alert(Alert(title: "Water leak", subtitle: "Basement", body: "Sensor 3 is wet"))
        urgent.aps.sound = .critical(name: "alarm.caf", volume: 0.8)
        urgent.aps.interruptionLevel = .critical
        urgent.aps.relevanceScore = 1
        urgent.aps.threadID = "sensors"
        urgent.aps.mutableContent = true
        expectSameJSON(try urgent.encoded(for: .alert), """
            {"aps":{"alert":{"title":"Water leak","subtitle":"Basement","body":"Sensor 3 is wet"},
            "sound":{"critical":1,"name":"alarm.caf","volume":0.8},"thread-id":"sensors","mutable-content":1,
            "interruption-level":"critical","relevance-score":1}}
            """)
    }

    @Test func aBackgroundUpdate() throws {
        let refresh = Payload.background(["mailbox": "inbox", "count": 3])
        let refreshBytes = try refresh.encoded(for: .background)
        #expect(text(refreshBytes) == #"{"aps":{"content-available":1},"mailbox":"inbox","count":3}"#)
    }

    @Test func voip() throws {
        let call = Payload.voip(["caller": "Ann", "handle": "+1 555 0100"])
        let callBytes = try call.encoded(for: .voip)
        // {"aps":{},"caller":"Ann","handle":"+1 555 0100"}
        expectSameJSON(callBytes, #"{"aps":{},"caller":"Ann","handle":"+1 555 0100"}"#)
    }

    @Test func liveActivities() throws {
        struct ScoreState: Encodable { var home: Int; var away: Int }

        let start = Payload.liveActivityStart(
            timestamp: 1_705_560_370,
            attributesType: "MatchAttributes",
            attributes: ["homeTeam": "Lions", "awayTeam": "Tigers"],
            contentState: try JSONObject(encoding: ScoreState(home: 0, away: 0)),
            alert: LiveActivityAlert(title: "Kick-off", body: "Lions vs Tigers has started"),
            inputPushToken: true)

        let update = Payload.liveActivityUpdate(
            timestamp: 1_705_561_000,
            contentState: try JSONObject(encoding: ScoreState(home: 1, away: 0)),
            staleDate: 1_705_564_600,
            alert: LiveActivityAlert(
                title: .localized(key: "GOAL_TITLE", arguments: ["Lions"]),
                body: .localized(key: "GOAL_BODY", arguments: ["1", "0"]),
                sound: "goal.caf"))

        let end = Payload.liveActivityEnd(timestamp: 1_705_566_000, dismissalDate: 1_705_569_600)
        let updateBytes = try update.encoded(for: .liveactivity)
        let broadcastBytes = try update.encoded(for: .liveactivity, limit: .broadcast)  // channel push: 5120 bytes
        #expect(broadcastBytes == updateBytes)
        expectSameJSON(updateBytes, """
            {"aps":{"timestamp":1705561000,"event":"update","content-state":{"home":1,"away":0},"stale-date":1705564600,
            "alert":{"title":{"loc-key":"GOAL_TITLE","loc-args":["Lions"]},"body":{"loc-key":"GOAL_BODY","loc-args":["1","0"]},"sound":"goal.caf"}}}
            """)
        _ = try start.encoded(for: .liveactivity)
        _ = try end.encoded(for: .liveactivity)
    }

    @Test func widgetsFileProviderMDM() throws {
        let reload = Payload.contentChanged()  // push type widgets or controls
        let files = Payload.fileProvider(
            containerIdentifier: "NSFileProviderWorkingSetContainerItemIdentifier",
            domain: "com.example.docs")  // push type fileprovider
        let wake = Payload.mdm(pushMagic: "5A7F2C9E-4B1D-9C3A-1E2D-3F4A5B6C7D8E")  // push type mdm
        _ = try reload.encoded(for: .widgets)
        _ = try reload.encoded(for: .controls)
        #expect(!text(try files.encoded(for: .fileprovider)).contains("aps"))
        #expect(!text(try wake.encoded(for: .mdm)).contains("aps"))
    }

    @Test func customData() throws {
        struct Media: Encodable { var type: String; var url: String }

        var withMedia = Payload.alert(body: "New photo from Ann")
        withMedia.aps.mutableContent = true
        try withMedia.setCustom("media", to: Media(type: "image", url: "https://example.com/p.jpg"))
        withMedia.custom["sizes"] = [120, 240, 480]
        #expect(text(try withMedia.encoded(for: .alert)) == #"{"aps":{"alert":{"body":"New photo from Ann"},"mutable-content":1},"media":{"type":"image","url":"https://example.com/p.jpg"},"sizes":[120,240,480]}"#)
    }

    @Test func fitting() throws {
        let long = Payload.alert(title: "Chat", body: String(repeating: "All work and no play. ", count: 300))
        let fitted = try long.encoded(for: .alert, fitting: .truncatingBody)  // 4096 bytes at most
        #expect(fitted.count <= 4096)
    }

    @Test func errors() {
        var printed = ""
        do {
            _ = try Payload(aps: APS(sound: .critical(volume: 1.5))).encoded(for: .alert)
        } catch {
            printed = "\(error)"  // value out of range at aps.sound.volume: volume must be in 0...1, not 1.5
        }
        #expect(printed == "value out of range at aps.sound.volume: volume must be in 0...1, not 1.5")
    }

    @Test func readingPayloads() throws {
        let stored = Array(#"{"aps":{"alert":"Hi","x-new-key":1},"ref":"a1"}"#.utf8)
        let forwarded = try Payload(jsonBytes: stored)
        let again = try forwarded.encoded(for: .alert)  // the same bytes
        #expect(again == stored)
        let ref = try forwarded.custom["ref"]?.decode(String.self)  // "a1"
        #expect(ref == "a1")
    }
}
