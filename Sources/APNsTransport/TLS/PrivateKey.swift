import COpenSSL
import Foundation

/// An OpenSSL `EVP_PKEY` private key for a client certificate: the one type in TLS that
/// owns an `EVP_PKEY *`.
///
/// It frees the handle in `deinit` (OpenSSL wipes the key material as it frees it) and
/// lends it out only inside ``withUnsafeHandle(_:)``.
// @unchecked Sendable: the handle is immutable, owned by this object alone, and every use
// of it happens inside `lock`, so no two threads touch it at once; it is freed once, in
// deinit, when no one else can.
final class PrivateKey: @unchecked Sendable {
    private let handle: OpaquePointer
    private let lock = NSLock()

    /// Takes ownership of `handle` (freed with `EVP_PKEY_free`).
    init(taking handle: OpaquePointer) {
        self.handle = handle
    }

    deinit {
        EVP_PKEY_free(handle)
    }

    /// Lends the `EVP_PKEY *` to `body`; it must not escape (OpenSSL functions that keep
    /// it, such as `SSL_CTX_use_PrivateKey`, take their own reference).
    func withUnsafeHandle<R>(_ body: (OpaquePointer) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(handle)
    }
}
