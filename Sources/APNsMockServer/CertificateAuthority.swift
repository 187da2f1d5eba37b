import APNsOpenSSL
import COpenSSL
import Foundation

/// A throwaway certificate authority and a server certificate it signed, for loopback.
///
/// Both keys are P-256; both certificates are X.509 v3 signed with ECDSA-SHA256
/// ([RFC 5280](https://www.rfc-editor.org/rfc/rfc5280)). The server certificate names
/// `DNS:localhost, IP:127.0.0.1, IP:::1` in subjectAltName, which is what clients
/// check ([RFC 6125 §6.4](https://www.rfc-editor.org/rfc/rfc6125#section-6.4)).
/// Keys and certificates are APNsOpenSSL's ``EVPKey`` and ``X509Certificate``.
struct CertificateAuthority: Sendable {
    /// The CA certificate, PEM.
    var certificatePEM: String
    /// The server certificate followed by the CA certificate, PEM.
    var serverChainPEM: String
    /// The server's private key, PEM (PKCS#8).
    var serverKeyPEM: String

    static func generate() throws -> CertificateAuthority {
        do {
            let caKey = try EVPKey.generateP256()
            let serverKey = try EVPKey.generateP256()
            let ca = try makeCertificate(
                subject: "swift-apns mock CA", key: caKey, issuer: nil, issuerKey: caKey, serial: 1,
                extensions: [
                    (NID_basic_constraints, "critical,CA:TRUE,pathlen:0"),
                    (NID_key_usage, "critical,keyCertSign,cRLSign"),
                    (NID_subject_key_identifier, "hash"),
                ])
            let server = try makeCertificate(
                subject: "localhost", key: serverKey, issuer: ca, issuerKey: caKey, serial: 2,
                extensions: [
                    (NID_basic_constraints, "critical,CA:FALSE"),
                    (NID_key_usage, "critical,digitalSignature"),
                    (NID_ext_key_usage, "serverAuth"),
                    (NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1,IP:::1"),
                    (NID_authority_key_identifier, "keyid"),
                ])
            let caPEM = try ca.pem()
            return CertificateAuthority(
                certificatePEM: caPEM, serverChainPEM: try server.pem() + caPEM, serverKeyPEM: try serverKey.privateKeyPEM())
        } catch {
            throw MockAPNsServerError("OpenSSL failed making the mock CA: \(error.description)")
        }
    }

    private static func makeCertificate(
        subject: String, key: EVPKey, issuer: X509Certificate?, issuerKey: EVPKey,
        serial: Int, extensions: [(Int32, String)]
    ) throws(LibCryptoError) -> X509Certificate {
        guard let raw = X509_new() else { throw .current("X509_new") }
        // Owned from here: freed with the wrapper on any failure below.
        let certificate = X509Certificate(taking: raw)
        try certificate.withUnsafeHandle { (cert: OpaquePointer) throws(LibCryptoError) in
            var ok = X509_set_version(cert, 2) == 1
            // A random 63-bit serial, so certificates of two runs never collide in a client's cache.
            var random = UInt64(0)
            _ = withUnsafeMutableBytes(of: &random) { RAND_bytes($0.baseAddress, 8) }
            ok = ok && ASN1_INTEGER_set_uint64(X509_get_serialNumber(cert), (random >> 1) | UInt64(serial)) == 1
            ok = ok && X509_gmtime_adj(X509_getm_notBefore(cert), -3600) != nil
            ok = ok && X509_gmtime_adj(X509_getm_notAfter(cert), 7 * 24 * 3600) != nil
            ok = ok && key.withUnsafeHandle { X509_set_pubkey(cert, $0) } == 1
            let name = X509_get_subject_name(cert)
            ok = ok && X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, "swift-apns", -1, -1, 0) == 1
            ok = ok && X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, subject, -1, -1, 0) == 1
            guard ok else { throw .current("filling in the certificate for \(subject)") }
            try withIssuer(issuer, of: cert) { (issuerCert: OpaquePointer) throws(LibCryptoError) in
                guard X509_set_issuer_name(cert, X509_get_subject_name(issuerCert)) == 1 else {
                    throw .current("setting the issuer of \(subject)")
                }
                var context = X509V3_CTX()
                capns_X509V3_set_ctx_nodb(&context)
                X509V3_set_ctx(&context, issuerCert, cert, nil, nil, 0)
                for (nid, value) in extensions {
                    guard let ext = X509V3_EXT_conf_nid(nil, &context, nid, value) else {
                        throw .current("adding extension \(value) to \(subject)")
                    }
                    let added = X509_add_ext(cert, ext, -1)
                    X509_EXTENSION_free(ext)
                    guard added == 1 else { throw .current("adding extension \(value) to \(subject)") }
                }
            }
            let signed = issuerKey.withUnsafeHandle { X509_sign(cert, $0, EVP_sha256()) }
            guard signed > 0 else { throw .current("signing the certificate for \(subject)") }
        }
        return certificate
    }

    /// Runs `body` with the issuer's `X509 *`, or with `cert` itself for a self-signed one.
    private static func withIssuer(
        _ issuer: X509Certificate?, of cert: OpaquePointer, _ body: (OpaquePointer) throws(LibCryptoError) -> Void
    ) throws(LibCryptoError) {
        if let issuer {
            try issuer.withUnsafeHandle { (issuerCert: OpaquePointer) throws(LibCryptoError) in try body(issuerCert) }
        } else {
            try body(cert)
        }
    }
}

/// An error carrying OpenSSL's queued error strings, which it clears.
func openSSLError(_ what: String) -> MockAPNsServerError {
    MockAPNsServerError("OpenSSL failed \(what)" + {
        let errors = OpenSSLErrors.drain()
        return errors.messages.isEmpty ? "" : ": " + errors.text(or: "")
    }())
}
