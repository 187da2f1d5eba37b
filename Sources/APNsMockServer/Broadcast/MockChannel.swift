/// A broadcast channel the mock server holds, as created through
/// `POST /1/apps/<bundle ID>/channels` or ``MockAPNsServer/addChannel(bundleID:storagePolicy:)``.
///
/// See [Sending channel management requests to APNs](https://developer.apple.com/documentation/usernotifications/sending-channel-management-requests-to-apns).
public struct MockChannel: Sendable, Hashable {
    /// The channel ID: base64 of 16 random bytes, as the server returned it in `apns-channel-id`.
    public var id: String
    /// The bundle ID the channel belongs to.
    public var bundleID: String
    /// The `message-storage-policy`: 0 (no storage) or 1 (most recent message).
    public var storagePolicy: Int
    /// The `push-type` it was created with (`LiveActivity`).
    public var pushType: String

    /// A channel.
    public init(id: String, bundleID: String, storagePolicy: Int, pushType: String = "LiveActivity") {
        self.id = id
        self.bundleID = bundleID
        self.storagePolicy = storagePolicy
        self.pushType = pushType
    }
}
