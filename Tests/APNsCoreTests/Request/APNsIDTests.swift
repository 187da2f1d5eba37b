import Foundation
import Testing

@testable import APNsCore

@Suite struct APNsIDTests {
    @Test func acceptsAppleExampleAndNormalizesUppercase() throws {
        // Seed 000 listing 8-1.
        #expect(try APNsID("eabeae54-14a8-11e5-b60b-1697f925ec7b").uuidString == "eabeae54-14a8-11e5-b60b-1697f925ec7b")
        #expect(try APNsID("EABEAE54-14A8-11E5-B60B-1697F925EC7B").uuidString == "eabeae54-14a8-11e5-b60b-1697f925ec7b")
    }

    @Test(arguments: [
        "",
        "eabeae54-14a8-11e5-b60b-1697f925ec7",  // 35 characters
        "eabeae54-14a8-11e5-b60b-1697f925ec7bb",  // 37
        "eabeae5414a811e5b60b1697f925ec7b",  // no dashes
        "eabeae54-14a8-11e5-b60b_1697f925ec7b",
        "gabeae54-14a8-11e5-b60b-1697f925ec7b",
        "{eabeae54-14a8-11e5-b60b-1697f925ec7b}",
        "eabeae54-14a8-11e5-b60b-1697f925ec7\n",
        // Apple's documentation example is one digit short: APNs would answer BadMessageId.
        "123e4567-e89b-12d3-a456-42665544000",
    ])
    func rejectsNonCanonicalUUIDs(input: String) {
        #expect(Foundation.UUID(uuidString: input) == nil)  // Foundation agrees it is not a UUID
        do {
            _ = try APNsID(input)
            Issue.record("accepted \(input)")
        } catch {
            #expect(error.code == .invalidAPNsID)
            #expect(error.header == "apns-id")
        }
    }

    @Test func randomIDsAreVersion4UUIDsFoundationAccepts() {
        var seen = Set<String>()
        for _ in 0..<1000 {
            let id = APNsID.random()
            let string = id.uuidString
            let uuid = Foundation.UUID(uuidString: string)
            #expect(uuid != nil)
            #expect(uuid?.uuidString.lowercased() == string)
            #expect(string == string.lowercased())
            let characters = Array(string)
            #expect(characters[14] == "4")  // version 4 (RFC 9562 §5.4)
            #expect("89ab".contains(characters[19]))  // variant 0b10 (RFC 9562 §4.1)
            seen.insert(string)
        }
        #expect(seen.count == 1000)
    }

    @Test func foundationUUIDRoundTrips() throws {
        for _ in 0..<100 {
            let uuid = Foundation.UUID()
            let id = APNsID(uuid)
            #expect(id.uuidString == uuid.uuidString.lowercased())
            #expect(id.uuid == uuid)
            #expect(try APNsID(uuid.uuidString) == id)
        }
    }
}

@Suite struct APNsIDBytesTests {
    /// Foundation's UUID text (uppercase) and its lowercase form parse from bytes to the
    /// same 128 bits, and the id writes Foundation's text back, lowercased.
    @Test func parsesAndWritesTheTextFoundationWrites() throws {
        for _ in 0..<200 {
            let uuid = Foundation.UUID()
            for text in [uuid.uuidString, uuid.uuidString.lowercased()] {
                let parsed = Array(text.utf8).withUnsafeBufferPointer { APNsID.parse($0) }
                #expect(parsed == APNsID(uuid))
            }
            var buffer = [UInt8](repeating: 0, count: APNsID.textLength)
            let written = buffer.withUnsafeMutableBytes { APNsID(uuid).write(into: $0) }
            #expect(written == 36)
            #expect(String(decoding: buffer, as: UTF8.self) == uuid.uuidString.lowercased())
        }
    }

    @Test(arguments: ["", "eabeae54-14a8-11e5-b60b-1697f925ec7", "eabeae54+14a8-11e5-b60b-1697f925ec7b", "gabeae54-14a8-11e5-b60b-1697f925ec7b"])
    func bytesThatAreNoUUIDParseToNil(text: String) {
        #expect(Foundation.UUID(uuidString: text) == nil)
        #expect(Array(text.utf8).withUnsafeBufferPointer { APNsID.parse($0) } == nil)
    }
}

extension APNsIDBytesTests {
    @Test func lowercaseOnlyRefusesUppercaseDigits() throws {
        let uuid = Foundation.UUID()
        let upper = Array(uuid.uuidString.utf8)
        let lower = Array(uuid.uuidString.lowercased().utf8)
        #expect(lower.withUnsafeBufferPointer { APNsID.parse($0, lowercaseOnly: true) } == APNsID(uuid))
        let hasLetter = uuid.uuidString.contains { "ABCDEF".contains($0) }
        #expect((upper.withUnsafeBufferPointer { APNsID.parse($0, lowercaseOnly: true) } == nil) == hasLetter)
        // Every single byte outside the alphabet is refused, at every position.
        for offset in lower.indices {
            for byte in [UInt8(ascii: "g"), UInt8(ascii: "/"), UInt8(ascii: ":"), UInt8(ascii: "G"), UInt8(ascii: "@"), 0, 0xFF] {
                var bad = lower
                bad[offset] = byte
                let text = String(decoding: bad, as: UTF8.self)
                #expect(bad.withUnsafeBufferPointer { APNsID.parse($0) } == nil, "\(text)")
                #expect(Foundation.UUID(uuidString: text) == nil)
            }
        }
    }
}
