import CNGHTTP2
@testable import APNsCore

/// An error from nghttp2's HPACK API in the tests, with the call that failed.
struct NGHTTP2HPACKError: Error, CustomStringConvertible {
    var call: String
    var code: Int
    var description: String { "\(call) failed: \(code)" }
}

/// One decoded header field and whether the block marked it never indexed.
struct DecodedField: Equatable {
    var field: HeaderField
    var neverIndexed: Bool
}

/// nghttp2's HPACK decoder: the independent decoder the tests check our bytes with.
/// Owns the C handle and frees it in `deinit`.
final class NGHTTP2Inflater {
    private let handle: OpaquePointer

    init() throws {
        var pointer: OpaquePointer?
        let rv = nghttp2_hd_inflate_new(&pointer)
        guard rv == 0, let pointer else { throw NGHTTP2HPACKError(call: "nghttp2_hd_inflate_new", code: Int(rv)) }
        handle = pointer
    }

    deinit { nghttp2_hd_inflate_del(handle) }

    /// Applies our SETTINGS_HEADER_TABLE_SIZE to the decoder.
    func changeTableSize(_ size: Int) throws {
        let rv = nghttp2_hd_inflate_change_table_size(handle, size)
        guard rv == 0 else { throw NGHTTP2HPACKError(call: "nghttp2_hd_inflate_change_table_size", code: Int(rv)) }
    }

    /// Decodes one complete header block.
    func decode(_ block: [UInt8]) throws -> [DecodedField] {
        try decodeRaw(block).map {
            DecodedField(
                field: HeaderField(name: String(decoding: $0.name, as: UTF8.self), value: String(decoding: $0.value, as: UTF8.self)),
                neverIndexed: $0.neverIndexed
            )
        }
    }

    /// Decodes one complete header block into raw octets.
    func decodeRaw(_ block: [UInt8]) throws -> [(name: [UInt8], value: [UInt8], neverIndexed: Bool)] {
        var fields: [(name: [UInt8], value: [UInt8], neverIndexed: Bool)] = []
        var dummy: UInt8 = 0
        try block.withUnsafeBufferPointer { bytes in
            var offset = 0
            while true {
                var nv = nghttp2_nv()
                var flags: Int32 = 0
                let base = bytes.baseAddress.map { UnsafePointer($0) } ?? withUnsafePointer(to: &dummy) { $0 }
                let rv = nghttp2_hd_inflate_hd2(handle, &nv, &flags, base + offset, bytes.count - offset, 1)
                guard rv >= 0 else { throw NGHTTP2HPACKError(call: "nghttp2_hd_inflate_hd2", code: rv) }
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
                    break
                }
                if rv == 0 && flags & Int32(NGHTTP2_HD_INFLATE_EMIT.rawValue) == 0 {
                    throw NGHTTP2HPACKError(call: "nghttp2_hd_inflate_hd2 (no progress)", code: 0)
                }
            }
        }
        return fields
    }

    /// Decodes one block and returns only the fields.
    func decodeFields(_ block: [UInt8]) throws -> [HeaderField] {
        try decode(block).map(\.field)
    }

    /// The dynamic table, newest first (index 62 first).
    var tableEntries: [HeaderField] {
        let total = nghttp2_hd_inflate_get_num_table_entries(handle)
        guard total > 61 else { return [] }
        return (62...total).compactMap { index in
            nghttp2_hd_inflate_get_table_entry(handle, index).map { HeaderField($0.pointee) }
        }
    }

    /// The entry at any index, static (1...61) or dynamic.
    func entry(at index: Int) -> HeaderField? {
        nghttp2_hd_inflate_get_table_entry(handle, index).map { HeaderField($0.pointee) }
    }

    /// The size of the dynamic table (RFC 7541 §4.1).
    var tableSize: Int { nghttp2_hd_inflate_get_dynamic_table_size(handle) }

    /// The maximum size of the dynamic table the decoder applies.
    var maximumTableSize: Int { nghttp2_hd_inflate_get_max_dynamic_table_size(handle) }
}

/// nghttp2's HPACK encoder, as the nghttp2 transport will use it.
final class NGHTTP2Deflater {
    private let handle: OpaquePointer

    init(tableSizeLimit: Int = 4096) throws {
        var pointer: OpaquePointer?
        let rv = nghttp2_hd_deflate_new(&pointer, tableSizeLimit)
        guard rv == 0, let pointer else { throw NGHTTP2HPACKError(call: "nghttp2_hd_deflate_new", code: Int(rv)) }
        handle = pointer
    }

    deinit { nghttp2_hd_deflate_del(handle) }

    /// Applies the peer's SETTINGS_HEADER_TABLE_SIZE.
    func changeTableSize(_ size: Int) throws {
        let rv = nghttp2_hd_deflate_change_table_size(handle, size)
        guard rv == 0 else { throw NGHTTP2HPACKError(call: "nghttp2_hd_deflate_change_table_size", code: Int(rv)) }
    }

    /// Encodes `fields`; `noIndex[i]` sets NGHTTP2_NV_FLAG_NO_INDEX on field `i`.
    func encode(_ fields: [HeaderField], noIndex: [Bool]? = nil) throws -> [UInt8] {
        var storage: [UInt8] = []
        var ranges: [(name: Range<Int>, value: Range<Int>)] = []
        for field in fields {
            let nameStart = storage.count
            storage.append(contentsOf: Array(field.name.utf8))
            let valueStart = storage.count
            storage.append(contentsOf: Array(field.value.utf8))
            ranges.append((nameStart..<valueStart, valueStart..<storage.count))
        }
        storage.append(0) // never empty, so the base address exists
        var output = [UInt8](repeating: 0, count: 0)
        try storage.withUnsafeMutableBufferPointer { bytes in
            let base = bytes.baseAddress!
            var nva = ranges.enumerated().map { offset, range in
                nghttp2_nv(
                    name: base + range.name.lowerBound,
                    value: base + range.value.lowerBound,
                    namelen: range.name.count,
                    valuelen: range.value.count,
                    flags: UInt8((noIndex?[offset] ?? false) ? NGHTTP2_NV_FLAG_NO_INDEX.rawValue : NGHTTP2_NV_FLAG_NONE.rawValue)
                )
            }
            let bound = nghttp2_hd_deflate_bound(handle, &nva, nva.count)
            output = [UInt8](repeating: 0, count: bound)
            let written = output.withUnsafeMutableBufferPointer { out in
                nghttp2_hd_deflate_hd(handle, out.baseAddress, out.count, &nva, nva.count)
            }
            guard written >= 0 else { throw NGHTTP2HPACKError(call: "nghttp2_hd_deflate_hd", code: written) }
            output.removeSubrange(written...)
        }
        return output
    }

    /// The deflater's dynamic table, newest first.
    var tableEntries: [HeaderField] {
        let total = nghttp2_hd_deflate_get_num_table_entries(handle)
        guard total > 61 else { return [] }
        return (62...total).compactMap { index in
            nghttp2_hd_deflate_get_table_entry(handle, index).map { HeaderField($0.pointee) }
        }
    }
}

extension HeaderField {
    /// Copies an nghttp2 name-value pair (the bytes are UTF-8 in every test).
    init(_ nv: nghttp2_nv) {
        self.init(
            name: String(decoding: UnsafeBufferPointer(start: nv.name, count: nv.namelen), as: UTF8.self),
            value: String(decoding: UnsafeBufferPointer(start: nv.value, count: nv.valuelen), as: UTF8.self)
        )
    }
}

/// A small deterministic generator (SplitMix64) so random tests are reproducible.
typealias SeededGenerator = SplitMix64
