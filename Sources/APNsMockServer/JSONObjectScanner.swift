/// A strict, allocation-light JSON checker ([RFC 8259](https://www.rfc-editor.org/rfc/rfc8259))
/// for request bodies: is the text one JSON object, and which keys does it have at the top?
///
/// It accepts exactly RFC 8259's grammar (no comments, no trailing commas, no leading
/// zeros, no unescaped control characters, valid UTF-8, escapes with four hex digits),
/// nesting up to 512 levels. It builds no values; only top-level key names are decoded.
struct JSONObjectScanner {
    /// The text, borrowed for the scan (no bounds checks in release builds; every index
    /// is compared with `count` first).
    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0
    private var depth = 0
    /// When set, top-level keys are compared with this one instead of collected.
    private let wanted: [UInt8]?
    private var foundWanted = false
    /// Reused for each decoded key.
    private var keyScratch: [UInt8] = []

    /// The top-level keys of `body` if it is exactly one JSON object, otherwise `nil`.
    static func topLevelKeys(of body: [UInt8]) -> Set<String>? {
        guard isValidUTF8(body) else { return nil }
        return body.withUnsafeBufferPointer { buffer in
            var scanner = JSONObjectScanner(bytes: buffer, wanted: nil)
            return scanner.scanDocument()
        }
    }

    /// Whether `body`, if it is exactly one JSON object, has the top-level key `key`;
    /// `nil` if it is not one JSON object. Decodes keys into one reused buffer and builds
    /// no strings: the per-request check of the mock server (`aps`).
    static func object(_ body: [UInt8], hasTopLevelKey key: String) -> Bool? {
        guard isValidUTF8(body) else { return nil }
        return body.withUnsafeBufferPointer { buffer in
            var scanner = JSONObjectScanner(bytes: buffer, wanted: Array(key.utf8))
            guard scanner.scanDocument() != nil else { return nil }
            return scanner.foundWanted
        }
    }

    /// ASCII (every byte below 0x80) is valid UTF-8 as it is; anything else is checked in full.
    private static func isValidUTF8(_ body: [UInt8]) -> Bool {
        body.allSatisfy { $0 < 0x80 } || String(validating: body, as: UTF8.self) != nil
    }

    private init(bytes: UnsafeBufferPointer<UInt8>, wanted: [UInt8]?) {
        self.bytes = bytes
        self.wanted = wanted
        if wanted != nil { keyScratch.reserveCapacity(32) }
    }

    private mutating func scanDocument() -> Set<String>? {
        skipWhitespace()
        guard peek() == UInt8(ascii: "{") else { return nil }
        var keys = Set<String>()
        guard scanObject(collecting: &keys) else { return nil }
        skipWhitespace()
        return index == bytes.count ? keys : nil
    }

    private func peek() -> UInt8? {
        index < bytes.count ? bytes[index] : nil
    }

    private mutating func skipWhitespace() {
        while let byte = peek(), byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D {
            index += 1
        }
    }

    private mutating func scanValue() -> Bool {
        skipWhitespace()
        guard let byte = peek() else { return false }
        switch byte {
        case UInt8(ascii: "{"):
            var ignored = Set<String>()
            return scanObject(collecting: &ignored, collect: false)
        case UInt8(ascii: "["): return scanArray()
        case UInt8(ascii: "\""): return scanString(decodeInto: nil)
        case UInt8(ascii: "t"): return scanLiteral("true")
        case UInt8(ascii: "f"): return scanLiteral("false")
        case UInt8(ascii: "n"): return scanLiteral("null")
        default: return scanNumber()
        }
    }

