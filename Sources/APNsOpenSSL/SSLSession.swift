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

// The calls of one connection's I/O path, each a direct call on the handle (no lock: the
// owner serialises them). Their results are OpenSSL's, for ``error(for:)``.
extension SSLSession {
    /// `SSL_set_fd`: reads and writes go through socket `fd` (which stays the caller's).
    /// - Returns: `false` when OpenSSL could not attach it.
    package func attach(to fd: Int32) -> Bool {
        SSL_set_fd(handle, fd) == 1
    }

    /// `SSL_set_accept_state`: the session answers a handshake (a server).
    package func acceptHandshakes() {
        SSL_set_accept_state(handle)
    }

    /// `SSL_do_handshake`: 1 once the handshake is complete.
    package func handshake() -> Int32 {
        SSL_do_handshake(handle)
    }

    /// `SSL_read` into `buffer`: the count read, or ≤ 0 (see ``error(for:)``).
    package func read(into buffer: UnsafeMutableRawBufferPointer) -> Int32 {
        SSL_read(handle, buffer.baseAddress, Int32(clamping: buffer.count))
    }

    /// `SSL_write` of `bytes`: the count written, or ≤ 0 (see ``error(for:)``).
    package func write(_ bytes: UnsafeRawBufferPointer) -> Int32 {
        SSL_write(handle, bytes.baseAddress, Int32(clamping: bytes.count))
    }

    /// `SSL_get_error` for `result`, what a call above returned (`SSL_ERROR_WANT_READ`, …).
    package func error(for result: Int32) -> Int32 {
        SSL_get_error(handle, result)
    }

    /// Whether OpenSSL holds decrypted bytes not yet read (`SSL_has_pending`).
    package var hasPendingBytes: Bool {
        SSL_has_pending(handle) == 1
    }

    /// Sends close_notify (`SSL_shutdown`), once.
    package func sendCloseNotify() {
        _ = SSL_shutdown(handle)
    }

    /// Whether ALPN selected `h2` (RFC 7301; RFC 9113 §3.2).
    package var selectedH2: Bool {
        var name: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(handle, &name, &length)
        guard length == 2, let name else { return false }
        return name[0] == UInt8(ascii: "h") && name[1] == UInt8(ascii: "2")
    }

    /// The certificate the peer presented (`SSL_get1_peer_certificate`), if any.
    package func peerCertificate() -> X509Certificate? {
        SSL_get1_peer_certificate(handle).map { X509Certificate(taking: $0) }
    }
}

@available(*, unavailable, message: "an SSL session is used by one connection; its owner serialises it")
extension SSLSession: Sendable {}
