import CNGHTTP2

#if canImport(Glibc)
import Glibc
#endif

/// A request's header fields as nghttp2's `on_header` callback hands them over: the bytes
/// of each name and value copied side by side into one buffer the stream reuses, and the
/// positions of the fields the APNs rules read. No `String` is made per field: the
/// server's fast path (see ``ServerConnection``) reads the bytes, and only a request that
/// leaves the fast path (an error, a script, recording) has its fields turned into
/// ``RecordedRequest/Header`` values.
///
/// The buffers are allocated by hand (a copy is one `memcpy`, with no uniqueness or
/// capacity checks of an `Array`), so the owner calls ``deallocate()`` exactly once, and
/// copies of the value only read. Lives on the server thread only; one per request
/// stream, reused.
struct RequestFields {
    /// Where one field is: its name at `start` in the byte buffer, its value at
    /// `valueStart` there, or (``shared``) in the connection's copy of the authorization it
    /// was last accepted with. 8 bytes, so that a request's spans take two cache lines (a
    /// server with thousands of streams in flight finds each stream's memory cold); the
    /// offsets fit 16 bits as a header list is at most ``ServerConnection/maxHeaderListSize``
    /// octets.
    struct Span {
        private var start16: UInt16
        /// The name's length, and the never-indexed flag in the top bit.
        private var nameBits: UInt16
        private var valueStart16: UInt16
        private var valueLength16: UInt16

        private static let neverIndexedBit: UInt16 = 0x8000
        private static let sharedMark: UInt16 = 0xFFFF

        /// `start16` of a name the rules read: not in the buffer, ``knownName`` gives it.
        private static let knownMark: UInt16 = 0xFF00

        init(start: Int, known: Int?, nameLength: Int, valueStart: Int?, valueLength: Int, neverIndexed: Bool) {
            start16 = known.map { Self.knownMark | UInt16($0) } ?? UInt16(start)
            nameBits = UInt16(nameLength) | (neverIndexed ? Self.neverIndexedBit : 0)
            valueStart16 = valueStart.map { UInt16($0) } ?? Self.sharedMark
            valueLength16 = UInt16(valueLength)
        }

        var start: Int { Int(start16) }
        /// Whether the name is one the rules read, kept as ``knownName`` rather than bytes.
        var isKnown: Bool { start16 & Self.knownMark == Self.knownMark }
        /// The name, when ``isKnown``.
        var knownName: StaticString {
            switch start16 & 0xFF {
            case 0: ":path"
            case 1: ":method"
            case 2: "apns-id"
            case 3: "apns-topic"
            case 4: "authorization"
            case 5: "apns-priority"
            case 6: "apns-push-type"
            case 7: "apns-expiration"
            default: "apns-collapse-id"
            }
        }
        var nameLength: Int { Int(nameBits & ~Self.neverIndexedBit) }
        var neverIndexed: Bool { nameBits & Self.neverIndexedBit != 0 }
        var valueLength: Int { Int(valueLength16) }
        /// Whether the value is the connection's shared authorization rather than in the buffer.
        var shared: Bool { valueStart16 == Self.sharedMark }
        var valueStart: Int { Int(valueStart16) }

        mutating func moveValue(to start: Int) {
            valueStart16 = UInt16(start)
        }
    }

    private var bytes: UnsafeMutablePointer<UInt8>
    private var byteCapacity: Int
    private var byteCount = 0
    private var spans: UnsafeMutablePointer<Span>
    private var spanCapacity: Int
    /// How many fields there are.
    private(set) var count = 0
    /// The connection's authorization bytes that a ``Span/shared`` value refers to;
    /// ``unshare()`` copies them in before the connection lets them go.
    private var sharedValue: UnsafePointer<UInt8>?

    /// Positions of the fields the rules read, `-1` when absent (16 bits each: a header
    /// list holds at most 512 fields, and the stream's memory is read cold).
    private var method16: Int16 = -1
    private var path16: Int16 = -1
    private var authorization16: Int16 = -1
    private var topic16: Int16 = -1
    private var pushType16: Int16 = -1
    private var priority16: Int16 = -1
    private var expiration16: Int16 = -1
    private var apnsID16: Int16 = -1
    private var collapseID16: Int16 = -1
    var method: Int { Int(method16) }
    var path: Int { Int(path16) }
    var authorization: Int { Int(authorization16) }
    var topic: Int { Int(topic16) }
    var pushType: Int { Int(pushType16) }
    var priority: Int { Int(priority16) }
    var expiration: Int { Int(expiration16) }
    var apnsID: Int { Int(apnsID16) }
    var collapseID: Int { Int(collapseID16) }
    /// A field was repeated (a pseudo-header, a field the rules read, or any other name):
    /// only ``RequestValidator`` decides such a request (`DuplicateHeaders`, or the last
    /// pseudo-header's value).
    private(set) var irregular = false

