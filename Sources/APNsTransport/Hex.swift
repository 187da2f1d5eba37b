/// Lowercase hexadecimal for diagnostics: the bytes a proxy or a frame carried, written
/// into error texts and trace lines.
enum Hex {
    /// `bytes` as two lowercase digits each (`00fcfd`).
    static func digits(_ bytes: some Sequence<UInt8>) -> String {
        let alphabet = Array("0123456789abcdef".unicodeScalars)
        var text = String.UnicodeScalarView()
        for byte in bytes {
            text.append(alphabet[Int(byte >> 4)])
            text.append(alphabet[Int(byte & 0xF)])
        }
        return String(text)
    }
}
