import COpenSSL

/// Owns the server's `SSL_CTX`: TLS 1.2 or newer, ALPN `h2` only, one certificate chain.
///
/// Created and used on the server thread only.
final class TLSServerContext {
    let context: OpaquePointer

    /// - Parameter clientCAPEM: When given, clients must present a certificate issued by
    ///   one of these PEM certificates (certificate-based authentication).
    init(certificateChainPEM: String, privateKeyPEM: String, clientCAPEM: String? = nil) throws {
        guard let context = SSL_CTX_new(TLS_server_method()) else { throw openSSLError("creating the TLS context") }
        self.context = context
        guard capns_SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION) == 1 else {
            throw openSSLError("requiring TLS 1.2")
        }
        // HTTP/2 forbids renegotiation and compression (RFC 9113 §9.2.1).
        _ = SSL_CTX_set_options(context, capns_SSL_OP_NO_RENEGOTIATION() | capns_SSL_OP_NO_COMPRESSION())
        _ = capns_SSL_CTX_set_mode(context, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS))
        try Self.useChain(certificateChainPEM, in: context)
        try Self.useKey(privateKeyPEM, in: context)
        guard SSL_CTX_check_private_key(context) == 1 else { throw openSSLError("matching the key to the certificate") }
        if let clientCAPEM { try Self.requireClientCertificates(issuedBy: clientCAPEM, in: context) }
        SSL_CTX_set_alpn_select_cb(context, { _, out, outLength, input, inputLength, _ in
            // Pick "h2" from the client's list (RFC 7301 §3.2); no h2, no connection.
            guard let input, let out, let outLength else { return SSL_TLSEXT_ERR_ALERT_FATAL }
            var offset = 0
            let count = Int(inputLength)
            while offset < count {
                let length = Int(input[offset])
                if length == 2, offset + 2 < count, input[offset + 1] == UInt8(ascii: "h"), input[offset + 2] == UInt8(ascii: "2") {
                    out.pointee = input + offset + 1
                    outLength.pointee = 2
                    return SSL_TLSEXT_ERR_OK
                }
                offset += 1 + length
            }
            return SSL_TLSEXT_ERR_ALERT_FATAL
        }, nil)
    }

    deinit {
        SSL_CTX_free(context)
    }

    private static func useChain(_ pem: String, in context: OpaquePointer) throws {
        let bio = try memoryBIO(pem)
        defer { BIO_free(bio) }
        guard let leaf = PEM_read_bio_X509(bio, nil, nil, nil) else { throw openSSLError("reading the certificate PEM") }
        defer { X509_free(leaf) }
        guard SSL_CTX_use_certificate(context, leaf) == 1 else { throw openSSLError("using the certificate") }
        while let extra = PEM_read_bio_X509(bio, nil, nil, nil) {
            guard capns_SSL_CTX_add_extra_chain_cert(context, extra) == 1 else {
                X509_free(extra)
                throw openSSLError("adding a chain certificate")
            }
        }
        ERR_clear_error()  // the loop ends with a "no start line" error
    }

    private static func requireClientCertificates(issuedBy pem: String, in context: OpaquePointer) throws {
        let bio = try memoryBIO(pem)
        defer { BIO_free(bio) }
        guard let store = SSL_CTX_get_cert_store(context) else { throw openSSLError("reading the trust store") }
        var count = 0
        while let certificate = PEM_read_bio_X509(bio, nil, nil, nil) {
            defer { X509_free(certificate) }
            guard X509_STORE_add_cert(store, certificate) == 1 else { throw openSSLError("trusting a client CA") }
            count += 1
        }
        ERR_clear_error()  // the loop ends with a "no start line" error
        guard count > 0 else { throw openSSLError("reading the client CA PEM (no certificate in it)") }
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
    }

    private static func useKey(_ pem: String, in context: OpaquePointer) throws {
        let bio = try memoryBIO(pem)
        defer { BIO_free(bio) }
        guard let key = PEM_read_bio_PrivateKey(bio, nil, nil, nil) else { throw openSSLError("reading the private key PEM") }
        defer { EVP_PKEY_free(key) }
        guard SSL_CTX_use_PrivateKey(context, key) == 1 else { throw openSSLError("using the private key") }
    }

    private static func memoryBIO(_ text: String) throws -> OpaquePointer {
        let bytes = Array(text.utf8)
        guard let bio = BIO_new(BIO_s_mem()) else { throw openSSLError("allocating a BIO") }
        guard BIO_write(bio, bytes, Int32(bytes.count)) == Int32(bytes.count) else {
            BIO_free(bio)
            throw openSSLError("filling a BIO")
        }
        return bio
    }
}
