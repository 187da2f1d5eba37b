import APNsOpenSSL
import COpenSSL
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A client certificate and its private key, for certificate-based connections to APNs.
///
/// Apple issues an APNs certificate (a "Apple Push Services" certificate) for an app ID;
/// exported from Keychain Access it is a `.p12` file protected by a password. Load it
/// with ``init(pkcs12File:password:)``, or load the PEM files that `openssl pkcs12` makes
/// of it with ``init(certificatePEM:privateKeyPEM:password:)``. See
/// [Establishing a certificate-based connection to APNs](https://developer.apple.com/documentation/usernotifications/establishing-a-certificate-based-connection-to-apns).
///
/// Loading checks everything that can be checked before connecting: the password, that the
/// key belongs to the certificate (`X509_check_private_key`), and the certificate's
/// validity period. Each failure is a ``ClientIdentityError`` that says what to fix.
/// The private key stays inside OpenSSL; the buffers this type copies it through are
/// wiped with `OPENSSL_cleanse`.
public struct ClientIdentity: Sendable {
    let certificate: X509Certificate
    /// Intermediate certificates sent after the client certificate.
    let chain: [X509Certificate]
    let privateKey: EVPKey

    /// The certificate subject's common name, for example
    /// `Apple Push Services: com.example.app`.
    public let subjectCommonName: String?
    /// When the certificate stops being valid (its notAfter, RFC 5280 §4.1.2.5).
    /// Renew the certificate before this date.
    public let notAfter: Date
    /// When the certificate starts being valid (its notBefore, RFC 5280 §4.1.2.5).
    public let notBefore: Date
    /// The topics the certificate may push to, from Apple's extension
    /// 1.2.840.113635.100.6.3.6 (a SEQUENCE of UTF8String topics, each followed by a
    /// SEQUENCE of push kinds such as `app`, `voip`, `complication`); empty when the
    /// certificate has no such extension (older, single-topic certificates: the topic is
    /// then the bundle ID in the subject).
    public let topics: [String]


    // MARK: PKCS#12

    /// Loads a PKCS#12 (`.p12`) file, as exported from Keychain Access.
    /// - Parameters:
    ///   - path: The file's path.
    ///   - password: The password the file was exported with (`""` for none).
    /// - Throws: ``ClientIdentityError``: `.fileNotReadable`, `.malformed`,
    ///   `.wrongPassword`, `.missingCertificate`, `.missingPrivateKey`, `.keyMismatch`,
    ///   `.expired`, `.notYetValid`.
    public init(pkcs12File path: String, password: String) throws(ClientIdentityError) {
        guard var data = FileManager.default.contents(atPath: path) else {
            if SecretText.mayBeKeyMaterial(path) {
                // A certificate's or key's text given as the path: never echo it.
                throw ClientIdentityError(
                    .fileNotReadable,
                    "cannot read a PKCS#12 file: the path given is not a path but \(SecretText.describe(path)); pass a .p12 file's path, or PEM text to ClientIdentity(certificatePEM:privateKeyPEM:password:)")
            }
            throw ClientIdentityError(.fileNotReadable, "cannot read the PKCS#12 file at \(path)")
        }
        defer { Self.cleanse(&data) }
        try self.init(pkcs12Data: data, password: password, source: "the PKCS#12 file at \(path)")
    }

    /// Loads a PKCS#12 archive from memory.
    /// - Parameters:
    ///   - data: The DER bytes of the archive (the contents of a `.p12` file).
    ///   - password: The password the archive was exported with (`""` for none).
    /// - Throws: ``ClientIdentityError``, as ``init(pkcs12File:password:)``.
    public init(pkcs12Data data: Data, password: String) throws(ClientIdentityError) {
        try self.init(pkcs12Data: data, password: password, source: "the PKCS#12 data")
    }

    private init(pkcs12Data data: Data, password: String, source: String) throws(ClientIdentityError) {
        let (certificate, chain, key) = try Self.parsePKCS12(data, password: password, source: source)
        try self.init(certificate: certificate, chain: chain, privateKey: key, now: Date())
    }

    // MARK: PEM

