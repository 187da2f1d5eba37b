/// The largest payload APNs accepts for a kind of notification.
///
/// 4096 bytes for every push type but VoIP, whose payloads may be 5120 bytes; broadcast
/// (Live Activity channel) pushes may also be 5120 bytes. APNs answers a larger payload
/// with `413 PayloadTooLarge`, so the SDK refuses it before sending.
/// See [Generating a remote notification](https://developer.apple.com/documentation/usernotifications/generating-a-remote-notification).
public struct PayloadLimit: Sendable, Hashable {
    /// The largest allowed payload, in bytes.
    public var bytes: Int

    /// A limit of `bytes` bytes.
    public init(bytes: Int) { self.bytes = bytes }

    /// The limit for `pushType`: 5120 bytes for VoIP, 4096 for the others.
    /// (Broadcast pushes use push type `liveactivity`; pass ``broadcast`` for them.)
    public init(for pushType: PushType) {
        self = pushType == .voip ? .voip : .standard
    }

    /// 4096 bytes: every push type but VoIP.
    public static let standard = PayloadLimit(bytes: 4096)
    /// 5120 bytes: VoIP pushes.
    public static let voip = PayloadLimit(bytes: 5120)
    /// 5120 bytes: broadcast (Live Activity channel) pushes.
    public static let broadcast = PayloadLimit(bytes: 5120)
}
