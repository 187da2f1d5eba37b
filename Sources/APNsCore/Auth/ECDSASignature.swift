/// The two encodings of an ECDSA P-256 signature `(r, s)`.
///
/// OpenSSL produces and expects the DER form, `Ecdsa-Sig-Value ::= SEQUENCE { r INTEGER,
/// s INTEGER }` ([RFC 3279 §2.2.3](https://www.rfc-editor.org/rfc/rfc3279#section-2.2.3)).
/// JWS ES256 carries the fixed-width form instead: `r` and `s` as 32-byte big-endian
/// unsigned integers, left-padded with zeros, concatenated
/// ([RFC 7518 §3.4](https://www.rfc-editor.org/rfc/rfc7518#section-3.4)). APNs rejects a
/// token whose signature is DER.
enum ECDSASignature {
    /// The width of one coordinate for P-256.
    static let coordinateLength = 32

    /// Why a signature could not be converted.
    enum ConversionError: Error, Equatable {
        /// The DER is not a well-formed `SEQUENCE { INTEGER, INTEGER }`.
        case malformedDER
        /// `r` or `s` is negative, zero, or does not fit in 32 bytes.
        case integerOutOfRange
        /// The raw form is not exactly 64 bytes.
        case wrongRawLength(Int)
    }

    /// DER → raw `r||s` (64 bytes).
    static func raw(fromDER der: some Collection<UInt8>) throws(ConversionError) -> [UInt8] {
        var reader = StrictDERReader(Array(der))
        var sequence = try reader.read(tag: 0x30)
        guard reader.isAtEnd else { throw .malformedDER }
        let r = try sequence.read(tag: 0x02)
        let s = try sequence.read(tag: 0x02)
        guard sequence.isAtEnd else { throw .malformedDER }
        return try fixedWidth(r.remaining) + fixedWidth(s.remaining)
    }

    /// Raw `r||s` (64 bytes) → DER, minimal as DER requires.
    static func der(fromRaw raw: some Collection<UInt8>) throws(ConversionError) -> [UInt8] {
        let bytes = Array(raw)
        guard bytes.count == 2 * coordinateLength else { throw .wrongRawLength(bytes.count) }
        let r = derInteger(bytes[0..<coordinateLength])
        let s = derInteger(bytes[coordinateLength...])
        // At most 2 × (2 + 33) = 70 content bytes: the short length form always fits.
        return [0x30, UInt8(r.count + s.count)] + r + s
    }

    /// A DER INTEGER's content bytes (positive, minimal) as 32 big-endian bytes.
    private static func fixedWidth(_ content: ArraySlice<UInt8>) throws(ConversionError) -> [UInt8] {
        guard let first = content.first else { throw .malformedDER }
        // Negative numbers are never valid r or s.
        guard first & 0x80 == 0 else { throw .integerOutOfRange }
        // DER: a leading zero only when the next byte has its high bit set.
        if first == 0, content.count > 1, content[content.startIndex + 1] & 0x80 == 0 {
            throw .malformedDER
        }
        let magnitude = content.drop(while: { $0 == 0 })
        guard !magnitude.isEmpty else { throw .integerOutOfRange }
        guard magnitude.count <= coordinateLength else { throw .integerOutOfRange }
        return [UInt8](repeating: 0, count: coordinateLength - magnitude.count) + magnitude
    }

    /// An unsigned big-endian integer as a minimal DER INTEGER (tag, length, content).
    private static func derInteger(_ magnitude: ArraySlice<UInt8>) -> [UInt8] {
        var content = Array(magnitude.drop(while: { $0 == 0 }))
        if content.isEmpty { content = [0] }
        if content[0] & 0x80 != 0 { content.insert(0, at: 0) }
        return [0x02, UInt8(content.count)] + content
    }
}

/// Reads DER tag-length-value items with the short and long definite length forms
/// ([X.690 §8.1](https://www.itu.int/rec/T-REC-X.690)), refusing non-minimal lengths.
private struct StrictDERReader {
    private(set) var remaining: ArraySlice<UInt8>

    init(_ bytes: [UInt8]) { remaining = bytes[...] }
    private init(_ slice: ArraySlice<UInt8>) { remaining = slice }

    var isAtEnd: Bool { remaining.isEmpty }

    /// Reads one item with `tag` and returns a reader over its content.
    mutating func read(tag: UInt8) throws(ECDSASignature.ConversionError) -> StrictDERReader {
        guard remaining.count >= 2, remaining.first == tag else { throw .malformedDER }
        var index = remaining.startIndex + 1
        let first = remaining[index]
        index += 1
        var length = 0
        if first < 0x80 {
            length = Int(first)
        } else {
            let count = Int(first & 0x7F)
            // One length byte is plenty for a signature; 0x80 (indefinite) is not DER.
            guard count == 1, index < remaining.endIndex else { throw .malformedDER }
            length = Int(remaining[index])
            index += 1
            guard length >= 0x80 else { throw .malformedDER }
        }
        guard remaining.endIndex - index >= length else { throw .malformedDER }
        let content = remaining[index..<(index + length)]
        remaining = remaining[(index + length)...]
        return StrictDERReader(content)
    }
}
