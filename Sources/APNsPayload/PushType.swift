/// The kind of notification, sent as the `apns-push-type` header.
///
/// The push type must match the payload: APNs (and watchOS in particular) uses it to
/// decide how to deliver the notification, and it also sets the payload's size limit
/// (``PayloadLimit``). The eleven types Apple documents are static members; a type
/// Apple adds later can be sent with ``init(rawValue:)`` before this SDK names it.
///
/// See [Sending notification requests to APNs](https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns).
public struct PushType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The header value, for example `alert`.
    public let rawValue: String

    /// A push type by its header value; use this only for a type this SDK does not name yet.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// A notification that shows an alert, plays a sound or badges the app icon.
    public static let alert = PushType(rawValue: "alert")
    /// A notification that delivers content in the background (`content-available`), with no alert, sound or badge.
    public static let background = PushType(rawValue: "background")
    /// A request for the device's location, for a Location Push Service Extension.
    public static let location = PushType(rawValue: "location")
    /// A VoIP call notification for PushKit; payloads may be 5120 bytes.
    public static let voip = PushType(rawValue: "voip")
    /// An update to a watchOS complication.
    public static let complication = PushType(rawValue: "complication")
    /// A signal to a File Provider extension that content changed.
    public static let fileprovider = PushType(rawValue: "fileprovider")
    /// A Mobile Device Management wake-up.
    public static let mdm = PushType(rawValue: "mdm")
    /// An update to a Live Activity.
    public static let liveactivity = PushType(rawValue: "liveactivity")
    /// A Push to Talk notification.
    public static let pushtotalk = PushType(rawValue: "pushtotalk")
    /// A request to reload a widget's timeline.
    public static let widgets = PushType(rawValue: "widgets")
    /// A request to reload a control's state.
    public static let controls = PushType(rawValue: "controls")

    /// The eleven push types Apple documents.
    public static let documented: [PushType] = [
        .alert, .background, .location, .voip, .complication, .fileprovider,
        .mdm, .liveactivity, .pushtotalk, .widgets, .controls,
    ]

    /// The header value.
    public var description: String { rawValue }
}
