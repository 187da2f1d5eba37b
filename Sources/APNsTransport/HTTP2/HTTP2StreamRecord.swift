import APNsCore

/// One stream of an ``HTTP2ConnectionStateMachine``: the body still to send and the
/// response as it arrives. nghttp2 holds it as the stream's user data (unretained; the
/// sink's `records` owns it until the stream closes, then keeps it for a later stream).
final class HTTP2StreamRecord {
    // Every stored property is `@exclusivity(unchecked)`, as in ``HTTP2SessionSink``: a
    // record is used by its connection's I/O thread only, from nghttp2's callbacks and the
    // state machine, and no access overlaps another; the runtime's checks (a begin and an
    // end per access to an array or an optional) showed in the profile of every answer.
    @exclusivity(unchecked) var streamID: Int32 = 0
    @exclusivity(unchecked) private(set) var body: [UInt8]
    @exclusivity(unchecked) var bodyOffset = 0
    @exclusivity(unchecked) var headersSent = false
    /// The frame that ends the request (END_STREAM: the body's last DATA frame, or the
    /// HEADERS of a request without a body) was serialized. Until then the server cannot
    /// have processed the request, whatever it received of it.
    @exclusivity(unchecked) var endStreamSent = false
    @exclusivity(unchecked) var cancelled = false
    /// This client sent RST_STREAM on the stream (nghttp2 did, because the server broke
    /// the stream's rules; a cancellation marks ``cancelled`` instead).
    @exclusivity(unchecked) var resetSent = false
    @exclusivity(unchecked) var responded = false
    /// The final answer's `:status` (0 until one arrives; an interim 1xx is not kept).
    @exclusivity(unchecked) var status = 0
    /// The header block being read is an interim response's (1xx, RFC 9113 §8.1): its
    /// fields are not the answer's.
    @exclusivity(unchecked) var interim = false
    /// The response headers other than `:status` and a canonical `apns-id`.
    @exclusivity(unchecked) var headers: [HeaderField] = []
    /// The response's `apns-id`, when it was a canonical UUID (kept as 128 bits).
    @exclusivity(unchecked) var apnsID: APNsID?
    /// Where `apnsID` stands among the response headers.
    @exclusivity(unchecked) var apnsIDIndex = 0
    /// The request's `apns-id`, and its text as sent (36 octets), so that the echo in the
    /// response is recognised by one comparison instead of being parsed.
    @exclusivity(unchecked) var sentAPNsID: APNsID?
    @exclusivity(unchecked) var sentAPNsIDText: (UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0)
    @exclusivity(unchecked) var responseBody: [UInt8] = []
    /// The response header list's size so far, in RFC 9113 §6.5.2 octets (name + value + 32
    /// per field, `:status` included), across every HEADERS block of the stream.
    @exclusivity(unchecked) var headerListSize = 0
    /// The largest response body this stream accepts (the request's kind decides).
    @exclusivity(unchecked) private(set) var maxBodySize: Int
    /// The largest response header list this stream accepts (RFC 9113 §6.5.2 octets).
    @exclusivity(unchecked) private(set) var maxHeaderListSize: Int

    init(body: [UInt8], maxBodySize: Int, maxHeaderListSize: Int) {
        self.body = body
        self.maxBodySize = maxBodySize
        self.maxHeaderListSize = maxHeaderListSize
    }

    /// Makes a recycled record a new stream's.
    func reset(body: [UInt8], maxBodySize: Int, maxHeaderListSize: Int) {
        self.body = body
        self.maxBodySize = maxBodySize
        self.maxHeaderListSize = maxHeaderListSize
        streamID = 0
        bodyOffset = 0
        headersSent = false
        endStreamSent = false
        cancelled = false
        resetSent = false
        responded = false
        status = 0
        interim = false
        apnsID = nil
        apnsIDIndex = 0
        sentAPNsID = nil
        headerListSize = 0
    }

    /// Lets go of what the closed stream held (its body, its response), so a spare record
    /// keeps no request's data alive.
    func release() {
        body = []
        headers = []
        responseBody = []
    }
}
