#if canImport(Glibc)
import Glibc
#endif

/// A request's header fields as nghttp2's `on_header` callback hands them over: names and
/// values side by side in one reused byte buffer, with where each field starts, and the
/// positions of the fields the APNs rules read. No `String` is made per field: the
/// server's fast path (see ``ServerConnection``) reads the bytes, and only a request that
/// leaves the fast path (an error, a script, recording) has its fields turned into
/// ``RecordedRequest/Header`` values.
///
/// Lives on the server thread only; one per request stream, reused.
struct RequestFields {
    /// Where one field is in ``bytes``: its name at `start`, its value right after it.
    struct Span {
        var start: Int
        var nameLength: Int
        var valueLength: Int
        var neverIndexed: Bool

        var valueStart: Int { start + nameLength }
    }

    /// Names and values, one after the other, in the order received.
    private(set) var bytes: [UInt8] = []
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
        bytes.reserveCapacity(512)
        spans.reserveCapacity(16)
    }

    /// Empties the list, keeping its buffers.
    mutating func reset() {
        bytes.removeAll(keepingCapacity: true)
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

    /// Adds a field as received.
    mutating func append(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>, neverIndexed: Bool) {
        let start = bytes.count
        bytes.append(contentsOf: name)
        bytes.append(contentsOf: value)
        let position = spans.count
        spans.append(Span(start: start, nameLength: name.count, valueLength: value.count, neverIndexed: neverIndexed))
        guard let base = name.baseAddress else {
            irregular = true
            return
        }
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
        bytes.withUnsafeBufferPointer { stored in
            for earlier in spans[..<position] where earlier.nameLength == count {
                if memcmp(stored.baseAddress! + earlier.start, name, count) == 0 {
                    irregular = true
                    return
                }
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
        return bytes.withUnsafeBufferPointer { stored in
            body(UnsafeBufferPointer(start: stored.baseAddress! + span.valueStart, count: span.valueLength))
        }
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
        bytes.withUnsafeBufferPointer { stored in
            for (position, span) in spans.enumerated() {
                let base = stored.baseAddress
                headers.append(RecordedRequest.Header(
                    name: strings.name(UnsafeBufferPointer(start: base.map { $0 + span.start }, count: span.nameLength),
                                       at: position),
                    value: strings.value(UnsafeBufferPointer(start: base.map { $0 + span.valueStart }, count: span.valueLength),
                                         at: position),
                    neverIndexed: span.neverIndexed))
            }
        }
    }
}
