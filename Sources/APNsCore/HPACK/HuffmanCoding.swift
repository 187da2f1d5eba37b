/// The Huffman code of HPACK string literals.
///
/// Implements [RFC 7541 §5.2](https://www.rfc-editor.org/rfc/rfc7541#section-5.2) with
/// the code of [Appendix B](https://www.rfc-editor.org/rfc/rfc7541#appendix-B)
/// (``HuffmanTables``): each octet becomes its code, most significant bit first, and
/// the last octet is padded with the most significant bits of EOS (all ones).
enum HuffmanCoding {
    /// Zero octets the encoder grows its output with before writing codes into it.
    private static let zeros = [UInt8](repeating: 0, count: 256)

    /// The number of octets the Huffman encoding of `bytes` takes.
    @inline(__always)
    static func encodedLength(of bytes: UnsafeBufferPointer<UInt8>) -> Int {
        HuffmanTables.lengths.withUnsafeBufferPointer { lengths in
            var bits = 0
            for byte in bytes {
                bits &+= Int(lengths[Int(byte)])
            }
            return (bits &+ 7) >> 3
        }
    }

    /// Writes the Huffman encoding of `bytes`, padded with EOS bits, at `output` and
    /// advances it; the caller has made room for ``encodedLength(of:)`` octets.
    @inline(__always)
    static func write(_ bytes: UnsafeBufferPointer<UInt8>, to output: inout UnsafeMutablePointer<UInt8>) {
        HuffmanTables.codes.withUnsafeBufferPointer { codes in
            HuffmanTables.lengths.withUnsafeBufferPointer { lengths in
                var out = UnsafeMutableRawPointer(output)
                // `pending` low bits of the accumulator are waiting to be written;
                // below 32 before a code is added, so at most 61 bits are in use.
                var accumulator: UInt64 = 0
                var pending: UInt64 = 0
                for byte in bytes {
                    let length = UInt64(lengths[Int(byte)])
                    accumulator = (accumulator &<< length) | UInt64(codes[Int(byte)])
                    pending &+= length
                    if pending >= 32 {
                        pending &-= 32
                        out.storeBytes(of: UInt32(truncatingIfNeeded: accumulator &>> pending).bigEndian, as: UInt32.self)
                        out += 4
                    }
                }
                // The last octet is padded with the high bits of EOS (all ones).
                let padding = (8 &- pending % 8) % 8
                accumulator = (accumulator &<< padding) | ((1 &<< padding) &- 1)
                pending &+= padding
                while pending > 0 {
                    pending &-= 8
                    out.storeBytes(of: UInt8(truncatingIfNeeded: accumulator &>> pending), as: UInt8.self)
                    out += 1
                }
                output = out.assumingMemoryBound(to: UInt8.self)
            }
        }
    }

    /// Appends `count` zero octets to `buffer` by memcpy from a zero block (a generic
    /// `repeatElement` append loops per octet), so they can be overwritten in place.
    @inline(__always)
    static func grow(_ buffer: inout [UInt8], by count: Int) {
        zeros.withUnsafeBufferPointer { zeros in
            var remaining = count
            while remaining > 0 {
                let chunk = min(remaining, zeros.count)
                buffer.append(contentsOf: UnsafeBufferPointer(rebasing: zeros[..<chunk]))
                remaining -= chunk
            }
        }
    }

    /// Appends the Huffman encoding of `bytes` to `buffer`, padded with EOS bits.
    static func encode(_ bytes: UnsafeBufferPointer<UInt8>, into buffer: inout [UInt8]) {
        let start = buffer.count
        grow(&buffer, by: encodedLength(of: bytes))
        buffer.withUnsafeMutableBufferPointer { output in
            var out = output.baseAddress! + start
            write(bytes, to: &out)
        }
    }
}
