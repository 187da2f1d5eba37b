/// The SDK's JSON writer: compact output straight into a byte array.
///
/// - No whitespace, keys in the order they are written (the caller decides the order).
/// - Strings are raw UTF-8. Only `"`, `\` and the control characters U+0000–U+001F are
///   escaped (`\"`, `\\`, `\b \f \n \r \t`, otherwise `\u00XX`), as
///   [RFC 8259 §7](https://www.rfc-editor.org/rfc/rfc8259#section-7) requires; APNs
///   wants UTF-8 rather than `\u` escapes for non-ASCII text.
/// - Integers are written as integers, doubles in their shortest round-tripping form
///   (Swift's `description`, which always yields a valid JSON number for finite values).
///
/// The writer appends runs of bytes that need no escaping in one call and builds no
/// intermediate `String` per key or integer.
struct JSONWriter: ~Copyable {
    // A manually grown buffer: appending to an `Array` byte by byte costs a uniqueness
    // and capacity check per byte, which dominated the profile. The type is
    // noncopyable, so the buffer has exactly one owner: `finish()` consumes the writer
    // and frees it, and `deinit` frees it on every other path (a thrown error).
    private var base: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    private var count = 0
    private var needsComma = false
    /// How many arrays and objects are open: a value nested deeper than the parser reads
    /// (``JSONParser/maximumDepth``) is refused, not written by a recursion that could
    /// exhaust the stack.
    private var depth = 0

    init(capacity: Int) {
        self.capacity = Swift.max(capacity, 16)
        base = .allocate(capacity: self.capacity)
    }

    deinit {
        base.deallocate()
    }

    /// The bytes written, as an array; consumes the writer and frees its buffer.
    consuming func finish() -> [UInt8] {
        let result = [UInt8](UnsafeBufferPointer(start: base, count: count))
        base.deallocate()
        discard self
        return result
    }

    @inline(__always)
    private mutating func reserve(_ extra: Int) {
        if count + extra > capacity { grow(extra) }
    }

    private mutating func grow(_ extra: Int) {
        let newCapacity = Swift.max(capacity * 2, count + extra)
        let newBase = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        newBase.update(from: base, count: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }

    @inline(__always)
    private mutating func append(_ byte: UInt8) {
        reserve(1)
        base[count] = byte
        count += 1
    }

    @inline(__always)
    private mutating func append(_ a: UInt8, _ b: UInt8) {
        reserve(2)
        base[count] = a
        base[count + 1] = b
        count += 2
    }

    @inline(__always)
    private mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress else { return }
        let length = bytes.count
        reserve(length)
        (base + count).update(from: source, count: length)
        count += length
    }

    // MARK: Structure

    @inline(__always)
    private mutating func separator() {
        if needsComma { append(UInt8(ascii: ",")) }
    }

    mutating func beginObject() {
        separator()
        append(UInt8(ascii: "{"))
        needsComma = false
        depth += 1
    }

    mutating func endObject() {
        append(UInt8(ascii: "}"))
        needsComma = true
        depth -= 1
    }

    mutating func beginArray() {
        separator()
        append(UInt8(ascii: "["))
        needsComma = false
        depth += 1
    }

    mutating func endArray() {
        append(UInt8(ascii: "]"))
        needsComma = true
        depth -= 1
    }

    /// Writes `"key":` for a key known at compile time (ASCII, nothing to escape).
    mutating func key(_ key: StaticString) {
        separator()
        append(UInt8(ascii: "\""))
        key.withUTF8Buffer { append($0) }
        append(UInt8(ascii: "\""))
        append(UInt8(ascii: ":"))
        needsComma = false
    }

    /// Writes `"key":` for any key, escaped.
    mutating func key(_ key: String) {
        separator()
        appendQuoted(key)
        append(UInt8(ascii: ":"))
        needsComma = false
    }

    // MARK: Scalars

    mutating func string(_ value: String) {
        separator()
        appendQuoted(value)
        needsComma = true
    }

    mutating func bool(_ value: Bool) {
        separator()
        let literal: StaticString = value ? "true" : "false"
        literal.withUTF8Buffer { append($0) }
        needsComma = true
    }

    mutating func null() {
        separator()
        let literal: StaticString = "null"
        literal.withUTF8Buffer { append($0) }
        needsComma = true
    }

    mutating func integer(_ value: Int64) {
        separator()
        reserve(20)  // "-9223372036854775808"
        if value < 0 {
            base[count] = UInt8(ascii: "-")
            count += 1
        }
        var magnitude = value.magnitude
        let start = count
        repeat {
            base[count] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
            count += 1
            magnitude /= 10
        } while magnitude > 0
        var digits = UnsafeMutableBufferPointer(start: base + start, count: count - start)
        digits.reverse()
        needsComma = true
    }

    mutating func integer(_ value: Int) {
        integer(Int64(value))
    }

    /// Writes a finite double; the caller has checked `value.isFinite`.
    mutating func double(_ value: Double) {
        separator()
        // Swift's description is the shortest digits that parse back to the same
        // Double: "0.1", "1e-07", "1e+21", "-0.0", "5.0" — all valid JSON numbers.
        var text = value.description
        text.withUTF8 { append($0) }
        needsComma = true
    }

