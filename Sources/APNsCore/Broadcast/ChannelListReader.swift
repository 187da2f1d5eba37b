/// Reads APNs's answer to a channel list, `{"channels": ["<base64 ID>", …]}`, in one pass
/// over the bytes, checking each entry as it comes: what it keeps is the channels, nothing
/// per entry besides.
///
/// A general JSON decoder builds a value for every entry before any is checked: a body of
/// 4 MiB (the transport's limit for channel answers) of `[1,1,1,…]` cost about 109 MB (an
/// outside audit), so a few such answers at once could take hundreds of megabytes. Other
/// members of the object are skipped (to a nesting depth of 64), as a decoder would.
enum ChannelListReader {
    /// Why a body is not a channel list.
    enum Failure: Error, Equatable {
        /// Not a JSON object with an array `channels`.
        case notAList
        /// The entry at this position is not a base64 channel ID.
        case entry(Int)
    }

    /// The channels the body lists, or why it does not.
    static func channels(in body: [UInt8]) -> Result<[ChannelID], Failure> {
        body.withUnsafeBufferPointer { bytes in
            var scanner = Scanner(bytes: bytes)
            do throws(Failure) {
                return .success(try scanner.list())
            } catch {
                return .failure(error)
            }
        }
    }

    private struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        var position = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        mutating func list() throws(Failure) -> [ChannelID] {
            var channels: [ChannelID]?
            try expect(UInt8(ascii: "{"))
            if !take(UInt8(ascii: "}")) {
                repeat {
                    let key = try string()
                    try expect(UInt8(ascii: ":"))
                    if key == "channels" {
                        channels = try entries()
                    } else {
                        try skipValue(depth: 0)
                    }
                } while take(UInt8(ascii: ","))
                try expect(UInt8(ascii: "}"))
            }
            skipSpace()
            guard position == bytes.count, let channels else { throw .notAList }
            return channels
        }

        /// The array of channel IDs, each checked as it is read.
        mutating func entries() throws(Failure) -> [ChannelID] {
            try expect(UInt8(ascii: "["))
            var channels: [ChannelID] = []
            if take(UInt8(ascii: "]")) { return channels }
            repeat {
                skipSpace()
                guard position < bytes.count, bytes[position] == UInt8(ascii: "\""),
                    let channel = try? ChannelID(try string())
                else { throw .entry(channels.count) }
                channels.append(channel)
            } while take(UInt8(ascii: ","))
            try expect(UInt8(ascii: "]"))
            return channels
        }

        mutating func skipSpace() {
            while position < bytes.count {
                switch bytes[position] {
                case 0x20, 0x09, 0x0A, 0x0D: position += 1
                default: return
                }
            }
        }

        /// Skips white space and takes `byte` if it comes next.
        mutating func take(_ byte: UInt8) -> Bool {
            skipSpace()
            guard position < bytes.count, bytes[position] == byte else { return false }
            position += 1
            return true
        }

        mutating func expect(_ byte: UInt8) throws(Failure) {
            guard take(byte) else { throw .notAList }
        }

