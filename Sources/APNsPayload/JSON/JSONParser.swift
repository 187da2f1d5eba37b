/// The SDK's JSON parser ([RFC 8259](https://www.rfc-editor.org/rfc/rfc8259)), reading
/// bytes into a ``JSONValue``.
///
/// Strict: one value with optional whitespace around it, no trailing commas, no comments,
/// no raw control characters in strings, valid UTF-8, valid escapes (surrogate pairs
/// joined; a lone surrogate is an error). Nesting is limited to ``maximumDepth``.
/// A number without fraction or exponent becomes ``JSONValue/integer(_:)`` (one outside
/// `Int64` is refused: as a double it would lose digits), any other number
/// ``JSONValue/double(_:)``. A repeated object key keeps its first
/// position and its last value. Errors carry the byte offset.
struct JSONParser {
    static let maximumDepth = 512

    private let input: UnsafeBufferPointer<UInt8>
    private var offset = 0
    private var depth = 0

    private init(input: UnsafeBufferPointer<UInt8>) {
        self.input = input
    }

    /// Parses one JSON text.
    static func parse(_ bytes: some Collection<UInt8>) throws(PayloadError) -> JSONValue {
        let result: Result<JSONValue, PayloadError>? = bytes.withContiguousStorageIfAvailable { buffer in
            var parser = JSONParser(input: buffer)
            do throws(PayloadError) {
                return .success(try parser.parseDocument())
            } catch {
                return .failure(error)
            }
        }
        if let result { return try result.get() }
        return try parse(Array(bytes))
    }

    private mutating func parseDocument() throws(PayloadError) -> JSONValue {
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        guard offset == input.count else {
            throw .syntax("unexpected \(describe(input[offset])) after the JSON value", at: offset)
        }
        return value
    }

    // MARK: Values

    private mutating func parseValue() throws(PayloadError) -> JSONValue {
        guard offset < input.count else {
            throw .syntax("unexpected end of input, expected a value", at: offset)
        }
        switch input[offset] {
        case UInt8(ascii: "{"): return .object(try parseObject())
        case UInt8(ascii: "["): return .array(try parseArray())
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        case let byte: throw .syntax("unexpected \(describe(byte)), expected a value", at: offset)
        }
    }

    private mutating func enter() throws(PayloadError) {
        depth += 1
        guard depth <= Self.maximumDepth else {
            throw .syntax("nesting deeper than \(Self.maximumDepth) levels", at: offset)
        }
    }

    private mutating func parseObject() throws(PayloadError) -> JSONObject {
        try enter()
        offset += 1  // {
        skipWhitespace()
        if offset < input.count, input[offset] == UInt8(ascii: "}") {
            offset += 1
            depth -= 1
            return JSONObject()
        }
        // Growing from empty reallocates three times for a typical alert dictionary.
        var object = JSONObject(reservingCapacity: 8)
        var seenKeys = Set<String>()
        while true {
            skipWhitespace()
            guard offset < input.count, input[offset] == UInt8(ascii: "\"") else {
                throw .syntax("expected a string key", at: offset)
            }
            let key = try parseString()
            skipWhitespace()
            try expect(UInt8(ascii: ":"), "expected ':' after an object key")
            skipWhitespace()
            let value = try parseValue()
            // Small objects: a linear search. Large ones: a set of the keys, so a hostile
            // object with many keys costs O(n), not O(n²).
            let isRepeated: Bool
            if object.count < 16 {
                isRepeated = object[key] != nil
            } else {
                if seenKeys.isEmpty { seenKeys = Set(object.keys) }
                isRepeated = !seenKeys.insert(key).inserted
            }
            if isRepeated {
                object[key] = value
            } else {
                object.appendUnchecked(key, value)
            }
            skipWhitespace()
            guard offset < input.count else {
                throw .syntax("unexpected end of input inside an object", at: offset)
            }
            if input[offset] == UInt8(ascii: ",") {
                offset += 1
                continue
            }
            try expect(UInt8(ascii: "}"), "expected ',' or '}' in an object")
            depth -= 1
            return object
        }
    }

