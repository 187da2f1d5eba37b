import APNsCore
import APNsOpenSSL
import COpenSSL

extension SSLContext {
    /// The ALPN protocol list in wire format (RFC 7301 §3.1): `h2` only.
    static let alpnProtocols: [UInt8] = [2] + Array("h2".utf8)

    /// The TLS 1.2 cipher suites offered: ECDHE key exchange with AES-GCM or
    /// ChaCha20-Poly1305, the ones HTTP/2 permits (RFC 9113 §9.2.2).
    static let tls12CipherSuites = "ECDHE+AESGCM:ECDHE+CHACHA20:!aNULL:!eNULL"

    /// A client context set up from a ``TLSConfiguration``: TLS 1.2 minimum, ALPN `h2`
    /// only, no renegotiation or compression and, for TLS 1.2, only the ephemeral AEAD
    /// cipher suites HTTP/2 allows (RFC 9113 §9.2.1, §9.2.2), peer verification against
    /// the configured roots, the client identity, and the modes a non-blocking writer
    /// needs.
    /// - Throws: ``APNsCore/APNsTransportError`` `.tlsFailure` when the trust roots or the client
    ///   identity cannot be installed.
    static func client(configuration: TLSConfiguration) throws(APNsTransportError) -> SSLContext {
        let context: SSLContext
        do {
            context = try SSLContext(.client)
        } catch {
            throw .tlsFailure("cannot create a TLS context: \(error.description)")
        }
        try context.withUnsafeHandle { (handle: OpaquePointer) throws(APNsTransportError) in
            try configure(handle, configuration)
        }
        if configuration.trustRoots.source == .system {
            do {
                try X509Store.system.get().install(in: context)
            } catch {
                throw .tlsFailure("cannot load the system trust store: \(error.description)")
            }
        }
        return context
    }

    private static func configure(_ context: OpaquePointer, _ configuration: TLSConfiguration) throws(APNsTransportError) {
        guard capns_SSL_CTX_set_min_proto_version(context, capns_TLS1_2_VERSION()) == 1 else {
            throw .tlsFailure("cannot require TLS 1.2: \(OpenSSLErrors.drain().text(or: "SSL_CTX_set_min_proto_version failed"))")
        }
        _ = capns_SSL_CTX_set_nonblocking_write_modes(context)
        capns_SSL_CTX_ignore_unexpected_eof(context)
        // HTTP/2 over TLS 1.2 forbids renegotiation and compression (RFC 9113 §9.2.1): a
        // server's HelloRequest is refused, not answered with a new handshake.
        _ = SSL_CTX_set_options(context, capns_SSL_OP_NO_RENEGOTIATION() | capns_SSL_OP_NO_COMPRESSION())
        // TLS 1.2's suites: ephemeral key exchange and AEAD only, as RFC 9113 §9.2.2 (and
        // Appendix A's block list) requires of HTTP/2; APNs offers them. TLS 1.3's are
        // all AEAD and set apart (SSL_CTX_set_ciphersuites).
        guard SSL_CTX_set_cipher_list(context, Self.tls12CipherSuites) == 1 else {
            throw .tlsFailure("cannot set the TLS 1.2 cipher suites: \(OpenSSLErrors.drain().text(or: "SSL_CTX_set_cipher_list failed"))")
        }
        // SSL_CTX_set_alpn_protos returns 0 on success (unlike most of OpenSSL).
        let alpn = Self.alpnProtocols.withUnsafeBufferPointer { SSL_CTX_set_alpn_protos(context, $0.baseAddress, UInt32($0.count)) }
        guard alpn == 0 else { throw .tlsFailure("cannot offer ALPN h2: \(OpenSSLErrors.drain().text(or: "SSL_CTX_set_alpn_protos failed"))") }

        switch configuration.trustRoots.source {
        case .system:
            // The store is installed by the caller, outside this context's lock.
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        case .certificates(let pem):
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
            let certificates = X509Certificate.all(pem: pem)
            guard !certificates.isEmpty else {
                throw APNsTransportError.tlsFailure(
                    "the PEM given to TrustRoots.certificates(_:) holds no certificate (expected -----BEGIN CERTIFICATE----- blocks)"
                ).permanent
            }
            guard let store = SSL_CTX_get_cert_store(context) else {
                throw .tlsFailure("SSL_CTX_get_cert_store failed")
            }
            // A certificate you list is trusted as an anchor even when it is not a root (an
            // intermediate, or the server's own), as curl does: the chain need not go on
            // to a self-signed root you did not give.
            _ = X509_STORE_set_flags(store, UInt(X509_V_FLAG_PARTIAL_CHAIN))
            for certificate in certificates {
                let added = certificate.withUnsafeHandle { X509_STORE_add_cert(store, $0) }
                guard added == 1 else {
                    throw .tlsFailure("cannot add a trust root: \(OpenSSLErrors.drain().text(or: "X509_STORE_add_cert failed"))")
                }
            }
        case .none:
            SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
        }

        if let identity = configuration.clientIdentity {
            let used = identity.certificate.withUnsafeHandle { SSL_CTX_use_certificate(context, $0) }
            guard used == 1 else {
                throw .tlsFailure("cannot use the client certificate: \(OpenSSLErrors.drain().text(or: "SSL_CTX_use_certificate failed"))")
            }
            for intermediate in identity.chain {
                let added = intermediate.withUnsafeHandle { capns_SSL_CTX_add1_chain_cert(context, $0) }
                guard added == 1 else {
                    throw .tlsFailure("cannot add an intermediate certificate: \(OpenSSLErrors.drain().text(or: "SSL_CTX_add1_chain_cert failed"))")
                }
            }
            let keyUsed = identity.privateKey.withUnsafeHandle { SSL_CTX_use_PrivateKey(context, $0) }
            guard keyUsed == 1, SSL_CTX_check_private_key(context) == 1 else {
                // Never put key material in an error: OpenSSL's reason names only the check.
                throw .tlsFailure("cannot use the client private key: \(OpenSSLErrors.drain().text(or: "SSL_CTX_use_PrivateKey failed"))")
            }
        }
    }
}
