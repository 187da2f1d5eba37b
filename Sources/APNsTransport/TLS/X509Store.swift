import APNsCore
import COpenSSL

/// An OpenSSL `X509_STORE` of trust roots: the one type that owns an `X509_STORE *`.
///
/// Loading the system trust store parses the whole CA bundle (about 20 ms in a debug
/// build, ten times a loopback TLS 1.3 handshake), so it is loaded once per process and
/// shared by every connection through ``system``; a change to the system store is seen
/// after a restart.
// @unchecked Sendable: the store is filled once, in `init`, before it is shared, and is
// then only read; OpenSSL guards an X509_STORE's internal caches with its own lock, and
// shares one store between SSL_CTXs through reference counts (`X509_STORE_up_ref`).
final class X509Store: @unchecked Sendable {
    private let handle: OpaquePointer

    private init(handle: OpaquePointer) {
        self.handle = handle
    }

    deinit {
        X509_STORE_free(handle)
    }

    /// The system trust store (OpenSSL's default verify paths: on Debian
    /// `/usr/lib/ssl/certs` and `cert.pem`, or `SSL_CERT_FILE`/`SSL_CERT_DIR`).
    static let system: Result<X509Store, APNsTransportError> = {
        ERR_clear_error()
        guard let store = X509_STORE_new() else {
            return .failure(.tlsFailure("X509_STORE_new failed: \(OpenSSLErrors.drain().text(or: "out of memory"))"))
        }
        guard X509_STORE_set_default_paths(store) == 1 else {
            let errors = OpenSSLErrors.drain()
            X509_STORE_free(store)
            return .failure(.tlsFailure("cannot load the system trust store: \(errors.text(or: "X509_STORE_set_default_paths failed"))"))
        }
        ERR_clear_error()
        return .success(X509Store(handle: store))
    }()

    /// Makes `context` use this store (the context takes its own reference).
    func install(in context: OpaquePointer) {
        X509_STORE_up_ref(handle)
        SSL_CTX_set_cert_store(context, handle)
    }
}
