import APNsCore

/// One stream of an ``HTTP2ConnectionStateMachine``: the body still to send and the
/// response as it arrives. nghttp2 holds it as the stream's user data (unretained; the
/// sink's `records` owns it until the stream closes, then keeps it for a later stream).
final class HTTP2StreamRecord {
    var streamID: Int32 = 0
    private(set) var body: [UInt8]
    var bodyOffset = 0
    var headersSent = false
    /// The frame that ends the request (END_STREAM: the body's last DATA frame, or the
    /// HEADERS of a request without a body) was serialized. Until then the server cannot
    /// have processed the request, whatever it received of it.
    var endStreamSent = false
    var cancelled = false
    var responded = false
    var status = 0
    /// The response headers other than `:status` and a canonical `apns-id`.
    var headers: [HeaderField] = []
    /// The response's `apns-id`, when it was a canonical UUID (kept as 128 bits).
    var apnsID: APNsID?
    /// Where `apnsID` stands among the response headers.
    var apnsIDIndex = 0
    /// The request's `apns-id`, and its text as sent (36 octets), so that the echo in the
    /// response is recognised by one comparison instead of being parsed.
    var sentAPNsID: APNsID?
    var sentAPNsIDText: (UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0)
    var responseBody: [UInt8] = []
    /// The response header list's size so far, in RFC 9113 §6.5.2 octets (name + value + 32
    /// per field, `:status` included), across every HEADERS block of the stream.
    var headerListSize = 0
    /// The largest response body this stream accepts (the request's kind decides).
    private(set) var maxBodySize: Int
    /// The largest response header list this stream accepts (RFC 9113 §6.5.2 octets).
    private(set) var maxHeaderListSize: Int

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
        responded = false
        status = 0
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
