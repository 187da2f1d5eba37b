import APNsCore

/// Makes the `apns-id` the server answers with when a request sent none: a random
/// (version 4) UUID in lowercase 8-4-4-4-12 form, [RFC 9562 §5.4](https://www.rfc-editor.org/rfc/rfc9562#section-5.4).
///
/// Foundation's `UUID()` asks the kernel for 16 random bytes on every call (a system call
/// per answer); this generator is seeded once from the system's generator and then draws
/// from SplitMix64, which is plenty for identifiers that only need to be distinct. Lives
/// on the server thread only.
struct APNsIDGenerator {
    private var random: SplitMix64

    /// A generator seeded from `SystemRandomNumberGenerator`.
    init() {
        var system = SystemRandomNumberGenerator()
        random = SplitMix64(seed: system.next())
    }

    /// A generator with a fixed seed (for tests).
    init(seed: UInt64) {
        random = SplitMix64(seed: seed)
    }

    /// A new identifier.
    mutating func make() -> String {
        String(unsafeUninitializedCapacity: 36) { buffer in
            write(into: buffer.baseAddress!)
            return 36
        }
    }

    /// Writes a new identifier's 36 bytes (ASCII) to `buffer`.
    mutating func write(into buffer: UnsafeMutablePointer<UInt8>) {
        var high = random.next()
        var low = random.next()
        // Version 4 in the high nibble of byte 6; variant 0b10 in the top bits of byte 8.
        high = (high & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000
        low = (low & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
        // Sixteen hex digits per word, four bits at a time from the top; dashes after
        // digits 8, 12, 16 and 20.
        @inline(__always)
        func hex(_ word: UInt64, _ nibble: Int) -> UInt8 {
            let digit = UInt8(truncatingIfNeeded: (word >> UInt64(60 - 4 * nibble)) & 0xF)
            return digit < 10 ? 0x30 + digit : 0x61 - 10 + digit
        }
        for nibble in 0..<8 { buffer[nibble] = hex(high, nibble) }
        buffer[8] = UInt8(ascii: "-")
        for nibble in 8..<12 { buffer[nibble + 1] = hex(high, nibble) }
        buffer[13] = UInt8(ascii: "-")
        for nibble in 12..<16 { buffer[nibble + 2] = hex(high, nibble) }
        buffer[18] = UInt8(ascii: "-")
        for nibble in 0..<4 { buffer[19 + nibble] = hex(low, nibble) }
        buffer[23] = UInt8(ascii: "-")
        for nibble in 4..<16 { buffer[20 + nibble] = hex(low, nibble) }
    }
}
