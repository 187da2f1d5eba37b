import CNGHTTP2
import Testing
@testable import APNsCore

/// RFC 7541 Appendix C, byte for byte. Each vector is also decoded by nghttp2, which
/// checks the vector transcription and the expected tables independently of us.
@Suite("RFC 7541 Appendix C vectors")
struct RFC7541VectorTests {
    struct Example: Sendable, CustomTestStringConvertible {
        var name: String
        var fields: [HeaderField]
        var expected: [UInt8]
        /// Dynamic table after the block, newest first, and its size (RFC's "Table size").
        var table: [HeaderField]
        var tableSize: Int
        var testDescription: String { name }
    }

    static func h(_ name: String, _ value: String) -> HeaderField { HeaderField(name: name, value: value) }

    // MARK: §C.1 integers

    @Test("§C.1 integer representation", arguments: [
        // RFC 7541 §C.1.1: 10 with a 5-bit prefix.
        (10, 5, [0x0a] as [UInt8]),
        // RFC 7541 §C.1.2: 1337 with a 5-bit prefix.
        (1337, 5, [0x1f, 0x9a, 0x0a]),
        // RFC 7541 §C.1.3: 42 starting at an octet boundary (8-bit prefix).
        (42, 8, [0x2a]),
    ])
    func integers(value: Int, prefix: Int, expected: [UInt8]) {
        var buffer: [UInt8] = []
        IntegerCoding.encode(value, prefixBits: prefix, flags: 0, into: &buffer)
        #expect(buffer == expected)
        #expect(IntegerCoding.encodedLength(of: value, prefixBits: prefix) == expected.count)
    }

    @Test("§5.1 prefix boundaries keep the flag bits", arguments: [1, 4, 5, 6, 7, 8])
    func integerBoundaries(prefix: Int) {
        let limit = (1 << prefix) - 1
        let flags: UInt8 = prefix == 8 ? 0 : UInt8(0xff << prefix & 0xff)
        for value in [0, limit - 1, limit, limit + 1, limit + 127, limit + 128, 1 << 20, Int(UInt32.max)] where value >= 0 {
            var buffer: [UInt8] = []
            IntegerCoding.encode(value, prefixBits: prefix, flags: flags, into: &buffer)
            #expect(buffer.count == IntegerCoding.encodedLength(of: value, prefixBits: prefix))
            #expect(buffer[0] & flags == flags)
            // Decode by the §5.1 pseudocode.
            var decoded = Int(buffer[0]) & limit
            if decoded == limit {
                var shift = 0
                for octet in buffer.dropFirst() {
                    decoded += Int(octet & 0x7f) << shift
                    shift += 7
                }
                #expect(buffer.last! & 0x80 == 0)
            } else {
                #expect(buffer.count == 1)
            }
            #expect(decoded == value, "value \(value), prefix \(prefix)")
        }
    }

    // MARK: §C.2 header field representations