    init() {
        byteCapacity = 1024
        bytes = .allocate(capacity: byteCapacity)
        spanCapacity = 32
        spans = .allocate(capacity: spanCapacity)
    }

    /// Starts bringing the buffers' first lines into the cache, where the next request's
    /// fields will be written (a hint; see ``ServerConnection/openStream(_:)``).
    @inline(__always)
    func prefetchBuffers() {
        capns_prefetch_for_write(bytes, 5)
        capns_prefetch_for_write(spans, 2)
    }

    /// Frees the buffers; the value must not be used afterwards.
    func deallocate() {
        bytes.deallocate()
        spans.deallocate()
    }

    /// Empties the list, keeping its buffers.
    mutating func reset() {
        byteCount = 0
        count = 0
        sharedValue = nil
        method16 = -1
        path16 = -1
        authorization16 = -1
        topic16 = -1
        pushType16 = -1
        priority16 = -1
        expiration16 = -1
        apnsID16 = -1
        collapseID16 = -1
        irregular = false
    }

    /// Adds a field as received. When the field is `authorization` and its value equals
    /// `sharedAuthorization` (the connection's copy, which outlives the request or is
    /// copied in by ``unshare()`` first), the value is not copied: a provider token is a
    /// few hundred bytes, the same on every request of a connection.
    mutating func append(name: UnsafePointer<UInt8>?, nameLength: Int, value: UnsafePointer<UInt8>?, valueLength: Int,
                         neverIndexed: Bool, sharedAuthorization: UnsafeBufferPointer<UInt8>?) {
        let start = byteCount
        if start + nameLength + valueLength > byteCapacity { growBytes(to: start + nameLength + valueLength) }
        if count == spanCapacity { growSpans() }
        let position = count
        count += 1
        var shares = false
        // A name the rules read is not copied: its span names it (see Span.knownName).
        var known: Int?
        if let name, nameLength > 0 {
            // By length first: most names are then told apart with one comparison.
            switch nameLength {
            case 5 where Self.equal(name, ":path"):
                path16 = noted(path16, position)
                known = 0
            case 7 where Self.equal(name, ":method"):
                method16 = noted(method16, position)
                known = 1
            case 7 where Self.equal(name, "apns-id"):
                apnsID16 = noted(apnsID16, position)
                known = 2
            case 10 where Self.equal(name, "apns-topic"):
                topic16 = noted(topic16, position)
                known = 3
            case 13 where Self.equal(name, "authorization"):
                authorization16 = noted(authorization16, position)
                known = 4
                if let sharedAuthorization, let value, sharedAuthorization.count == valueLength, valueLength > 0,
                   memcmp(sharedAuthorization.baseAddress!, value, valueLength) == 0 {
                    shares = true
                    sharedValue = sharedAuthorization.baseAddress
                }
            case 13 where Self.equal(name, "apns-priority"):
                priority16 = noted(priority16, position)
                known = 5
            case 14 where Self.equal(name, "apns-push-type"):
                pushType16 = noted(pushType16, position)
                known = 6
            case 15 where Self.equal(name, "apns-expiration"):
                expiration16 = noted(expiration16, position)
                known = 7
            case 16 where Self.equal(name, "apns-collapse-id"):
                collapseID16 = noted(collapseID16, position)
                known = 8
            default:
                noteOther(name, count: nameLength, position: position)
            }
        } else {
            irregular = true
        }
        var end = start
        if known == nil, let name {
            (bytes + start).update(from: name, count: nameLength)
            end += nameLength
        }
        let valueStart = end
        if !shares {
            if let value { (bytes + valueStart).update(from: value, count: valueLength) }
            end += valueLength
        }
        byteCount = end
        (spans + position).initialize(to: Span(start: start, known: known, nameLength: nameLength,
                                               valueStart: shares ? nil : valueStart,
                                               valueLength: valueLength, neverIndexed: neverIndexed))
    }

    /// Copies a shared value into the buffer: before the connection lets go of the bytes
    /// it refers to.
    mutating func unshare() {
        guard let sharedValue else { return }
        for position in 0..<count where spans[position].shared {
            let length = spans[position].valueLength
            if byteCount + length > byteCapacity { growBytes(to: byteCount + length) }
            (bytes + byteCount).update(from: sharedValue, count: length)
            spans[position].moveValue(to: byteCount)
            byteCount += length
        }
        self.sharedValue = nil
    }

