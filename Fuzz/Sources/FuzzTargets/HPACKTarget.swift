import APNsCore
import CFuzzNGHTTP2

/// nghttp2's HPACK inflater, the independent decoder of the HPACK target.
final class Inflater {
    private let handle: OpaquePointer

    init() {
        var pointer: OpaquePointer?
        guard nghttp2_hd_inflate_new(&pointer) == 0, let pointer else { fatalError("nghttp2_hd_inflate_new failed") }
        handle = pointer
    }

    deinit { nghttp2_hd_inflate_del(handle) }

    /// Our SETTINGS_HEADER_TABLE_SIZE, as the decoder's side announces it.
    func changeTableSize(_ size: Int) -> Bool {
        nghttp2_hd_inflate_change_table_size(handle, size) == 0
    }

    /// Decodes one complete header block; `nil` (with nghttp2's code) if nghttp2 refuses it.
    func decode(_ block: [UInt8]) -> Result<[(name: [UInt8], value: [UInt8], neverIndexed: Bool)], DecodeFailure> {
        var fields: [(name: [UInt8], value: [UInt8], neverIndexed: Bool)] = []
        var padded = block
        padded.append(0)  // a base address even for an empty block; not passed in the length
        return padded.withUnsafeBufferPointer { bytes in
            var offset = 0
            while true {
                var nv = nghttp2_nv()
                var flags: Int32 = 0
                let rv = nghttp2_hd_inflate_hd2(handle, &nv, &flags, bytes.baseAddress! + offset, block.count - offset, 1)
                guard rv >= 0 else { return .failure(DecodeFailure(code: rv, offset: offset)) }
                offset += rv
                if flags & Int32(NGHTTP2_HD_INFLATE_EMIT.rawValue) != 0 {
                    fields.append((
                        Array(UnsafeBufferPointer(start: nv.name, count: nv.namelen)),
                        Array(UnsafeBufferPointer(start: nv.value, count: nv.valuelen)),
                        nv.flags & UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue) != 0
                    ))
                }
                if flags & Int32(NGHTTP2_HD_INFLATE_FINAL.rawValue) != 0 {
                    nghttp2_hd_inflate_end_headers(handle)
                    return .success(fields)
                }
                if rv == 0 && flags & Int32(NGHTTP2_HD_INFLATE_EMIT.rawValue) == 0 {
                    return .failure(DecodeFailure(code: 0, offset: offset))
                }
            }
        }
    }

    struct DecodeFailure: Error { var code: Int; var offset: Int }

    /// The dynamic table, newest first, as raw name/value octets.
    var tableEntries: [[UInt8]] {
        let total = nghttp2_hd_inflate_get_num_table_entries(handle)
        guard total > 61 else { return [] }
        return (62...total).compactMap { index in
            nghttp2_hd_inflate_get_table_entry(handle, index).map {
                Array(UnsafeBufferPointer(start: $0.pointee.name, count: $0.pointee.namelen)) + [0]
                    + Array(UnsafeBufferPointer(start: $0.pointee.value, count: $0.pointee.valuelen))
            }
        }
    }

    var tableSize: Int { nghttp2_hd_inflate_get_dynamic_table_size(handle) }
    var maximumTableSize: Int { nghttp2_hd_inflate_get_max_dynamic_table_size(handle) }
}

/// The HPACK encoder against nghttp2's decoder: a sequence of header blocks and
/// SETTINGS_HEADER_TABLE_SIZE changes; after every block nghttp2 must have decoded the
/// same fields (octet for octet, with the never-indexed flag where we asked for it) and
/// hold the same dynamic table as our encoder.
enum HPACKTarget {
    static let name = "hpack"

    static let names: [String] = [
        ":method", ":scheme", ":path", ":authority", "authorization", "apns-id", "apns-push-type",
        "apns-expiration", "apns-priority", "apns-topic", "apns-collapse-id", "apns-request-id",
        "apns-channel-id", "content-type", "content-length", "user-agent", "accept-encoding",
        "cookie", "set-cookie", "www-authenticate", "x-custom", "",
        // RFC 7541 Appendix C.3–C.6 request and response examples.
        "cache-control", "custom-key", "location", "date", "content-encoding",
    ]
    static let values: [String] = [
        "POST", "GET", "https", "http", "/3/device/00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f1",
        "api.push.apple.com", "api.sandbox.push.apple.com", "alert", "background", "10", "5", "0",
        "com.example.app", "bearer eyJhbGciOiJFUzI1NiIsImtpZCI6IkFCQzEyM0RFRkcifQ.e30.sig", "gzip, deflate",
        "application/json", "", "/", "/index.html", "custom-value",
        "www.example.com", "no-cache", "private", "Mon, 21 Oct 2013 20:13:21 GMT", "https://www.example.com", "302", "307",
        "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
    ]
    static let sizes: [Int] = [0, 1, 31, 32, 33, 64, 100, 256, 4096, 8192, 65536]

