import APNsOpenSSL

/// Base64 in the two alphabets of [RFC 4648](https://www.rfc-editor.org/rfc/rfc4648):
/// the standard one (§4, used inside PEM) and the URL- and filename-safe one (§5, used by
/// JWS, [RFC 7515 §2](https://www.rfc-editor.org/rfc/rfc7515#section-2), without padding).
///
/// Written here rather than taken from Foundation so that decoded key material lands in a
/// `[UInt8]` we own and can wipe, and so that the JWS decoder can be strict.
enum Base64 {
    /// The alphabet of RFC 4648 §4 or §5.
    enum Alphabet {
        /// `+` and `/`, with `=` padding (PEM bodies).
        case standard
        /// `-` and `_`, no padding (JWS).
        case url

        fileprivate var table: [UInt8] {
            switch self {
            case .standard: Base64.standardTable
            case .url: Base64.urlTable
            }
        }
    }

    private static let standardTable = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlTable = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Encodes `bytes`; the standard alphabet pads with `=`, the URL alphabet does not.
    static func encode(_ bytes: some Collection<UInt8>, alphabet: Alphabet = .url) -> String {
        let table = alphabet.table
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var iterator = bytes.makeIterator()
        while let b0 = iterator.next() {
            let b1 = iterator.next()
            let b2 = iterator.next()
            out.append(table[Int(b0 >> 2)])
            out.append(table[Int((b0 & 0x03) << 4 | (b1 ?? 0) >> 4)])
            if let b1 {
                out.append(table[Int((b1 & 0x0F) << 2 | (b2 ?? 0) >> 6)])
            } else if alphabet == .standard {
                out.append(UInt8(ascii: "="))
            }
            if let b2 {
                out.append(table[Int(b2 & 0x3F)])
            } else if alphabet == .standard {
                out.append(UInt8(ascii: "="))
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes `text`, or returns `nil` if it is not canonical base64 in `alphabet`.
    ///
    /// Strict on purpose: a character outside the alphabet, a length that no encoding
    /// produces, padding in the URL alphabet, and non-zero unused bits (RFC 4648 §3.5)
    /// are all refused. The standard alphabet accepts, but does not require, `=` padding;
    /// callers remove whitespace first.
    static func decode(_ text: some Collection<UInt8>, alphabet: Alphabet = .url) -> [UInt8]? {
        var symbols = Array(text)
        // Do not leave key material in the scratch copy.
        defer { EVPKey.cleanse(&symbols) }
        if alphabet == .standard {
            // Padding only at the end, at most two, and only to a multiple of 4.
            var padding = 0
            while symbols.last == UInt8(ascii: "=") {
                symbols.removeLast()
                padding += 1
            }
            if padding > 2 || (padding > 0 && (symbols.count + padding) % 4 != 0) {
                return nil
            }
        }
        if symbols.count % 4 == 1 { return nil }
        var out = [UInt8]()
        out.reserveCapacity(symbols.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for symbol in symbols {
            guard let value = sextet(symbol, alphabet) else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        // Unused low bits of the last symbol must be zero, or two texts would decode
        // to the same bytes (RFC 4648 §3.5).
        if bits > 0, accumulator & ((1 << UInt32(bits)) - 1) != 0 { return nil }
        return out
    }

    private static func sextet(_ symbol: UInt8, _ alphabet: Alphabet) -> UInt8? {
        switch symbol {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): symbol - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): symbol - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): symbol - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+") where alphabet == .standard: 62
        case UInt8(ascii: "/") where alphabet == .standard: 63
        case UInt8(ascii: "-") where alphabet == .url: 62
        case UInt8(ascii: "_") where alphabet == .url: 63
        default: nil
        }
    }
}
