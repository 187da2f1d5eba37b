import CNGHTTP2
import Testing
@testable import APNsCore

/// The encoder checked by an independent decoder: nghttp2's inflater must decode
/// every block back to the same fields and end with the same dynamic table.
@Suite("HPACK encoder against nghttp2's decoder")
struct HPACKEncoderTests {
    @Test("Appendix A static table equals nghttp2's")
    func staticTable() throws {
        let inflater = try NGHTTP2Inflater()
        #expect(StaticHeaderTable.entries.count == 61)
        for (offset, entry) in StaticHeaderTable.entries.enumerated() {
            #expect(inflater.entry(at: offset + 1) == HeaderField(name: entry.name, value: entry.value), "index \(offset + 1)")
        }
    }

    /// Builds a block with one literal field whose value is `value` Huffman-coded.
    static func huffmanBlock(_ value: [UInt8]) -> [UInt8] {
        var encoded: [UInt8] = []
        value.withUnsafeBufferPointer { HuffmanCoding.encode($0, into: &encoded) }
        // §6.2.2 literal without indexing, new name "x", then the value with H = 1.
        var block: [UInt8] = [0x00, 0x01, UInt8(ascii: "x")]
        IntegerCoding.encode(encoded.count, prefixBits: 7, flags: 0x80, into: &block)
        block += encoded
        return block
    }

    @Test("Appendix B: every octet value Huffman-codes to what nghttp2 decodes", arguments: 0...255)
    func huffmanEveryOctet(octet: Int) throws {
        let inflater = try NGHTTP2Inflater()
        for value in [[UInt8(octet)], [UInt8](repeating: UInt8(octet), count: 7), [UInt8(octet), 0x61, UInt8(octet)]] {
            let decoded = try inflater.decodeRaw(Self.huffmanBlock(value))
            #expect(decoded.count == 1 && decoded[0].value == value)
            let length = value.withUnsafeBufferPointer { HuffmanCoding.encodedLength(of: $0) }
            #expect(Self.huffmanBlock(value).count == 4 + length)
        }
    }

    @Test("Appendix B: all 256 octets in one string, and random octet strings")
    func huffmanStrings() throws {
        let inflater = try NGHTTP2Inflater()
        var generator = SeededGenerator(seed: 7541)
        var values: [[UInt8]] = [[], Array(0...255), Array((0...255).reversed())]
        for _ in 0..<200 {
            values.append((0..<Int.random(in: 0...300, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) })
        }
        for value in values {
            let decoded = try inflater.decodeRaw(Self.huffmanBlock(value))
            #expect(decoded.count == 1 && decoded[0].value == value)
        }
    }

    // MARK: Random header lists

    static let names = [
        ":authority", ":method", ":path", ":scheme", ":status", "accept-encoding", "cache-control",
        "content-type", "cookie", "user-agent", "www-authenticate", "authorization",
        "apns-id", "apns-topic", "x-custom", "custom-key", "a", String(repeating: "long-name-", count: 30),
    ]

    static func randomValue(using generator: inout SeededGenerator, previous: [HeaderField]) -> String {
        switch Int.random(in: 0..<10, using: &generator) {
        case 0:
            return ""
        case 1:
            // Long values, up to larger than the whole table.
            let length = Int.random(in: 100...5000, using: &generator)
            return String((0..<length).map { _ in Character(Unicode.Scalar(UInt8.random(in: 0x20...0x7e, using: &generator))) })
        case 2:
            // Every scalar U+0000...U+00FF: UTF-8 octets 0x00-0x7F, 0xC2, 0xC3, 0x80-0xBF.
            return String(String.UnicodeScalarView((0...255).map { Unicode.Scalar(UInt8($0)) }))
        case 3:
            // Scalars from the whole range, so octets up to 0xF4 occur.
            return String(String.UnicodeScalarView((0..<20).compactMap { _ in
                Unicode.Scalar(UInt32.random(in: 0...0x10FFFF, using: &generator))
            }))
        case 4, 5, 6:
            // Repeat an earlier value, so full matches happen.
            return previous.randomElement(using: &generator)?.value ?? "repeat"
        default:
            let length = Int.random(in: 1...40, using: &generator)
            return String((0..<length).map { _ in Character(Unicode.Scalar(UInt8.random(in: 0x21...0x7e, using: &generator))) })
        }
    }