    /// Loads a certificate chain and a private key in PEM.
    /// - Parameters:
    ///   - certificatePEM: One or more `-----BEGIN CERTIFICATE-----` blocks: the client
    ///     certificate first, then any intermediates.
    ///   - privateKeyPEM: The private key (`BEGIN PRIVATE KEY`, `BEGIN RSA PRIVATE KEY`,
    ///     `BEGIN EC PRIVATE KEY`, or `BEGIN ENCRYPTED PRIVATE KEY`).
    ///   - password: The passphrase of an encrypted key; `nil` for an unencrypted one.
    /// - Throws: ``ClientIdentityError``: `.missingCertificate`, `.missingPrivateKey`,
    ///   `.passwordRequired`, `.wrongPassword`, `.malformed`, `.keyMismatch`, `.expired`,
    ///   `.notYetValid`.
    public init(certificatePEM: String, privateKeyPEM: String, password: String? = nil) throws(ClientIdentityError) {
        let certificates = Self.withCleansedCopy(certificatePEM) { X509Certificate.all(pem: $0) }
        guard let leaf = certificates.first else {
            if certificatePEM.contains("-----BEGIN CERTIFICATE-----") {
                throw ClientIdentityError(.malformed, "certificatePEM has a -----BEGIN CERTIFICATE----- block that is not a readable certificate (damaged base64 or DER)")
            }
            throw ClientIdentityError(.missingCertificate, "certificatePEM holds no certificate (expected a -----BEGIN CERTIFICATE----- block)")
        }
        let key = try Self.parsePrivateKeyPEM(privateKeyPEM, password: password)
        try self.init(certificate: leaf, chain: Array(certificates.dropFirst()), privateKey: key, now: Date())
    }

    /// Checks the pair and the validity period at `now`, and reads the accessors.
    init(certificate: X509Certificate, chain: [X509Certificate], privateKey: EVPKey, now: Date) throws(ClientIdentityError) {
        let commonName = certificate.subjectCommonName
        let described = commonName.map { "the certificate '\($0)'" } ?? "the certificate"
        let matches = certificate.withUnsafeHandle { x509 in
            privateKey.withUnsafeHandle { key in X509_check_private_key(x509, key) == 1 }
        }
        guard matches else {
            ERR_clear_error()
            throw ClientIdentityError(.keyMismatch, "the private key does not belong to \(described): load the key that was created with its signing request")
        }
        guard let notAfter = certificate.notAfter, let notBefore = certificate.notBefore else {
            throw ClientIdentityError(.malformed, "\(described) has an unreadable validity period")
        }
        guard notAfter > now else {
            throw ClientIdentityError(.expired, "\(described) expired on \(Self.format(notAfter)): create a new APNs certificate in your Apple Developer account, or use token-based authentication (.p8)")
        }
        guard notBefore <= now else {
            throw ClientIdentityError(.notYetValid, "\(described) is not valid until \(Self.format(notBefore)): check the system clock")
        }
        self.certificate = certificate
        self.chain = chain
        self.privateKey = privateKey
        self.subjectCommonName = commonName
        self.notAfter = notAfter
        self.notBefore = notBefore
        self.topics = certificate.extensionValue(oid: APNsCertificateTopics.extensionOID).map(APNsCertificateTopics.parse) ?? []
    }

    // MARK: Parsing

