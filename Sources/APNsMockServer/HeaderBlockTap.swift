/// Reads the raw HTTP/2 byte stream a client sends (beside nghttp2, which decodes it) to
/// learn how each header field was represented in HPACK: nghttp2's inflater reports the
/// never-indexed flag but not whether a field was indexed, or a literal with or without
/// incremental indexing.
///
/// It splits frames (RFC 9113 §4.1), gathers the header block fragments of HEADERS and
/// CONTINUATION frames (§6.2, §6.10; padding and priority fields removed), and walks the
/// block's representations (RFC 7541 §6) without decoding strings or tracking tables.
struct HeaderBlockTap {
    /// The client connection preface (RFC 9113 §3.4) still to skip.
    private var prefaceRemaining = 24
    private var frameHeader: [UInt8] = []
    private var payload: [UInt8] = []
    private var payloadRemaining = 0
    private var frameType: UInt8 = 0
    private var frameFlags: UInt8 = 0
    private var frameStream: UInt32 = 0
    private var block: [UInt8] = []
    private var blockStream: UInt32 = 0
    /// Completed header blocks' representations, by stream. A record is taken when its
    /// request is made or its stream closes; a stream libnghttp2 refuses without opening
    /// it (a client over the stream limit before it acknowledged SETTINGS) never closes,
    /// so past ``maxKept`` records the oldest streams' are dropped (see ``keep(_:for:)``).
    private(set) var representations: [UInt32: [RecordedRequest.HeaderRepresentation]] = [:]
    /// The most records kept: far above the streams a client can have open at once, so a
    /// record is dropped only when its stream was refused (or its request sat unfinished
    /// while this many newer header blocks arrived; its recorded representations are then
    /// `nil`). About 1.4 MB at most.
    static let maxKept = 16_384
    /// Whether header blocks are kept and walked. Off when no request is recorded: frames
    /// are still split, so the tap stays in step with the byte stream, but nothing is
    /// copied or walked.
    var keepsBlocks = true

    private static let headers: UInt8 = 0x1, continuation: UInt8 = 0x9
    private static let endHeaders: UInt8 = 0x4, padded: UInt8 = 0x8, priority: UInt8 = 0x20

    /// Removes and returns the representations of the header block of `stream`.
    mutating func take(stream: Int32) -> [RecordedRequest.HeaderRepresentation]? {
        if representations.isEmpty { return nil }
        return representations.removeValue(forKey: UInt32(bitPattern: stream))
    }

