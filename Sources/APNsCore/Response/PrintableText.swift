/// Text a server chose (a reason, a header value), made safe to print: kept as it is when
/// it is short printable ASCII, as everything APNs sends is; otherwise every other
/// character written as `\u{1B}` and the whole cut at `limit` characters (`…` marks the
/// cut). A broken or hostile server's text then cannot forge a log line with a newline,
/// move a terminal's cursor or fill a screen.
package enum PrintableText {
    /// The most characters kept.
    package static let limit = 128

    /// `text`, escaped and cut as described above.
    package static func escaped(_ text: String, limit: Int = limit) -> String {
        if text.utf8.count <= limit, text.utf8.allSatisfy(isPrintable) { return text }
        var escaped = ""
        var kept = 0
        for scalar in text.unicodeScalars {
            if kept == limit {
                escaped += "…"
                break
            }
            if scalar.isASCII, isPrintable(UInt8(scalar.value)) {
                escaped.unicodeScalars.append(scalar)
            } else {
                escaped += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            }
            kept += 1
        }
        return escaped
    }

    private static func isPrintable(_ byte: UInt8) -> Bool { byte >= 0x20 && byte < 0x7F }
}
