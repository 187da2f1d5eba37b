import Foundation
import Testing

import APNsPayload

/// Cases the fuzz targets (Fuzz/, scripts/fuzz.sh) turned up, kept as regression tests.
@Suite struct FuzzFindingTests {
    /// json-writer: U+FEFF at the start of a string or key. RFC 8259 §7 lets any scalar but
    /// `"`, `\` and controls appear raw in a string, so the writer leaves it raw (EF BB BF)
    /// and our parser must keep it. (Foundation's JSONSerialization on Linux drops a leading
    /// U+FEFF from a raw string, so it cannot serve as the oracle for this case.)
    @Test func leadingByteOrderMarkSurvivesTheRoundTrip() throws {
        let text = "\u{FEFF}hi"
        let payload = Payload.background(["\u{FEFF}": .string(text), "": .null])
        let bytes = try payload.encoded(limit: PayloadLimit(bytes: 4096))
        let raw: [UInt8] = [0x22, 0xEF, 0xBB, 0xBF, 0x68, 0x69, 0x22]  // "\u{FEFF}hi" raw
        #expect(bytes.windows(ofCount: raw.count).contains { $0.elementsEqual(raw) })
        let decoded = try Payload(jsonBytes: bytes)
        #expect(decoded.custom.keys == ["\u{FEFF}", ""])
        #expect(decoded.custom["\u{FEFF}"]?.stringValue?.unicodeScalars.first == "\u{FEFF}")
        #expect(try JSONValue(jsonBytes: Array(#"["\ufeffhi"]"#.utf8)) == [.string(text)])
    }

    /// json-writer (180 s run): a key that starts with two U+FEFF, beside a NUL and a
    /// control character. Foundation on Linux read it back with one U+FEFF (the oracle now
    /// allows for that); our writer keeps both raw and our parser reads both.
    @Test func twoLeadingByteOrderMarksSurviveTheRoundTrip() throws {
        let key = "\u{FEFF}\u{FEFF}\"n!}"
        let object: JSONObject = ["\u{1F}": .double(0.1), "\u{0}n!c-400;": .double(-0.25), key: .null, "": .null]
        let value: JSONValue = .object(object)
        let bytes = try Payload(custom: object).encoded(limit: PayloadLimit(bytes: 4096))
        let raw: [UInt8] = [0x22, 0xEF, 0xBB, 0xBF, 0xEF, 0xBB, 0xBF, 0x5C, 0x22]  // "<FEFF><FEFF>\"
        #expect(bytes.windows(ofCount: raw.count).contains { $0.elementsEqual(raw) })
        #expect(try JSONValue(jsonBytes: bytes) == value)
    }

    /// json-parse: a Live Activity alert whose localized text object lacks `loc-key`
    /// (Apple: a localized string is `loc-key` plus optional `loc-args`) is refused with
    /// missingKey and the key path, a kind the documentation of init(jsonBytes:) now names.
    @Test func localizedTextWithoutLocKeyIsAMissingKey() throws {
        let json = #"{"aps":{"event":"update","timestamp":1,"alert":{"title":"t","body":{"loc-args":["Power Panda"]}}}}"#
        let error = try #require(throws: PayloadError.self) { try Payload(jsonBytes: Array(json.utf8)) }
        #expect(error.code == .missingKey)
        #expect(error.keyPath == "aps.alert.body.loc-key")
    }

    /// json-writer: doubles Foundation keeps as NSDecimalNumber (its doubleValue is not
    /// correctly rounded). The shortest round-trip digits we write must parse back, with
    /// Swift's correctly rounded parser and ours, to the same Double.
    @Test(arguments: [1.4169065279290933e+35, 123456789.12345679, Double.leastNonzeroMagnitude, -0.0, 1e21, 0.1])
    func doublesRoundTripExactly(value: Double) throws {
        let bytes = try Payload.background(["v": .double(value)]).encoded()
        let text = String(decoding: bytes, as: UTF8.self)
        let number = try #require(text.split(separator: ":").last?.dropLast())
        #expect(Double(String(number))?.bitPattern == value.bitPattern)
        #expect(try Payload(jsonBytes: bytes).custom["v"] == .double(value))
    }
}

extension Array where Element == UInt8 {
    /// Every run of `count` consecutive bytes.
    fileprivate func windows(ofCount count: Int) -> [ArraySlice<UInt8>] {
        guard self.count >= count else { return [] }
        return (0...(self.count - count)).map { self[$0..<$0 + count] }
    }
}