    /// Feeds bytes in the order they arrived.
    mutating func feed(_ bytes: UnsafeRawBufferPointer) {
        var index = 0
        let count = bytes.count
        while index < count {
            if prefaceRemaining > 0 {
                let skip = min(prefaceRemaining, count - index)
                prefaceRemaining -= skip
                index += skip
                continue
            }
            if payloadRemaining == 0 && frameHeader.isEmpty && count - index >= 9 {
                // The whole frame header is here (nearly always): read it in place.
                beginFrame(bytes[index], bytes[index + 1], bytes[index + 2], bytes[index + 3], bytes[index + 4],
                           bytes[index + 5], bytes[index + 6], bytes[index + 7], bytes[index + 8])
                index += 9
                continue
            }
            if payloadRemaining == 0 && frameHeader.count < 9 {
                frameHeader.append(bytes[index])
                index += 1
                if frameHeader.count == 9 { beginFrame() }
                continue
            }
            let take = min(payloadRemaining, count - index)
            if keepsBlocks, isHeaderFrame { payload.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[index..<index + take])) }
            payloadRemaining -= take
            index += take
            if payloadRemaining == 0 { endFrame() }
        }
    }

    private var isHeaderFrame: Bool { frameType == Self.headers || frameType == Self.continuation }

    private mutating func beginFrame() {
        beginFrame(frameHeader[0], frameHeader[1], frameHeader[2], frameHeader[3], frameHeader[4],
                   frameHeader[5], frameHeader[6], frameHeader[7], frameHeader[8])
        frameHeader.removeAll(keepingCapacity: true)
    }

    /// Starts a frame from its 9-byte header (RFC 9113 §4.1).
    @inline(__always)
    private mutating func beginFrame(_ l0: UInt8, _ l1: UInt8, _ l2: UInt8, _ type: UInt8, _ flags: UInt8,
                                     _ s0: UInt8, _ s1: UInt8, _ s2: UInt8, _ s3: UInt8) {
        payloadRemaining = Int(l0) << 16 | Int(l1) << 8 | Int(l2)
        frameType = type
        frameFlags = flags
        frameStream = (UInt32(s0) << 24 | UInt32(s1) << 16 | UInt32(s2) << 8 | UInt32(s3)) & 0x7FFF_FFFF
        payload.removeAll(keepingCapacity: true)
        if payloadRemaining == 0 { endFrame() }
    }

    private mutating func endFrame() {
        defer { frameType = 0 }
        guard keepsBlocks, isHeaderFrame else { return }
        var fragment = payload[...]
        if frameType == Self.headers {
            block.removeAll(keepingCapacity: true)
            blockStream = frameStream
            if frameFlags & Self.padded != 0 {
                guard let padLength = fragment.first, fragment.count > Int(padLength) else { return }
                fragment = fragment.dropFirst().dropLast(Int(padLength))
            }
            if frameFlags & Self.priority != 0 { fragment = fragment.dropFirst(5) }
        }
        block.append(contentsOf: fragment)
        if frameFlags & Self.endHeaders != 0 {
            keep(Self.walk(block), for: blockStream)
        }
    }

    /// Records `fields` for `stream`; past ``maxKept`` records, drops the oldest half
    /// (the lowest stream IDs: a client opens streams in increasing order, RFC 9113 §5.1.1).
    private mutating func keep(_ fields: [RecordedRequest.HeaderRepresentation], for stream: UInt32) {
        representations[stream] = fields
        guard representations.count > Self.maxKept else { return }
        let newest = representations.keys.sorted().suffix(Self.maxKept / 2)
        guard let oldestKept = newest.first else { return }
        representations = representations.filter { $0.key >= oldestKept }
    }

    /// The representation of each header field in `block` (dynamic table size updates,
    /// which carry no field, are skipped); a malformed block yields the fields read
    /// before the fault.
    static func walk(_ block: [UInt8]) -> [RecordedRequest.HeaderRepresentation] {
        var result: [RecordedRequest.HeaderRepresentation] = []
        var index = 0
        while index < block.count {
            let first = block[index]
            if first & 0x80 != 0 {  // §6.1 indexed
                guard skipInteger(block, &index, prefix: 7) else { break }
                result.append(.indexed)
                continue
            }
            if first & 0xE0 == 0x20 {  // §6.3 dynamic table size update
                guard skipInteger(block, &index, prefix: 5) else { break }
                continue
            }
            let kind: RecordedRequest.HeaderRepresentation
            let prefix: Int
            switch first & 0xF0 {
            case 0x40, 0x50, 0x60, 0x70: kind = .incrementalIndexing; prefix = 6  // §6.2.1
            case 0x10: kind = .neverIndexed; prefix = 4  // §6.2.3
            default: kind = .withoutIndexing; prefix = 4  // §6.2.2
            }
            let literalName = first & ((1 << prefix) - 1) == 0
            guard skipInteger(block, &index, prefix: prefix) else { break }
            if literalName { guard skipString(block, &index) else { break } }
            guard skipString(block, &index) else { break }
            result.append(kind)
        }
        return result
    }

    /// Skips an integer with an N-bit prefix (RFC 7541 §5.1).
    private static func skipInteger(_ block: [UInt8], _ index: inout Int, prefix: Int) -> Bool {
        readInteger(block, &index, prefix: prefix) != nil
    }

    private static func readInteger(_ block: [UInt8], _ index: inout Int, prefix: Int) -> Int? {
        guard index < block.count else { return nil }
        let mask = (1 << prefix) - 1
        var value = Int(block[index]) & mask
        index += 1
        guard value == mask else { return value }
        var shift = 0
        while index < block.count, shift <= 28 {
            let byte = block[index]
            index += 1
            value += Int(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
        return nil
    }

    /// Skips a string literal (RFC 7541 §5.2): a Huffman bit, a 7-bit-prefix length, the octets.
    private static func skipString(_ block: [UInt8], _ index: inout Int) -> Bool {
        guard let length = readInteger(block, &index, prefix: 7), index + length <= block.count else { return false }
        index += length
        return true
    }
}
