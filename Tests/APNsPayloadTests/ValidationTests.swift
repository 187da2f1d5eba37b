import Testing

@testable import APNsPayload

/// Every rule refuses a bad payload with a typed error naming the key path; the rules
/// come from Apple's payload key reference (seed 000 table 9-1/9-2, APNS-PROTOCOL facts).
@Suite struct ValidationTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var payload: Payload
        var pushType: PushType?
        var kind: PayloadError.Code
        var keyPath: String
        var testDescription: String { name }
    }

    static let liveState: JSONObject = ["score": 1]

    static let cases: [Case] = [
        Case(name: "volume above 1", payload: Payload(aps: APS(sound: .critical(name: "a", volume: 1.01))),
             kind: .valueOutOfRange, keyPath: "aps.sound.volume"),
        Case(name: "volume below 0", payload: Payload(aps: APS(sound: .critical(volume: -0.1))),
             kind: .valueOutOfRange, keyPath: "aps.sound.volume"),
        Case(name: "live activity alert volume", payload: Payload.liveActivityUpdate(
                timestamp: 1, contentState: liveState, alert: LiveActivityAlert(sound: .critical(volume: 2))),
             kind: .valueOutOfRange, keyPath: "aps.alert.sound.volume"),
        Case(name: "relevance above 1", payload: Payload(aps: APS(badge: 1, relevanceScore: 1.5)),
             kind: .valueOutOfRange, keyPath: "aps.relevance-score"),
        Case(name: "relevance below 0", payload: Payload(aps: APS(badge: 1, relevanceScore: -0.01)),
             kind: .valueOutOfRange, keyPath: "aps.relevance-score"),
        Case(name: "live activity relevance NaN", payload: Payload(aps: APS(
                relevanceScore: .nan, timestamp: 1, event: .update, contentState: liveState)),
             kind: .nonFiniteNumber, keyPath: "aps.relevance-score"),
        Case(name: "live activity timestamp in milliseconds", payload: Payload.liveActivityUpdate(
                timestamp: 1_705_560_370_000, contentState: liveState),
             kind: .valueOutOfRange, keyPath: "aps.timestamp"),
        Case(name: "live activity timestamp before 1970", payload: Payload(aps: APS(timestamp: -1, event: .end)),
             kind: .valueOutOfRange, keyPath: "aps.timestamp"),
        Case(name: "stale-date before 1970", payload: Payload.liveActivityUpdate(timestamp: 1, contentState: liveState, staleDate: -5),
             kind: .valueOutOfRange, keyPath: "aps.stale-date"),
        Case(name: "dismissal-date in milliseconds", payload: Payload(aps: APS(timestamp: 1, event: .end, dismissalDate: 1_705_560_370_000)),
             kind: .valueOutOfRange, keyPath: "aps.dismissal-date"),
        Case(name: "negative badge", payload: Payload(aps: APS(badge: -1)),
             kind: .valueOutOfRange, keyPath: "aps.badge"),
        Case(name: "summary-arg-count 0", payload: Payload.alert(Alert(body: "b", summaryArg: "x", summaryArgCount: 0)),
             kind: .valueOutOfRange, keyPath: "aps.alert.summary-arg-count"),
        Case(name: "custom key aps", payload: Payload.alert(body: "b").adding("aps", ["badge": 1]),
             kind: .reservedKey, keyPath: "aps"),
        Case(name: "background with alert", payload: { var p = Payload.background(); p.aps.alert = Alert(body: "x"); return p }(),
             pushType: .background, kind: .conflictingKeys, keyPath: "aps.alert"),
        Case(name: "background with sound", payload: { var p = Payload.background(); p.aps.sound = .default; return p }(),
             pushType: .background, kind: .conflictingKeys, keyPath: "aps.sound"),
        Case(name: "background with badge", payload: { var p = Payload.background(); p.aps.badge = 0; return p }(),
             pushType: .background, kind: .conflictingKeys, keyPath: "aps.badge"),
        Case(name: "background without content-available", payload: Payload(custom: ["k": 1]),
             pushType: .background, kind: .missingKey, keyPath: "aps.content-available"),
        Case(name: "alert push without alert, sound or badge", payload: Payload.background(),
             pushType: .alert, kind: .missingKey, keyPath: "aps.alert"),
        Case(name: "start without attributes-type", payload: Payload(aps: APS(
                timestamp: 1, event: .start, contentState: liveState, attributes: ["a": 1])),
             kind: .missingKey, keyPath: "aps.attributes-type"),
        Case(name: "start without attributes", payload: Payload(aps: APS(
                timestamp: 1, event: .start, contentState: liveState, attributesType: "Match")),
             kind: .missingKey, keyPath: "aps.attributes"),
        // Apple ("Starting and updating Live Activities with ActivityKit push notifications"):
        // the payload that starts a Live Activity must include an alert.
        Case(name: "liveactivity start without alert", payload: Payload.liveActivityStart(
                timestamp: 1, attributesType: "Match", attributes: ["a": 1], contentState: liveState),
             pushType: .liveactivity, kind: .missingKey, keyPath: "aps.alert"),
        Case(name: "event without timestamp", payload: Payload(aps: APS(event: .end)),
             kind: .missingKey, keyPath: "aps.timestamp"),
        Case(name: "update without content-state", payload: Payload(aps: APS(timestamp: 1, event: .update)),
             kind: .missingKey, keyPath: "aps.content-state"),
        Case(name: "liveactivity without event", payload: Payload(aps: APS(timestamp: 1, contentState: liveState)),
             pushType: .liveactivity, kind: .missingKey, keyPath: "aps.event"),
        Case(name: "widgets without content-changed", payload: Payload.background(),
             pushType: .widgets, kind: .missingKey, keyPath: "aps.content-changed"),
        Case(name: "controls without content-changed", payload: Payload.alert(body: "x"),
             pushType: .controls, kind: .missingKey, keyPath: "aps.content-changed"),
        Case(name: "fileprovider without domain", payload: Payload(custom: ["container-identifier": "c"]),
             pushType: .fileprovider, kind: .missingKey, keyPath: "domain"),
        Case(name: "mdm without push magic", payload: Payload.alert(body: "x"),
             pushType: .mdm, kind: .missingKey, keyPath: "mdm"),
        Case(name: "plain-text alert with a title", payload: { var a = Alert.text("b"); a.title = "t"; return Payload.alert(a) }(),
             kind: .conflictingKeys, keyPath: "aps.alert"),
        Case(name: "alert and live activity alert", payload: Payload(aps: APS(
                alert: Alert(body: "a"), liveActivityAlert: LiveActivityAlert(title: "t"))),
             kind: .conflictingKeys, keyPath: "aps.alert"),
        Case(name: "loc-args without loc-key", payload: Payload.alert(Alert(body: "b", locArgs: ["x"])),
             kind: .missingKey, keyPath: "aps.alert.loc-key"),
        Case(name: "title-loc-args without title-loc-key", payload: Payload.alert(Alert(body: "b", titleLocArgs: ["x"])),
             kind: .missingKey, keyPath: "aps.alert.title-loc-key"),
        Case(name: "subtitle-loc-args without subtitle-loc-key", payload: Payload.alert(Alert(body: "b", subtitleLocArgs: ["x"])),
             kind: .missingKey, keyPath: "aps.alert.subtitle-loc-key"),
        Case(name: "modelled key in additionalKeys", payload: Payload(aps: APS(badge: 1, additionalKeys: ["sound": "x"])),
             kind: .conflictingKeys, keyPath: "aps.sound"),
        // Modelled keys in additionalKeys would be written twice (issue 2: duplicate JSON keys).
        Case(name: "alert: modelled key in additionalKeys", payload: Payload.alert(Alert(body: "b", additionalKeys: ["body": "x"])),
             kind: .conflictingKeys, keyPath: "aps.alert.body"),
        Case(name: "alert: loc-args in additionalKeys", payload: Payload.alert(Alert(locKey: "K", additionalKeys: ["loc-args": ["x"]])),
             kind: .conflictingKeys, keyPath: "aps.alert.loc-args"),
        Case(name: "live activity alert: modelled key in additionalKeys", payload: Payload.liveActivityUpdate(
                timestamp: 1, contentState: liveState, alert: LiveActivityAlert(title: "t", additionalKeys: ["title": "u"])),
             kind: .conflictingKeys, keyPath: "aps.alert.title"),
        Case(name: "sound dictionary: modelled key in additionalKeys", payload: Payload(aps: APS(
                sound: .dictionary(name: "a", isCritical: false, volume: nil, additionalKeys: ["critical": 1]))),
             kind: .conflictingKeys, keyPath: "aps.sound.critical"),
        Case(name: "live activity sound: modelled key in additionalKeys", payload: Payload.liveActivityUpdate(
                timestamp: 1, contentState: liveState,
                alert: LiveActivityAlert(sound: .dictionary(name: "a", isCritical: true, volume: 1, additionalKeys: ["name": "b"]))),
             kind: .conflictingKeys, keyPath: "aps.alert.sound.name"),
        Case(name: "localized text: modelled key in additionalKeys", payload: Payload.liveActivityUpdate(
                timestamp: 1, contentState: liveState,
                alert: LiveActivityAlert(body: .localized(key: "K", arguments: ["a"], additionalKeys: ["loc-key": "L"]))),
             kind: .conflictingKeys, keyPath: "aps.alert.body.loc-key"),
        // A Live Activity alert is written as aps.alert: a background push refuses it too.
        Case(name: "background with live activity alert", payload: {
                var p = Payload.liveActivityUpdate(timestamp: 1, contentState: liveState, alert: LiveActivityAlert(title: "t"))
                p.aps.contentAvailable = true
                return p }(),
             pushType: .background, kind: .conflictingKeys, keyPath: "aps.alert"),
        // APNS-PROTOCOL.md: MDM payloads are {"mdm": "<push magic>"}.
        Case(name: "mdm with aps keys", payload: { var p = Payload.mdm(pushMagic: "m"); p.aps.badge = 1; return p }(),
             pushType: .mdm, kind: .conflictingKeys, keyPath: "aps"),
        Case(name: "mdm with a content-available aps", payload: {
                var p = Payload.mdm(pushMagic: "m"); p.aps.contentAvailable = true; return p }(),
             pushType: .mdm, kind: .conflictingKeys, keyPath: "aps"),
        // attributes-type, attributes, input-push-token and input-push-channel start a Live Activity.
        Case(name: "update with attributes-type", payload: { var p = Payload.liveActivityUpdate(timestamp: 1, contentState: liveState)
                p.aps.attributesType = "Match"; return p }(),
             kind: .conflictingKeys, keyPath: "aps.attributes-type"),
        Case(name: "update with attributes", payload: { var p = Payload.liveActivityUpdate(timestamp: 1, contentState: liveState)
                p.aps.attributes = ["home": "A"]; return p }(),
             kind: .conflictingKeys, keyPath: "aps.attributes"),
        Case(name: "end with input-push-token", payload: { var p = Payload.liveActivityEnd(timestamp: 1)
                p.aps.inputPushToken = true; return p }(),
             kind: .conflictingKeys, keyPath: "aps.input-push-token"),
        Case(name: "end with input-push-channel", payload: { var p = Payload.liveActivityEnd(timestamp: 1)
                p.aps.inputPushChannel = "Y2g="; return p }(),
             pushType: .liveactivity, kind: .conflictingKeys, keyPath: "aps.input-push-channel"),
        Case(name: "live activity alert without event", payload: Payload(aps: APS(liveActivityAlert: LiveActivityAlert(title: "t"))),
             kind: .missingKey, keyPath: "aps.event"),
        Case(name: "non-finite in unknown sound key", payload: Payload(aps: APS(
                sound: .dictionary(name: "a", isCritical: false, volume: nil, additionalKeys: ["x": [1, .double(.nan)]]))),
             kind: .nonFiniteNumber, keyPath: "aps.sound.x[1]"),
        Case(name: "non-finite in unknown localized text key", payload: Payload.liveActivityUpdate(
                timestamp: 1, contentState: liveState,
                alert: LiveActivityAlert(title: .localized(key: "K", arguments: nil, additionalKeys: ["r": .double(.infinity)]))),
             kind: .nonFiniteNumber, keyPath: "aps.alert.title.r"),
        Case(name: "non-finite custom double", payload: Payload.alert(body: "b").adding("ratio", .double(.infinity)),
             kind: .nonFiniteNumber, keyPath: "ratio"),
        Case(name: "non-finite in unknown aps key", payload: Payload(aps: APS(badge: 1, additionalKeys: ["future": [.double(.nan)]])),
             kind: .nonFiniteNumber, keyPath: "aps.future[0]"),
    ]

    @Test(arguments: cases)
    func ruleIsEnforced(_ c: Case) {
        do {
            if let pushType = c.pushType {
                _ = try c.payload.encoded(for: pushType)
            } else {
                _ = try c.payload.encoded()
            }
            Issue.record("\(c.name): accepted")
        } catch {
            #expect(error.code == c.kind, "\(c.name): \(error)")
            #expect(error.keyPath == c.keyPath, "\(c.name): \(error)")
            #expect(!error.rule.isEmpty)
            #expect(error.description.contains(c.keyPath))
        }
    }

    /// The boundaries themselves are allowed.
    @Test func boundariesAreAccepted() throws {
        _ = try Payload(aps: APS(sound: .critical(volume: 0))).encoded()
        _ = try Payload(aps: APS(sound: .critical(volume: 1))).encoded()
        _ = try Payload(aps: APS(badge: 0, relevanceScore: 0)).encoded(for: .alert)
        _ = try Payload(aps: APS(badge: 0, relevanceScore: 1)).encoded(for: .alert)
        _ = try Payload.alert(Alert(body: "b", summaryArg: "x", summaryArgCount: 1)).encoded(for: .alert)
        // A background update may show an alert when sent with push type alert (seed 000, 配置后台更新通知).
        var visible = Payload.background()
        visible.aps.alert = Alert(body: "New data")
        _ = try visible.encoded(for: .alert)
        // The start-only keys are accepted on a start, and on an event this SDK does not know.
        let start = Payload.liveActivityStart(
            timestamp: 1, attributesType: "Match", attributes: ["home": "A"], contentState: ["score": 0],
            alert: LiveActivityAlert(title: "t"), inputPushToken: true, inputPushChannel: "Y2g=")
        _ = try start.encoded(for: .liveactivity)
        // A Live Activity's relevance-score is ActivityKit's relevanceScore: any number
        // (Apple's WWDC23 "Update Live Activities with push notifications" uses 100 and 50).
        for score in [50.0, 100, -3] {
            var ranked = Payload.liveActivityUpdate(timestamp: 99_999_999_999, contentState: ["score": 1])
            ranked.aps.relevanceScore = score
            _ = try ranked.encoded(for: .liveactivity)
        }
        var future = start
        future.aps.event = LiveActivityEvent(rawValue: "future-event")
        _ = try future.encoded(for: .liveactivity)
        // An end may carry an alert (liveActivityEnd(timestamp:contentState:dismissalDate:alert:)).
        _ = try Payload.liveActivityEnd(timestamp: 1, alert: LiveActivityAlert(title: "Over")).encoded(for: .liveactivity)
        // APNS-PROTOCOL.md only says widgets and controls need content-changed; it does not
        // say they refuse other aps keys, so those are not refused.
        var widget = Payload.contentChanged()
        widget.aps.badge = 1
        _ = try widget.encoded(for: .widgets)
        // An MDM push with its magic is accepted; custom keys beside it are not refused.
        _ = try Payload.mdm(pushMagic: "m").encoded(for: .mdm)
        // Unknown keys in a sound dictionary or a localized text are fine.
        _ = try Payload(aps: APS(
            sound: .dictionary(name: "a", isCritical: true, volume: 0.5, additionalKeys: ["x-new": 1]))).encoded(for: .alert)
    }

    @Test func errorDescriptionSaysWhatAndWhere() {
        let error = PayloadError.outOfRange("aps.sound.volume", "volume must be in 0...1, not 2.0")
        #expect(error.description == "value out of range at aps.sound.volume: volume must be in 0...1, not 2.0")
        // The code's label is the metric-safe lowerCamelCase name every SDK error uses.
        #expect(PayloadError.Code.payloadTooLarge.description == "payloadTooLarge")
    }
}
