/// The JSON body of an APNs error response, `{"reason": "...", "timestamp": 1700000000000}`,
/// read by a small strict JSON (RFC 8259) reader.
///
/// Only `reason` (a string) and `timestamp` (a number, integer or not) at the top level are
/// kept; other members of any type are skipped. A body that is not a JSON object gives
/// `nil`, and a caller still reports the HTTP status.
package struct APNsErrorBody: Sendable, Hashable {
    /// The `reason` member, if it is a string.
    package var reason: String?
    /// The `timestamp` member, if it is a number of milliseconds since 1970 within
    /// ``plausibleTimestamps`` (for a 410); a number outside them (negative, 1e300, beyond
    /// the range of `Double`) is kept as absent, and the `reason` still counts.
    package var timestamp: Double?

    /// The timestamps an APNs answer can carry, in milliseconds since 1970: from
    /// 2008-01-01 (before APNs existed) to 2100-01-01.
    static let plausibleTimestamps: ClosedRange<Double> = 1_199_145_600_000...4_102_444_800_000

    /// Reads `bytes`; `nil` if they are not one JSON object (surrounded by optional whitespace).
    init?(parsing bytes: some Collection<UInt8>) {
        var reader = Reader(bytes: Array(bytes))
        guard let body = try? reader.readBody() else { return nil }
        self = body
    }

    init(reason: String?, timestamp: Double?) {
        self.reason = reason
        self.timestamp = timestamp
    }

    private struct Malformed: Error {}

    private struct Reader {
        let bytes: [UInt8]
        var index = 0
        let maximumDepth = 64

        init(bytes: [UInt8]) { self.bytes = bytes }

        mutating func readBody() throws(Malformed) -> APNsErrorBody {
            var body = APNsErrorBody(reason: nil, timestamp: nil)
            skipWhitespace()
            try expect(UInt8(ascii: "{"))
            skipWhitespace()
            if peek() == UInt8(ascii: "}") {
                index += 1
            } else {
                while true {
                    skipWhitespace()
                    let key = try readString()
                    skipWhitespace()
                    try expect(UInt8(ascii: ":"))
                    skipWhitespace()
                    switch (key, peek()) {
                    case ("reason", UInt8(ascii: "\"")):
                        body.reason = try readString()
                    case ("timestamp", _) where peek().map(Self.startsNumber) == true:
                        let number = try readNumber()
                        body.timestamp = APNsErrorBody.plausibleTimestamps.contains(number) ? number : nil
                    default:
                        try skipValue(depth: 1)
                    }
                    skipWhitespace()
                    guard let next = peek() else { throw Malformed() }
                    index += 1
                    if next == UInt8(ascii: "}") { break }
                    if next != UInt8(ascii: ",") { throw Malformed() }
                }
            }
            skipWhitespace()
            guard index == bytes.count else { throw Malformed() }
            return body
        }

        private static func startsNumber(_ byte: UInt8) -> Bool {
            byte == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        }

        private func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

        private mutating func expect(_ byte: UInt8) throws(Malformed) {
            guard peek() == byte else { throw Malformed() }
            index += 1
        }

        private mutating func skipWhitespace() {
            while let byte = peek(), byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D {
                index += 1
            }
        }

        private mutating func skipValue(depth: Int) throws(Malformed) {
            guard depth <= maximumDepth, let byte = peek() else { throw Malformed() }
            switch byte {
            case UInt8(ascii: "\""):
                _ = try readString()
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let close = byte == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
                index += 1
                skipWhitespace()
                if peek() == close {
                    index += 1
                    return
                }
                while true {
                    skipWhitespace()
                    if close == UInt8(ascii: "}") {
                        _ = try readString()
                        skipWhitespace()
                        try expect(UInt8(ascii: ":"))
                        skipWhitespace()
                    }
                    try skipValue(depth: depth + 1)
                    skipWhitespace()
                    guard let next = peek() else { throw Malformed() }
                    index += 1
                    if next == close { return }
                    if next != UInt8(ascii: ",") { throw Malformed() }
                }
            case UInt8(ascii: "t"): try literal("true")
            case UInt8(ascii: "f"): try literal("false")
            case UInt8(ascii: "n"): try literal("null")
            default:
                _ = try readNumber()
            }
        }

        private mutating func literal(_ word: StaticString) throws(Malformed) {
            let count = word.utf8CodeUnitCount
            guard index + count <= bytes.count else { throw Malformed() }
            let matches = word.withUTF8Buffer { expected in
                expected.elementsEqual(bytes[index..<index + count])
            }
            guard matches else { throw Malformed() }
            index += count
        }

        /// A number as RFC 8259 §6 defines it: `-? int frac? exp?`.
        private mutating func readNumber() throws(Malformed) -> Double {
            let start = index
            if peek() == UInt8(ascii: "-") { index += 1 }
            guard let first = peek(), (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { throw Malformed() }
            if first == UInt8(ascii: "0") {
                index += 1
            } else {
                skipDigits()
            }
            if peek() == UInt8(ascii: ".") {
                index += 1
                guard try requireDigits() else { throw Malformed() }
            }
            if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
                index += 1
                if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { index += 1 }
                guard try requireDigits() else { throw Malformed() }
            }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            // A well-formed number beyond Double's range (1e400) reads as infinity: valid
            // JSON (RFC 8259 §6 sets no limit), so it must not make the body unreadable.
            guard let value = Double(text) else { throw Malformed() }
            return value
        }

        private mutating func skipDigits() {
            while let byte = peek(), (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { index += 1 }
        }

        private mutating func requireDigits() throws(Malformed) -> Bool {
            let start = index
            skipDigits()
            return index > start
        }

        /// A string with every RFC 8259 §7 escape, including `\u` surrogate pairs.
        private mutating func readString() throws(Malformed) -> String {
            try expect(UInt8(ascii: "\""))
            var scalars = String.UnicodeScalarView()
            var run = [UInt8]()
            // RFC 8259 §8.1: the text is UTF-8; invalid bytes make the body malformed rather
            // than turning into U+FFFD (a fuzz finding: "Unavai\u{85}…lable" was read as a reason).
            func flush(_ run: inout [UInt8], into scalars: inout String.UnicodeScalarView) throws(Malformed) {
                if !run.isEmpty {
                    guard let text = String(validating: run, as: UTF8.self) else { throw Malformed() }
                    scalars.append(contentsOf: text.unicodeScalars)
                    run.removeAll(keepingCapacity: true)
                }
            }
            while true {
                guard let byte = peek() else { throw Malformed() }
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    try flush(&run, into: &scalars)
                    return String(scalars)
                case UInt8(ascii: "\\"):
                    try flush(&run, into: &scalars)
                    guard let escaped = peek() else { throw Malformed() }
                    index += 1
                    switch escaped {
                    case UInt8(ascii: "\""): scalars.append("\"")
                    case UInt8(ascii: "\\"): scalars.append("\\")
                    case UInt8(ascii: "/"): scalars.append("/")
                    case UInt8(ascii: "b"): scalars.append("\u{08}")
                    case UInt8(ascii: "f"): scalars.append("\u{0C}")
                    case UInt8(ascii: "n"): scalars.append("\n")
                    case UInt8(ascii: "r"): scalars.append("\r")
                    case UInt8(ascii: "t"): scalars.append("\t")
                    case UInt8(ascii: "u"):
                        let unit = try readHex4()
                        if (0xD800...0xDBFF).contains(unit) {
                            guard peek() == UInt8(ascii: "\\") else { throw Malformed() }
                            index += 1
                            guard peek() == UInt8(ascii: "u") else { throw Malformed() }
                            index += 1
                            let low = try readHex4()
                            guard (0xDC00...0xDFFF).contains(low) else { throw Malformed() }
                            let value = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                            guard let scalar = Unicode.Scalar(value) else { throw Malformed() }
                            scalars.append(scalar)
                        } else {
                            guard let scalar = Unicode.Scalar(unit) else { throw Malformed() }
                            scalars.append(scalar)
                        }
                    default:
                        throw Malformed()
                    }
                case 0x00..<0x20:
                    throw Malformed()
                default:
                    run.append(byte)
                }
            }
        }

        private mutating func readHex4() throws(Malformed) -> UInt32 {
            guard index + 4 <= bytes.count else { throw Malformed() }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                index += 1
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: throw Malformed()
                }
                value = value << 4 | UInt32(digit)
            }
            return value
        }
    }
}
