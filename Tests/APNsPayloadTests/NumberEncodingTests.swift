import Foundation
import Testing

@testable import APNsPayload

/// Numbers: integers stay integers, doubles round-trip and are valid JSON, NaN and
/// infinity are refused with the key path.
@Suite struct NumberEncodingTests {
    @Test(arguments: [0.1, 1e-7, 1e21, -0.0, 0.5, 1.0, 123456.789, Double.leastNonzeroMagnitude, Double.greatestFiniteMagnitude, -1.5e300, 1.0 / 3.0])
    func doublesAreValidJSONAndRoundTrip(value: Double) throws {
        let bytes = try Payload.background().adding("d", .double(value)).encoded()
        // Foundation parses it to the same Double.
        guard case .object(let top)? = FoundationJSON.parse(bytes), case .number(let parsed)? = top["d"] else {
            Issue.record("Foundation refused \(text(bytes))")
            return
        }
        #expect(parsed == value)
        #expect(parsed.sign == value.sign)
        // And the shortest form: Swift's own parser agrees on the digits we wrote.
        let written = text(bytes).split(separator: ":").last!.dropLast()
        #expect(Double(String(written)) == value)
        // Our decoder gives back the same value.
        #expect(try Payload(jsonBytes: bytes).custom["d"] == .double(value))
    }

    @Test(arguments: [Int64.min, -1, 0, 7, 42, Int64.max])
    func integersAreWrittenAsIntegers(value: Int64) throws {
        let bytes = try Payload.background().adding("i", .integer(value)).encoded()
        #expect(text(bytes).hasSuffix(#","i":\#(value)}"#))
        #expect(try Payload(jsonBytes: bytes).custom["i"] == .integer(value))
    }

    @Test(arguments: [Double.nan, .infinity, -.infinity])
    func nonFiniteCustomValueNamesItsPath(value: Double) {
        let payload = Payload.background(["media": ["sizes": [1, .double(value)]]])
        #expect {
            try payload.encoded()
        } throws: { error in
            let error = error as! PayloadError
            return error.code == .nonFiniteNumber && error.keyPath == "media.sizes[1]"
        }
    }

    @Test func nonFiniteInContentStateNamesItsPath() {
        let payload = Payload.liveActivityUpdate(timestamp: 1, contentState: ["progress": .double(.nan)])
        #expect {
            try payload.encoded(for: .liveactivity)
        } throws: { error in
            (error as! PayloadError).keyPath == "aps.content-state.progress"
        }
    }

    @Test func nonFiniteVolumeAndRelevance() {
        #expect {
            try Payload(aps: APS(sound: .critical(volume: .nan))).encoded()
        } throws: { ($0 as! PayloadError).keyPath == "aps.sound.volume" && ($0 as! PayloadError).code == .nonFiniteNumber }
        #expect {
            try Payload(aps: APS(badge: 1, relevanceScore: .infinity)).encoded()
        } throws: { ($0 as! PayloadError).keyPath == "aps.relevance-score" }
    }
}
