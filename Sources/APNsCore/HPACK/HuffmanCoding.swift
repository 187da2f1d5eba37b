/// The Huffman code of HPACK string literals.
///
/// Implements [RFC 7541 §5.2](https://www.rfc-editor.org/rfc/rfc7541#section-5.2) with
/// the code of [Appendix B](https://www.rfc-editor.org/rfc/rfc7541#appendix-B)
/// (``HuffmanTables``): each octet becomes its code, most significant bit first, and
/// the last octet is padded with the most significant bits of EOS (all ones).
enum HuffmanCoding {
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

    /// Appends the Huffman encoding of `bytes` to `buffer`, padded with EOS bits.
    @inline(__always)
    static func encode(_ bytes: UnsafeBufferPointer<UInt8>, into buffer: inout [UInt8]) {
        HuffmanTables.codes.withUnsafeBufferPointer { codes in
            HuffmanTables.lengths.withUnsafeBufferPointer { lengths in
                // At most 7 pending bits plus one 30-bit code: 37 bits fit in 64.
                var accumulator: UInt64 = 0
                var pending = 0
                for byte in bytes {
                    let length = Int(lengths[Int(byte)])
                    accumulator = (accumulator &<< UInt64(length)) | UInt64(codes[Int(byte)])
                    pending &+= length
                    while pending >= 8 {
                        pending &-= 8
                        buffer.append(UInt8(truncatingIfNeeded: accumulator &>> UInt64(pending)))
                    }
                }
                if pending > 0 {
                    let padding = 8 - pending
                    accumulator = (accumulator &<< UInt64(padding)) | ((1 &<< UInt64(padding)) &- 1)
                    buffer.append(UInt8(truncatingIfNeeded: accumulator))
                }
            }
        }
    }
}