    @Test("Random header lists decode back, tables stay identical", arguments: [1, 2, 3, 4, 5, 6] as [UInt64])
    func randomRoundTrip(seed: UInt64) throws {
        var generator = SeededGenerator(seed: seed)
        var encoder = HPACKEncoder(usesHuffmanCoding: seed % 2 == 0)
        let inflater = try NGHTTP2Inflater()
        var previous: [HeaderField] = [HeaderField(name: ":method", value: "GET")]
        let sizes = [0, 1, 31, 32, 33, 64, 100, 256, 1000, 4096, 8192]
        for blockNumber in 0..<250 {
            if Int.random(in: 0..<8, using: &generator) == 0 {
                // One or two SETTINGS changes before the next block (shrink then grow included).
                for _ in 0..<Int.random(in: 1...2, using: &generator) {
                    let size = sizes.randomElement(using: &generator)!
                    encoder.setPeerHeaderTableSize(size)
                    try inflater.changeTableSize(size)
                }
            }
            var fields: [HeaderField] = []
            var forms: [HPACKIndexing] = []
            for _ in 0..<Int.random(in: 0...12, using: &generator) {
                let field: HeaderField
                if Int.random(in: 0..<4, using: &generator) == 0, let earlier = previous.randomElement(using: &generator) {
                    field = earlier
                } else {
                    field = HeaderField(
                        name: Self.names.randomElement(using: &generator)!,
                        value: Self.randomValue(using: &generator, previous: previous)
                    )
                }
                fields.append(field)
                forms.append(HPACKIndexing.allCases.randomElement(using: &generator)!)
            }
            var block: [UInt8] = []
            encoder.beginHeaderBlock(into: &block)
            for (field, form) in zip(fields, forms) {
                encoder.append(field, indexing: form, into: &block)
            }
            let decoded = try inflater.decode(block)
            #expect(decoded.map(\.field) == fields, "seed \(seed) block \(blockNumber)")
            #expect(decoded.map(\.neverIndexed) == forms.map { $0 == .neverIndexed }, "seed \(seed) block \(blockNumber)")
            #expect(inflater.tableEntries == encoder.tableEntries, "seed \(seed) block \(blockNumber)")
            #expect(inflater.tableSize == encoder.tableSize, "seed \(seed) block \(blockNumber)")
            #expect(encoder.tableSize <= encoder.maximumTableSize)
            previous += fields.suffix(4)
            if previous.count > 40 { previous.removeFirst(previous.count - 40) }
        }
    }

    // MARK: Table size updates (§4.2, §6.3)

    static let custom = HeaderField(name: "custom-key", value: "custom-value")
    static let big = HeaderField(name: "x-big", value: String(repeating: "v", count: 80))

    @Test("A table size update to 0 empties both tables; nothing is indexed afterwards")
    func sizeZero() throws {
        var encoder = HPACKEncoder()
        let inflater = try NGHTTP2Inflater()
        var block: [UInt8] = []
        encoder.encodeHeaderBlock([Self.custom], indexing: .incrementalIndexing, into: &block)
        _ = try inflater.decode(block)
        #expect(inflater.tableEntries == [Self.custom])

        encoder.setPeerHeaderTableSize(0)
        try inflater.changeTableSize(0)
        block = []
        encoder.encodeHeaderBlock([Self.custom], indexing: .incrementalIndexing, into: &block)
        // §6.3: '001' and the new size 0 in a 5-bit prefix, before the first field.
        #expect(block.first == 0x20)
        #expect(try inflater.decodeFields(block) == [Self.custom])
        #expect(encoder.tableEntries.isEmpty && inflater.tableEntries.isEmpty)
        #expect(encoder.tableSize == 0 && inflater.tableSize == 0)
    }

    @Test("Shrink then grow before a block: the minimum, then the final size (§4.2)")
    func shrinkThenGrow() throws {
        var encoder = HPACKEncoder()
        let inflater = try NGHTTP2Inflater()
        var block: [UInt8] = []
        encoder.encodeHeaderBlock([Self.big, Self.custom], indexing: .incrementalIndexing, into: &block)
        _ = try inflater.decode(block)

        encoder.setPeerHeaderTableSize(100)
        encoder.setPeerHeaderTableSize(4096)
        try inflater.changeTableSize(100)
        try inflater.changeTableSize(4096)
        block = []
        encoder.beginHeaderBlock(into: &block)
        // 100 = 31 + 69 (0x45); 4096 = 31 + 4065 = 31 + 0x61 + 0x1f << 7.
        #expect(block == [0x3f, 0x45, 0x3f, 0xe1, 0x1f])
        // Shrinking to 100 evicted the 117-octet x-big entry and kept custom-key (54).
        #expect(encoder.tableEntries == [Self.custom])
        #expect(try inflater.decodeFields(block).isEmpty)
        #expect(inflater.tableEntries == [Self.custom])
        #expect(encoder.maximumTableSize == 4096)
    }

