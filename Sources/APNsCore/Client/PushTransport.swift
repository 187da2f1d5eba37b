/// The seam between what to send and how the bytes move: sends one ``APNsRequest`` and
/// returns APNs' HTTP answer.
///
/// ``APNsClient`` uses a transport; `APNsTransport` provides the real one (TLS + HTTP/2
/// over nghttp2 and OpenSSL) and ``MockTransport`` an in-memory one for tests. Conform
/// your own type only to move requests some other way.
///
/// Every implementation must:
/// - **Return every HTTP answer**, whatever its status: a 400 or 503 from APNs is a
///   response, not an error. The client interprets it.
/// - **Throw only ``APNsTransportError``**, and set ``APNsTransportError/mayHaveReachedAPNs``
///   truthfully: `false` only when APNs certainly did not process the request (nothing was
///   written; connect or TLS failed; a GOAWAY's last-stream-id is below the stream, RFC 9113
///   §6.8; RST_STREAM with REFUSED_STREAM, RFC 9113 §8.7; the queue was full), `true` when
///   in doubt (the connection closed or the deadline passed after the request was written).
///   The client retries only failures with `mayHaveReachedAPNs == false`, so a wrong
///   `false` can deliver a notification twice.
/// - **Honour ``APNsRequest/timeout``**, counted from the call, queueing included, and throw
///   ``APNsTransportError/Code/timeout`` when it passes.
/// - **Honour task cancellation**: when the calling task is cancelled, reset the stream
///   (or drop the queued request) and throw ``APNsTransportError/Code/cancelled`` promptly.
/// - **Send the headers in the order given**, pseudo-headers first, without adding,
///   removing or merging fields (the HPACK policy relies on the order).
/// - **Be safe to call from many tasks at once**.
/// - **Shut down cleanly**: after ``shutdown()`` begins, new requests fail at once with
///   ``APNsTransportError/Code/shutdown``; requests in flight finish or fail with an error
///   (never hang, never vanish). ``shutdown()`` returns when nothing is in flight.
public protocol PushTransport: Sendable {
    /// Sends `request` and returns the HTTP answer, whatever its status.
    ///
    /// - Throws: ``APNsTransportError`` when no answer arrived; see the protocol's rules.
    func send(_ request: APNsRequest) async throws(APNsTransportError) -> APNsResponse

    /// Stops accepting requests, lets the ones in flight finish or fail, and releases
    /// connections. Calling it again has no further effect.
    func shutdown() async
}
