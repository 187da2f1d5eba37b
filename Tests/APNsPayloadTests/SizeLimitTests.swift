import Foundation
import Testing

@testable import APNsPayload

/// The size limits Apple documents (seed 000, 创建远程通知负载: 4096 bytes, 5120 for VoIP)
/// and fitting an over-long alert body.
@Suite struct SizeLimitTests {
    /// An alert payload whose encoding is exactly `size` bytes.
    static func alert(ofSize size: Int) throws -> Payload {
        let overhead = try Payload.alert(body: "").encoded(limit: PayloadLimit(bytes: .max)).count
        return Payload.alert(body: String(repeating: "x", count: size - overhead))
    }

    /// A VoIP payload whose encoding is exactly `size` bytes.
    /// A VoIP payload whose encoding for push type voip (`{"aps":{},"caller":"yyy…"}`) is
    /// `size` bytes.
    static func voip(ofSize size: Int) throws -> Payload {
        let overhead = try Payload.voip(["caller": ""]).encoded(for: .voip).count
        return Payload.voip(["caller": .string(String(repeating: "y", count: size - overhead))])
    }

    /// What encoding without a push type leaves out of a VoIP payload: its empty `aps`.
    static let emptyAPS = #""aps":{},"#.utf8.count

    @Test func limitsMatchApple() {
        #expect(PayloadLimit.standard.bytes == 4096)
        #expect(PayloadLimit.voip.bytes == 5120)
        #expect(PayloadLimit.broadcast.bytes == 5120)
        #expect(PayloadLimit(for: .voip) == .voip)
        for type in PushType.documented where type != .voip {
            #expect(PayloadLimit(for: type) == .standard)
        }
    }

