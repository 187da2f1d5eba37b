import APNsOpenSSL

/// JWS with ES256, ECDSA on P-256 with SHA-256
/// ([RFC 7518 §3.4](https://www.rfc-editor.org/rfc/rfc7518#section-3.4)), in compact
/// serialisation ([RFC 7515 §7.1](https://www.rfc-editor.org/rfc/rfc7515#section-7.1)).
enum ES256 {
    /// `BASE64URL(header) || '.' || BASE64URL(claims)`: the bytes that are signed.
    static func signingInput(header: String, claims: String) -> String {
        Base64.encode(Array(header.utf8)) + "." + Base64.encode(Array(claims.utf8))
    }

    /// The raw 64-byte `r||s` signature of `signingInput`.
    static func sign(_ signingInput: String, with key: EVPKey) throws(LibCryptoError) -> [UInt8] {
        let der = try key.signSHA256(Array(signingInput.utf8))
        do {
            return try ECDSASignature.raw(fromDER: der)
        } catch {
            // OpenSSL's own DER is always well formed; say so if it ever is not.
            throw LibCryptoError(description: "OpenSSL returned an ECDSA signature that is not DER: \(error)")
        }
    }

    /// The compact JWS: `signingInput.BASE64URL(r||s)`.
    static func compact(header: String, claims: String, key: EVPKey) throws(LibCryptoError) -> String {
        let input = signingInput(header: header, claims: claims)
        return input + "." + Base64.encode(try sign(input, with: key))
    }

    /// Whether `signature` (raw `r||s`) is `key`'s ES256 signature of `signingInput`.
    static func verify(signature: [UInt8], signingInput: some Collection<UInt8>, key: EVPKey) -> Bool {
        guard let der = try? ECDSASignature.der(fromRaw: signature) else { return false }
        return key.verifySHA256(derSignature: der, message: Array(signingInput))
    }
}