    private mutating func scanObject(collecting keys: inout Set<String>, collect: Bool = true) -> Bool {
        depth += 1
        defer { depth -= 1 }
        guard depth <= 512 else { return false }
        index += 1  // {
        skipWhitespace()
        if peek() == UInt8(ascii: "}") {
            index += 1
            return true
        }
        while true {
            skipWhitespace()
            guard peek() == UInt8(ascii: "\"") else { return false }
            if collect {
                var key = keyScratch
                keyScratch = []
                key.removeAll(keepingCapacity: true)
                guard scanKey(into: &key) else { return false }
                if let wanted {
                    if key == wanted { foundWanted = true }
                } else {
                    keys.insert(String(decoding: key, as: UTF8.self))
                }
                keyScratch = key
            } else {
                guard scanString(decodeInto: nil) else { return false }
            }
            skipWhitespace()
            guard peek() == UInt8(ascii: ":") else { return false }
            index += 1
            guard scanValue() else { return false }
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                return true
            default: return false
            }
        }
    }

    private mutating func scanArray() -> Bool {
        depth += 1
        defer { depth -= 1 }
        guard depth <= 512 else { return false }
        index += 1  // [
        skipWhitespace()
        if peek() == UInt8(ascii: "]") {
            index += 1
            return true
        }
        while true {
            guard scanValue() else { return false }
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"):
                index += 1
                return true
            default: return false
            }
        }
    }

    private mutating func scanLiteral(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { return false }
        let matches = literal.withUTF8Buffer { expected in
            expected.indices.allSatisfy { bytes[index + $0] == expected[$0] }
        }
        guard matches else { return false }
        index += count
        return true
    }

    private static func isDigit(_ byte: UInt8?) -> Bool {
        guard let byte else { return false }
        return byte >= 0x30 && byte <= 0x39
    }

    private mutating func scanNumber() -> Bool {
        if peek() == UInt8(ascii: "-") { index += 1 }
        guard Self.isDigit(peek()) else { return false }
        if peek() == UInt8(ascii: "0") {
            index += 1
        } else {
            while Self.isDigit(peek()) { index += 1 }
        }
        if peek() == UInt8(ascii: ".") {
            index += 1
            guard Self.isDigit(peek()) else { return false }
            while Self.isDigit(peek()) { index += 1 }
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            index += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { index += 1 }
            guard Self.isDigit(peek()) else { return false }
            while Self.isDigit(peek()) { index += 1 }
        }
        return true
    }

    private static func hexValue(_ byte: UInt8) -> UInt32? {
        switch byte {
        case 0x30...0x39: UInt32(byte - 0x30)
        case 0x41...0x46: UInt32(byte - 0x41 + 10)
        case 0x61...0x66: UInt32(byte - 0x61 + 10)
        default: nil
        }
    }

    private mutating func scanHex4() -> UInt32? {
        guard index + 4 <= bytes.count else { return nil }
        var value: UInt32 = 0
        for offset in 0..<4 {
            guard let digit = Self.hexValue(bytes[index + offset]) else { return nil }
            value = value << 4 | digit
        }
        index += 4
        return value
    }

    /// Scans a string starting at its opening quote; decodes it into `out` when given.
    private mutating func scanString(decodeInto out: UnsafeMutablePointer<[UInt8]>?) -> Bool {
        index += 1  // opening quote
        while let byte = peek() {
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return true
            case UInt8(ascii: "\\"):
                guard let escape = peek() else { return false }
                index += 1
                let decoded: UInt8
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded = escape
                case UInt8(ascii: "b"): decoded = 0x08
                case UInt8(ascii: "f"): decoded = 0x0C
                case UInt8(ascii: "n"): decoded = 0x0A
                case UInt8(ascii: "r"): decoded = 0x0D
                case UInt8(ascii: "t"): decoded = 0x09
                case UInt8(ascii: "u"):
                    guard var scalar = scanHex4() else { return false }
                    if (0xD800...0xDBFF).contains(scalar),
                       index + 6 <= bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") {
                        let saved = index
                        index += 2
                        if let low = scanHex4(), (0xDC00...0xDFFF).contains(low) {
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        } else {
                            index = saved
                        }
                    }
                    if let out {
                        // A lone surrogate is legal JSON text; it decodes to U+FFFD here.
                        let unicode = Unicode.Scalar(scalar) ?? "\u{FFFD}"
                        out.pointee.append(contentsOf: Array(String(unicode).utf8))
                    }
                    continue
                default:
                    return false
                }
                out?.pointee.append(decoded)
            case 0x00..<0x20:
                return false
            default:
                out?.pointee.append(byte)
            }
        }
        return false
    }
}

extension JSONObjectScanner {
    private mutating func scanKey(into out: inout [UInt8]) -> Bool {
        withUnsafeMutablePointer(to: &out) { scanString(decodeInto: $0) }
    }
}
