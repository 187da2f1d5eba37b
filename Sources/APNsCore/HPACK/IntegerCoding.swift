/// The HPACK integer representation: an N-bit prefix followed by 7-bit continuation
/// octets, least significant group first.
///
/// Implements [RFC 7541 §5.1](https://www.rfc-editor.org/rfc/rfc7541#section-5.1).
enum IntegerCoding {
    /// Appends `value` as an HPACK integer with a `prefixBits`-bit prefix.
    ///
    /// - Parameters:
    ///   - value: The non-negative integer to encode.
    ///   - prefixBits: N, the number of low bits of the first octet the integer may use (1...8).
    ///   - flags: The bits above the prefix in the first octet (the representation's
    ///     pattern, such as `0x40` for a literal with incremental indexing).
    ///   - buffer: The buffer to append to.
    @inline(__always)
    static func encode(_ value: Int, prefixBits: Int, flags: UInt8, into buffer: inout [UInt8]) {
        assert((1...8).contains(prefixBits) && value >= 0)
        let limit = (1 << prefixBits) - 1
        if value < limit {
            buffer.append(flags | UInt8(truncatingIfNeeded: value))
            return
        }
        buffer.append(flags | UInt8(truncatingIfNeeded: limit))
        var rest = UInt(value - limit)
        while rest >= 128 {
            buffer.append(UInt8(truncatingIfNeeded: rest & 0x7f) | 0x80)
            rest >>= 7
        }
        buffer.append(UInt8(truncatingIfNeeded: rest))
    }

    /// The number of octets ``encode(_:prefixBits:flags:into:)`` appends for `value`.
    static func encodedLength(of value: Int, prefixBits: Int) -> Int {
        let limit = (1 << prefixBits) - 1
        if value < limit { return 1 }
        var rest = UInt(value - limit)
        var length = 2
        while rest >= 128 {
            rest >>= 7
            length += 1
        }
        return length
    }

    /// Writes `value` as an HPACK integer at `output` and advances it; the caller has
    /// made room for ``encodedLength(of:prefixBits:)`` octets.
    @inline(__always)
    static func write(_ value: Int, prefixBits: Int, flags: UInt8, to output: inout UnsafeMutablePointer<UInt8>) {
        let limit = (1 << prefixBits) - 1
        if value < limit {
            output.pointee = flags | UInt8(truncatingIfNeeded: value)
            output += 1
            return
        }
        output.pointee = flags | UInt8(truncatingIfNeeded: limit)
        output += 1
        var rest = UInt(value - limit)
        while rest >= 128 {
            output.pointee = UInt8(truncatingIfNeeded: rest & 0x7f) | 0x80
            output += 1
            rest >>= 7
        }
        output.pointee = UInt8(truncatingIfNeeded: rest)
        output += 1
    }
}
