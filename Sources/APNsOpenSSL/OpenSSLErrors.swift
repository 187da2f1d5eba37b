import COpenSSL

/// OpenSSL's thread-local error queue, read once and emptied.
///
/// Every failing libssl/libcrypto call leaves one or more entries; they must be drained on
/// the thread that made the call, or they surface later as an unrelated failure.
package struct OpenSSLErrors: Sendable {
    /// The packed error codes, oldest first (`ERR_GET_REASON` on each for the reason).
    package let codes: [UInt]
    /// OpenSSL's text for each code, for example
    /// `error:0A000086:SSL routines::certificate verify failed`.
    package let messages: [String]

    /// Empties the queue of the calling thread into a value.
    package static func drain() -> OpenSSLErrors {
        var codes: [UInt] = []
        var messages: [String] = []
        while case let code = ERR_get_error(), code != 0 {
            codes.append(code)
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            messages.append(String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return OpenSSLErrors(codes: codes, messages: messages)
    }

    /// The reason codes (`SSL_R_…`, `EVP_R_…`), oldest first.
    package var reasons: [Int32] { codes.map { capns_ERR_GET_REASON($0) } }

    /// Whether any entry has the reason code `reason`.
    package func contains(reason: Int32) -> Bool { reasons.contains(reason) }

    /// The messages joined, or `fallback` when the queue was empty.
    package func text(or fallback: String) -> String {
        messages.isEmpty ? fallback : messages.joined(separator: "; ")
    }
}
