/// The `apns-priority` of a notification: how urgently APNs delivers it.
///
/// When a notification gives no priority, the client sends ``immediate`` (10), except for
/// the `background` push type, which Apple requires to use ``powerConsiderate`` (5); a
/// `background` push with priority 10 is refused before it is sent, as is a `liveactivity`
/// push with priority 1 (Apple asks for 5 or 10 there).
///
/// See [Sending notification requests to APNs](https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns).
public enum Priority: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// 10: send the notification immediately (the default).
    case immediate = 10
    /// 5: send it based on power considerations on the user's device; required for `background`.
    case powerConsiderate = 5
    /// 1: prioritize the device's power over all else; never wake the device.
    case low = 1

    /// The header value: `10`, `5` or `1`.
    public var description: String { String(rawValue) }

    /// The priority used when a notification of `pushType` gives none.
    public static func `default`(for pushType: PushType) -> Priority {
        pushType == .background ? .powerConsiderate : .immediate
    }
}