    private static func parsePKCS12(
        _ data: Data, password: String, source: String
    ) throws(ClientIdentityError) -> (X509Certificate, [X509Certificate], EVPKey) {
        ERR_clear_error()
        let archive: OpaquePointer? = data.withUnsafeBytes { raw in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self), raw.count > 0 else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            return d2i_PKCS12(nil, &cursor, raw.count)
        }
        guard let archive else {
            ERR_clear_error()
            throw ClientIdentityError(.malformed, "\(source) is not a PKCS#12 (.p12) archive")
        }
        defer { PKCS12_free(archive) }
        if PKCS12_mac_present(archive) == 1 {
            // An archive exported without a password may use an empty or an absent one.
            let verified = withCleansedCString(password) { PKCS12_verify_mac(archive, $0, -1) == 1 }
                || (password.isEmpty && PKCS12_verify_mac(archive, nil, 0) == 1)
            guard verified else {
                ERR_clear_error()
                throw ClientIdentityError(.wrongPassword, "the password does not open \(source)")
            }
        }
        var result = parseVerifiedPKCS12(archive, password: password)
        var errors = OpenSSLErrors.drain()
        if result == nil, LegacyProvider.load() {
            // Keychain Access exports with RC2-40 / 3DES, which OpenSSL 3 keeps in its
            // "legacy" provider: retry once with it loaded.
            result = parseVerifiedPKCS12(archive, password: password)
            let retryErrors = OpenSSLErrors.drain()
            if !retryErrors.messages.isEmpty { errors = retryErrors }
        }
        guard let (key, leaf, extra) = result else {
            throw ClientIdentityError(.malformed, "cannot decrypt \(source): \(errors.text(or: "PKCS12_parse failed"))")
        }
        // Without a key, PKCS12_parse matches no certificate to it and returns every
        // certificate among the extra ones: the usual export mistake (the certificate
        // alone) is a missing key, not a missing certificate.
        guard let key else {
            throw ClientIdentityError(
                .missingPrivateKey,
                "\(source) holds no private key" + (leaf == nil && extra.isEmpty ? " and no certificate" : " (only a certificate)")
                    + ": export the certificate together with its key from Keychain Access")
        }
        guard let leaf else { throw ClientIdentityError(.missingCertificate, "\(source) holds no certificate") }
        return (leaf, extra, key)
    }

    /// `PKCS12_parse`, or `nil` when it fails (the error queue says why).
    private static func parseVerifiedPKCS12(
        _ archive: OpaquePointer, password: String
    ) -> (EVPKey?, X509Certificate?, [X509Certificate])? {
        var key: OpaquePointer?
        var x509: OpaquePointer?
        var others: OpaquePointer?
        let ok = withCleansedCString(password) { PKCS12_parse(archive, $0, &key, &x509, &others) == 1 }
        guard ok else { return nil }
        return (key.map { EVPKey(adopting: $0) }, x509.map { X509Certificate(taking: $0) }, X509Certificate.adoptingStack(others))
    }

    private static func parsePrivateKeyPEM(_ pem: String, password: String?) throws(ClientIdentityError) -> EVPKey {
        ERR_clear_error()
        let encrypted = pem.contains("ENCRYPTED")
        if encrypted && password == nil {
            throw ClientIdentityError(.passwordRequired, "the private key is encrypted: pass its passphrase (the password argument; APNS_CERTIFICATE_PASSWORD, or --cert-password with the apns tool)")
        }
        let key: OpaquePointer? = withCleansedCopy(pem) { bytes in
            guard let base = bytes.baseAddress, bytes.count > 0, bytes.count <= Int(Int32.max),
                  let bio = capns_BIO_new_mem_buf(base, Int32(bytes.count))
            else { return nil }
            defer { BIO_free(bio) }
            return withCleansedCopy(password ?? "") { passwordBuffer in
                var secret = capns_password(
                    bytes: password == nil ? nil : passwordBuffer.baseAddress?.assumingMemoryBound(to: CChar.self),
                    count: passwordBuffer.count
                )
                // An empty password still needs a non-NULL pointer.
                var empty: CChar = 0
                if password != nil, passwordBuffer.count == 0 {
                    return withUnsafePointer(to: &empty) { pointer in
                        secret.bytes = pointer
                        return capns_PEM_read_bio_PrivateKey(bio, &secret)
                    }
                }
                return capns_PEM_read_bio_PrivateKey(bio, &secret)
            }
        }
        guard let key else {
            let errors = OpenSSLErrors.drain()
            if encrypted {
                throw ClientIdentityError(.wrongPassword, "the password does not decrypt the private key")
            }
            if !pem.contains("-----BEGIN") || !pem.contains("PRIVATE KEY-----") {
                throw ClientIdentityError(.missingPrivateKey, "privateKeyPEM holds no private key (expected a -----BEGIN PRIVATE KEY----- block)")
            }
            throw ClientIdentityError(.malformed, "privateKeyPEM cannot be read: \(errors.text(or: "PEM_read_bio_PrivateKey failed"))")
        }
        return EVPKey(adopting: key)
    }

    // MARK: Helpers

    /// Runs `body` over a private copy of `bytes` that is wiped afterwards.
    static func withCleansedCopy<R>(_ string: String, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        let count = string.utf8.count
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count, 1), alignment: 1)
        defer {
            if let base = copy.baseAddress { OPENSSL_cleanse(base, copy.count) }
            copy.deallocate()
        }
        copy.copyBytes(from: string.utf8)
        return body(UnsafeRawBufferPointer(rebasing: copy[0..<count]))
    }

    /// Runs `body` over a NUL-terminated copy of `string` that is wiped afterwards.
    private static func withCleansedCString<R>(_ string: String, _ body: (UnsafePointer<CChar>) -> R) -> R {
        var bytes = Array(string.utf8CString)
        defer { bytes.withUnsafeMutableBytes { if let base = $0.baseAddress { OPENSSL_cleanse(base, $0.count) } } }
        var empty: CChar = 0
        return bytes.withUnsafeBufferPointer { buffer in
            // `utf8CString` always holds at least the terminating NUL.
            guard let base = buffer.baseAddress else { return withUnsafePointer(to: &empty) { body($0) } }
            return body(base)
        }
    }

    private static func cleanse(_ data: inout Data) {
        data.withUnsafeMutableBytes { if let base = $0.baseAddress { OPENSSL_cleanse(base, $0.count) } }
    }

    static func format(_ date: Date) -> String {
        date.formatted(.iso8601)
    }
}

extension ClientIdentity: CustomStringConvertible {
    /// The subject, expiry and topics, safe to log: never key material.
    public var description: String {
        "ClientIdentity(\(subjectCommonName.map { "'\($0)'" } ?? "no common name"), notAfter: \(Self.format(notAfter)), topics: \(topics))"
    }
}