        /// A JSON string (RFC 8259 §7), its escapes decoded.
        mutating func string() throws(Failure) -> String {
            try expect(UInt8(ascii: "\""))
            var text: [UInt8] = []
            while position < bytes.count {
                let byte = bytes[position]
                position += 1
                switch byte {
                case UInt8(ascii: "\""):
                    guard let decoded = String(validating: text, as: UTF8.self) else { throw .notAList }
                    return decoded
                case UInt8(ascii: "\\"):
                    guard position < bytes.count else { throw .notAList }
                    let escaped = bytes[position]
                    position += 1
                    switch escaped {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): text.append(escaped)
                    case UInt8(ascii: "b"): text.append(0x08)
                    case UInt8(ascii: "f"): text.append(0x0C)
                    case UInt8(ascii: "n"): text.append(0x0A)
                    case UInt8(ascii: "r"): text.append(0x0D)
                    case UInt8(ascii: "t"): text.append(0x09)
                    case UInt8(ascii: "u"):
                        // Not in a channel ID; kept as text only to compare keys.
                        guard let scalar = try unicodeEscape() else { throw .notAList }
                        text.append(contentsOf: Array(String(Character(scalar)).utf8))
                    default: throw .notAList
                    }
                case 0x00..<0x20: throw .notAList
                default: text.append(byte)
                }
            }
            throw .notAList
        }

        /// The scalar of a `\uXXXX` escape (and of its low surrogate's, when it is a high one).
        mutating func unicodeEscape() throws(Failure) -> Unicode.Scalar? {
            let high = try hex4()
            if (0xD800..<0xDC00).contains(high) {
                guard take(UInt8(ascii: "\\")), take(UInt8(ascii: "u")) else { throw .notAList }
                let low = try hex4()
                guard (0xDC00..<0xE000).contains(low) else { throw .notAList }
                return Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
            }
            return Unicode.Scalar(high)
        }

        mutating func hex4() throws(Failure) -> UInt32 {
            guard position + 4 <= bytes.count else { throw .notAList }
            var value: UInt32 = 0
            for _ in 0..<4 {
                guard let digit = DeviceToken.value(ofHexDigit: bytes[position]) else { throw .notAList }
                value = value << 4 | UInt32(digit)
                position += 1
            }
            return value
        }

        /// Skips any JSON value, to a nesting depth of 64.
        mutating func skipValue(depth: Int) throws(Failure) {
            guard depth < 64 else { throw .notAList }
            skipSpace()
            guard position < bytes.count else { throw .notAList }
            switch bytes[position] {
            case UInt8(ascii: "\""):
                _ = try string()
            case UInt8(ascii: "{"):
                position += 1
                if take(UInt8(ascii: "}")) { return }
                repeat {
                    _ = try string()
                    try expect(UInt8(ascii: ":"))
                    try skipValue(depth: depth + 1)
                } while take(UInt8(ascii: ","))
                try expect(UInt8(ascii: "}"))
            case UInt8(ascii: "["):
                position += 1
                if take(UInt8(ascii: "]")) { return }
                repeat {
                    try skipValue(depth: depth + 1)
                } while take(UInt8(ascii: ","))
                try expect(UInt8(ascii: "]"))
            case UInt8(ascii: "t"): try literal("true")
            case UInt8(ascii: "f"): try literal("false")
            case UInt8(ascii: "n"): try literal("null")
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                try number()
            default:
                throw .notAList
            }
        }

        /// Skips a number as RFC 8259 §6 writes it: `-`, then `0` or a digit sequence not
        /// starting with 0, then an optional fraction and exponent (`1.`, `01`, `+1` and
        /// `1e` are not JSON).
        mutating func number() throws(Failure) {
            _ = takeRaw(UInt8(ascii: "-"))
            if takeRaw(UInt8(ascii: "0")) {
                // A leading zero stands alone.
            } else if digits() == 0 {
                throw .notAList
            }
            if takeRaw(UInt8(ascii: ".")), digits() == 0 { throw .notAList }
            if takeRaw(UInt8(ascii: "e")) || takeRaw(UInt8(ascii: "E")) {
                if !takeRaw(UInt8(ascii: "+")) { _ = takeRaw(UInt8(ascii: "-")) }
                if digits() == 0 { throw .notAList }
            }
        }

        /// Takes the decimal digits that come next; how many.
        mutating func digits() -> Int {
            let start = position
            while position < bytes.count, bytes[position] >= UInt8(ascii: "0"), bytes[position] <= UInt8(ascii: "9") {
                position += 1
            }
            return position - start
        }

        /// Takes `byte` if it comes next, white space not skipped.
        mutating func takeRaw(_ byte: UInt8) -> Bool {
            guard position < bytes.count, bytes[position] == byte else { return false }
            position += 1
            return true
        }

        /// Takes exactly `word`.
        mutating func literal(_ word: StaticString) throws(Failure) {
            let count = word.utf8CodeUnitCount
            guard position + count <= bytes.count else { throw .notAList }
            let matches = word.withUTF8Buffer { expected in
                (0..<count).allSatisfy { bytes[position + $0] == expected[$0] }
            }
            guard matches else { throw .notAList }
            position += count
        }
    }
}
