import Foundation
import Testing

@testable import APNsPayload

/// Reading custom data back into `Decodable` types with the SDK's decoder; Foundation's
/// JSONDecoder on the same bytes is the reference.
@Suite struct CustomDataDecoderTests {
    struct Match: Codable, Equatable {
        struct Score: Codable, Equatable { var home: Int; var away: Int }
        var id: String
        var score: Score
        var minute: UInt8
        var ratio: Double
        var tags: [String]
        var note: String?
        var live: Bool
    }

    static let json = #"{"aps":{"content-available":1},"match":{"id":"m1","score":{"home":2,"away":1},"minute":67,"ratio":0.5,"tags":["final","derby"],"live":true}}"#

    @Test func decodesLikeFoundation() throws {
        let payload = try Payload(jsonBytes: Array(Self.json.utf8))
        let ours = try #require(payload.custom["match"]).decode(Match.self)
        struct Wrapper: Decodable { var match: Match }
        let foundation = try JSONDecoder().decode(Wrapper.self, from: Data(Self.json.utf8)).match
        #expect(ours == foundation)
        #expect(ours.note == nil)
    }

    @Test func roundTripsThroughTheEncoder() throws {
        let match = Match(id: "x", score: .init(home: 0, away: 0), minute: 1, ratio: 1e-7, tags: [], note: "n", live: false)
        #expect(try JSONValue(encoding: match).decode(Match.self) == match)
        let state = try JSONObject(encoding: match.score)
        #expect(try state.decode(Match.Score.self) == match.score)
    }

    @Test func missingKeyNamesItsPath() {
        let value: JSONValue = ["id": "m", "score": ["home": 1], "minute": 1, "ratio": 1, "tags": [], "live": true]
        #expect {
            try value.decode(Match.self)
        } throws: { error in
            let error = error as! PayloadError
            return error.code == .missingKey && error.keyPath == "score.away"
        }
    }

    @Test func typeMismatchNamesItsPath() {
        let value: JSONValue = ["id": "m", "score": ["home": 1, "away": 0], "minute": 300, "ratio": 1, "tags": ["a", 2], "live": true]
        #expect {
            try value.decode(Match.self)
        } throws: { error in
            let error = error as! PayloadError
            return error.code == .typeMismatch && error.keyPath == "minute"  // 300 does not fit UInt8
        }
    }

    @Test func jsonValueDecodesThroughFoundation() throws {
        let text = #"{"a":[1,2.5,"s",null,true,{"b":false}]}"#
        let viaFoundation = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        let bytes = try Payload(custom: try #require(viaFoundation.objectValue)).encoded()
        expectSameJSON(bytes, text)
    }
}
