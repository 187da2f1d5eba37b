import CNGHTTP2
#if canImport(Glibc)
import Glibc
#endif

/// A request's header fields as nghttp2's `on_header` callback hands them over: nghttp2's
/// own reference-counted buffers (`nghttp2_rcbuf`, held with `nghttp2_rcbuf_incref` until
/// ``reset()``, so nothing is copied), and the positions of the fields the APNs rules
/// read. No `String` is made per field: the
/// server's fast path (see ``ServerConnection``) reads the bytes, and only a request that
/// leaves the fast path (an error, a script, recording) has its fields turned into
/// ``RecordedRequest/Header`` values.
///
/// Lives on the server thread only; one per request stream, reused.
struct RequestFields {
    /// One field: nghttp2's buffers for its name and value (one reference each, held
    /// until ``reset()``), and where their bytes are.
    struct Span {
        var nameBuffer: OpaquePointer
        var valueBuffer: OpaquePointer
        var name: UnsafePointer<UInt8>
        var nameLength: Int
        var value: UnsafePointer<UInt8>
        var valueLength: Int
        var neverIndexed: Bool
    }

    /// The fields in the order received.
    private(set) var spans: [Span] = []

    /// Positions in ``spans`` of the fields the rules read, `-1` when absent.
    private(set) var method = -1
    private(set) var path = -1
    private(set) var authorization = -1
    private(set) var topic = -1
    private(set) var pushType = -1
    private(set) var priority = -1
    private(set) var expiration = -1
    private(set) var apnsID = -1
    private(set) var collapseID = -1
    /// A field was repeated (a pseudo-header, a field the rules read, or any other name):
    /// only ``RequestValidator`` decides such a request (`DuplicateHeaders`, or the last
    /// pseudo-header's value).
    private(set) var irregular = false

    init() {
        spans.reserveCapacity(16)
    }

    /// Empties the list, keeping its arrays, and lets go of nghttp2's buffers. Must be
    /// called before the list is dropped.
    mutating func reset() {
        for span in spans {
            nghttp2_rcbuf_decref(span.nameBuffer)
            nghttp2_rcbuf_decref(span.valueBuffer)
        }
        spans.removeAll(keepingCapacity: true)
        method = -1
        path = -1
        authorization = -1
        topic = -1
        pushType = -1
        priority = -1
        expiration = -1
        apnsID = -1
        collapseID = -1
        irregular = false
    }

    /// Adds a field as received: nghttp2's buffers for its name and value.
    mutating func append(name nameBuffer: OpaquePointer, value valueBuffer: OpaquePointer, neverIndexed: Bool) {
        let nameBytes = nghttp2_rcbuf_get_buf(nameBuffer)
        let valueBytes = nghttp2_rcbuf_get_buf(valueBuffer)
        nghttp2_rcbuf_incref(nameBuffer)
        nghttp2_rcbuf_incref(valueBuffer)
        let empty: StaticString = ""
        let base = nameBytes.base.map { UnsafePointer($0) } ?? empty.utf8Start
        let position = spans.count
        spans.append(Span(nameBuffer: nameBuffer, valueBuffer: valueBuffer, name: base, nameLength: nameBytes.len,
                          value: valueBytes.base.map { UnsafePointer($0) } ?? empty.utf8Start,
                          valueLength: valueBytes.len, neverIndexed: neverIndexed))
        guard nameBytes.len > 0 else {
            irregular = true
            return
        }
        let name = UnsafeBufferPointer(start: base, count: nameBytes.len)
        // By length first: most names are then told apart with one comparison.
        switch name.count {
        case 5 where Self.equal(base, ":path"): path = noted(path, position)
        case 7:
            if Self.equal(base, ":method") { method = noted(method, position) } else if Self.equal(base, "apns-id") {
                apnsID = noted(apnsID, position)
            } else { noteOther(base, count: 7, position: position) }
        case 10 where Self.equal(base, "apns-topic"): topic = noted(topic, position)
        case 13:
            if Self.equal(base, "authorization") { authorization = noted(authorization, position) } else if Self.equal(base, "apns-priority") {
                priority = noted(priority, position)
            } else { noteOther(base, count: 13, position: position) }
        case 14 where Self.equal(base, "apns-push-type"): pushType = noted(pushType, position)
        case 15 where Self.equal(base, "apns-expiration"): expiration = noted(expiration, position)
        case 16 where Self.equal(base, "apns-collapse-id"): collapseID = noted(collapseID, position)
        default: noteOther(base, count: name.count, position: position)
        }
    }

    /// `position`, for a field first seen there; marks the list irregular when `field` was seen before.
    private mutating func noted(_ field: Int, _ position: Int) -> Int {
        if field >= 0 { irregular = true }
        return position
    }

    /// A name the rules do not read: irregular if it was seen before in this list.
    private mutating func noteOther(_ name: UnsafePointer<UInt8>, count: Int, position: Int) {
        guard !irregular else { return }
        for earlier in spans[..<position] where earlier.nameLength == count {
            if memcmp(earlier.name, name, count) == 0 {
                irregular = true
                return
            }
        }
    }

    @inline(__always)
    private static func equal(_ bytes: UnsafePointer<UInt8>, _ literal: StaticString) -> Bool {
        memcmp(bytes, literal.utf8Start, literal.utf8CodeUnitCount) == 0
    }

    /// Calls `body` with the value of the field at `position` (`position` ≥ 0).
    @inline(__always)
    func withValue<Result>(at position: Int, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        let span = spans[position]
        return body(UnsafeBufferPointer(start: span.value, count: span.valueLength))
    }

    /// Whether the field at `position` (`-1`: absent) has exactly the value `expected`
    /// (`nil`: absent).
    func value(at position: Int, equals expected: [UInt8]?) -> Bool {
        guard let expected else { return position < 0 }
        guard position >= 0 else { return false }
        return withValue(at: position) { value in
            value.count == expected.count && expected.withUnsafeBufferPointer { expected in
                value.isEmpty || memcmp(value.baseAddress!, expected.baseAddress!, value.count) == 0
            }
        }
    }

    /// The value of the field at `position` as bytes (`nil` when `position` is `-1`).
    func valueBytes(at position: Int) -> [UInt8]? {
        guard position >= 0 else { return nil }
        return withValue(at: position) { Array($0) }
    }

    /// Every field as a ``RecordedRequest/Header``, the strings reused from `strings`
    /// where they repeat: for requests the fast path does not answer.
    func headers(using strings: inout HeaderStringCache, into headers: inout [RecordedRequest.Header]) {
        headers.removeAll(keepingCapacity: true)
        for (position, span) in spans.enumerated() {
            headers.append(RecordedRequest.Header(
                name: strings.name(UnsafeBufferPointer(start: span.name, count: span.nameLength), at: position),
                value: strings.value(UnsafeBufferPointer(start: span.value, count: span.valueLength), at: position),
                neverIndexed: span.neverIndexed))
        }
    }
}
