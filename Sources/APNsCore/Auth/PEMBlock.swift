import APNsOpenSSL

/// One `-----BEGIN <label>----- … -----END <label>-----` block of a PEM file
/// ([RFC 7468](https://www.rfc-editor.org/rfc/rfc7468)), decoded.
///
/// The parser is lenient about the text around and inside the block the way keys arrive
/// from environment variables and secret stores: surrounding whitespace or quotes, `\r\n`
/// line ends, literal `\n` escape sequences, one long line. It is strict about the base64.
struct PEMBlock {
    /// The label, for example `PRIVATE KEY`.
    var label: String
    /// Whether the block has the RFC 1421 header `Proc-Type: 4,ENCRYPTED` (an OpenSSL
    /// "traditional" key protected by a passphrase).
    var isLegacyEncrypted: Bool
    /// The decoded body. Holds key material: wipe it with ``EVPKey/cleanse(_:)``.
    var der: [UInt8]

    /// Why text with a BEGIN line could not be read.
    enum ParseError: Error {
        case missingEnd(label: String)
        case badBase64(label: String)
        /// The BEGIN line does not end in five dashes right after a label (RFC 7468 §3:
        /// printable characters but `-`, on the BEGIN line): what follows `BEGIN ` is not
        /// a label and is never quoted, since it may be the key itself.
        case malformedBegin
    }

    /// Whether `bytes` can be a label (RFC 7468 §3 `label`: printable ASCII but `-`, one
    /// line), no longer than any label in use.
    private static func isLabel(_ bytes: ArraySlice<UInt8>) -> Bool {
        bytes.count <= 64 && bytes.allSatisfy { ($0 >= 0x20 && $0 <= 0x7E) && $0 != UInt8(ascii: "-") }
    }

    private static let dashes = Array("-----".utf8)
    private static let begin = Array("-----BEGIN ".utf8)

    /// Undoes what pasting a PEM file into an environment variable tends to do: surrounding
    /// whitespace and quotes, literal `\n` / `\r` sequences, and CR characters.
    static func normalize(_ text: [UInt8]) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(text.count)
        var index = 0
        while index < text.count {
            let byte = text[index]
            if byte == UInt8(ascii: "\\"), index + 1 < text.count,
               text[index + 1] == UInt8(ascii: "n") || text[index + 1] == UInt8(ascii: "r") {
                out.append(UInt8(ascii: "\n"))
                index += 2
                continue
            }
            out.append(byte == UInt8(ascii: "\r") ? UInt8(ascii: "\n") : byte)
            index += 1
        }
        var slice = out[...]
        while let first = slice.first, isSpace(first) { slice.removeFirst() }
        while let last = slice.last, isSpace(last) { slice.removeLast() }
        if slice.count >= 2, let first = slice.first, first == slice.last,
           first == UInt8(ascii: "\"") || first == UInt8(ascii: "'") {
            slice = slice.dropFirst().dropLast()
        }
        let trimmed = Array(slice)
        EVPKey.cleanse(&out)
        return trimmed
    }

    /// Whether `text` contains a PEM BEGIN line.
    static func containsPEM(_ text: [UInt8]) -> Bool {
        firstRange(of: begin, in: text[...]) != nil
    }

    /// Every block in `text`, in order. Text outside blocks (such as comments) is ignored.
    static func parseAll(_ text: [UInt8]) throws(ParseError) -> [PEMBlock] {
        var blocks: [PEMBlock] = []
        var rest = text[...]
        while let beginRange = firstRange(of: begin, in: rest) {
            let afterBegin = rest[beginRange.upperBound...]
            guard let labelEnd = firstRange(of: dashes, in: afterBegin) else {
                throw .malformedBegin
            }
            let labelBytes = afterBegin[..<labelEnd.lowerBound]
            guard isLabel(labelBytes) else { throw .malformedBegin }
            let label = String(decoding: labelBytes, as: UTF8.self)
            let end = Array("-----END ".utf8) + labelBytes + dashes
            let body = afterBegin[labelEnd.upperBound...]
            guard let endRange = firstRange(of: end, in: body) else {
                throw .missingEnd(label: label)
            }
            var content = Array(body[..<endRange.lowerBound])
            defer { EVPKey.cleanse(&content) }
            let encrypted = firstRange(of: Array("Proc-Type:".utf8), in: content[...]) != nil
                && firstRange(of: Array("ENCRYPTED".utf8), in: content[...]) != nil
            var der: [UInt8] = []
            if !encrypted {
                var base64 = content.filter { !isSpace($0) }
                defer { EVPKey.cleanse(&base64) }
                guard let decoded = Base64.decode(base64, alphabet: .standard), !decoded.isEmpty else {
                    throw .badBase64(label: label)
                }
                der = decoded
            }
            blocks.append(PEMBlock(label: label, isLegacyEncrypted: encrypted, der: der))
            rest = body[endRange.upperBound...]
        }
        return blocks
    }

    /// Whether every byte is base64 (standard alphabet) or whitespace: a PEM body pasted
    /// without its BEGIN and END lines.
    static func isBareBase64(_ text: [UInt8]) -> Bool {
        !text.isEmpty && text.allSatisfy { byte in
            isSpace(byte) || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "/")
                || byte == UInt8(ascii: "=")
                || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        }
    }

    /// The base64 body of a PEM file: the standard alphabet, 64 characters a line.
    static func encode(label: String, der: [UInt8]) -> String {
        let body = Array(Base64.encode(der, alphabet: .standard).utf8)
        var text = "-----BEGIN \(label)-----\n"
        var start = 0
        while start < body.count {
            let end = min(start + 64, body.count)
            text += String(decoding: body[start..<end], as: UTF8.self) + "\n"
            start = end
        }
        return text + "-----END \(label)-----\n"
    }

    static func isSpace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\t")
            || byte == UInt8(ascii: "\r")
    }

    private static func firstRange(of needle: [UInt8], in haystack: ArraySlice<UInt8>) -> Range<Int>? {
        guard !needle.isEmpty, haystack.count >= needle.count else { return nil }
        var start = haystack.startIndex
        while start + needle.count <= haystack.endIndex {
            if haystack[start..<(start + needle.count)].elementsEqual(needle) {
                return start..<(start + needle.count)
            }
            start += 1
        }
        return nil
    }
}