    @Test(arguments: [(4095, true), (4096, true), (4097, false)])
    func alertLimit(size: Int, accepted: Bool) throws {
        let payload = try Self.alert(ofSize: size)
        #expect(try payload.encoded(limit: PayloadLimit(bytes: .max)).count == size)
        if accepted {
            #expect(try payload.encoded(for: .alert).count == size)
            #expect(try payload.encoded().count == size)
        } else {
            #expect {
                try payload.encoded(for: .alert)
            } throws: { error in
                let error = error as! PayloadError
                return error.code == .payloadTooLarge && error.size == 4097 && error.limit == 4096
                    && error.pushType == .alert
                    && error.description.contains("4097") && error.description.contains("4096")
            }
            #expect(throws: PayloadError.self) { try payload.encoded() }
        }
    }

    @Test(arguments: [(5119, true), (5120, true), (5121, false)])
    func voipLimit(size: Int, accepted: Bool) throws {
        let payload = try Self.voip(ofSize: size)
        #expect(try payload.encoded(limit: PayloadLimit(bytes: .max)).count == size - Self.emptyAPS)
        // Over the standard limit either way:
        #expect(throws: PayloadError.self) { try payload.encoded(for: .alert) }
        // The broadcast limit, on the payload as written without a push type.
        let unpadded = try Self.voip(ofSize: size + Self.emptyAPS)
        if accepted {
            #expect(try payload.encoded(for: .voip).count == size)
            #expect(try unpadded.encoded(limit: .broadcast).count == size)
        } else {
            #expect {
                try payload.encoded(for: .voip)
            } throws: { error in
                let error = error as! PayloadError
                return error.code == .payloadTooLarge && error.size == 5121 && error.limit == 5120
                    && error.pushType == .voip
            }
            #expect {
                try unpadded.encoded(limit: .broadcast)
            } throws: { ($0 as! PayloadError).pushType == nil && ($0 as! PayloadError).limit == 5120 }
        }
    }

    // MARK: Fitting

    static let hardBodies: [String] = [
        String(repeating: "👨‍👩‍👧", count: 400),  // 18 bytes per Character
        String(repeating: "🇫🇷🇯🇵", count: 400),  // flags: 8 bytes each
        String(repeating: "e\u{301}", count: 2000),  // e + combining acute
        String(repeating: "abc\"\\\n", count: 1000),  // escapes grow the output
        String(repeating: "漢字", count: 1000),
        String(repeating: "\u{1}x", count: 1000),  // 6-byte escapes
    ]

    @Test(arguments: hardBodies)
    func fitShortensBodyOnCharacterBoundaries(body: String) throws {
        var payload = Payload.alert(title: "Title", body: body)
        payload.aps.alert?.locKey = "KEEP_ME"
        payload.aps.alert?.locArgs = ["arg"]
        payload.custom["order"] = ["id": 42]
        #expect(throws: PayloadError.self) { try payload.encoded(for: .alert) }

        let bytes = try payload.encoded(for: .alert, fitting: .truncatingBody)
        #expect(bytes.count <= 4096)
        // Not shortened more than needed: at most one Character plus the ellipsis of slack.
        let widestCharacter = body.map { JSONWriter.escapedLength(of: Substring(String($0))) }.max()!
        #expect(bytes.count > 4096 - widestCharacter - 3)
        #expect(String(validating: bytes, as: UTF8.self) != nil)
        // Foundation reads it, and the body is a Character-prefix of the original plus "…".
        guard case .object(let top)? = FoundationJSON.parse(bytes), case .object(let aps)? = top["aps"],
            case .object(let alert)? = aps["alert"], case .string(let fitted)? = alert["body"]
        else {
            Issue.record("unexpected output")
            return
        }
        #expect(fitted.hasSuffix("…"))
        let kept = Array(fitted.dropLast())
        #expect(!kept.isEmpty)
        #expect(Array(body).starts(with: kept))
        // Nothing else changed.
        #expect(alert["loc-key"] == .string("KEEP_ME"))
        #expect(alert["title"] == .string("Title"))
        #expect(top["order"] == .object(["id": .number(42)]))
        // fitted(for:) gives the same payload the bytes decode to.
        #expect(try payload.fitted(for: .alert) == Payload(jsonBytes: bytes))
    }

    @Test func fitLeavesAFittingPayloadAlone() throws {
        let payload = Payload.alert(body: "short")
        #expect(try payload.encoded(for: .alert, fitting: .truncatingBody) == payload.encoded(for: .alert))
    }

    @Test func fitUsesTheVoIPLimitForVoIP() throws {
        var payload = Payload.voip(["caller": "Ann"])
        payload.aps.alert = Alert(body: String(repeating: "z", count: 6000))
        let bytes = try payload.encoded(for: .voip, fitting: .truncatingBody)
        #expect(bytes.count == 5120)
    }

    @Test func fitShortensAPlainTextAlertAndALiveActivityBody() throws {
        let plain = Payload.alert(.text(String(repeating: "a", count: 5000)))
        let plainBytes = try plain.encoded(for: .alert, fitting: .truncatingBody)
        #expect(plainBytes.count == 4096)
        #expect(text(plainBytes).hasSuffix("…\"}}"))

        let live = Payload.liveActivityUpdate(
            timestamp: 1, contentState: ["score": 1],
            alert: LiveActivityAlert(title: .localized(key: "T", arguments: []), body: .plain(String(repeating: "b", count: 5000))))
        let liveBytes = try live.encoded(for: .liveactivity, fitting: .truncatingBody)
        #expect(liveBytes.count == 4096)
    }

    @Test func fitFailsWithoutABody() {
        let payload = Payload.alert(.localized("KEY", arguments: [String(repeating: "x", count: 5000)]))
        #expect {
            try payload.encoded(for: .alert, fitting: .truncatingBody)
        } throws: { error in
            let error = error as! PayloadError
            return error.code == .cannotFit && error.size == (try? payload.encoded(limit: .init(bytes: .max)).count)
                && error.limit == 4096
        }
    }

    @Test func fitFailsWhenEvenAnEmptyBodyIsTooLarge() {
        let payload = Payload.alert(body: "hello").adding("blob", .string(String(repeating: "x", count: 4100)))
        #expect {
            try payload.encoded(for: .alert, fitting: .truncatingBody)
        } throws: { error in
            let error = error as! PayloadError
            return error.code == .cannotFit && error.keyPath == "aps.alert.body"
        }
    }
}

/// The writer refuses nesting deeper than the parser reads (512 levels of arrays and
/// objects, the payload's own object included) with a typed error, instead of recursing
/// until the stack runs out (found from outside: 20,000 levels ended the process).
@Suite struct EncodingDepthTests {
    static func nested(_ levels: Int) -> JSONValue {
        var value: JSONValue = 1
        for _ in 0..<levels { value = .array([value]) }
        return value
    }

    @Test func deepNestingIsRefusedWithItsKeyPath() {
        var payload = Payload.alert(body: "x")
        payload.custom["deep"] = Self.nested(20_000)
        #expect {
            try payload.encoded(limit: PayloadLimit(bytes: 1 << 24))
        } throws: { error in
            let error = error as! PayloadError
            return error.code == .valueOutOfRange && error.keyPath.hasPrefix("deep[0]") && error.rule.contains("512")
        }
    }

    /// 511 arrays inside the payload's object are 512 levels: written, and read back by
    /// the SDK's parser and by Foundation's; one more is refused.
    @Test func theLimitIsTheParsers() throws {
        var payload = Payload.alert(body: "x")
        payload.custom["deep"] = Self.nested(511)
        let bytes = try payload.encoded(limit: PayloadLimit(bytes: 1 << 24))
        #expect(try Payload(jsonBytes: bytes).custom["deep"] == Self.nested(511))
        #expect(try JSONSerialization.jsonObject(with: Data(bytes)) is [String: Any])
        payload.custom["deep"] = Self.nested(512)
        #expect(throws: PayloadError.self) { try payload.encoded(limit: PayloadLimit(bytes: 1 << 24)) }
    }
}
