/// An HTTP response from APNs as a transport received it: status, headers and body.
///
/// The client turns it into an ``APNsAccepted`` (status 200) or an ``APNsRejection``.
public struct APNsResponse: Sendable, Hashable {
    /// The `:status`.
    public var status: Int
    /// The response headers (without `:status`), in the order received.
    public var headers: [HeaderField]
    /// The body: empty on success, a JSON object `{"reason": ...}` on failure.
    public var body: [UInt8]

    /// Creates a response.
    public init(status: Int, headers: [HeaderField] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The value of the first header named `name` (lowercase), or `nil`.
    public func header(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }
}
