import COpenSSL
import Synchronization

/// An OpenSSL `X509_STORE` of trust roots: the one type that owns an `X509_STORE *`.
///
/// Loading the system trust store parses the whole CA bundle (about 20 ms in a debug
/// build, ten times a loopback TLS 1.3 handshake), so it is loaded once per process and
/// shared by every connection through ``system``; a change to the system store is seen
/// after a restart.
///
/// It follows the module's lifetime rule (see `OwnershipRules.swift`). The handle sits in a
/// `Mutex`, which makes the class `Sendable` without `@unchecked`; the store is filled once,
/// before it is shared, and OpenSSL shares it between `SSL_CTX`s by reference count.
package final class X509Store: Sendable {
    private let handle: Mutex<OpaquePointer>

    /// Takes ownership of `handle` (freed with `X509_STORE_free`).
    private init(taking handle: OpaquePointer) {
        nonisolated(unsafe) let adopted = handle
        self.handle = Mutex(adopted)
    }

    deinit {
        handle.withLock { X509_STORE_free($0) }
    }

    /// The system trust store (OpenSSL's default verify paths: on Debian
    /// `/usr/lib/ssl/certs` and `cert.pem`, or `SSL_CERT_FILE`/`SSL_CERT_DIR`).
    package static let system: Result<X509Store, LibCryptoError> = {
        ERR_clear_error()
        guard let store = X509_STORE_new() else {
            return .failure(.current("X509_STORE_new"))
        }
        guard X509_STORE_set_default_paths(store) == 1 else {
            let error = LibCryptoError.current("X509_STORE_set_default_paths")
            X509_STORE_free(store)
            return .failure(error)
        }
        ERR_clear_error()
        return .success(X509Store(taking: store))
    }()

    /// Makes `context` verify peers against this store (the context takes its own reference).
    package func install(in context: SSLContext) {
        handle.withLock { store in
            context.withUnsafeHandle { context in
                X509_STORE_up_ref(store)
                SSL_CTX_set_cert_store(context, store)
            }
        }
    }
}
