/// An HTTP response from APNs as a transport received it: status, headers and body.
///
/// The client turns it into an ``APNsAccepted`` (status 200) or an ``APNsRejection``.
///
/// A response read by the nghttp2 transport keeps its `apns-id` as 128 bits and its error
/// body parsed (once, when it arrived); ``headers`` writes the `apns-id` out again when
/// asked, as it was received.
public struct APNsResponse: Sendable, Hashable {
    /// The `:status`.
    public var status: Int
    /// The response headers other than ``echoedAPNsID`` (when it is kept as 128 bits).
    private var otherHeaders: [HeaderField]
    /// The `apns-id` the response carried, when it was a canonical lowercase UUID, kept as
    /// 128 bits; it stands at ``echoedAPNsIDIndex`` in ``headers``.
    package private(set) var echoedAPNsID: APNsID?
    /// Where ``echoedAPNsID`` stands in ``headers``.
    private var echoedAPNsIDIndex = 0
    /// The body: empty on success, a JSON object `{"reason": ...}` on failure.
    public var body: [UInt8] {
        didSet { parsedErrorBody = nil }
    }
    /// The error body, parsed by whoever read it first (the transport, as the response
    /// arrived): `.some(nil)` when the body is not an APNs error body, `nil` when not parsed.
    private var parsedErrorBody: APNsErrorBody??

    /// The response headers (without `:status`), in the order received.
    public var headers: [HeaderField] {
        get {
            guard let echoedAPNsID else { return otherHeaders }
            var all = otherHeaders
            all.insert(HeaderField(name: "apns-id", value: echoedAPNsID.uuidString), at: min(echoedAPNsIDIndex, all.count))
            return all
        }
        set {
            otherHeaders = newValue
            echoedAPNsID = nil
            echoedAPNsIDIndex = 0
        }
    }

    /// Creates a response.
    public init(status: Int, headers: [HeaderField] = [], body: [UInt8] = []) {
        self.status = status
        self.otherHeaders = headers
        self.body = body
    }

    /// A response as a transport read it: the `apns-id` (if canonical) as 128 bits at
    /// `apnsIDIndex` among the headers, the other headers, and the body, with its error
    /// body parsed now if the status is not 2xx (once, for every reader after).
    package init(status: Int, apnsID: APNsID?, apnsIDIndex: Int, otherHeaders: [HeaderField], body: [UInt8]) {
        self.status = status
        self.otherHeaders = otherHeaders
        self.echoedAPNsID = apnsID
        self.echoedAPNsIDIndex = apnsIDIndex
        self.body = body
        if !(200..<300).contains(status) { parsedErrorBody = .some(APNsErrorBody(parsing: body)) }
    }

    /// The error body: the one parsed when the response was read, or parsed now.
    package var errorBody: APNsErrorBody? {
        if let parsedErrorBody { return parsedErrorBody }
        return APNsErrorBody(parsing: body)
    }

    /// The `apns-id` the response carried, as an id: the one kept as 128 bits, or the
    /// header's text parsed; `nil` if there is none or it is not a UUID.
    package var apnsID: APNsID? {
        if let echoedAPNsID { return echoedAPNsID }
        return otherHeaders.first { $0.name == "apns-id" }.flatMap { try? APNsID($0.value) }
    }

    /// The value of the first header named `name` (lowercase), or `nil`.
    public func header(_ name: String) -> String? {
        if let echoedAPNsID, name == "apns-id",
            !otherHeaders.prefix(echoedAPNsIDIndex).contains(where: { $0.name == name })
        {
            return echoedAPNsID.uuidString
        }
        return otherHeaders.first { $0.name == name }?.value
    }

    /// Two responses are equal when their status, headers and body are.
    public static func == (lhs: APNsResponse, rhs: APNsResponse) -> Bool {
        lhs.status == rhs.status && lhs.body == rhs.body
            && (lhs.echoedAPNsID == rhs.echoedAPNsID && lhs.echoedAPNsIDIndex == rhs.echoedAPNsIDIndex
                && lhs.otherHeaders == rhs.otherHeaders || lhs.headers == rhs.headers)
    }

    /// Hashes the status, headers and body, consistently with ``==(_:_:)``.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(status)
        hasher.combine(headers)
        hasher.combine(body)
    }
}
