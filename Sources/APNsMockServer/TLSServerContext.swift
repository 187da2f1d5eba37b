import APNsOpenSSL
import COpenSSL

/// The server's TLS settings: TLS 1.2 or newer, ALPN `h2` only, one certificate chain, and
/// optionally required client certificates. The `SSL_CTX` itself is an ``SSLContext``
/// (APNsOpenSSL owns every OpenSSL handle).
///
/// Created and used on the server thread only.
final class TLSServerContext {
    /// The configured context; connections make their sessions from it.
    let sslContext: SSLContext

    /// - Parameters:
    ///   - clientCAPEM: When given, a client certificate is asked for and must be issued by
    ///     one of these PEM certificates (certificate-based authentication).
    ///   - requireClientCertificate: Whether a client without a certificate is refused
    ///     (with `clientCAPEM`); otherwise it may connect without one (token connections
    ///     beside certificate ones).
    init(certificateChainPEM: String, privateKeyPEM: String, clientCAPEM: String? = nil, requireClientCertificate: Bool = true) throws {
        do {
            sslContext = try SSLContext(.server)
        } catch {
            throw MockAPNsServerError("OpenSSL failed creating the TLS context: \(error.description)")
        }
        let certificates = X509Certificate.all(pem: certificateChainPEM)
        guard let leaf = certificates.first else { throw openSSLError("reading the certificate PEM (no certificate in it)") }
        let clientCAs = clientCAPEM.map { X509Certificate.all(pem: $0) }
        if let clientCAs, clientCAs.isEmpty { throw openSSLError("reading the client CA PEM (no certificate in it)") }
        let key = try Self.readKey(privateKeyPEM)
        try sslContext.withUnsafeHandle { (context: OpaquePointer) throws in
            try Self.configure(context, leaf: leaf, chain: certificates.dropFirst(), key: key, clientCAs: clientCAs,
                               requireClientCertificate: requireClientCertificate)
        }
    }

    private static func configure(
        _ context: OpaquePointer, leaf: X509Certificate, chain: ArraySlice<X509Certificate>, key: EVPKey, clientCAs: [X509Certificate]?,
        requireClientCertificate: Bool
    ) throws {
        guard capns_SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION) == 1 else {
            throw openSSLError("requiring TLS 1.2")
        }
        // HTTP/2 forbids renegotiation and compression (RFC 9113 §9.2.1).
        _ = SSL_CTX_set_options(context, capns_SSL_OP_NO_RENEGOTIATION() | capns_SSL_OP_NO_COMPRESSION())
        _ = capns_SSL_CTX_set_mode(context, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS))
        // Fewer read(2) calls under load: one read takes many records (see ServerConnection.readAvailable()).
        capns_SSL_CTX_set_read_ahead(context, 1)
        guard leaf.withUnsafeHandle({ SSL_CTX_use_certificate(context, $0) }) == 1 else { throw openSSLError("using the certificate") }
        for certificate in chain {
            // add1: the context takes its own reference; `certificate` keeps ours.
            guard certificate.withUnsafeHandle({ capns_SSL_CTX_add1_chain_cert(context, $0) }) == 1 else {
                throw openSSLError("adding a chain certificate")
            }
        }
        guard key.withUnsafeHandle({ SSL_CTX_use_PrivateKey(context, $0) }) == 1 else { throw openSSLError("using the private key") }
        guard SSL_CTX_check_private_key(context) == 1 else { throw openSSLError("matching the key to the certificate") }
        if let clientCAs {
            guard let store = SSL_CTX_get_cert_store(context) else { throw openSSLError("reading the trust store") }
            for certificate in clientCAs {
                guard certificate.withUnsafeHandle({ X509_STORE_add_cert(store, $0) }) == 1 else { throw openSSLError("trusting a client CA") }
            }
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER | (requireClientCertificate ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0), nil)
        }
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

    private static func readKey(_ pem: String) throws -> EVPKey {
        var bytes = Array(pem.utf8)
        defer { EVPKey.cleanse(&bytes) }
        let key = bytes.withUnsafeBytes { raw in
            MemoryBIO.reading(raw) { bio in PEM_read_bio_PrivateKey(bio, nil, nil, nil).map { EVPKey(adopting: $0) } }
        }
        guard let key else { throw openSSLError("reading the private key PEM") }
        return key
    }
}
