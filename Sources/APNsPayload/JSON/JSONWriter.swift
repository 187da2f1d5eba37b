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
struct JSONWriter {
    private(set) var bytes: [UInt8]
    private var needsComma = false

    init(capacity: Int) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    // MARK: Structure

    @inline(__always)
    private mutating func separator() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }

    mutating func beginObject() {
        separator()
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
    }

    mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    mutating func beginArray() {
        separator()
        bytes.append(UInt8(ascii: "["))
        needsComma = false
    }

    mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// Writes `"key":` for a key known at compile time (ASCII, nothing to escape).
    mutating func key(_ key: StaticString) {
        separator()
        bytes.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    /// Writes `"key":` for any key, escaped.
    mutating func key(_ key: String) {
        separator()
        appendQuoted(key)
        bytes.append(UInt8(ascii: ":"))
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
        if value {
            bytes.append(contentsOf: [0x74, 0x72, 0x75, 0x65] as [UInt8])  // true
        } else {
            bytes.append(contentsOf: [0x66, 0x61, 0x6C, 0x73, 0x65] as [UInt8])  // false
        }
        needsComma = true
    }

    mutating func null() {
        separator()
        bytes.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C] as [UInt8])  // null
        needsComma = true
    }

    mutating func integer(_ value: Int64) {
        separator()
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        let start = bytes.count
        repeat {
            bytes.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10))
            magnitude /= 10
        } while magnitude > 0
        bytes[start...].reverse()
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
        bytes.append(contentsOf: value.description.utf8)
        needsComma = true
    }

    /// Writes any JSON value, refusing NaN and infinity.
    /// - Throws: the path, relative to `value`, of the first non-finite double.
    mutating func value(_ value: JSONValue) throws(NonFinitePath) {
        switch value {
        case .null: null()
        case .bool(let b): bool(b)
        case .integer(let i): integer(i)
        case .double(let d):
            guard d.isFinite else { throw NonFinitePath(components: []) }
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
    mutating func object(_ object: JSONObject) throws(NonFinitePath) {
        beginObject()
        try members(object)
        endObject()
    }

    /// Writes an object's members (no braces), for merging them into an object being written.
    mutating func members(_ object: JSONObject) throws(NonFinitePath) {
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
        bytes.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { appendEscaped($0) }
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func appendEscaped(_ utf8: UnsafeBufferPointer<UInt8>) {
        var runStart = 0
        var index = 0
        let count = utf8.count
        while index < count {
            let byte = utf8[index]
            if byte >= 0x20 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") {
                index += 1
                continue
            }
            if runStart < index {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
            }
            bytes.append(UInt8(ascii: "\\"))
            switch byte {
            case UInt8(ascii: "\""): bytes.append(UInt8(ascii: "\""))
            case UInt8(ascii: "\\"): bytes.append(UInt8(ascii: "\\"))
            case 0x08: bytes.append(UInt8(ascii: "b"))
            case 0x0C: bytes.append(UInt8(ascii: "f"))
            case 0x0A: bytes.append(UInt8(ascii: "n"))
            case 0x0D: bytes.append(UInt8(ascii: "r"))
            case 0x09: bytes.append(UInt8(ascii: "t"))
            default:
                bytes.append(UInt8(ascii: "u"))
                bytes.append(UInt8(ascii: "0"))
                bytes.append(UInt8(ascii: "0"))
                bytes.append(Self.hexDigits[Int(byte >> 4)])
                bytes.append(Self.hexDigits[Int(byte & 0x0F)])
            }
            index += 1
            runStart = index
        }
        if runStart < count {
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<count]))
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

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

/// Where a non-finite double sits inside a JSON value, built while unwinding.
struct NonFinitePath: Error {
    var components: [String]

    func prepending(_ component: String) -> NonFinitePath {
        NonFinitePath(components: [component] + components)
    }

    /// The path under `base`, e.g. `aps.attributes.ratio`; a top-level key has no leading dot.
    func keyPath(under base: String) -> String {
        let path = base + components.joined()
        return path.hasPrefix(".") ? String(path.dropFirst()) : path
    }
}