    @Test("§C.2 each representation")
    func representations() throws {
        // RFC 7541 §C.2.1: literal with indexing, literal name.
        do {
            var encoder = HPACKEncoder(usesHuffmanCoding: false)
            var block: [UInt8] = []
            encoder.encodeHeaderBlock([Self.h("custom-key", "custom-header")], indexing: .incrementalIndexing, into: &block)
            #expect(block == [
            0x40, 0x0a, 0x63, 0x75, 0x73, 0x74, 0x6f, 0x6d, 0x2d, 0x6b, 0x65, 0x79,
            0x0d, 0x63, 0x75, 0x73, 0x74, 0x6f, 0x6d, 0x2d, 0x68, 0x65, 0x61, 0x64,
            0x65, 0x72,
            ])
            #expect(encoder.tableEntries == [Self.h("custom-key", "custom-header")])
            #expect(encoder.tableSize == 55)
        }
        // RFC 7541 §C.2.2: literal without indexing, indexed name.
        do {
            var encoder = HPACKEncoder(usesHuffmanCoding: false)
            var block: [UInt8] = []
            encoder.encodeHeaderBlock([Self.h(":path", "/sample/path")], indexing: .withoutIndexing, into: &block)
            #expect(block == [
            0x04, 0x0c, 0x2f, 0x73, 0x61, 0x6d, 0x70, 0x6c, 0x65, 0x2f, 0x70, 0x61,
            0x74, 0x68,
            ])
            #expect(encoder.tableEntries.isEmpty && encoder.tableSize == 0)
        }
        // RFC 7541 §C.2.3: literal never indexed, literal name.
        do {
            var encoder = HPACKEncoder(usesHuffmanCoding: false)
            var block: [UInt8] = []
            encoder.encodeHeaderBlock([Self.h("password", "secret")], indexing: .neverIndexed, into: &block)
            #expect(block == [
            0x10, 0x08, 0x70, 0x61, 0x73, 0x73, 0x77, 0x6f, 0x72, 0x64, 0x06, 0x73,
            0x65, 0x63, 0x72, 0x65, 0x74,
            ])
            #expect(encoder.tableEntries.isEmpty && encoder.tableSize == 0)
            let decoded = try NGHTTP2Inflater().decode(block)
            #expect(decoded == [DecodedField(field: Self.h("password", "secret"), neverIndexed: true)])
        }
        // RFC 7541 §C.2.4: indexed header field.
        do {
            var encoder = HPACKEncoder(usesHuffmanCoding: false)
            var block: [UInt8] = []
            let representation = encoder.append(Self.h(":method", "GET"), indexing: .incrementalIndexing, into: &block)
            #expect(block == [
            0x82,
            ])
            #expect(representation == .indexed(2))
            #expect(encoder.tableEntries.isEmpty)
        }
    }

    // MARK: §C.3–§C.6 sequences of blocks

    static let www = h(":authority", "www.example.com")
    static let noCache = h("cache-control", "no-cache")
    static let custom = h("custom-key", "custom-value")

    static let requests: [(fields: [HeaderField], table: [HeaderField], size: Int)] = [
        ([h(":method", "GET"), h(":scheme", "http"), h(":path", "/"), www], [www], 57),
        ([h(":method", "GET"), h(":scheme", "http"), h(":path", "/"), www, noCache], [noCache, www], 110),
        ([h(":method", "GET"), h(":scheme", "https"), h(":path", "/index.html"), www, custom], [custom, noCache, www], 164),
    ]

    static let date1 = h("date", "Mon, 21 Oct 2013 20:13:21 GMT")
    static let date2 = h("date", "Mon, 21 Oct 2013 20:13:22 GMT")
    static let location = h("location", "https://www.example.com")
    static let privateCache = h("cache-control", "private")
    static let setCookie = h("set-cookie", "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1")
    static let gzip = h("content-encoding", "gzip")

    static let responses: [(fields: [HeaderField], table: [HeaderField], size: Int)] = [
        ([h(":status", "302"), privateCache, date1, location], [location, date1, privateCache, h(":status", "302")], 222),
        ([h(":status", "307"), privateCache, date1, location], [h(":status", "307"), location, date1, privateCache], 222),
        ([h(":status", "200"), privateCache, date2, location, gzip, setCookie], [setCookie, gzip, date2], 215),
    ]

    static func run(
        _ sequence: [(fields: [HeaderField], table: [HeaderField], size: Int)],
        expected: [[UInt8]],
        tableSize: Int,
        huffman: Bool
    ) throws {
        var encoder = HPACKEncoder(tableSize: tableSize, usesHuffmanCoding: huffman)
        let inflater = try NGHTTP2Inflater()
        if tableSize != 4096 {
            // The RFC's examples assume SETTINGS_HEADER_TABLE_SIZE was agreed before:
            // the decoder starts at the smaller size without an update in the block.
            // Here: an empty block holding only the size update to 256 (§6.3:
            // '001' + 5-bit prefix 31, then 225 = 0x61 | continuation, then 1).
            #expect(tableSize == 256)
            try inflater.changeTableSize(tableSize)
            #expect(try inflater.decode([0x3f, 0xe1, 0x01]).isEmpty)
            #expect(inflater.maximumTableSize == 256)
        }
        for (step, (request, vector)) in zip(sequence, expected).enumerated() {
            var block: [UInt8] = []
            encoder.encodeHeaderBlock(request.fields, indexing: .incrementalIndexing, into: &block)
            #expect(block == vector, "block \(step + 1)")
            #expect(encoder.tableEntries == request.table, "table after block \(step + 1)")
            #expect(encoder.tableSize == request.size, "table size after block \(step + 1)")
            // The RFC's bytes, decoded by nghttp2, give the same fields and table.
            #expect(try inflater.decodeFields(vector) == request.fields)
            #expect(inflater.tableEntries == request.table)
            #expect(inflater.tableSize == request.size)
        }
    }

    @Test("§C.3 requests without Huffman coding")
    func requestsWithoutHuffman() throws {
        try Self.run(Self.requests, expected: [
            // RFC 7541 §C.3.1
            [
            0x82, 0x86, 0x84, 0x41, 0x0f, 0x77, 0x77, 0x77, 0x2e, 0x65, 0x78, 0x61,
            0x6d, 0x70, 0x6c, 0x65, 0x2e, 0x63, 0x6f, 0x6d,
            ],
            // RFC 7541 §C.3.2
            [
            0x82, 0x86, 0x84, 0xbe, 0x58, 0x08, 0x6e, 0x6f, 0x2d, 0x63, 0x61, 0x63,
            0x68, 0x65,
            ],
            // RFC 7541 §C.3.3
            [
            0x82, 0x87, 0x85, 0xbf, 0x40, 0x0a, 0x63, 0x75, 0x73, 0x74, 0x6f, 0x6d,
            0x2d, 0x6b, 0x65, 0x79, 0x0c, 0x63, 0x75, 0x73, 0x74, 0x6f, 0x6d, 0x2d,
            0x76, 0x61, 0x6c, 0x75, 0x65,
            ],
        ], tableSize: 4096, huffman: false)
    }

    @Test("§C.4 requests with Huffman coding")
    func requestsWithHuffman() throws {
        try Self.run(Self.requests, expected: [
            // RFC 7541 §C.4.1
            [
            0x82, 0x86, 0x84, 0x41, 0x8c, 0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b,
            0xa0, 0xab, 0x90, 0xf4, 0xff,
            ],
            // RFC 7541 §C.4.2
            [
            0x82, 0x86, 0x84, 0xbe, 0x58, 0x86, 0xa8, 0xeb, 0x10, 0x64, 0x9c, 0xbf,
            ],
            // RFC 7541 §C.4.3
            [
            0x82, 0x87, 0x85, 0xbf, 0x40, 0x88, 0x25, 0xa8, 0x49, 0xe9, 0x5b, 0xa9,
            0x7d, 0x7f, 0x89, 0x25, 0xa8, 0x49, 0xe9, 0x5b, 0xb8, 0xe8, 0xb4, 0xbf,
            ],
        ], tableSize: 4096, huffman: true)
    }

    @Test("§C.5 responses without Huffman coding, 256-octet table (eviction)")
    func responsesWithoutHuffman() throws {
        try Self.run(Self.responses, expected: [
            // RFC 7541 §C.5.1
            [
            0x48, 0x03, 0x33, 0x30, 0x32, 0x58, 0x07, 0x70, 0x72, 0x69, 0x76, 0x61,
            0x74, 0x65, 0x61, 0x1d, 0x4d, 0x6f, 0x6e, 0x2c, 0x20, 0x32, 0x31, 0x20,
            0x4f, 0x63, 0x74, 0x20, 0x32, 0x30, 0x31, 0x33, 0x20, 0x32, 0x30, 0x3a,
            0x31, 0x33, 0x3a, 0x32, 0x31, 0x20, 0x47, 0x4d, 0x54, 0x6e, 0x17, 0x68,
            0x74, 0x74, 0x70, 0x73, 0x3a, 0x2f, 0x2f, 0x77, 0x77, 0x77, 0x2e, 0x65,
            0x78, 0x61, 0x6d, 0x70, 0x6c, 0x65, 0x2e, 0x63, 0x6f, 0x6d,
            ],
            // RFC 7541 §C.5.2
            [
            0x48, 0x03, 0x33, 0x30, 0x37, 0xc1, 0xc0, 0xbf,
            ],
            // RFC 7541 §C.5.3
            [
            0x88, 0xc1, 0x61, 0x1d, 0x4d, 0x6f, 0x6e, 0x2c, 0x20, 0x32, 0x31, 0x20,
            0x4f, 0x63, 0x74, 0x20, 0x32, 0x30, 0x31, 0x33, 0x20, 0x32, 0x30, 0x3a,
            0x31, 0x33, 0x3a, 0x32, 0x32, 0x20, 0x47, 0x4d, 0x54, 0xc0, 0x5a, 0x04,
            0x67, 0x7a, 0x69, 0x70, 0x77, 0x38, 0x66, 0x6f, 0x6f, 0x3d, 0x41, 0x53,
            0x44, 0x4a, 0x4b, 0x48, 0x51, 0x4b, 0x42, 0x5a, 0x58, 0x4f, 0x51, 0x57,
            0x45, 0x4f, 0x50, 0x49, 0x55, 0x41, 0x58, 0x51, 0x57, 0x45, 0x4f, 0x49,
            0x55, 0x3b, 0x20, 0x6d, 0x61, 0x78, 0x2d, 0x61, 0x67, 0x65, 0x3d, 0x33,
            0x36, 0x30, 0x30, 0x3b, 0x20, 0x76, 0x65, 0x72, 0x73, 0x69, 0x6f, 0x6e,
            0x3d, 0x31,
            ],
        ], tableSize: 256, huffman: false)
    }

    @Test("§C.6 responses with Huffman coding, 256-octet table (eviction)")
    func responsesWithHuffman() throws {
        try Self.run(Self.responses, expected: [
            // RFC 7541 §C.6.1
            [
            0x48, 0x82, 0x64, 0x02, 0x58, 0x85, 0xae, 0xc3, 0x77, 0x1a, 0x4b, 0x61,
            0x96, 0xd0, 0x7a, 0xbe, 0x94, 0x10, 0x54, 0xd4, 0x44, 0xa8, 0x20, 0x05,
            0x95, 0x04, 0x0b, 0x81, 0x66, 0xe0, 0x82, 0xa6, 0x2d, 0x1b, 0xff, 0x6e,
            0x91, 0x9d, 0x29, 0xad, 0x17, 0x18, 0x63, 0xc7, 0x8f, 0x0b, 0x97, 0xc8,
            0xe9, 0xae, 0x82, 0xae, 0x43, 0xd3,
            ],
            // RFC 7541 §C.6.2
            [
            0x48, 0x83, 0x64, 0x0e, 0xff, 0xc1, 0xc0, 0xbf,
            ],
            // RFC 7541 §C.6.3
            [
            0x88, 0xc1, 0x61, 0x96, 0xd0, 0x7a, 0xbe, 0x94, 0x10, 0x54, 0xd4, 0x44,
            0xa8, 0x20, 0x05, 0x95, 0x04, 0x0b, 0x81, 0x66, 0xe0, 0x84, 0xa6, 0x2d,
            0x1b, 0xff, 0xc0, 0x5a, 0x83, 0x9b, 0xd9, 0xab, 0x77, 0xad, 0x94, 0xe7,
            0x82, 0x1d, 0xd7, 0xf2, 0xe6, 0xc7, 0xb3, 0x35, 0xdf, 0xdf, 0xcd, 0x5b,
            0x39, 0x60, 0xd5, 0xaf, 0x27, 0x08, 0x7f, 0x36, 0x72, 0xc1, 0xab, 0x27,
            0x0f, 0xb5, 0x29, 0x1f, 0x95, 0x87, 0x31, 0x60, 0x65, 0xc0, 0x03, 0xed,
            0x4e, 0xe5, 0xb1, 0x06, 0x3d, 0x50, 0x07,
            ],
        ], tableSize: 256, huffman: true)
    }
}
