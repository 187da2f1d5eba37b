/// Text given where a path, an identifier or a name was expected that may be key material
/// instead: a `.p8` or certificate pasted into the setting for its file
/// (`APNS_KEY_FILE` for `APNS_KEY`), or into the wrong variable. Messages about such a value
/// describe it without quoting it, since they end up in logs and on terminals.
package enum SecretText {
    /// Whether `text` looks like key material rather than a path, identifier or name: it
    /// holds a PEM BEGIN or END line or a `PRIVATE KEY` label, or it is 64 or more
    /// characters of base64 alone (a PEM body, or a line of one: 64 characters) with
    /// upper- and lower-case letters and digits. Paths have dots, dashes or underscores,
    /// identifiers and names are shorter.
    package static func mayBeKeyMaterial(_ text: some StringProtocol) -> Bool {
        if text.contains("-----BEGIN") || text.contains("-----END") || text.contains("PRIVATE KEY") { return true }
        var count = 0
        var upper = false
        var lower = false
        var digit = false
        for byte in text.utf8 where !PEMBlock.isSpace(byte) {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): upper = true
            case UInt8(ascii: "a")...UInt8(ascii: "z"): lower = true
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = true
            case UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="): break
            default: return false
            }
            count += 1
        }
        return count >= 64 && upper && lower && digit
    }

    /// What `text` is, for a message that must not quote it: "PEM text (241 characters, not shown)"
    /// or "base64 text (184 characters, not shown)".
    package static func describe(_ text: some StringProtocol) -> String {
        let kind = text.contains("-----") || text.contains("PRIVATE KEY") ? "PEM text" : "base64 text"
        return "\(kind) (\(text.count) characters, not shown)"
    }

    /// `text` in double quotes for a message, or, when it may be key material, what it is
    /// in angle brackets (``describe(_:)``), none of it quoted.
    package static func quoted(_ text: some StringProtocol) -> String {
        mayBeKeyMaterial(text) ? "<\(describe(text))>" : "\"\(text)\""
    }
}
