// Byte-level helpers shared by the HPACK tables and the encoder.

/// Calls `body` with the UTF-8 bytes of `string` without copying them (native
/// strings are contiguous; others are made so on a copy).
@inline(__always)
func withUTF8<Result>(of string: String, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
    if let result = string.utf8.withContiguousStorageIfAvailable(body) {
        return result
    }
    var copy = string
    return copy.withUTF8(body)
}

/// The 32-bit FNV-1a hash of a header name, used by both table lookups.
@inline(__always)
func hpackNameHash(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt32 {
    var hash: UInt32 = 2_166_136_261
    for byte in bytes {
        hash = (hash ^ UInt32(byte)) &* 16_777_619
    }
    return hash
}
