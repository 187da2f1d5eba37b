import Foundation
import Testing

@testable import APNsPayload

/// Swift values in a payload literal (issue: `Payload.voip(["caller": caller])` with
/// `let caller: String` did not compile). The encoded bytes are read back with
/// Foundation's JSONSerialization, an independent parser.
@Suite struct SwiftValuesInLiteralsTests {
    private func parsed(_ payload: Payload, for pushType: PushType) throws -> NSDictionary {
        let bytes = try payload.encoded(for: pushType)
        return try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? NSDictionary)
    }

    @Test func voipWithAStringVariable() throws {
        let caller: String = "Ann"
        let payload = Payload.voip(["caller": caller])
        #expect(payload.pushType == .voip)
        #expect(try parsed(payload, for: .voip) == ["aps": [:] as NSDictionary, "caller": "Ann"] as NSDictionary)
        // The same as the all-literal form.
        #expect(payload == Payload.voip(["caller": "Ann"]))
    }

    @Test func mixedValuesKeepTheirOrderAndTypes() throws {
        let name = "Ann"
        let count = 3
        let video = true
        let rating: Double = 4.5
        let missing: String? = nil
        let tags = ["a", "b"]
        let payload = Payload.voip(["caller": name, "count": count, "video": video, "rating": rating, "room": missing, "tags": tags])
        let bytes = try payload.encoded(for: .voip)
        // Keys in the order written, integers as integers.
        #expect(String(decoding: bytes, as: UTF8.self)
            == #"{"aps":{},"caller":"Ann","count":3,"video":true,"rating":4.5,"room":null,"tags":["a","b"]}"#)
        let object = try parsed(payload, for: .voip)
        #expect(object["count"] as? Int == 3)
        #expect(object["room"] is NSNull)
    }

    @Test func backgroundWithVariablesAndADictionaryValue() throws {
        let articleID = 4711
        let extra = ["z": 1, "a": 2]
        let payload = Payload.background(["article": articleID, "extra": extra])
        #expect(payload.pushType == .background)
        let bytes = try payload.encoded(for: .background)
        // A Dictionary has no order of its own: its keys are sorted.
        #expect(String(decoding: bytes, as: UTF8.self)
            == #"{"aps":{"content-available":1},"article":4711,"extra":{"a":2,"z":1}}"#)
    }

    @Test func jsonObjectFromSwiftValues() {
        let level = 7
        let object = JSONObject(["level": level, "name": "x"])
        #expect(object == ["level": 7, "name": "x"])
    }
}
