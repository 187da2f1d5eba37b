/// The address of one app on one device, as the app received it from
/// `application(_:didRegisterForRemoteNotificationsWithDeviceToken:)`.
///
/// Device tokens are variable-length: most are 32 bytes today, but Apple warns never to
/// hard-code a length, and 80-byte tokens exist. A token keeps its bytes (inline, with no
/// heap allocation, up to 32 of them); its lowercase hexadecimal form, which the request
/// path `/3/device/<token>` needs, is written on demand.
///
/// ``description`` is redacted (the first 8 hexadecimal digits and "…") so that a token
/// printed or logged by accident cannot be used to address a device. To store a token,
/// compare it or send it elsewhere, use ``hexString`` (or `Codable`, which encodes the
/// whole token as its hexadecimal string): never `description` or string interpolation.
///
/// See [Sending notification requests to APNs](https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns).
public struct DeviceToken: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The token's bytes: up to 32 inline (four words and a count, no heap allocation),
    /// longer ones in an array. A token of at most 32 bytes is always inline, so equal
    /// tokens have equal storage and the synthesized `Hashable` is right.
    @usableFromInline
    enum Storage: Sendable, Hashable {
        case inline(UInt64, UInt64, UInt64, UInt64, count: UInt8)
        case heap([UInt8])
    }

    @usableFromInline let storage: Storage

    /// The most bytes kept inline.
    static let inlineCapacity = 32

    /// Parses a token written in hexadecimal, in either case.
    ///
    /// - Throws: ``APNsRequestError`` with code ``APNsRequestError/Code/invalidDeviceToken``
    ///   if `hex` is empty, has an odd number of digits, or holds a character that is not a
    ///   hexadecimal digit (``APNsRequestError/position`` says where).
    public init(hex: String) throws(APNsRequestError) {
        var hex = hex
        let parsed: Result<DeviceToken, APNsRequestError>? = hex.withUTF8 { digits in
            if digits.isEmpty {
                return .failure(APNsRequestError(.invalidDeviceToken, position: 0, "device token is empty"))
            }
            var bytes = TokenBytes()
            var index = 0
            while index < digits.count {
                guard let high = Self.value(ofHexDigit: digits[index]) else { return nil }
                guard index + 1 < digits.count else {
                    return .failure(
                        APNsRequestError(
                            .invalidDeviceToken,
                            position: digits.count - 1,
                            "device token has an odd number of hexadecimal digits (\(digits.count)); "
                                + "the digit at position \(digits.count - 1) has no pair"
                        )
                    )
                }
                guard let low = Self.value(ofHexDigit: digits[index + 1]) else { return nil }
                bytes.append(high << 4 | low)
                index += 2
            }
            return .success(DeviceToken(storage: bytes.storage))
        }
        switch parsed {
        case .success(let token): self = token
        case .failure(let error): throw error
        case nil: throw Self.nonHexError(in: hex)
        }
    }

    /// Wraps the token's bytes, as the device delivered them.
    ///
    /// A token of up to 32 bytes (every token today) is kept inline: making one allocates
    /// nothing.
    ///
    /// - Throws: ``APNsRequestError`` with code ``APNsRequestError/Code/invalidDeviceToken``
    ///   if `bytes` is empty.
    public init(bytes: some Collection<UInt8>) throws(APNsRequestError) {
        if bytes.isEmpty {
            throw APNsRequestError(.invalidDeviceToken, position: 0, "device token is empty")
        }
        if let token = bytes.withContiguousStorageIfAvailable(DeviceToken.init(contiguous:)) {
            self = token
            return
        }
        var collected = TokenBytes()
        for byte in bytes { collected.append(byte) }
        self.init(storage: collected.storage)
    }

    /// The bytes of a non-empty buffer: up to 32 packed into words with big-endian loads,
    /// no per-byte generic iteration.
    private init(contiguous bytes: UnsafeBufferPointer<UInt8>) {
        guard bytes.count <= Self.inlineCapacity else {
            self.init(storage: .heap(Array(bytes)))
            return
        }
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &words) { raw in
            raw.copyMemory(from: UnsafeRawBufferPointer(bytes))
        }
        // The bytes were copied in order; each word holds them big-endian (first byte in
        // the high bits), as TokenBytes packs them.
        self.init(
            storage: .inline(
                UInt64(bigEndian: words.0),
                UInt64(bigEndian: words.1),
                UInt64(bigEndian: words.2),
                UInt64(bigEndian: words.3),
                count: UInt8(bytes.count)
            )
        )
    }

    @usableFromInline
    init(storage: Storage) {
        self.storage = storage
    }

    /// The token's bytes.
    public var bytes: [UInt8] {
        var result = [UInt8]()
        result.reserveCapacity(byteCount)
        forEachByte { result.append($0) }
        return result
    }

    /// The number of bytes in the token (32 for most tokens today; never assume it).
    public var byteCount: Int {
        switch storage {
        case .inline(_, _, _, _, let count): Int(count)
        case .heap(let bytes): bytes.count
        }
    }

    /// The whole token as lowercase hexadecimal, as sent in the request path; made on
    /// demand (the token keeps its bytes).
    public var hexString: String {
        String(unsafeUninitializedCapacity: byteCount * 2) { buffer in
            writeHex(into: UnsafeMutableRawBufferPointer(buffer))
        }
    }

    /// Writes the lowercase hexadecimal digits into `buffer` (at least two bytes per
    /// token byte) and returns how many were written.
    ///
    /// Two digits per byte from a table, stored as one 16-bit word: the transport writes
    /// a token's digits once per request.
    @discardableResult
    func writeHex(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        Self.hexPairs.withUnsafeBufferPointer { pairs -> Int in
            switch storage {
            case .inline(let w0, let w1, let w2, let w3, let count):
                let count = Int(count)
                precondition(buffer.count >= 2 * count, "a token of \(count) bytes needs \(2 * count) digits")
                // The words hold the bytes big-endian: in memory, in the token's order.
                var words = (w0.bigEndian, w1.bigEndian, w2.bigEndian, w3.bigEndian)
                return withUnsafeBytes(of: &words) { bytes in
                    for index in 0..<count {
                        buffer.storeBytes(of: pairs[Int(bytes[index])], toByteOffset: 2 * index, as: UInt16.self)
                    }
                    return 2 * count
                }
            case .heap(let bytes):
                precondition(buffer.count >= 2 * bytes.count, "a token of \(bytes.count) bytes needs \(2 * bytes.count) digits")
                for (index, byte) in bytes.enumerated() {
                    buffer.storeBytes(of: pairs[Int(byte)], toByteOffset: 2 * index, as: UInt16.self)
                }
                return 2 * bytes.count
            }
        }
    }

    /// For each byte value, its two lowercase digits as a 16-bit word that, stored, puts
    /// the high digit first.
    private static let hexPairs: [UInt16] = (0..<256).map { byte in
        (UInt16(hexDigit(UInt8(byte & 0x0F))) << 8 | UInt16(hexDigit(UInt8(byte >> 4)))).littleEndian
    }

    /// Calls `body` with each byte, in order.
    @inline(__always)
    func forEachByte(_ body: (UInt8) -> Void) {
        switch storage {
        case .inline(let w0, let w1, let w2, let w3, let count):
            for index in 0..<Int(count) {
                let word = index < 16 ? (index < 8 ? w0 : w1) : (index < 24 ? w2 : w3)
                body(UInt8(truncatingIfNeeded: word >> UInt64(56 - (index % 8) * 8)))
            }
        case .heap(let bytes):
            for byte in bytes { body(byte) }
        }
    }

    /// The lowercase hexadecimal digit of `nibble` (0...15).
    @inline(__always)
    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? 0x30 + nibble : 0x57 + nibble
    }

    /// Collects bytes into inline words, spilling to an array past 32.
    private struct TokenBytes {
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        var count = 0
        var spilled: [UInt8]?

        mutating func append(_ byte: UInt8) {
            if spilled != nil {
                spilled?.append(byte)
                return
            }
            if count == DeviceToken.inlineCapacity {
                var array = [UInt8]()
                array.reserveCapacity(80)
                DeviceToken(storage: storage).forEachByte { array.append($0) }
                array.append(byte)
                spilled = array
                return
            }
            let shift = UInt64(56 - (count % 8) * 8)
            let value = UInt64(byte) << shift
            switch count / 8 {
            case 0: words.0 |= value
            case 1: words.1 |= value
            case 2: words.2 |= value
            default: words.3 |= value
            }
            count += 1
        }

        var storage: Storage {
            if let spilled { return .heap(spilled) }
            return .inline(words.0, words.1, words.2, words.3, count: UInt8(count))
        }
    }

    /// The value of one hexadecimal digit, in either case, or `nil` (the proxy URL parser
    /// reads percent escapes with it too).
    package static func value(ofHexDigit digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// A redacted form safe for logs: the first 8 hexadecimal digits followed by "…"
    /// (fewer digits for a token shorter than 8 bytes, never more than half of it).
    public var redacted: String {
        let shown = min(8, byteCount)
        return String(hexString.prefix(shown)) + "…"
    }

    /// The redacted form, ``redacted``, for logs: never the whole token, so not for
    /// storing or comparing tokens (use ``hexString``).
    public var description: String { redacted }

    /// The redacted form, ``redacted``; never the whole token.
    public var debugDescription: String { "DeviceToken(\(redacted), \(byteCount) bytes)" }

    private static func nonHexError(in hex: String) -> APNsRequestError {
        for (position, character) in hex.enumerated() where !character.isHexDigit || !character.isASCII {
            let printable = character.asciiValue.map { $0 > 0x20 && $0 < 0x7F } ?? false
            let shown =
                printable
                ? "'\(character)'"
                : character.unicodeScalars.map { "U+" + String($0.value, radix: 16, uppercase: true) }
                    .joined(separator: " ")
            // `<00fc13ad ff785122 …>`: NSData's description, as old apps logged tokens.
            let described = hex.hasPrefix("<") && hex.hasSuffix(">") || hex.contains(" ") && hex.allSatisfy { $0.isHexDigit || $0 == " " }
            return APNsRequestError(
                .invalidDeviceToken,
                position: position,
                "device token has a character that is not a hexadecimal digit, \(shown), at position \(position)"
                    + (described ? "; a token copied as NSData's description (<00fc13ad ff785122 …>) needs its brackets and spaces removed" : "")
            )
        }
        return APNsRequestError(.invalidDeviceToken, position: 0, "device token is not hexadecimal")
    }
}

extension DeviceToken: CustomReflectable {
    /// The redacted form and the length as the only children, so that `dump(_:)`, a
    /// debugger's summary and any other reflection of a value holding a token (an
    /// ``APNsOutcome``, an error) show ``redacted``, not the stored bytes from which the
    /// whole token could be rebuilt.
    public var customMirror: Mirror {
        Mirror(self, children: ["redacted": redacted, "byteCount": byteCount], displayStyle: .struct)
    }
}

extension DeviceToken: Codable {
    /// Decodes the whole token from its hexadecimal string (either case).
    ///
    /// - Throws: `DecodingError.dataCorrupted` saying what is wrong and where.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        do {
            self = try DeviceToken(hex: text)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.description)
        }
    }

    /// Encodes the whole token as its lowercase hexadecimal string (``hexString``).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(hexString)
    }
}
