import Foundation
import Testing
@testable import APNsMockServer

@Suite("apns-id generator")
struct APNsIDGeneratorTests {
    @Test("makes lowercase version 4 UUIDs (RFC 9562 §5.4) that Foundation parses back, all distinct")
    func version4() throws {
        var generator = APNsIDGenerator()
        var seen = Set<String>()
        for _ in 0..<10_000 {
            let text = generator.make()
            #expect(RequestValidator.isCanonicalUUID(text), "\(text)")
            #expect(text == text.lowercased())
            let uuid = try #require(UUID(uuidString: text), "\(text)")
            // Foundation prints uppercase; the same 128 bits either way.
            #expect(uuid.uuidString.lowercased() == text)
            #expect(uuid.uuid.6 >> 4 == 4, "version nibble of \(text)")
            #expect(uuid.uuid.8 >> 6 == 0b10, "variant bits of \(text)")
            seen.insert(text)
        }
        #expect(seen.count == 10_000)
    }

    @Test("two generators seeded by the system do not repeat each other")
    func seeds() {
        var first = APNsIDGenerator()
        var second = APNsIDGenerator()
        #expect(first.make() != second.make())
        var fixed = APNsIDGenerator(seed: 1)
        var same = APNsIDGenerator(seed: 1)
        #expect(fixed.make() == same.make())
    }
}
