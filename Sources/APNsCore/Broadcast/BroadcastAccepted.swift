/// APNs accepted a broadcast (status 200) and will deliver it to the channel's subscribers.
///
/// See [Sending broadcast push notification requests to APNs](https://developer.apple.com/documentation/usernotifications/sending-broadcast-push-notification-requests-to-apns).
public struct BroadcastAccepted: Sendable, Hashable {
    /// The `apns-request-id` APNs echoed (the request's when the response has none).
    public let requestID: APNsRequestID?
    /// The `apns-unique-id` APNs returns with an accepted broadcast ("a server-generated
    /// unique message identifier", Apple's broadcast documentation, in either environment):
    /// give it when you raise a troubleshooting request with Apple. `nil` when absent.
    public let uniqueID: String?
    /// The channel the broadcast went to.
    public let channel: ChannelID

    /// Creates an acceptance.
    public init(requestID: APNsRequestID?, uniqueID: String? = nil, channel: ChannelID) {
        self.requestID = requestID
        self.uniqueID = uniqueID
        self.channel = channel
    }

    /// The acceptance `response` says, if its status is 200; `nil` otherwise.
    ///
    /// - Parameters:
    ///   - response: The response.
    ///   - request: The broadcast request it answers (its `apns-request-id` stands in if the
    ///     response has none).
    ///   - channel: The channel the request went to.
    public init?(response: APNsResponse, request: APNsRequest, channel: ChannelID) {
        guard response.status == 200 else { return nil }
        let echoed = response.header("apns-request-id") ?? request.header("apns-request-id")
        self.init(
            requestID: echoed.flatMap { try? APNsRequestID($0) },
            uniqueID: response.header("apns-unique-id"),
            channel: channel
        )
    }
}
