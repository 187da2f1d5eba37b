import Foundation
import Testing

@testable import APNsPayload

/// The SDK's own `Encoder`: any `Encodable` becomes custom data; Foundation's
/// JSONEncoder, encoding the same value, is the independent reference.
@Suite struct CustomDataEncoderTests {
    struct Order: Codable, Equatable {
        enum Status: String, Codable { case shipped, delivered }
        var id: Int
        var status: Status
        var items: [Item]
        var note: String?
        var total: Double
        var tags: Set<String>
        var flags: [Bool]
    }

    struct Item: Codable, Equatable {
        var sku: String
        var quantity: UInt8
    }

    static let order = Order(
        id: 4711, status: .shipped,
        items: [Item(sku: "A-1", quantity: 2), Item(sku: "ü-2", quantity: 1)],
        note: nil, total: 19.99, tags: ["gift"], flags: [true, false])

    @Test func matchesFoundationJSONEncoder() throws {
        let ours = try JSONValue(encoding: Self.order)
        let bytes = try Payload.background(["order": ours]).encoded()
        let foundation = try JSONEncoder().encode(Self.order)
        guard case .object(let top)? = FoundationJSON.parse(bytes) else {
            Issue.record("Foundation refused our output")
            return
        }
        #expect(top["order"] == FoundationJSON.parse([UInt8](foundation)))
        // Keys keep declaration order; nil optionals are left out, like Foundation does.
        #expect(ours.objectValue?.keys == ["id", "status", "items", "total", "tags", "flags"])
        // Foundation decodes our bytes back into the same value.
        let customOnly = try Payload(custom: ["order": ours]).encoded()
        let decoded = try JSONDecoder().decode([String: Order].self, from: Data(customOnly))
        #expect(decoded["order"] == Self.order)
    }

    @Test func dictionariesAreSortedForDeterminism() throws {
        let value = try JSONValue(encoding: ["zeta": 1, "alpha": 2, "mid": 3])
        #expect(value.objectValue?.keys == ["alpha", "mid", "zeta"])
    }

    @Test func floatKeepsItsDecimalForm() throws {
        #expect(try JSONValue(encoding: Float(0.1)) == .double(0.1))
    }

    @Test func nonFiniteFieldNamesItsPath() {
        struct Media: Encodable { var ratio: Double }
        var payload = Payload.alert(body: "b")
        #expect {
            try payload.setCustom("media", to: [Media(ratio: 1), Media(ratio: .nan)])
        } throws: { error in
            let error = error as! PayloadError
            return error.code == .nonFiniteNumber && error.keyPath == "media[1].ratio"
        }
    }

    @Test func hugeUnsignedIsRefused() {
        #expect {
            try JSONValue(encoding: UInt64.max)
        } throws: { ($0 as! PayloadError).code == .valueOutOfRange }
    }

    @Test func throwingEncodableIsWrapped() {
        struct Broken: Encodable {
            struct Failure: Error {}
            func encode(to encoder: any Encoder) throws { throw Failure() }
        }
        #expect {
            try JSONValue(encoding: Broken())
        } throws: { ($0 as! PayloadError).code == .customDataEncodingFailed }
    }

    @Test func jsonValueNestsInsideEncodable() throws {
        struct Wrapper: Encodable { var extra: JSONValue }
        let value = try JSONValue(encoding: Wrapper(extra: ["a": [1, "b", nil]]))
        #expect(value == ["extra": ["a": [1, "b", nil]]])
        // Through Foundation too (JSONValue's own Encodable conformance).
        let foundation = try JSONEncoder().encode(Wrapper(extra: ["a": [1, 2.5, true]]))
        #expect(FoundationJSON.parse([UInt8](foundation)) == FoundationJSON.parse(#"{"extra":{"a":[1,2.5,true]}}"#))
    }

    @Test func objectEncodingRequiresAnObject() throws {
        #expect(throws: PayloadError.self) { try JSONObject(encoding: [1, 2]) }
        #expect(try JSONObject(encoding: Item(sku: "s", quantity: 1)) == ["sku": "s", "quantity": 1])
    }
}
