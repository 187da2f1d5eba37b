/// The stream identifiers a client has used on a connection, to catch one used again.
///
/// RFC 9113 §5.1.1: a client's new stream identifiers increase, opening a stream closes
/// every idle one below it, and "an endpoint that receives an unexpected stream identifier
/// MUST respond with a connection error of type PROTOCOL_ERROR". libnghttp2 ignores a
/// HEADERS frame on an identifier below the highest it has seen when it no longer knows
/// the stream (it cannot tell trailers for a stream it reset from a reused identifier), so
/// a client that opens stream 5 and then 3 would wait for ever for an answer on 3. An
/// identifier the client skipped never carried a stream, so HEADERS on it is never
/// trailers: this remembers the skipped ones (as ranges) so that the server can end the
/// connection as the RFC asks. Identifiers that did carry a stream are left to nghttp2.
struct ClientStreamIDs {
    /// The highest client (odd) identifier a HEADERS frame arrived on.
    private(set) var highest = 0
    /// Odd identifiers below ``highest`` that no HEADERS frame used, oldest first, at most
    /// ``rangeLimit`` ranges: a client that skips identifiers on every request makes one
    /// range each, and the oldest are forgotten (a reuse of one of them goes uncaught).
    private var skipped: [ClosedRange<Int>] = []
    static let rangeLimit = 1024

    /// Notes a HEADERS frame on `streamID`; `false` when it reuses an identifier the client
    /// skipped (an implicitly closed stream), a connection error.
    mutating func admitHeaders(on streamID: Int32) -> Bool {
        let id = Int(streamID)
        // Even identifiers are the server's: nghttp2 refuses them itself.
        guard id & 1 == 1 else { return true }
        if id > highest {
            let next = highest == 0 ? 1 : highest + 2
            if id > next {
                skipped.append(next...(id - 2))
                if skipped.count > Self.rangeLimit { skipped.removeFirst(skipped.count - Self.rangeLimit) }
            }
            highest = id
            return true
        }
        // At or below the highest: trailers on an open stream, or a frame nghttp2 judges
        // itself; only a skipped identifier is certainly wrong.
        return !skipped.contains { $0.contains(id) }
    }
}