    /// Writes any JSON value, refusing NaN and infinity, and nesting deeper than
    /// ``JSONParser/maximumDepth`` levels.
    /// - Throws: the path, relative to `value`, of the first non-finite double or of the
    ///   array or object one level too deep.
    mutating func value(_ value: JSONValue) throws(UnwritableValuePath) {
        switch value {
        case .array, .object:
            guard depth < JSONParser.maximumDepth else { throw UnwritableValuePath(components: [], tooDeep: true) }
        default:
            break
        }
        switch value {
        case .null: null()
        case .bool(let b): bool(b)
        case .integer(let i): integer(i)
        case .double(let d):
            guard d.isFinite else { throw UnwritableValuePath(components: []) }
            double(d)
        case .string(let s): string(s)
        case .array(let elements):
            beginArray()
            for index in elements.indices {
                do {
                    try self.value(elements[index])
                } catch {
                    throw error.prepending("[\(index)]")
                }
            }
            endArray()
        case .object(let object):
            try self.object(object)
        }
    }

    /// Writes an object's members between braces.
    mutating func object(_ object: JSONObject) throws(UnwritableValuePath) {
        beginObject()
        try members(object)
        endObject()
    }

    /// Writes an object's members (no braces), for merging them into an object being written.
    /// ``members(_:)`` for a payload: a NaN or infinity anywhere in `object` is
    /// ``PayloadError/nonFinite(_:)`` with its key path under `base` (`aps.alert`, say).
    mutating func members(_ object: JSONObject, under base: String) throws(PayloadError) {
        do {
            try members(object)
        } catch {
            throw error.payloadError(under: base)
        }
    }

    mutating func members(_ object: JSONObject) throws(UnwritableValuePath) {
        let keys = object.keys
        let values = object.values
        for index in keys.indices {
            key(keys[index])
            do {
                try value(values[index])
            } catch {
                throw error.prepending("." + keys[index])
            }
        }
    }

    // MARK: Strings

    private mutating func appendQuoted(_ string: String) {
        append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { appendEscaped($0) }
        append(UInt8(ascii: "\""))
    }

    private mutating func appendEscaped(_ utf8: UnsafeBufferPointer<UInt8>) {
        var runStart = 0
        var index = 0
        let count = utf8.count
        while index < count {
            // Skip eight bytes at a time while none of them needs escaping.
            if index &+ 8 <= count,
                !Self.needsEscape(UnsafeRawPointer(utf8.baseAddress! + index).loadUnaligned(as: UInt64.self))
            {
                index &+= 8
                continue
            }
            let byte = utf8[index]
            if byte >= 0x20 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") {
                index += 1
                continue
            }
            if runStart < index {
                append(UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
            }
            let backslash = UInt8(ascii: "\\")
            switch byte {
            case UInt8(ascii: "\""): append(backslash, UInt8(ascii: "\""))
            case UInt8(ascii: "\\"): append(backslash, UInt8(ascii: "\\"))
            case 0x08: append(backslash, UInt8(ascii: "b"))
            case 0x0C: append(backslash, UInt8(ascii: "f"))
            case 0x0A: append(backslash, UInt8(ascii: "n"))
            case 0x0D: append(backslash, UInt8(ascii: "r"))
            case 0x09: append(backslash, UInt8(ascii: "t"))
            default:
                // \u00XX; the high nibble of a control character is 0 or 1.
                append(backslash, UInt8(ascii: "u"))
                append(UInt8(ascii: "0"), UInt8(ascii: "0"))
                append(UInt8(ascii: "0") + (byte >> 4), Self.hexDigit(byte & 0x0F))
            }
            index += 1
            runStart = index
        }
        if runStart < count {
            append(UnsafeBufferPointer(rebasing: utf8[runStart..<count]))
        }
    }

    /// Whether any of the eight bytes in `word` is below 0x20, `"` or `\\` (SWAR:
    /// "determine if a word has a byte less than n" / "has a byte equal to n").
    @inline(__always)
    private static func needsEscape(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let control = (word &- ones &* 0x20) & ~word & highs
        let quote = word ^ (ones &* 0x22)
        let backslash = word ^ (ones &* 0x5C)
        let quoteFound = (quote &- ones) & ~quote & highs
        let backslashFound = (backslash &- ones) & ~backslash & highs
        return (control | quoteFound | backslashFound) != 0
    }

    @inline(__always)
    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }

    /// The number of bytes `text` takes inside a JSON string (without the quotes).
    static func escapedLength(of text: Substring) -> Int {
        var length = 0
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), 0x08, 0x0C, 0x0A, 0x0D, 0x09: length += 2
            case 0x00..<0x20: length += 6
            default: length += 1
            }
        }
        return length
    }
}

/// Where a value that cannot be written sits inside a JSON value, built while unwinding:
/// a non-finite double, or (`tooDeep`) an array or object nested deeper than
/// ``JSONParser/maximumDepth`` levels.
struct UnwritableValuePath: Error {
    var components: [String]
    var tooDeep = false

    func prepending(_ component: String) -> UnwritableValuePath {
        UnwritableValuePath(components: [component] + components, tooDeep: tooDeep)
    }

    /// The payload error for this path under `base`.
    func payloadError(under base: String) -> PayloadError {
        guard tooDeep else { return .nonFinite(keyPath(under: base)) }
        return .outOfRange(
            keyPath(under: base),
            "nested deeper than \(JSONParser.maximumDepth) levels of arrays and objects (APNs payloads are at most 5 KB)"
        )
    }

    /// The path under `base`, e.g. `aps.attributes.ratio`; a top-level key has no leading dot.
    func keyPath(under base: String) -> String {
        let path = base + components.joined()
        return path.hasPrefix(".") ? String(path.dropFirst()) : path
    }
}
