import COpenSSL
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The `apns-id` of a notification: a UUID in canonical lowercase `8-4-4-4-12` form.
///
/// APNs echoes it in the response and uses it in its delivery log; the client generates
/// one per notification when you give none, and a retry reuses it, so the log shows one
/// notification, not several.
///
/// See [Sending notification requests to APNs](https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns).
public struct APNsID: Sendable, Hashable, CustomStringConvertible {
    /// The first 64 of the 128 bits (octets 0–7, big-endian).
    private let high: UInt64
    /// The last 64 bits (octets 8–15, big-endian).
    private let low: UInt64

    /// The canonical lowercase form, for example `eabeae54-14a8-11e5-b60b-1697f925ec7b`.
    ///
    /// The id is kept as its 128 bits; this text is written on demand (a transport writes
    /// the octets straight into its header buffer with `write(into:)` instead).
    public var uuidString: String {
        String(unsafeUninitializedCapacity: Self.textLength) { buffer in
            write(into: UnsafeMutableRawBufferPointer(buffer))
        }
    }

    /// The length of the canonical text: 36 octets.
    package static let textLength = 36

    /// Parses a UUID in `8-4-4-4-12` form, in either case; the result is lowercase.
    ///
    /// - Throws: ``APNsRequestError`` with code ``APNsRequestError/Code/invalidAPNsID`` if
    ///   `string` is not a canonical UUID (the description says at which position).
    public init(_ string: String) throws(APNsRequestError) {
        // Fast path: the contiguous UTF-8 of a native string, parsed in one pass.
        var string = string
        if let parsed = string.withUTF8({ Self.parse($0) }) {
            self = parsed
            return
        }
        // Slow path: only to say what is wrong, and where.
        var count = 0
        for byte in string.utf8 {
            defer { count += 1 }
            guard count < 36 else {
                throw APNsRequestError(
                    .invalidAPNsID,
                    header: "apns-id",
                    position: 36,
                    "apns-id is longer than 36 characters; expected a UUID like eabeae54-14a8-11e5-b60b-1697f925ec7b"
                )
            }
            let isDashPosition = count == 8 || count == 13 || count == 18 || count == 23
            switch byte {
            case UInt8(ascii: "-") where isDashPosition:
                break
            case UInt8(ascii: "0")...UInt8(ascii: "9") where !isDashPosition,
                UInt8(ascii: "a")...UInt8(ascii: "f") where !isDashPosition,
                UInt8(ascii: "A")...UInt8(ascii: "F") where !isDashPosition:
                break
            default:
                throw APNsRequestError(
                    .invalidAPNsID,
                    header: "apns-id",
                    position: count,
                    "apns-id has an unexpected character at UTF-8 offset \(count) (expected "
                        + (isDashPosition ? "'-'" : "a hexadecimal digit")
                        + "); expected a UUID like eabeae54-14a8-11e5-b60b-1697f925ec7b"
                )
            }
        }
        throw APNsRequestError(
            .invalidAPNsID,
            header: "apns-id",
            position: count,
            "apns-id has \(count) characters, not 36; expected a UUID like eabeae54-14a8-11e5-b60b-1697f925ec7b"
        )
    }

    /// The id in `bytes`, a UUID in `8-4-4-4-12` form in either case (for example a
    /// response's `apns-id` header as the transport received it), or `nil` if it is not one.
    /// No `String` is made. With `lowercaseOnly`, uppercase digits are refused too (so the
    /// text `write(into:)` gives back is exactly `bytes`).
    package static func parse(_ bytes: UnsafeBufferPointer<UInt8>, lowercaseOnly: Bool = false) -> APNsID? {
        guard bytes.count == textLength, let base = bytes.baseAddress,
            base[8] == UInt8(ascii: "-"), base[13] == UInt8(ascii: "-"),
            base[18] == UInt8(ascii: "-"), base[23] == UInt8(ascii: "-")
        else { return nil }
        var words: (UInt64, UInt64) = (0, 0)
        var valid = true
        for digit in 0..<32 {
            // The offset of hexadecimal digit `digit`, past the dashes before it.
            let offset = digit + (digit >= 8 ? 1 : 0) + (digit >= 12 ? 1 : 0) + (digit >= 16 ? 1 : 0) + (digit >= 20 ? 1 : 0)
            let byte = base[offset]
            let lower = byte | 0x20
            let isDigit = byte &- UInt8(ascii: "0") < 10
            let isLetter = lower &- UInt8(ascii: "a") < 6 && (!lowercaseOnly || byte == lower)
            valid = valid && (isDigit || isLetter)
            // '0'...'9' → 0...9; 'a'...'f' and 'A'...'F' → 10...15.
            let value = UInt64((byte & 0x0F) &+ (byte >> 6) &* 9)
            if digit < 16 {
                words.0 = words.0 << 4 | value
            } else {
                words.1 = words.1 << 4 | value
            }
        }
        return valid ? APNsID(high: words.0, low: words.1) : nil
    }

