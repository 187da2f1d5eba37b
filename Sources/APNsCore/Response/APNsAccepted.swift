/// APNs accepted a notification (status 200) and will try to deliver it.
///
/// Acceptance is not delivery: APNs stores the notification for an offline device until
/// its expiration.
public struct APNsAccepted: Sendable, Hashable {
    /// The `apns-id` APNs echoed (the request's when the response has none); `nil` only for
    /// a request that has no `apns-id`, such as a channel-management call.
    public let apnsID: APNsID?
    /// The `apns-unique-id` APNs returns in the sandbox: a key to look the notification up
    /// in the Push Notifications Console's delivery log. `nil` in production.
    public let uniqueID: String?
    /// The device token the notification was sent to, if it was a device push.
    public let deviceToken: DeviceToken?

    /// Creates an acceptance.
    public init(apnsID: APNsID?, uniqueID: String? = nil, deviceToken: DeviceToken? = nil) {
        self.apnsID = apnsID
        self.uniqueID = uniqueID
        self.deviceToken = deviceToken
    }

    /// The acceptance `response` says, if its status is 200; `nil` otherwise.
    ///
    /// - Parameters:
    ///   - response: The response.
    ///   - request: The request it answers; its `apns-id` stands in if the response has none.
    public init?(response: APNsResponse, request: APNsRequest) {
        guard response.status == 200 else { return nil }
        // The transport kept the echoed apns-id as 128 bits; no String is parsed.
        self.init(
            apnsID: response.apnsID ?? request.apnsID,
            uniqueID: response.header("apns-unique-id"),
            deviceToken: request.deviceToken
        )
    }
}
