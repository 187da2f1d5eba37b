/// The `apns-topic` of a notification: your app's bundle ID, with the suffix that the
/// push type needs, or a topic given in full.
///
/// | push type | topic |
/// |---|---|
/// | `voip` | `<bundle ID>.voip` |
/// | `complication` | `<bundle ID>.complication` |
/// | `fileprovider` | `<bundle ID>.pushkit.fileprovider` |
/// | `location` | `<bundle ID>.location-query` |
/// | `liveactivity` | `<bundle ID>.push-type.liveactivity` |
/// | `pushtotalk` | `<bundle ID>.voip-ptt` |
/// | `widgets` | `<bundle ID>.push-type.widgets` |
/// | `controls` | `<bundle ID>.push-type.controls` |
/// | `mdm` | the topic in your MDM push certificate: use ``explicit(_:)`` |
/// | `alert`, `background`, others | `<bundle ID>` |
///
/// A string literal is a bundle ID: `topic: "com.example.app"`.
///
/// See [Sending notification requests to APNs](https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns).
public struct Topic: Sendable, Hashable, ExpressibleByStringLiteral, CustomStringConvertible {
    private enum Storage: Sendable, Hashable {
        case bundleID(String)
        case explicit(String)
    }
    private let storage: Storage

    /// Your app's bundle ID; the suffix each push type needs is added when the request is built.
    public static func bundleID(_ bundleID: String) -> Topic { Topic(storage: .bundleID(bundleID)) }

    /// A topic sent exactly as given, whatever the push type (for example the topic of an
    /// MDM push certificate).
    public static func explicit(_ topic: String) -> Topic { Topic(storage: .explicit(topic)) }

    private init(storage: Storage) { self.storage = storage }

    /// A bundle ID, as ``bundleID(_:)``.
    public init(stringLiteral value: String) { self.storage = .bundleID(value) }

    /// The bundle ID or explicit topic as given.
    public var description: String {
        switch storage {
        case .bundleID(let id): id
        case .explicit(let topic): topic
        }
    }

    /// The suffix Apple requires after the bundle ID for `pushType`, or `""`.
    public static func suffix(for pushType: PushType) -> String {
        switch pushType {
        case .voip: ".voip"
        case .complication: ".complication"
        case .fileprovider: ".pushkit.fileprovider"
        case .location: ".location-query"
        case .liveactivity: ".push-type.liveactivity"
        case .pushtotalk: ".voip-ptt"
        case .widgets: ".push-type.widgets"
        case .controls: ".push-type.controls"
        default: ""
        }
    }

    /// The `apns-topic` value for a notification of `pushType`.
    ///
    /// - Throws: ``APNsRequestError`` with code ``APNsRequestError/Code/invalidTopic`` if the
    ///   topic is empty, or if `pushType` is `mdm` and the topic is a bundle ID (an MDM topic
    ///   comes from the certificate: use ``explicit(_:)``).
    public func value(for pushType: PushType) throws(APNsRequestError) -> String {
        switch storage {
        case .explicit(let topic):
            guard !topic.isEmpty else {
                throw APNsRequestError(.invalidTopic, header: "apns-topic", "apns-topic is empty")
            }
            return topic
        case .bundleID(let id):
            guard !id.isEmpty else {
                throw APNsRequestError(.invalidTopic, header: "apns-topic", "the bundle ID for apns-topic is empty")
            }
            try Self.checkBundleID(id, header: "apns-topic")
            if pushType == .mdm {
                throw APNsRequestError(
                    .invalidTopic,
                    header: "apns-topic",
                    "an mdm push needs the topic from the MDM push certificate: use Topic.explicit(_:)"
                )
            }
            // A bundle ID that already ends in the push type's suffix (com.example.app.voip
            // for a VoIP push, as other libraries and Apple's curl examples write the
            // topic) is the full topic: the suffix is not added twice.
            let suffix = Self.suffix(for: pushType)
            return id.hasSuffix(suffix) ? id : id + suffix
        }
    }

    /// Checks that `bundleID` can be a bundle identifier: only ASCII letters, digits, `-`
    /// and `.` (Apple's rule for bundle IDs), so that it cannot make a header or a path
    /// that APNs refuses as `BadTopic`.
    package static func checkBundleID(_ bundleID: String, header: String) throws(APNsRequestError) {
        for (offset, byte) in bundleID.utf8.enumerated() {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."):
                continue
            default:
                throw APNsRequestError(
                    .invalidTopic,
                    header: header,
                    position: offset,
                    "the bundle ID has a character at UTF-8 offset \(offset) that a bundle identifier cannot contain "
                        + "(only A-Z, a-z, 0-9, '-' and '.')"
                )
            }
        }
    }
}