    /// Writes the canonical lowercase text (36 octets) at the start of `buffer`, which
    /// must have room for ``textLength`` octets.
    ///
    /// - Returns: The number of octets written, 36.
    @discardableResult
    package func write(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        precondition(buffer.count >= Self.textLength, "an apns-id needs 36 octets")
        let digits: StaticString = "0123456789abcdef"
        var out = 0
        digits.withUTF8Buffer { hex in
            for nibbleIndex in 0..<32 {
                if nibbleIndex == 8 || nibbleIndex == 12 || nibbleIndex == 16 || nibbleIndex == 20 {
                    buffer[out] = UInt8(ascii: "-")
                    out += 1
                }
                let word = nibbleIndex < 16 ? high : low
                let shift = UInt64(60 - 4 * (nibbleIndex & 15))
                buffer[out] = hex[Int((word >> shift) & 0xF)]
                out += 1
            }
        }
        return out
    }

    /// The apns-id of a Foundation `UUID`.
    public init(_ uuid: UUID) {
        let u = uuid.uuid
        self.init(bytes: (u.0, u.1, u.2, u.3, u.4, u.5, u.6, u.7, u.8, u.9, u.10, u.11, u.12, u.13, u.14, u.15))
    }

    /// A new random (version 4, RFC 9562 §5.4) apns-id.
    public static func random() -> APNsID {
        #if canImport(Glibc)
        // Two words from the process's pool of random words (see `RandomWords`), taken
        // together under one lock: two SystemRandomNumberGenerator draws would be two
        // getrandom(2) calls per id.
        var generator = PairedRandomGenerator(randomWords.withLock { $0.takePair() })
        #else
        var generator = SystemRandomNumberGenerator()
        #endif
        return random(using: &generator)
    }

    /// A new random (version 4, RFC 9562 §5.4) apns-id drawn from `generator`.
    public static func random(using generator: inout some RandomNumberGenerator) -> APNsID {
        let high = generator.next() as UInt64
        let low = generator.next() as UInt64
        // Version 4 in the high nibble of byte 6; variant 0b10 in the top bits of byte 8.
        let versioned = (high & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000
        let varianted = (low & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
        return APNsID(high: versioned, low: varianted)
    }

    private init(bytes b: uuid_t) {
        let high =
            UInt64(b.0) << 56 | UInt64(b.1) << 48 | UInt64(b.2) << 40 | UInt64(b.3) << 32
            | UInt64(b.4) << 24 | UInt64(b.5) << 16 | UInt64(b.6) << 8 | UInt64(b.7)
        let low =
            UInt64(b.8) << 56 | UInt64(b.9) << 48 | UInt64(b.10) << 40 | UInt64(b.11) << 32
            | UInt64(b.12) << 24 | UInt64(b.13) << 16 | UInt64(b.14) << 8 | UInt64(b.15)
        self.init(high: high, low: low)
    }

    private init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// The Foundation `UUID` with the same value.
    public var uuid: UUID? { UUID(uuidString: uuidString) }

    /// The canonical lowercase form, ``uuidString``.
    public var description: String { uuidString }
}

#if canImport(Glibc)
/// Random words from OpenSSL's `RAND_bytes` (its DRBG, seeded and reseeded from the
/// kernel's CSPRNG), fetched 512 words (4 KiB) at a time and each handed out once; from
/// getentropy(3) if OpenSSL fails.
///
/// A process that forks after drawing ids shares the unread words with its child; Swift
/// servers do not fork without exec, and `APNsID.random(using:)` takes any generator.
private struct RandomWords: ~Copyable {
    private var words = [UInt64](repeating: 0, count: 512)
    private var next = 512

    /// Two words, for one id.
    mutating func takePair() -> (UInt64, UInt64) {
        if next + 2 > words.count { refill() }
        defer { next += 2 }
        return (words[next], words[next + 1])
    }

    private mutating func refill() {
        let filled = words.withUnsafeMutableBytes { bytes -> Bool in
            guard let base = bytes.baseAddress else { return false }
            if RAND_bytes(base.assumingMemoryBound(to: UInt8.self), Int32(bytes.count)) == 1 { return true }
            // getentropy(3) gives at most 256 octets per call.
            for offset in stride(from: 0, to: bytes.count, by: 256) {
                guard getentropy(base + offset, min(256, bytes.count - offset)) == 0 else { return false }
            }
            return true
        }
        if !filled {
            var system = SystemRandomNumberGenerator()
            for index in words.indices { words[index] = system.next() }
        }
        next = 0
    }
}

/// The process's pool of random words, shared by every thread under a lock.
private let randomWords = Mutex(RandomWords())

/// Hands out the two words it was made with, in order (an id draws exactly two).
private struct PairedRandomGenerator: RandomNumberGenerator {
    private var pair: (UInt64, UInt64)
    private var drawn = 0

    init(_ pair: (UInt64, UInt64)) {
        self.pair = pair
    }

    mutating func next() -> UInt64 {
        defer { drawn += 1 }
        switch drawn {
        case 0: return pair.0
        case 1: return pair.1
        default:
            // Not reached by `APNsID.random(using:)`; a further draw is still random.
            var system = SystemRandomNumberGenerator()
            return system.next()
        }
    }
}
#endif
