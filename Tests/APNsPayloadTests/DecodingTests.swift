import Testing
import Foundation

@testable import APNsPayload

/// `Payload(jsonBytes:)`: strict JSON with byte offsets in errors, typed reads with key
/// paths, unknown keys kept, and decode(encode(p)) == p.
@Suite struct DecodingTests {
    @Test(arguments: [
        (#"{"aps":}"#, 7),
        (#"{"a":1,}"#, 7),
        (#"{"a" 1}"#, 5),
        (#"[1,2]"#, 0),
        (#"{} x"#, 3),
        (#"{"a":01}"#, 5),
        (#"{"a":"x"#, 5),
        (#"{"a":"\q"}"#, 6),
        (#"{"a":"\ud800"}"#, 6),
        (#"{"a":tru}"#, 5),
        (#"{"a":1.}"#, 7),
        (#"{"a":-}"#, 6),
        (#"{"a":1e}"#, 7),
        ("", 0),
        ("{\"a\":\"x\ny\"}", 7),
        (#"{"a":[1 2]}"#, 8),
    ])
    func syntaxErrorsCarryTheByteOffset(json: String, offset: Int) {
        let error = Self.refusal(json)
        #expect(error?.code == .invalidJSON && error?.byteOffset == offset && error?.description.contains("byte \(offset)") == true,
                "\(String(describing: error))")
    }

    /// The error `Payload(jsonBytes:)` refuses `json` with, or `nil` if it reads it.
    static func refusal(_ json: String) -> PayloadError? {
        do {
            _ = try Payload(jsonBytes: Array(json.utf8))
            return nil
        } catch {
            return error
        }
    }

    @Test func invalidUTF8IsRefusedAtItsOffset() {
        let bytes: [UInt8] = Array(#"{"a":"ok"#.utf8) + [0xFF] + Array(#""}"#.utf8)
        #expect {
            try Payload(jsonBytes: bytes)
        } throws: { ($0 as! PayloadError).byteOffset == 8 }
    }

    /// RFC 8259 §6 allows `-0`, and `JSONSerialization` reads it: it comes back as a
    /// negative zero (found from outside: refused as "outside the 64-bit range").
    @Test func negativeZeroIsANumber() throws {
        let payload = try Payload(jsonBytes: Array(#"{"aps":{},"c":-0,"d":[-0,0]}"#.utf8))
        guard case .double(let zero) = payload.custom["c"] else {
            Issue.record("\(String(describing: payload.custom["c"]))")
            return
        }
        #expect(zero == 0 && zero.sign == .minus)
        let foundation = try #require(try JSONSerialization.jsonObject(with: Data(#"{"c":-0}"#.utf8)) as? [String: Any])
        #expect((foundation["c"] as? NSNumber)?.doubleValue == 0)
        #expect(payload.custom["d"] == .array([.double(-0.0), .integer(0)]))
    }

    @Test func nestingIsLimited() {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect {
            try Payload(jsonBytes: Array(("{\"a\":" + deep + "}").utf8))
        } throws: { ($0 as! PayloadError).code == .invalidJSON }
    }

    @Test(arguments: [
        (#"{"aps":{"badge":"3"}}"#, "aps.badge"),
        (#"{"aps":[]}"#, "aps"),
        (#"{"aps":{"alert":{"loc-args":["a",1]}}}"#, "aps.alert.loc-args[1]"),
        (#"{"aps":{"sound":{"volume":"loud"}}}"#, "aps.sound.volume"),
        (#"{"aps":{"timestamp":1.5,"event":"end"}}"#, "aps.timestamp"),
        (#"{"aps":{"event":"update","alert":{"title":7}}}"#, "aps.alert.title"),
        (#"{"aps":{"alert":42}}"#, "aps.alert"),
    ])
    func typeMismatchesNameTheKeyPath(json: String, path: String) {
        #expect {
            try Payload(jsonBytes: Array(json.utf8))
        } throws: { error in
            let error = error as! PayloadError
            return error.code == .typeMismatch && error.keyPath == path
        }
    }

    @Test func escapesAreDecoded() throws {
        let json = #"{"aps":{"alert":"\"\\\/\b\f\n\r\t\u00e9\uD83D\uDE00"}}"#
        let payload = try Payload(jsonBytes: Array(json.utf8))
        #expect(payload.aps.alert?.body == "\"\\/\u{8}\u{C}\n\r\té😀")
        #expect(payload.aps.alert?.isPlainText == true)
    }

    /// Compact input in the SDK's key order comes back byte for byte: nothing is lost.
    @Test(arguments: [
        #"{"aps":{"alert":"x","future-key":{"a":[1,2.5,null,true,false]}},"z":1}"#,
        #"{"aps":{"alert":{"title":"t","body":"b","new-alert-key":"v"},"badge":0,"sound":{"critical":1,"name":"a.caf","volume":0.25}},"k":"v"}"#,
        #"{"aps":{"alert":{"title":{"loc-key":"K","loc-args":[]},"body":"b","sound":"s"},"timestamp":5,"event":"update","content-state":{"x":[]}}}"#,
        #"{"aps":{"content-changed":true}}"#,
        #"{"mdm":"magic"}"#,
        #"{"aps":{},"n":-0.0,"big":9223372036854775807,"small":-9223372036854775808,"huge":1e+300}"#,
    ])
    func forwardingIsLossless(json: String) throws {
        let payload = try Payload(jsonBytes: Array(json.utf8))
        let reencoded = text(try payload.encoded())
        // `{"aps":{},…}` drops the empty aps beside custom keys; everything else is identical.
        #expect(reencoded == json.replacingOccurrences(of: #""aps":{},"#, with: ""))
    }

    // Python's json keeps 12345678901234567890 exactly; as a Double it would come back as
    // 1.2345678901234567e+19. Refused at its offset rather than changed.
    @Test(arguments: [
        (#"{"aps":{"alert":"a"},"n":12345678901234567890}"#, 25),
        (#"{"n":[-9223372036854775809]}"#, 6),
        (#"{"n":9223372036854775808}"#, 5),
    ])
    func integersBeyondInt64AreRefusedNotRounded(json: String, offset: Int) {
        let error = Self.refusal(json)
        #expect(error?.code == .valueOutOfRange && error?.byteOffset == offset && error?.description.contains("64-bit") == true,
                "\(String(describing: error))")
    }

    @Test func unknownKeysArePreservedInTheModel() throws {
        let payload = try Payload(jsonBytes: Array(#"{"aps":{"badge":1,"x-new":2},"c":3}"#.utf8))
        #expect(payload.aps.badge == 1)
        #expect(payload.aps.additionalKeys["x-new"] == 2)
        #expect(payload.custom["c"] == 3)
    }

    @Test func nullLocalizationKeysReadAsAbsent() throws {
        let payload = try Payload(jsonBytes: Array(#"{"aps":{"alert":{"body":"b","title-loc-key":null,"action-loc-key":null}}}"#.utf8))
        #expect(payload.aps.alert == Alert(body: "b"))
    }

    static let roundTripPayloads: [Payload] = [
        .alert(title: "t", body: "b"),
        .alert(.text("plain")),
        .background(["k": ["nested": [1, 2.5, "s", nil, true]]]),
        .voip(["caller": "Ann"]),
        .liveActivityStart(
            timestamp: 1, attributesType: "T", attributes: ["a": 1], contentState: ["s": 0.5],
            alert: LiveActivityAlert(title: .localized(key: "K", arguments: ["x"]), body: "b", sound: .critical(volume: 1)),
            staleDate: 9, inputPushToken: true, inputPushChannel: "ch"),
        .liveActivityUpdate(timestamp: 2, contentState: [:]),
        .liveActivityEnd(timestamp: 3, dismissalDate: 4),
        .contentChanged(),
        .fileProvider(containerIdentifier: "c", domain: "d"),
        .mdm(pushMagic: "m"),
        Payload(aps: APS(
            alert: Alert(
                title: "t", subtitle: "s", body: "b", launchImage: "l", titleLocKey: "tk", titleLocArgs: ["1"],
                subtitleLocKey: "sk", subtitleLocArgs: ["2"], locKey: "k", locArgs: ["3"], actionLocKey: "a",
                summaryArg: "sa", summaryArgCount: 4, additionalKeys: ["x": 1]),
            badge: 7, sound: .dictionary(name: "n", isCritical: false, volume: 0.1), threadID: "th", category: "c",
            contentAvailable: true, mutableContent: true, targetContentID: "tc", interruptionLevel: .critical,
            relevanceScore: 0.3, filterCriteria: "f", urlArgs: [], additionalKeys: ["future": ["a": 1e-7]]),
            custom: ["é": "ü", "emoji": "👨‍👩‍👧"]),
    ]

    @Test(arguments: roundTripPayloads)
    func decodeOfEncodeIsIdentity(payload: Payload) throws {
        let bytes = try payload.encoded(limit: .voip)
        #expect(try Payload(jsonBytes: bytes) == payload)
    }

    /// The parser's UTF-8 check agrees with the standard library's validating decoder
    /// on known ill-formed sequences (RFC 3629 §10 examples: overlongs, surrogates,
    /// above U+10FFFF, truncations) and on pseudo-random bytes.
    @Test func utf8ValidationAgreesWithTheStandardLibrary() {
        var samples: [[UInt8]] = [
            [0xC0, 0x80], [0xC1, 0xBF], [0xE0, 0x80, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80],
            [0xF5, 0x80, 0x80, 0x80], [0xF0, 0x9F, 0x98], [0xE2, 0x82], [0x80], [0xBF, 0x41], [0xFE], [0xFF],
            Array("ok é 中 😀 👨‍👩‍👧".utf8), [0xEF, 0xBF, 0xBD], [0xF4, 0x8F, 0xBF, 0xBF],
        ]
        var state: UInt64 = 42
        for length in 0..<300 {
            var bytes: [UInt8] = []
            for _ in 0..<(length % 23) {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                let r = UInt8(truncatingIfNeeded: state >> 56)
                // Bias towards plausible UTF-8 so valid sequences occur too.
                bytes.append(length % 3 == 0 ? r : (r < 0x80 ? r : 0x80 | (r & 0x3F)))
            }
            samples.append(bytes)
            samples.append(Array("ab".utf8) + bytes + Array("cdefghij".utf8))
        }
        for sample in samples {
            let ours = sample.withUnsafeBufferPointer { JSONParser.firstInvalidUTF8Offset($0) }
            #expect((ours == nil) == (String(validating: sample, as: UTF8.self) != nil), "\(sample)")
        }
    }
}

/// Edge cases of the parser: repeated keys, large objects, bad bytes after escapes.
@Suite struct ParserEdgeCaseTests {
    @Test func repeatedKeyKeepsFirstPositionAndLastValue() throws {
        let payload = try Payload(jsonBytes: Array(#"{"a":1,"b":2,"a":3}"#.utf8))
        #expect(payload.custom.keys == ["a", "b"])
        #expect(payload.custom["a"] == 3)
        // Same in an object large enough to use the key set.
        let members = (0..<40).map { #""k\#($0)":\#($0)"# }.joined(separator: ",")
        let large = try Payload(jsonBytes: Array(("{" + members + #","k3":"again"}"#).utf8))
        #expect(large.custom.count == 40)
        #expect(large.custom["k3"] == "again")
        #expect(large.custom.keys[3] == "k3")
    }

    @Test func invalidUTF8AfterAnEscapeHasItsInputOffset() {
        let bytes: [UInt8] = Array(#"{"a":"\n"#.utf8) + [0xC3] + Array(#""}"#.utf8)
        #expect {
            try Payload(jsonBytes: bytes)
        } throws: { ($0 as! PayloadError).byteOffset == 8 }
    }
}

@Suite("JSONValue(jsonBytes:)")
struct JSONValueParsingTests {
    @Test("parses what Foundation parses, to the same values")
    func agreesWithFoundation() throws {
        let text = #"{"score":"2-1","minute":89,"ratio":0.5,"live":true,"none":null,"tags":["a","ü"]}"#
        let value = try JSONValue(jsonBytes: Array(text.utf8))
        let foundation = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        guard case .object(let object) = value else { Issue.record("not an object"); return }
        #expect(object.count == foundation.count)
        #expect(object["score"] == .string(foundation["score"] as? String ?? ""))
        #expect(object["minute"] == .integer(Int64(foundation["minute"] as? Int ?? 0)))
        #expect(object["tags"] == .array(["a", "ü"]))
    }

    @Test("refuses what Foundation refuses, with the offset", arguments: [("{\"a\":}", 5), ("{\"a\" 1}", 5), ("tru", 0)])
    func refuses(text: String, offset: Int) {
        #expect((try? JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed)) == nil)
        do {
            _ = try JSONValue(jsonBytes: Array(text.utf8))
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.code == .invalidJSON)
            #expect(error.byteOffset == offset)
        }
    }
}

/// Decoding then encoding NON-canonical input (other key order, whitespace, unknown keys
/// in nested dictionaries, explicit `0`/`false` flags) keeps every key and value. The
/// oracle is Foundation's JSONSerialization reading the INPUT, not our own earlier output.
@Suite struct LosslessForwardingTests {
    /// The oracle tells a Boolean from a number and a missing key from an empty array, or
    /// the comparisons below would prove nothing about flags and `loc-args`.
    @Test func oracleTellsTheDifferencesThatMatter() {
        #expect(FoundationJSON.parse(#"{"a":true}"#) != FoundationJSON.parse(#"{"a":1}"#))
        #expect(FoundationJSON.parse(#"{"a":false}"#) != FoundationJSON.parse(#"{"a":0}"#))
        #expect(FoundationJSON.parse(#"{"a":0}"#) != FoundationJSON.parse(#"{}"#))
        #expect(FoundationJSON.parse(#"{"a":{"k":"K"}}"#) != FoundationJSON.parse(#"{"a":{"k":"K","loc-args":[]}}"#))
    }

    @Test(arguments: [
        // Unknown keys in a sound dictionary, keys out of the SDK's order, whitespace.
        #" { "z" : 1 , "aps" : { "sound" : { "volume" : 0.5 , "x-sound" : [1, {"a": null}], "name" : "s.caf" }, "alert" : "hi" } } "#,
        #"{"aps":{"sound":{"name":"s","critical":1,"volume":0,"x":{"deep":[true,false]}},"badge":0}}"#,
        // Explicit zero and false flags, and flags in the other spelling.
        #"{"aps":{"content-available":0,"mutable-content":0,"badge":0,"alert":{"body":"b"}}}"#,
        #"{"aps":{"content-changed":false}}"#,
        #"{"aps":{"content-changed":1}}"#,
        #"{"aps":{"content-available":true,"mutable-content":true}}"#,
        #"{"aps":{"mutable-content":2,"alert":"x"}}"#,
        #"{"aps":{"content-available":false},"k":"v"}"#,
        // Live Activity: explicit input-push-token 0, localized text with extra keys and no loc-args,
        // unknown keys in the alert and its sound dictionary.
        """
        {"aps":{"input-push-token":0,"event":"start","timestamp":7,"attributes-type":"T","attributes":{},
         "content-state":{"s":1},
         "alert":{"x-alert":{"n":1},"sound":{"x":2,"critical":1,"name":"c.caf"},
                  "body":{"note":"n","loc-args":["a"],"loc-key":"B"},"title":{"loc-key":"K","x-extra":true}}}}
        """,
        #"{"aps":{"event":"update","timestamp":1,"content-state":{},"alert":{"title":{"loc-key":"K"},"body":{"loc-key":"B","loc-args":[]}}}}"#,
        // Modelled zero values and empty arrays.
        #"{"aps":{"relevance-score":0,"badge":0,"alert":{"loc-key":"K","title-loc-key":"T","title-loc-args":[]},"url-args":[]}}"#,
        #"{"aps":{"relevance-score":1,"sound":{"critical":1,"name":"a","volume":1}}}"#,
    ])
    func nonCanonicalInputSurvivesDecodeAndEncode(json: String) throws {
        let payload = try Payload(jsonBytes: Array(json.utf8))
        expectSameJSON(try payload.encoded(), json)
    }

    /// What `Payload(jsonBytes:)` documents as normalized, and nothing else.
    @Test(arguments: [
        (#"{"aps":{"sound":{"critical":1}}}"#, #"{"aps":{"sound":{"critical":1,"name":"default"}}}"#),
        (#"{"aps":{"alert":{"body":"b","title-loc-key":null,"title-loc-args":null,"action-loc-key":null}}}"#,
         #"{"aps":{"alert":{"body":"b"}}}"#),
        (#"{"aps":{},"k":1}"#, #"{"k":1}"#),
        (#"{"k":1,"j":0,"k":2}"#, #"{"k":2,"j":0}"#),
    ])
    func documentedNormalizations(input: String, output: String) throws {
        let payload = try Payload(jsonBytes: Array(input.utf8))
        expectSameJSON(try payload.encoded(), output)
    }

    /// A sound dictionary's `critical` written as `true`, `false` or `0` comes back as
    /// written, as the `aps` flags do, in `aps` and in a Live Activity alert: `true` came
    /// back as `1` (a JSON Boolean read back as a number) and `false` or `0` not at all.
    @Test(arguments: [
        #"{"aps":{"sound":{"critical":true,"name":"a","volume":0.5}},"flag":true,"one":1}"#,
        #"{"aps":{"sound":{"critical":false,"name":"a"}},"flag":false,"zero":0}"#,
        #"{"aps":{"sound":{"critical":0,"name":"a"}}}"#,
        #"{"aps":{"alert":{"body":"b","sound":{"critical":true,"name":"a"}},"timestamp":1,"event":"update","content-state":{"on":true}}}"#,
    ])
    func soundCriticalKeepsItsSpelling(json: String) throws {
        let payload = try Payload(jsonBytes: Array(json.utf8))
        #expect(text(try payload.encoded()) == json)
    }

    /// The kept `critical` spelling is written only while it agrees with the sound.
    @Test func changingADecodedCriticalSoundWritesTheCanonicalForm() throws {
        var payload = try Payload(jsonBytes: Array(#"{"aps":{"sound":{"critical":true,"name":"a"}}}"#.utf8))
        payload.aps.sound = .critical(name: "b")
        #expect(text(try payload.encoded()) == #"{"aps":{"sound":{"critical":true,"name":"b"}}}"#)
        payload.aps.sound = .dictionary(name: "b", isCritical: false, volume: nil)
        #expect(text(try payload.encoded()) == #"{"aps":{"sound":{"name":"b"}}}"#)
        payload.aps.sound = "c.caf"
        #expect(text(try payload.encoded()) == #"{"aps":{"sound":"c.caf"}}"#)
    }

    /// A kept flag spelling is written only while it agrees with the flag: changing the
    /// flag writes the SDK's canonical form again.
    @Test func changingADecodedFlagWritesTheCanonicalForm() throws {
        var zero = try Payload(jsonBytes: Array(#"{"aps":{"content-available":0,"badge":1}}"#.utf8))
        #expect(zero.aps.contentAvailable == false)
        #expect { try zero.encoded(for: .background) } throws: { ($0 as! PayloadError).keyPath == "aps.content-available" }
        zero.aps.contentAvailable = true
        zero.aps.badge = nil
        expectSameJSON(try zero.encoded(for: .background), #"{"aps":{"content-available":1}}"#)

        var spelledTrue = try Payload(jsonBytes: Array(#"{"aps":{"content-changed":1}}"#.utf8))
        #expect(spelledTrue.aps.contentChanged)
        _ = try spelledTrue.encoded(for: .widgets)
        spelledTrue.aps.contentChanged = false
        #expect(spelledTrue.aps.isEmpty)
        expectSameJSON(try spelledTrue.encoded(), #"{"aps":{}}"#)
        spelledTrue.aps.contentChanged = true
        expectSameJSON(try spelledTrue.encoded(), #"{"aps":{"content-changed":1}}"#)
    }

    /// `aps` holding only an explicit false flag is not empty: it is written, even beside custom keys.
    @Test func anApsWithOnlyAnExplicitFalseFlagIsKept() throws {
        let json = #"{"aps":{"content-available":0},"k":1}"#
        let payload = try Payload(jsonBytes: Array(json.utf8))
        #expect(!payload.aps.isEmpty)
        expectSameJSON(try payload.encoded(), json)
    }

    /// Fuzz finding (Fuzz/Findings/payload-writer): flags spelled `false` in another order
    /// than the SDK writes them made decode(encode(p)) differ from p, because the spellings
    /// kept the order they were read in. Decoding either order, and the round trip, are equal.
    @Test func explicitFlagsInAnyOrderRoundTrip() throws {
        let readOrder = try Payload(jsonBytes: Array(#"{"aps":{"input-push-token":false,"content-available":false}}"#.utf8))
        let writeOrder = try Payload(jsonBytes: Array(#"{"aps":{"content-available":false,"input-push-token":false}}"#.utf8))
        #expect(readOrder == writeOrder)
        let roundTrip = try Payload(jsonBytes: try readOrder.encoded(limit: PayloadLimit(bytes: .max)))
        #expect(roundTrip == readOrder)
    }

    @Test func unknownNestedKeysAreInTheModel() throws {
        let payload = try Payload(jsonBytes: Array("""
            {"aps":{"event":"update","timestamp":1,"content-state":{},
             "alert":{"title":{"loc-key":"K","x":1},"sound":{"name":"s","y":2}}}}
            """.utf8))
        #expect(payload.aps.liveActivityAlert?.title == .localized(key: "K", arguments: nil, additionalKeys: ["x": 1]))
        #expect(payload.aps.liveActivityAlert?.sound == .dictionary(name: "s", isCritical: false, volume: nil, additionalKeys: ["y": 2]))
    }
}