    private mutating func growBytes(to needed: Int) {
        var capacity = byteCapacity * 2
        while capacity < needed { capacity *= 2 }
        let grown = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
        grown.update(from: bytes, count: byteCount)
        bytes.deallocate()
        bytes = grown
        byteCapacity = capacity
    }

    private mutating func growSpans() {
        let grown = UnsafeMutablePointer<Span>.allocate(capacity: spanCapacity * 2)
        grown.initialize(from: spans, count: count)
        spans.deallocate()
        spans = grown
        spanCapacity *= 2
    }

    /// `position`, for a field first seen there; marks the list irregular when `field` was seen before.
    private mutating func noted(_ field: Int16, _ position: Int) -> Int16 {
        if field >= 0 { irregular = true }
        return Int16(truncatingIfNeeded: position)
    }

    /// A name the rules do not read: irregular if it was seen before in this list. A
    /// pseudo-header other than `:method` and `:path` is not looked at, as by the validator.
    private mutating func noteOther(_ name: UnsafePointer<UInt8>, count length: Int, position: Int) {
        guard !irregular, name[0] != UInt8(ascii: ":") else { return }
        for earlier in 0..<position where spans[earlier].nameLength == length && !spans[earlier].isKnown {
            if Self.equalBytes(bytes + spans[earlier].start, name, count: length) {
                irregular = true
                return
            }
        }
    }

    @inline(__always)
    private static func equal(_ bytes: UnsafePointer<UInt8>, _ literal: StaticString) -> Bool {
        equalBytes(bytes, literal.utf8Start, count: literal.utf8CodeUnitCount)
    }

    /// `memcmp(a, b, count) == 0` for the short strings of header names, without a call:
    /// two overlapping loads of 8 (or 4) bytes from each side, or byte by byte below 4.
    @inline(__always)
    private static func equalBytes(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, count: Int) -> Bool {
        let a = UnsafeRawPointer(a), b = UnsafeRawPointer(b)
        if count >= 8 {
            if count > 16 { return memcmp(a, b, count) == 0 }
            return a.loadUnaligned(as: UInt64.self) == b.loadUnaligned(as: UInt64.self)
                && a.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
                == b.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
        }
        if count >= 4 {
            return a.loadUnaligned(as: UInt32.self) == b.loadUnaligned(as: UInt32.self)
                && a.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
                == b.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
        }
        for offset in 0..<count where a.load(fromByteOffset: offset, as: UInt8.self) != b.load(fromByteOffset: offset, as: UInt8.self) {
            return false
        }
        return true
    }

    /// The value of the field at `position` (`position` ≥ 0), valid until the next change.
    @inline(__always)
    func value(at position: Int) -> UnsafeBufferPointer<UInt8> {
        let span = spans[position]
        if span.shared, let sharedValue { return UnsafeBufferPointer(start: sharedValue, count: span.valueLength) }
        return UnsafeBufferPointer(start: bytes + span.valueStart, count: span.valueLength)
    }

    /// Whether the field at `position` is the shared authorization `shared` (then equal to it).
    @inline(__always)
    func value(at position: Int, isShared shared: UnsafePointer<UInt8>) -> Bool {
        position >= 0 && spans[position].shared && sharedValue == shared
    }

    /// Whether the field at `position` (`-1`: absent) has exactly the value `expected`
    /// (`nil`: absent).
    func value(at position: Int, equals expected: [UInt8]?) -> Bool {
        guard let expected else { return position < 0 }
        guard position >= 0 else { return false }
        let value = value(at: position)
        return value.count == expected.count && expected.withUnsafeBufferPointer { expected in
            value.isEmpty || memcmp(value.baseAddress!, expected.baseAddress!, value.count) == 0
        }
    }

    /// The value of the field at `position` as bytes (`nil` when `position` is `-1`).
    func valueBytes(at position: Int) -> [UInt8]? {
        guard position >= 0 else { return nil }
        return Array(value(at: position))
    }

    /// Every field as a ``RecordedRequest/Header``, the strings reused from `strings`
    /// where they repeat: for requests the fast path does not answer.
    func headers(using strings: inout HeaderStringCache, into headers: inout [RecordedRequest.Header]) {
        headers.removeAll(keepingCapacity: true)
        for position in 0..<count {
            let span = spans[position]
            headers.append(RecordedRequest.Header(
                name: span.isKnown
                    ? strings.name(UnsafeBufferPointer(start: span.knownName.utf8Start, count: span.nameLength), at: position)
                    : strings.name(UnsafeBufferPointer(start: bytes + span.start, count: span.nameLength), at: position),
                value: strings.value(value(at: position), at: position),
                neverIndexed: span.neverIndexed))
        }
    }
}
