/// What APNs keeps of a channel's broadcasts for devices that are offline: the
/// `message-storage-policy` of a channel, fixed when the channel is created.
///
/// | policy | value | broadcasts |
/// |---|---|---|
/// | ``noStorage`` | 0 | delivered to devices online now; must carry `apns-expiration: 0` |
/// | ``mostRecentMessage`` | 1 | the most recent one is stored for devices that come online later |
///
/// See [Sending channel management requests to APNs](https://developer.apple.com/documentation/usernotifications/sending-channel-management-requests-to-apns).
public enum MessageStoragePolicy: Int, Sendable, Hashable, CaseIterable, Codable, CustomStringConvertible {
    /// 0: no message is stored; a broadcast reaches only devices that are online, and its
    /// `apns-expiration` must be 0.
    case noStorage = 0
    /// 1: APNs stores the most recent message for devices that are offline.
    case mostRecentMessage = 1

    /// `noStorage (0)` or `mostRecentMessage (1)`.
    public var description: String {
        switch self {
        case .noStorage: "noStorage (0)"
        case .mostRecentMessage: "mostRecentMessage (1)"
        }
    }
}
