import COpenSSL
import Synchronization

/// An OpenSSL `SSL_CTX`: the one type that owns an `SSL_CTX *`, for the client
/// (`APNsTransport` configures it from a `TLSConfiguration`) and for the mock server.
///
/// It follows the module's lifetime rule (see `OwnershipRules.swift`): it owns the handle,
/// frees it in `deinit`, and lends it out only inside ``withUnsafeHandle(_:)``. Each
/// ``SSLSession`` made from it holds its own reference (`SSL_new`), so the context may be
/// released once its sessions exist. The handle sits in a `Mutex`, which makes the class
/// `Sendable` without `@unchecked`: configuration and ``makeSession()`` never overlap.
package final class SSLContext: Sendable {
    private let handle: Mutex<OpaquePointer>

    /// Which side of a connection the context serves.
    package enum Role: Sendable {
        /// `TLS_client_method()`.
        case client
        /// `TLS_server_method()`.
        case server
    }

    /// A new, unconfigured context for `role`.
    /// - Throws: ``LibCryptoError`` when OpenSSL cannot allocate it.
    package init(_ role: Role) throws(LibCryptoError) {
        ERR_clear_error()
        let method = switch role {
        case .client: TLS_client_method()
        case .server: TLS_server_method()
        }
        guard let context = SSL_CTX_new(method) else { throw .current("SSL_CTX_new") }
        nonisolated(unsafe) let adopted = context
        handle = Mutex(adopted)
    }

    deinit {
        handle.withLock { SSL_CTX_free($0) }
    }

    /// Lends the `SSL_CTX *` to `body` (to configure it); it must not escape.
    package func withUnsafeHandle<R: Sendable, E: Error>(_ body: (OpaquePointer) throws(E) -> R) throws(E) -> R {
        try handle.withLock { (pointer: inout OpaquePointer) throws(E) -> R in try body(pointer) }
    }

    /// A new session (`SSL_new`) with this context's settings.
    /// - Throws: ``LibCryptoError`` when OpenSSL cannot allocate it.
    package func makeSession() throws(LibCryptoError) -> SSLSession {
        ERR_clear_error()
        // SSL_new's result holds its own reference to the context and nothing else of ours:
        // taking it out of the lock is safe.
        // It crosses the lock as an address, which is Sendable.
        let address = withUnsafeHandle { context in UInt(bitPattern: SSL_new(context)) }
        guard let ssl = OpaquePointer(bitPattern: address) else { throw .current("SSL_new") }
        return SSLSession(taking: ssl)
    }
}
