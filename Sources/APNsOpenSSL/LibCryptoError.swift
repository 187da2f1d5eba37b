/// A libcrypto or libssl call failed: the call and OpenSSL's error queue as text.
///
/// Never carries key material: OpenSSL's reasons name checks and structures only.
package struct LibCryptoError: Error, CustomStringConvertible, Sendable {
    /// What failed and OpenSSL's reasons, for example
    /// `EVP_DigestSignInit failed: error:…`.
    package var description: String

    /// An error with this text.
    package init(description: String) {
        self.description = description
    }

    /// Drains the calling thread's error queue into an error about `call`.
    package static func current(_ call: String) -> LibCryptoError {
        let errors = OpenSSLErrors.drain()
        return LibCryptoError(description: errors.messages.isEmpty ? "\(call) failed" : "\(call) failed: " + errors.text(or: ""))
    }
}
