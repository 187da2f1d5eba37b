import APNsCore

/// What a connection's I/O shell needs from its socket: the non-blocking read/write
/// contract of ``TLSStream``. Tests plug in a plain socket pair with an in-process
/// HTTP/2 server behind it; production uses ``TLSStream``.
protocol HTTP2ByteStream: AnyObject {
    /// The socket, for poll(2).
    var fileDescriptor: Int32 { get }
    /// Reads available bytes; `.wantRead` when none are available.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(APNsTransportError) -> TLSIOResult
    /// Writes some of `buffer`; `.done(n)` may write fewer than all.
    func write(_ buffer: UnsafeRawBufferPointer) throws(APNsTransportError) -> TLSIOResult
    /// Closes the stream. Idempotent.
    func close()
}

extension TLSStream: HTTP2ByteStream {}

/// Opens a byte stream to an endpoint, blocking the calling (I/O) thread for at most the timeout.
typealias HTTP2Connector = @Sendable (TLSEndpoint, Duration) throws(APNsTransportError) -> any HTTP2ByteStream
