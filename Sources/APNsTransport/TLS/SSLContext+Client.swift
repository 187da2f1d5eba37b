import APNsCore
import APNsOpenSSL
import COpenSSL

extension SSLContext {
    /// The ALPN protocol list in wire format (RFC 7301 §3.1): `h2` only.
    static let alpnProtocols: [UInt8] = [2] + Array("h2".utf8)

    /// A client context set up from a ``TLSConfiguration``: TLS 1.2 minimum, ALPN `h2`
    /// only, peer verification against the configured roots, the client identity, and the
    /// modes a non-blocking writer needs.
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
                throw .tlsFailure("the PEM given to TrustRoots.certificates(_:) holds no certificate (expected -----BEGIN CERTIFICATE----- blocks)")
            }
            guard let store = SSL_CTX_get_cert_store(context) else {
                throw .tlsFailure("SSL_CTX_get_cert_store failed")
            }
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
