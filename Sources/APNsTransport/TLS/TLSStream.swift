// CONTRACT STUB — replaced by the TLS implementation. The HTTP/2 connection's I/O
// shell uses exactly these internal signatures.
import APNsCore

/// The outcome of one non-blocking read or write on a ``TLSStream``.
enum TLSIOResult: Sendable, Equatable {
    /// This many bytes were read or written (never 0 for a read: see `closed`).
    case done(Int)
    /// Nothing could be done now; poll the descriptor for readability, then retry.
    case wantRead
    /// Nothing could be done now; poll the descriptor for writability, then retry.
    case wantWrite
    /// The peer closed the connection (TLS close_notify or TCP EOF).
    case closed
}

/// Where a connection goes: a host name (or IP literal) and a port.
struct TLSEndpoint: Sendable, Hashable {
    var host: String
    var port: Int
}

/// A connected TCP socket with a completed TLS handshake that negotiated ALPN `h2`,
/// in non-blocking mode. Used by one I/O thread at a time.
final class TLSStream {
    /// Connects (through `configuration.proxy` when set), handshakes and checks ALPN `h2`.
    /// Blocks the calling thread for at most `timeout`.
    /// - Throws: ``APNsTransportError`` `.connectionFailed` or `.tlsFailure`, with
    ///   `mayHaveReachedAPNs == false` and a detail that says what to fix.
    static func connect(
        to endpoint: TLSEndpoint,
        configuration: TLSConfiguration,
        timeout: Duration
    ) throws(APNsTransportError) -> TLSStream {
        throw .connectionFailed("TLS is not implemented yet")
    }

    /// The socket, for poll(2).
    var fileDescriptor: Int32 { -1 }

    /// Reads decrypted bytes into `buffer`.
    /// - Throws: ``APNsTransportError`` `.connectionClosed` on a TLS or socket error.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(APNsTransportError) -> TLSIOResult { .closed }

    /// Encrypts and writes bytes from `buffer`; with `.done(n)`, n may be less than the count.
    /// - Throws: ``APNsTransportError`` `.connectionClosed` on a TLS or socket error.
    func write(_ buffer: UnsafeRawBufferPointer) throws(APNsTransportError) -> TLSIOResult { .closed }

    /// Sends TLS close_notify (best effort) and closes the socket. Idempotent.
    func close() {}
}

/// CONTRACT STUB: how the transport sets up TLS (trust, client identity, proxy).
public struct TLSConfiguration: Sendable {
    /// Verifies APNs against the system trust store, with no client certificate.
    public static let `default` = TLSConfiguration()
}