    static func run(_ data: [UInt8]) {
        var input = FuzzInput(data)
        let useAPNsEncoder = input.int(below: 4) == 0
        let huffman = input.bool()
        let limitChoice = input.int(below: 4)
        let limit: Int? = limitChoice == 0 ? nil : sizes.pick(&input)
        var encoder = HPACKEncoder(tableSize: 4096, tableSizeLimit: limit, usesHuffmanCoding: huffman)
        var apnsEncoder = APNsHeaderEncoder(tableSize: 4096, usesHuffmanCoding: huffman)
        let inflater = Inflater()
        var announced = 4096

        for step in 0..<input.int(below: 12) + 1 {
            if input.int(below: 5) == 0 {
                let size = input.int(below: 8) == 0 ? Int(input.byte()) << 8 | Int(input.byte()) : sizes.pick(&input)
                guard inflater.changeTableSize(size) else { finding(name, "nghttp2 refused table size \(size)") }
                announced = size
                if useAPNsEncoder { apnsEncoder.setPeerHeaderTableSize(size) } else { encoder.setPeerHeaderTableSize(size) }
                continue
            }
            var fields: [HeaderField] = []
            var indexings: [HPACKIndexing] = []
            for _ in 0..<input.int(below: 9) {
                let name = input.int(below: 4) == 0 ? input.string(maxLength: 16) : names.pick(&input)
                var value = input.int(below: 4) == 0 ? input.string(maxLength: 40) : values.pick(&input)
                if input.int(below: 16) == 0 {
                    // Long values (evictions, entries larger than the table), kept under
                    // nghttp2's inflater limit of 64 KiB per string (NGHTTP2_HD_MAX_NV),
                    // which it answers with NGHTTP2_ERR_HEADER_COMP.
                    let unit = value.isEmpty ? "x" : value
                    value = String(repeating: unit, count: min(Int(input.byte()) * 4 + 1, 60_000 / max(1, unit.utf8.count)))
                }
                fields.append(HeaderField(name: name, value: value))
                indexings.append(HPACKIndexing.allCases.pick(&input))
            }
            var block: [UInt8] = []
            if useAPNsEncoder {
                apnsEncoder.encodeHeaderBlock(fields, into: &block, decisions: &indexings)
            } else {
                encoder.beginHeaderBlock(into: &block)
                for (field, indexing) in zip(fields, indexings) {
                    encoder.append(field, indexing: indexing, into: &block)
                }
            }
            let decoded: [(name: [UInt8], value: [UInt8], neverIndexed: Bool)]
            switch inflater.decode(block) {
            case .success(let fields): decoded = fields
            case .failure(let failure):
                finding(name, "step \(step): nghttp2 refused our block (error \(failure.code) at octet \(failure.offset) of \(block.count)); fields \(fields) indexing \(indexings), announced \(announced), limit \(String(describing: limit))")
            }
            require(decoded.count == fields.count, name, "step \(step): nghttp2 decoded \(decoded.count) fields, we sent \(fields.count)")
            for (index, (field, got)) in zip(fields, decoded).enumerated() {
                require(got.name == Array(field.name.utf8) && got.value == Array(field.value.utf8), name,
                        "step \(step) field \(index): sent \(field), nghttp2 read \(String(decoding: got.name, as: UTF8.self)): \(String(decoding: got.value, as: UTF8.self))")
                require(got.neverIndexed == (indexings[index] == .neverIndexed), name,
                        "step \(step) field \(index) \(field): never-indexed flag \(got.neverIndexed) for indexing \(indexings[index])")
            }
            let ours = useAPNsEncoder ? apnsEncoder.tableEntries : encoder.tableEntries
            let ourEntries = ours.map { Array($0.name.utf8) + [0] + Array($0.value.utf8) }
            require(ourEntries == inflater.tableEntries, name, "step \(step): dynamic tables differ: ours \(ours)")
            let (size, maximum) = useAPNsEncoder ? (apnsEncoder.tableSize, apnsEncoder.maximumTableSize) : (encoder.tableSize, encoder.maximumTableSize)
            require(size == inflater.tableSize, name, "step \(step): table size \(size), nghttp2 \(inflater.tableSize)")
            require(maximum == inflater.maximumTableSize, name, "step \(step): maximum table size \(maximum), nghttp2 \(inflater.maximumTableSize)")
            require(maximum <= announced, name, "step \(step): table maximum \(maximum) above the announced \(announced)")
        }
    }
}
