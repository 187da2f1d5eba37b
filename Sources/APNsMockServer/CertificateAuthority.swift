import COpenSSL
import Foundation

/// A throwaway certificate authority and a server certificate it signed, for loopback.
///
/// Both keys are P-256; both certificates are X.509 v3 signed with ECDSA-SHA256
/// ([RFC 5280](https://www.rfc-editor.org/rfc/rfc5280)). The server certificate names
/// `DNS:localhost, IP:127.0.0.1, IP:::1` in subjectAltName, which is what clients
/// check ([RFC 6125 §6.4](https://www.rfc-editor.org/rfc/rfc6125#section-6.4)).
struct CertificateAuthority: Sendable {
    /// The CA certificate, PEM.
    var certificatePEM: String
    /// The server certificate followed by the CA certificate, PEM.
    var serverChainPEM: String
    /// The server's private key, PEM (PKCS#8).
    var serverKeyPEM: String

    static func generate() throws -> CertificateAuthority {
        guard let caKey = capns_EVP_EC_gen_P256() else { throw openSSLError("generating the CA key") }
        defer { EVP_PKEY_free(caKey) }
        guard let serverKey = capns_EVP_EC_gen_P256() else { throw openSSLError("generating the server key") }
        defer { EVP_PKEY_free(serverKey) }

        let ca = try makeCertificate(
            subject: "swift-apns mock CA", key: caKey, issuer: nil, issuerKey: caKey, serial: 1,
            extensions: [
                (NID_basic_constraints, "critical,CA:TRUE,pathlen:0"),
                (NID_key_usage, "critical,keyCertSign,cRLSign"),
                (NID_subject_key_identifier, "hash"),
            ])
        defer { X509_free(ca) }
        let server = try makeCertificate(
            subject: "localhost", key: serverKey, issuer: ca, issuerKey: caKey, serial: 2,
            extensions: [
                (NID_basic_constraints, "critical,CA:FALSE"),
                (NID_key_usage, "critical,digitalSignature"),
                (NID_ext_key_usage, "serverAuth"),
                (NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1,IP:::1"),
                (NID_authority_key_identifier, "keyid"),
            ])
        defer { X509_free(server) }

        let caPEM = try pem { PEM_write_bio_X509($0, ca) }
        let serverPEM = try pem { PEM_write_bio_X509($0, server) }
        let keyPEM = try pem { PEM_write_bio_PrivateKey($0, serverKey, nil, nil, 0, nil, nil) }
        return CertificateAuthority(certificatePEM: caPEM, serverChainPEM: serverPEM + caPEM, serverKeyPEM: keyPEM)
    }

    private static func makeCertificate(
        subject: String, key: OpaquePointer, issuer: OpaquePointer?, issuerKey: OpaquePointer,
        serial: Int, extensions: [(Int32, String)]
    ) throws -> OpaquePointer {
        guard let cert = X509_new() else { throw openSSLError("allocating a certificate") }
        var ok = X509_set_version(cert, 2) == 1
        // A random 63-bit serial, so certificates of two runs never collide in a client's cache.
        var random = UInt64(0)
        _ = withUnsafeMutableBytes(of: &random) { RAND_bytes($0.baseAddress, 8) }
        ok = ok && ASN1_INTEGER_set_uint64(X509_get_serialNumber(cert), (random >> 1) | UInt64(serial)) == 1
        ok = ok && X509_gmtime_adj(X509_getm_notBefore(cert), -3600) != nil
        ok = ok && X509_gmtime_adj(X509_getm_notAfter(cert), 7 * 24 * 3600) != nil
        ok = ok && X509_set_pubkey(cert, key) == 1
        let name = X509_get_subject_name(cert)
        ok = ok && X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, "swift-apns", -1, -1, 0) == 1
        ok = ok && X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, subject, -1, -1, 0) == 1
        ok = ok && X509_set_issuer_name(cert, issuer.map { X509_get_subject_name($0) } ?? name) == 1
        guard ok else {
            X509_free(cert)
            throw openSSLError("filling in the certificate for \(subject)")
        }
        var context = X509V3_CTX()
        capns_X509V3_set_ctx_nodb(&context)
        X509V3_set_ctx(&context, issuer ?? cert, cert, nil, nil, 0)
        for (nid, value) in extensions {
            guard let ext = X509V3_EXT_conf_nid(nil, &context, nid, value) else {
                X509_free(cert)
                throw openSSLError("adding extension \(value) to \(subject)")
            }
            let added = X509_add_ext(cert, ext, -1)
            X509_EXTENSION_free(ext)
            guard added == 1 else {
                X509_free(cert)
                throw openSSLError("adding extension \(value) to \(subject)")
            }
        }
        guard X509_sign(cert, issuerKey, EVP_sha256()) > 0 else {
            X509_free(cert)
            throw openSSLError("signing the certificate for \(subject)")
        }
        return cert
    }

    private static func pem(_ write: (OpaquePointer) -> Int32) throws -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw openSSLError("allocating a memory BIO") }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { throw openSSLError("writing PEM") }
        var data: UnsafeMutablePointer<CChar>?
        let length = capns_BIO_get_mem_data(bio, &data)
        guard let data, length > 0 else { throw openSSLError("reading PEM") }
        return String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
    }
}

/// An error carrying OpenSSL's queued error strings, which it clears.
func openSSLError(_ what: String) -> MockAPNsServerError {
    var messages: [String] = []
    while true {
        let code = ERR_get_error()
        if code == 0 { break }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        messages.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
    return MockAPNsServerError("OpenSSL failed \(what)" + (messages.isEmpty ? "" : ": " + messages.joined(separator: "; ")))
}