    @Test("No update is written when the size did not change")
    func noSpuriousUpdate() {
        var encoder = HPACKEncoder()
        encoder.setPeerHeaderTableSize(4096)
        var block: [UInt8] = []
        encoder.beginHeaderBlock(into: &block)
        #expect(block.isEmpty)
        // A peer offering more than our limit changes nothing either.
        encoder.setPeerHeaderTableSize(65536)
        encoder.beginHeaderBlock(into: &block)
        #expect(block.isEmpty)
    }

    @Test("A limit below the agreed size is signalled in the first block")
    func limitBelowAgreedSize() throws {
        var encoder = HPACKEncoder(tableSize: 4096, tableSizeLimit: 1024)
        let inflater = try NGHTTP2Inflater()
        var block: [UInt8] = []
        encoder.encodeHeaderBlock([Self.custom], indexing: .incrementalIndexing, into: &block)
        // 1024 = 31 + 993 = 31 + 0x61 | 0x80, 7.
        #expect(Array(block.prefix(3)) == [0x3f, 0xe1, 0x07])
        #expect(try inflater.decodeFields(block) == [Self.custom])
        #expect(inflater.maximumTableSize == 1024 && encoder.maximumTableSize == 1024)
    }

    @Test("§4.4: an entry larger than the table empties it and is not added")
    func oversizedEntry() throws {
        var encoder = HPACKEncoder()
        let inflater = try NGHTTP2Inflater()
        encoder.setPeerHeaderTableSize(256)
        try inflater.changeTableSize(256)
        let huge = HeaderField(name: "x-huge", value: String(repeating: "z", count: 300))
        var block: [UInt8] = []
        encoder.encodeHeaderBlock([Self.custom, huge], indexing: .incrementalIndexing, into: &block)
        #expect(try inflater.decodeFields(block) == [Self.custom, huge])
        #expect(encoder.tableEntries.isEmpty && inflater.tableEntries.isEmpty)
        #expect(encoder.tableSize == 0 && inflater.tableSize == 0)
    }

    @Test("Representations: full index, static name, dynamic name, literal name (§6)")
    func representationChoice() throws {
        var encoder = HPACKEncoder()
        var block: [UInt8] = []
        let a = HeaderField(name: "apns-id", value: "1")
        let b = HeaderField(name: "apns-id", value: "2")
        #expect(encoder.append(HeaderField(name: ":method", value: "POST"), indexing: .withoutIndexing, into: &block) == .indexed(3))
        #expect(encoder.append(HeaderField(name: ":path", value: "/x"), indexing: .withoutIndexing, into: &block) == .literal(.withoutIndexing, nameIndex: 4))
        #expect(encoder.append(a, indexing: .incrementalIndexing, into: &block) == .literal(.incrementalIndexing, nameIndex: nil))
        #expect(encoder.append(b, indexing: .withoutIndexing, into: &block) == .literal(.withoutIndexing, nameIndex: 62))
        #expect(encoder.append(a, indexing: .withoutIndexing, into: &block) == .indexed(62))
        #expect(encoder.append(a, indexing: .neverIndexed, into: &block) == .literal(.neverIndexed, nameIndex: 62))
        #expect(encoder.tablesContain(a) && !encoder.tablesContain(b))
        #expect(encoder.tablesContain(HeaderField(name: ":method", value: "GET")))
        #expect(encoder.tableContainsName("apns-id") && !encoder.tableContainsName(":method"))
        let decoded = try NGHTTP2Inflater().decode(block)
        #expect(decoded.map(\.field) == [HeaderField(name: ":method", value: "POST"), HeaderField(name: ":path", value: "/x"), a, b, a, a])
        #expect(decoded.map(\.neverIndexed) == [false, false, false, false, false, true])
    }
}
