import Foundation
import Testing

@testable import APNsPayload

/// Strings survive the writer: Foundation's parser reads back exactly the input, and
/// non-ASCII text is raw UTF-8, never `\u` escapes (APNs wants UTF-8).
@Suite struct StringEscapingTests {
    static let samples: [String] = [
        "Family 👨‍👩‍👧 and flags 🇫🇷🇯🇵",
        "Cafe\u{0301} with a combining accent",
        "漢字とかなのテキスト, 한국어, 中文",
        #"She said "hi" and \ left"#,
        "\\\"\\\"",
        "tab\tnewline\nreturn\rbackspace\u{08}formfeed\u{0C}",
        "DEL\u{7F}end",
        String((0x00...0x1F).map { Character(Unicode.Scalar(UInt8($0))) }),
        "",
        "/slash/ is not escaped",
        "𝄞 outside the BMP",
    ]

    @Test(arguments: samples)
    func alertBodyRoundTripsThroughFoundation(sample: String) throws {
        let payload = Payload.alert(title: sample, body: sample).adding(sample, .string(sample))
        let bytes = try payload.encoded(for: .alert)
        let parsed = try #require(FoundationJSON.parse(bytes))
        guard case .object(let top) = parsed, case .object(let aps)? = top["aps"],
            case .object(let alert)? = aps["alert"]
        else {
            Issue.record("unexpected shape: \(parsed)")
            return
        }
        #expect(alert["title"] == .string(sample))
        #expect(alert["body"] == .string(sample))
        #expect(top[sample] == .string(sample))
        // Our own parser agrees.
        #expect(try Payload(jsonBytes: bytes) == payload)
    }

    @Test(arguments: samples)
    func nonASCIIIsNeverEscaped(sample: String) throws {
        let bytes = try Payload.alert(body: sample).encoded()
        let output = text(bytes)
        // The only \u escapes allowed are for control characters.
        var rest = Substring(output)
        while let range = rest.range(of: "\\u") {
            let hex = rest[range.upperBound...].prefix(4)
            #expect(hex.hasPrefix("00"), "unexpected escape \\u\(hex)")
            let value = UInt8(hex, radix: 16) ?? 0xFF
            #expect(value < 0x20)
            rest = rest[range.upperBound...]
        }
        for scalar in sample.unicodeScalars where scalar.value >= 0x80 {
            #expect(output.unicodeScalars.contains(scalar))
        }
    }

    @Test func everyControlCharacterIsEscapedAsRFC8259Requires() throws {
        for byte in UInt8(0)...0x1F {
            let sample = String(Unicode.Scalar(byte))
            let bytes = try Payload.alert(body: sample).encoded()
            // No raw control byte may appear in the output.
            #expect(!bytes.contains(byte), "raw control byte 0x\(String(byte, radix: 16))")
            let expected: String
            switch byte {
            case 0x08: expected = #"\b"#
            case 0x09: expected = #"\t"#
            case 0x0A: expected = #"\n"#
            case 0x0C: expected = #"\f"#
            case 0x0D: expected = #"\r"#
            default: expected = "\\u00" + (byte < 0x10 ? "0" : "") + String(byte, radix: 16)
            }
            #expect(text(bytes) == #"{"aps":{"alert":{"body":""# + expected + #""}}}"#)
        }
    }

    @Test func generatedStringsRoundTrip() throws {
        // Deterministic pseudo-random strings mixing every hard case.
        let pieces = ["a", "é", "e\u{301}", "👨‍👩‍👧", "🇩🇪", "\"", "\\", "\u{0}", "\u{1F}", "\u{7F}", "中", "\n", "😀", " "]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<200 {
            var sample = ""
            for _ in 0..<20 {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                sample += pieces[Int(state >> 33) % pieces.count]
            }
            let bytes = try Payload.alert(body: sample).adding("k", .string(sample)).encoded()
            guard case .object(let top)? = FoundationJSON.parse(bytes) else {
                Issue.record("Foundation refused \(text(bytes))")
                continue
            }
            #expect(top["k"] == .string(sample))
            #expect(String(validating: bytes, as: UTF8.self) != nil)
        }
    }

    /// The writer skips eight bytes at a time; a character needing an escape must be
    /// found at every position of a word, next to ASCII and multi-byte neighbours.
    @Test(arguments: ["\"", "\\", "\u{0}", "\u{1F}", "\n"])
    func escapeIsFoundAtEveryPosition(special: String) throws {
        for filler in ["a", "é", "\u{7F}", "~"] {
            for position in 0..<40 {
                let sample = String(repeating: filler, count: position) + special + String(repeating: filler, count: 40 - position)
                let bytes = try Payload.alert(body: sample).encoded()
                guard case .object(let top)? = FoundationJSON.parse(bytes), case .object(let aps)? = top["aps"],
                    case .object(let alert)? = aps["alert"]
                else {
                    Issue.record("Foundation refused \(text(bytes))")
                    return
                }
                #expect(alert["body"] == .string(sample))
            }
        }
    }
}
