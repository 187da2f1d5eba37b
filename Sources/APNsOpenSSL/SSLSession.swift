import COpenSSL

/// An OpenSSL `SSL`: the one type that owns an `SSL *` (one TLS connection's state).
///
/// It follows the module's lifetime rule (see `OwnershipRules.swift`): it owns the handle,
/// frees it with `SSL_free` in `deinit` (which also frees the BIOs `SSL_set_fd` made; the
/// socket itself stays open and belongs to the caller), and lends it out only inside
/// ``withUnsafeHandle(_:)``.
///
/// Not `Sendable`, on purpose: a session is driven by one connection's I/O path, and its
/// owner (`TLSStream` under its lock, a server connection on its thread) serialises every
/// use. Adding a lock here would put a second lock on every read and write.
package final class SSLSession {
    private let handle: OpaquePointer

    /// Takes ownership of `handle` (freed with `SSL_free`).
    package init(taking handle: OpaquePointer) {
        self.handle = handle
    }

    deinit {
        SSL_free(handle)
    }

    /// Lends the `SSL *` to `body`; it must not escape.
    @inline(__always)
    package func withUnsafeHandle<R, E: Error>(_ body: (OpaquePointer) throws(E) -> R) throws(E) -> R {
        try body(handle)
    }
}

@available(*, unavailable, message: "an SSL session is used by one connection; its owner serialises it")
extension SSLSession: Sendable {}
