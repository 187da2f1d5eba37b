/// APNs' successful answer to a channel management call: what it returned, and the
/// `apns-request-id` of the exchange, which Apple asks for when you report a problem.
///
/// | call | ``value`` |
/// |---|---|
/// | ``APNsClient/createChannel(bundleID:storagePolicy:requestID:)`` | the new channel's ``ChannelID`` |
/// | ``APNsClient/channelConfiguration(_:bundleID:requestID:)`` | the ``ChannelConfiguration`` |
/// | ``APNsClient/channels(bundleID:requestID:)`` | every ``ChannelID`` of the app |
/// | ``APNsClient/deleteChannel(_:bundleID:requestID:)`` | the deleted channel's ``ChannelID`` |
///
/// A rejection carries its request ID in ``APNsRejection/requestID``.
///
/// See [Sending channel management requests to APNs](https://developer.apple.com/documentation/usernotifications/sending-channel-management-requests-to-apns).
public struct ChannelResponse<Value: Sendable>: Sendable {
    /// What APNs returned: a channel ID, a configuration or a list of channel IDs.
    public let value: Value
    /// The `apns-request-id` APNs echoed, or the one the request carried when the answer
    /// has none (or one that is not a UUID).
    public let requestID: APNsRequestID

    /// Creates a response, for example in a test double.
    public init(value: Value, requestID: APNsRequestID) {
        self.value = value
        self.requestID = requestID
    }
}

extension ChannelResponse: Equatable where Value: Equatable {}
extension ChannelResponse: Hashable where Value: Hashable {}
