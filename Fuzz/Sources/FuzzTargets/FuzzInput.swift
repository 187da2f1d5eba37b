/// Reads structured choices out of the fuzzer's bytes. Past the end it yields zeros, so
/// every input, however short, builds some value; libFuzzer's mutations then steer the
/// choices.
public struct FuzzInput {
    let bytes: [UInt8]
    var index = 0

    /// Reads from `bytes`.
    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Whether every byte was consumed.
    var isAtEnd: Bool { index >= bytes.count }

    /// The next byte, or 0 past the end.
    mutating func byte() -> UInt8 {
        guard index < bytes.count else { return 0 }
        defer { index += 1 }
        return bytes[index]
    }

    /// A number in `0..<bound` (bound ≥ 1).
    mutating func int(below bound: Int) -> Int {
        Int(byte()) % bound
    }

    /// A Boolean.
    mutating func bool() -> Bool { byte() & 1 == 1 }

    /// Up to `count` raw bytes.
    mutating func bytes(_ count: Int) -> [UInt8] {
        let end = min(bytes.count, index + count)
        guard index < end else { return [] }
        defer { index = end }
        return Array(bytes[index..<end])
    }

    /// A little-endian 64-bit word.
    mutating func uint64() -> UInt64 {
        var value: UInt64 = 0
        for shift in stride(from: 0, to: 64, by: 8) { value |= UInt64(byte()) << UInt64(shift) }
        return value
    }

    /// A string: from a small dictionary of interesting text, or from raw bytes (invalid
    /// UTF-8 becomes U+FFFD, which is what a Swift `String` can hold).
    mutating func string(maxLength: Int = 24, dictionary: [String] = []) -> String {
        let mode = byte()
        if !dictionary.isEmpty, mode & 0x03 == 0 {
            return dictionary[Int(mode >> 2) % dictionary.count]
        }
        if mode & 0x03 == 1 {
            return FuzzInput.interestingStrings[Int(mode >> 2) % FuzzInput.interestingStrings.count]
        }
        let length = int(below: maxLength + 1)
        return String(decoding: bytes(length), as: UTF8.self)
    }

    /// Strings that exercise escaping and UTF-8 edge cases.
    static let interestingStrings: [String] = [
        "", "\"", "\\", "/", "\u{0}", "\u{1F}", "\u{7F}", "\n\r\t\u{08}\u{0C}", "é", "e\u{301}",
        "\u{2028}\u{2029}", "😀", "👩🏽‍🚀", "\u{FFFD}", "\u{10FFFF}", "\u{FEFF}", "aps", "alert",
        "\\u0000", "</script>", String(repeating: "a", count: 300), String(repeating: "\"", count: 40),
    ]
}

/// Reports a violated property: prints it and traps, so libFuzzer saves the input as a
/// crash and the replay runner stops with the message.
func finding(_ target: String, _ message: @autoclosure () -> String) -> Never {
    // Long values are cut: the saved input reproduces the whole case.
    let full = message()
    let text = "FINDING [\(target)]: " + (full.count > 1500 ? String(full.prefix(1500)) + "…" : full)
    print(text)
    fatalError(text)
}

/// Checks one property of a target.
func require(_ condition: Bool, _ target: String, _ message: @autoclosure () -> String) {
    if !condition { finding(target, message()) }
}