    private mutating func parseArray() throws(PayloadError) -> [JSONValue] {
        try enter()
        offset += 1  // [
        var elements: [JSONValue] = []
        skipWhitespace()
        if offset < input.count, input[offset] == UInt8(ascii: "]") {
            offset += 1
            depth -= 1
            return elements
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue())
            skipWhitespace()
            guard offset < input.count else {
                throw .syntax("unexpected end of input inside an array", at: offset)
            }
            if input[offset] == UInt8(ascii: ",") {
                offset += 1
                continue
            }
            try expect(UInt8(ascii: "]"), "expected ',' or ']' in an array")
            depth -= 1
            return elements
        }
    }

    // MARK: Strings

    private mutating func parseString() throws(PayloadError) -> String {
        let quoteOffset = offset
        offset += 1  // "
        let start = offset
        // Fast path: no escapes.
        while offset < input.count {
            let byte = input[offset]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: input[start..<offset])
                offset += 1
                return try makeString(slice, at: start)
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 {
                throw .syntax("unescaped control character \(describe(byte)) in a string", at: offset)
            }
            offset += 1
        }
        guard offset < input.count else {
            throw .syntax("unterminated string", at: quoteOffset)
        }
        var scratch = Array(UnsafeBufferPointer(rebasing: input[start..<offset]))
        while offset < input.count {
            let byte = input[offset]
            switch byte {
            case UInt8(ascii: "\""):
                // Escapes are ASCII and decode to valid UTF-8, so checking the raw input
                // checks the content and gives the offset of a bad byte in the input.
                if let invalid = Self.firstInvalidUTF8Offset(UnsafeBufferPointer(rebasing: input[start..<offset])) {
                    throw .syntax("invalid UTF-8 in a string", at: start + invalid)
                }
                offset += 1
                return String(decoding: scratch, as: UTF8.self)
            case UInt8(ascii: "\\"):
                try parseEscape(into: &scratch)
            case 0x00..<0x20:
                throw .syntax("unescaped control character \(describe(byte)) in a string", at: offset)
            default:
                scratch.append(byte)
                offset += 1
            }
        }
        throw .syntax("unterminated string", at: quoteOffset)
    }

    private func makeString(_ utf8: UnsafeBufferPointer<UInt8>, at start: Int) throws(PayloadError) -> String {
        if let invalid = Self.firstInvalidUTF8Offset(utf8) {
            throw .syntax("invalid UTF-8 in a string", at: start + invalid)
        }
        // Valid, so `String(decoding:)` (specialized and fast) repairs nothing.
        return String(decoding: utf8, as: UTF8.self)
    }

    /// The offset of the first byte that starts an ill-formed UTF-8 sequence
    /// ([RFC 3629 §4](https://www.rfc-editor.org/rfc/rfc3629#section-4)), or `nil`.
    static func firstInvalidUTF8Offset(_ utf8: UnsafeBufferPointer<UInt8>) -> Int? {
        var index = 0
        let count = utf8.count
        while index < count {
            // ASCII eight bytes at a time.
            if index &+ 8 <= count,
                UnsafeRawPointer(utf8.baseAddress! + index).loadUnaligned(as: UInt64.self) & 0x8080_8080_8080_8080 == 0
            {
                index &+= 8
                continue
            }
            let lead = utf8[index]
            if lead < 0x80 {
                index &+= 1
                continue
            }
            let length: Int
            var secondRange: ClosedRange<UInt8> = 0x80...0xBF
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; secondRange = 0xA0...0xBF
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: length = 3; secondRange = 0x80...0x9F  // no surrogates
            case 0xF0: length = 4; secondRange = 0x90...0xBF
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; secondRange = 0x80...0x8F  // at most U+10FFFF
            default: return index
            }
            guard index + length <= count, secondRange.contains(utf8[index + 1]) else { return index }
            for continuation in 2..<length where utf8[index + continuation] & 0xC0 != 0x80 {
                return index
            }
            index += length
        }
        return nil
    }

    private mutating func parseEscape(into scratch: inout [UInt8]) throws(PayloadError) {
        let escapeOffset = offset
        offset += 1  // backslash
        guard offset < input.count else {
            throw .syntax("unterminated escape", at: escapeOffset)
        }
        let byte = input[offset]
        offset += 1
        switch byte {
        case UInt8(ascii: "\""): scratch.append(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): scratch.append(UInt8(ascii: "\\"))
        case UInt8(ascii: "/"): scratch.append(UInt8(ascii: "/"))
        case UInt8(ascii: "b"): scratch.append(0x08)
        case UInt8(ascii: "f"): scratch.append(0x0C)
        case UInt8(ascii: "n"): scratch.append(0x0A)
        case UInt8(ascii: "r"): scratch.append(0x0D)
        case UInt8(ascii: "t"): scratch.append(0x09)
        case UInt8(ascii: "u"):
            var code = try parseHex4()
            if 0xD800...0xDBFF ~= code {
                guard offset + 1 < input.count, input[offset] == UInt8(ascii: "\\"),
                    input[offset + 1] == UInt8(ascii: "u")
                else {
                    throw .syntax("high surrogate without a low surrogate", at: escapeOffset)
                }
                offset += 2
                let low = try parseHex4()
                guard 0xDC00...0xDFFF ~= low else {
                    throw .syntax("high surrogate without a low surrogate", at: escapeOffset)
                }
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
            } else if 0xDC00...0xDFFF ~= code {
                throw .syntax("lone low surrogate", at: escapeOffset)
            }
            guard let scalar = Unicode.Scalar(code) else {
                throw .syntax("invalid Unicode escape", at: escapeOffset)
            }
            scratch.append(contentsOf: UTF8.encode(scalar)!)
        default:
            throw .syntax("invalid escape \\\(describe(byte))", at: escapeOffset)
        }
    }

    private mutating func parseHex4() throws(PayloadError) -> UInt32 {
        guard offset + 4 <= input.count else {
            throw .syntax("truncated \\u escape", at: offset)
        }
        var code: UInt32 = 0
        for _ in 0..<4 {
            let byte = input[offset]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw .syntax("invalid hex digit \(describe(byte)) in \\u escape", at: offset)
            }
            code = code << 4 | UInt32(digit)
            offset += 1
        }
        return code
    }

    // MARK: Numbers

    private mutating func parseNumber() throws(PayloadError) -> JSONValue {
        let start = offset
        var isInteger = true
        if input[offset] == UInt8(ascii: "-") { offset += 1 }
        guard offset < input.count, isDigit(input[offset]) else {
            throw .syntax("expected a digit", at: offset)
        }
        if input[offset] == UInt8(ascii: "0") {
            offset += 1
            if offset < input.count, isDigit(input[offset]) {
                throw .syntax("leading zero in a number", at: start)
            }
        } else {
            while offset < input.count, isDigit(input[offset]) { offset += 1 }
        }
        if offset < input.count, input[offset] == UInt8(ascii: ".") {
            isInteger = false
            offset += 1
            guard offset < input.count, isDigit(input[offset]) else {
                throw .syntax("expected a digit after '.'", at: offset)
            }
            while offset < input.count, isDigit(input[offset]) { offset += 1 }
        }
        if offset < input.count, input[offset] == UInt8(ascii: "e") || input[offset] == UInt8(ascii: "E") {
            isInteger = false
            offset += 1
            if offset < input.count, input[offset] == UInt8(ascii: "+") || input[offset] == UInt8(ascii: "-") {
                offset += 1
            }
            guard offset < input.count, isDigit(input[offset]) else {
                throw .syntax("expected a digit in the exponent", at: offset)
            }
            while offset < input.count, isDigit(input[offset]) { offset += 1 }
        }
        let text = UnsafeBufferPointer(rebasing: input[start..<offset])
        if isInteger {
            // "-0" (RFC 8259 allows it): a double, which keeps the sign.
            if text.count == 2, text[0] == UInt8(ascii: "-"), text[1] == UInt8(ascii: "0") { return .double(-0.0) }
            guard let integer = parseInt64(text) else {
                // As a double it would lose its last digits (12345678901234567890 comes
                // back as 1.2345678901234567e+19): a forwarded payload must keep its values.
                throw PayloadError(
                    code: .valueOutOfRange, keyPath: "",
                    rule: "the integer \(String(decoding: text, as: UTF8.self)) is outside the 64-bit range and would lose digits; "
                        + "send such a payload's bytes as they are (PushNotification.Body.raw) or write the number as a string",
                    byteOffset: start)
            }
            return .integer(integer)
        }
        // The grammar was checked above, so Double's parser sees a valid literal.
        guard let double = Double(String(decoding: text, as: UTF8.self)), double.isFinite else {
            throw .syntax("number out of range", at: start)
        }
        return .double(double)
    }

    private func parseInt64(_ text: UnsafeBufferPointer<UInt8>) -> Int64? {
        var index = 0
        let negative = text[0] == UInt8(ascii: "-")
        if negative { index = 1 }
        var magnitude: UInt64 = 0
        while index < text.count {
            let (m1, o1) = magnitude.multipliedReportingOverflow(by: 10)
            let (m2, o2) = m1.addingReportingOverflow(UInt64(text[index] - UInt8(ascii: "0")))
            if o1 || o2 { return nil }
            magnitude = m2
            index += 1
        }
        if negative {
            if magnitude == 0 { return nil }  // "-0" keeps its sign as a double (parseNumber)
            if magnitude <= UInt64(Int64.max) { return -Int64(magnitude) }
            if magnitude == UInt64(Int64.max) + 1 { return Int64.min }
            return nil
        }
        return magnitude <= UInt64(Int64.max) ? Int64(magnitude) : nil
    }

    // MARK: Helpers

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private mutating func skipWhitespace() {
        while offset < input.count {
            switch input[offset] {
            case 0x20, 0x09, 0x0A, 0x0D: offset += 1
            default: return
            }
        }
    }

    private mutating func expect(_ byte: UInt8, _ message: String) throws(PayloadError) {
        guard offset < input.count else {
            throw .syntax("unexpected end of input; \(message)", at: offset)
        }
        guard input[offset] == byte else {
            throw .syntax("unexpected \(describe(input[offset])); \(message)", at: offset)
        }
        offset += 1
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(PayloadError) {
        let start = offset
        let matched = literal.withUTF8Buffer { expected -> Bool in
            guard offset + expected.count <= input.count else { return false }
            for index in expected.indices where input[offset + index] != expected[index] {
                return false
            }
            return true
        }
        guard matched else {
            throw .syntax("invalid literal, expected \(literal)", at: start)
        }
        offset += literal.utf8CodeUnitCount
    }

    private func describe(_ byte: UInt8) -> String {
        if byte >= 0x21 && byte < 0x7F {
            return "'\(Character(Unicode.Scalar(byte)))'"
        }
        let hex = String(byte, radix: 16, uppercase: true)
        return "byte 0x" + (hex.count == 1 ? "0" + hex : hex)
    }
}
