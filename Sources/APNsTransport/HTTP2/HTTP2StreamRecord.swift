import APNsCore

/// One stream of an ``HTTP2ConnectionStateMachine``: the body still to send and the
/// response as it arrives. nghttp2 holds it as the stream's user data (unretained; the
/// sink's `records` owns it until the stream closes).
final class HTTP2StreamRecord {
    var streamID: Int32 = 0
    let body: [UInt8]
    var bodyOffset = 0
    var headersSent = false
    var cancelled = false
    var responded = false
    var status = 0
    var headers: [HeaderField] = []
    var responseBody: [UInt8] = []
    /// The response header list's size so far, in RFC 9113 §6.5.2 octets (name + value + 32
    /// per field, `:status` included), across every HEADERS block of the stream.
    var headerListSize = 0
    /// The largest response body this stream accepts (the request's kind decides).
    let maxBodySize: Int
    /// The largest response header list this stream accepts (RFC 9113 §6.5.2 octets).
    let maxHeaderListSize: Int

    init(body: [UInt8], maxBodySize: Int, maxHeaderListSize: Int) {
        self.body = body
        self.maxBodySize = maxBodySize
        self.maxHeaderListSize = maxHeaderListSize
    }
}
