import COpenSSL
import Synchronization

/// An OpenSSL `EVP_PKEY`: the one owner of an `EVP_PKEY *` in the SDK, for the signing
/// keys of provider tokens (`APNsCore`), the private keys of client certificates
/// (`APNsTransport`'s `ClientIdentity`) and the mock server's keys.
///
/// It follows the module's lifetime rule (see `OwnershipRules.swift`): it owns the handle,
/// frees it in `deinit` (OpenSSL wipes EC private scalars as it frees them), and lends it
/// out only inside ``withUnsafeHandle(_:)``. The handle sits inside a `Mutex`, which makes
/// the class `Sendable` without `@unchecked`: no two threads use the same `EVP_PKEY` at
/// once. (OpenSSL allows concurrent signing with one key; serialising costs nothing here
/// because a key signs once per refresh interval.)
package final class EVPKey: Sendable {
    private let handle: Mutex<OpaquePointer>

    /// Takes ownership of `handle` (it will be freed with `EVP_PKEY_free`).
    package init(taking handle: sending OpaquePointer) {
        self.handle = Mutex(handle)
    }

    /// Takes ownership of `handle`, fresh from OpenSSL (a decoder or `PKCS12_parse`) and
    /// referenced nowhere else: the caller gives it up, so no other thread can reach it.
    package convenience init(adopting handle: OpaquePointer) {
        nonisolated(unsafe) let adopted = handle
        self.init(taking: adopted)
    }

    deinit {
        handle.withLock { EVP_PKEY_free($0) }
    }

    /// Lends the `EVP_PKEY *` to `body`; it must not escape (OpenSSL functions that keep
    /// it, such as `SSL_CTX_use_PrivateKey`, take their own reference).
    package func withUnsafeHandle<R: Sendable, E: Error>(_ body: (OpaquePointer) throws(E) -> R) throws(E) -> R {
        try handle.withLock { (pointer: inout OpaquePointer) throws(E) -> R in try body(pointer) }
    }

    // MARK: Decoding

    /// Decodes a DER private key (PKCS#8 `PrivateKeyInfo`, or a traditional SEC 1 /
    /// PKCS#1 key), or returns `nil`.
    package static func privateKey(der: [UInt8]) -> EVPKey? {
        decode(der, .privateKey)
    }

    /// Decodes a DER `SubjectPublicKeyInfo`, or returns `nil`.
    package static func publicKey(der: [UInt8]) -> EVPKey? {
        decode(der, .publicKey)
    }

    /// Whether `der` is a PKCS#8 `EncryptedPrivateKeyInfo` (RFC 5958 §3).
    package static func isEncryptedPrivateKeyInfo(der: [UInt8]) -> Bool {
        der.withUnsafeBufferPointer { buffer -> Bool in
            guard let start = buffer.baseAddress, !buffer.isEmpty else { return false }
            var pointer: UnsafePointer<UInt8>? = start
            guard let sig = d2i_X509_SIG(nil, &pointer, buffer.count) else {
                ERR_clear_error()
                return false
            }
            X509_SIG_free(sig)
            return pointer.map { $0 - start == buffer.count } ?? false
        }
    }

    private enum Structure { case privateKey, publicKey }

    private static func decode(_ der: [UInt8], _ structure: Structure) -> EVPKey? {
        guard !der.isEmpty else { return nil }
        // A private copy of the key material, wiped and freed below.
        let copy = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: der.count)
        defer {
            OPENSSL_cleanse(copy.baseAddress, copy.count)
            copy.deallocate()
        }
        _ = copy.initialize(from: der)
        guard let base = copy.baseAddress else { return nil }
        var pointer: UnsafePointer<UInt8>? = UnsafePointer(base)
        let decoded = switch structure {
        case .privateKey: d2i_AutoPrivateKey(nil, &pointer, der.count)
        case .publicKey: d2i_PUBKEY(nil, &pointer, der.count)
        }
        guard let key = decoded else {
            ERR_clear_error()
            return nil
        }
        // Trailing bytes after the structure mean the input was not one key.
        guard let end = pointer, end - UnsafePointer(base) == der.count else {
            EVP_PKEY_free(key)
            return nil
        }
        // The region checker ties the new handle to the input buffer it was decoded from,
        // but d2i allocates a fresh EVP_PKEY that holds no reference to that buffer and that
        // nothing else references: handing it to the Mutex is safe.
        nonisolated(unsafe) let owned = key
        return EVPKey(taking: owned)
    }

    /// A fresh EC P-256 key pair from OpenSSL's default random generator.
    package static func generateP256() throws(LibCryptoError) -> EVPKey {
        guard let key = capns_EVP_EC_gen_P256() else { throw .current("EVP_EC_gen(P-256)") }
        return EVPKey(taking: key)
    }

    // MARK: Inspection

    /// What kind of key this is, in OpenSSL's names.
    package struct Algorithm: Sendable, Equatable {
        /// `"EC"`, `"RSA"`, `"ED25519"`, …
        package var typeName: String
        /// For EC keys, the curve (`"prime256v1"` is P-256).
        package var curveName: String?
        /// The key size in bits.
        package var bits: Int
        /// EC on P-256 (NIST P-256, secp256r1, prime256v1): the only kind APNs accepts.
        package var isP256: Bool { typeName == "EC" && curveName == "prime256v1" }
    }

    package var algorithm: Algorithm {
        withUnsafeHandle { key in
            let typeName = EVP_PKEY_get0_type_name(key).map { String(cString: $0) } ?? "unknown"
            var curve: String?
            if EVP_PKEY_is_a(key, "EC") == 1 {
                var name = [CChar](repeating: 0, count: 80)
                var length = 0
                if EVP_PKEY_get_utf8_string_param(key, "group", &name, name.count, &length) == 1 {
                    curve = String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
                } else {
                    ERR_clear_error()
                }
            }
            return Algorithm(typeName: typeName, curveName: curve, bits: Int(EVP_PKEY_get_bits(key)))
        }
    }

    /// The public key as a DER `SubjectPublicKeyInfo`.
    package func publicKeyDER() throws(LibCryptoError) -> [UInt8] {
        try withUnsafeHandle { key throws(LibCryptoError) in
            let length = i2d_PUBKEY(key, nil)
            guard length > 0 else { throw .current("i2d_PUBKEY") }
            var out = [UInt8](repeating: 0, count: Int(length))
            let written = out.withUnsafeMutableBufferPointer { buffer -> Int32 in
                var pointer = buffer.baseAddress
                return i2d_PUBKEY(key, &pointer)
            }
            guard written == length else { throw .current("i2d_PUBKEY") }
            return out
        }
    }

    /// Whether the private and public halves belong together and the private half is in
    /// range: OpenSSL's pairwise check (`EVP_PKEY_pairwise_check`; for EC, that the public
    /// point is the private scalar times the generator), what `openssl pkey -check` runs.
    /// A key file whose private bytes were damaged (a mistyped character that is still
    /// base64) decodes, but no longer matches the public key stored beside it, and its
    /// signatures would not verify with the public key the issuer holds.
    package var passesPairwiseCheck: Bool {
        withUnsafeHandle { key -> Bool in
            guard let context = EVP_PKEY_CTX_new_from_pkey(nil, key, nil) else {
                ERR_clear_error()
                return false
            }
            defer {
                EVP_PKEY_CTX_free(context)
                ERR_clear_error()
            }
            return EVP_PKEY_pairwise_check(context) == 1
        }
    }

    // MARK: ECDSA with SHA-256

    /// Signs `message` with ECDSA over SHA-256; returns OpenSSL's DER signature.
    package func signSHA256(_ message: [UInt8]) throws(LibCryptoError) -> [UInt8] {
        try withUnsafeHandle { key throws(LibCryptoError) in
            guard let context = EVP_MD_CTX_new() else { throw .current("EVP_MD_CTX_new") }
            defer { EVP_MD_CTX_free(context) }
            guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else {
                throw .current("EVP_DigestSignInit")
            }
            var length = 0
            guard EVP_DigestSign(context, nil, &length, message, message.count) == 1 else {
                throw .current("EVP_DigestSign")
            }
            var signature = [UInt8](repeating: 0, count: length)
            guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1 else {
                throw .current("EVP_DigestSign")
            }
            return Array(signature.prefix(length))
        }
    }

    /// Whether `derSignature` is a valid ECDSA/SHA-256 signature of `message` by this key.
    package func verifySHA256(derSignature: [UInt8], message: [UInt8]) -> Bool {
        withUnsafeHandle { key -> Bool in
            guard let context = EVP_MD_CTX_new() else { return false }
            defer {
                EVP_MD_CTX_free(context)
                ERR_clear_error()
            }
            guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1 else { return false }
            return EVP_DigestVerify(context, derSignature, derSignature.count, message, message.count) == 1
        }
    }

    /// The private key as PEM (PKCS#8 `PrivateKeyInfo`, unencrypted): for throwaway
    /// keys only (the mock server's), never for a user's key.
    package func privateKeyPEM() throws(LibCryptoError) -> String {
        try withUnsafeHandle { key throws(LibCryptoError) in
            try MemoryBIO.write("PEM_write_bio_PrivateKey") { PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) }
        }
    }

    // MARK: Key material

    /// Overwrites `bytes` with zeros in a way the optimiser keeps (`OPENSSL_cleanse`).
    package static func cleanse(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { buffer in
            if let base = buffer.baseAddress { OPENSSL_cleanse(base, buffer.count) }
        }
    }
}
