/// The `alert` of a Live Activity push: a title and body, each plain or localized,
/// and an optional sound.
///
/// On the wire, `{"title":"…","body":{"loc-key":"…","loc-args":[…]},"sound":"…"}`.
/// See [Starting and updating Live Activities with ActivityKit push notifications](https://developer.apple.com/documentation/activitykit/starting-and-updating-live-activities-with-activitykit-push-notifications).
public struct LiveActivityAlert: Sendable, Hashable {
    /// `title`.
    public var title: LocalizableText?
    /// `body`. ``Payload/encoded(for:fitting:)`` may shorten a plain body.
    public var body: LocalizableText?
    /// `sound`.
    public var sound: Sound?
    /// Keys this SDK does not model, kept when decoding; written after the modelled keys.
    /// `title`, `body` or `sound` here is an error.
    public var additionalKeys: JSONObject
    /// The spelling decoding read for the sound dictionary's `critical`; see
    /// `APS.soundCriticalSpelling`.
    var soundCriticalSpelling: JSONValue?

    /// A Live Activity alert.
    public init(
        title: LocalizableText? = nil, body: LocalizableText? = nil, sound: Sound? = nil,
        additionalKeys: JSONObject = JSONObject()
    ) {
        self.title = title
        self.body = body
        self.sound = sound
        self.additionalKeys = additionalKeys
    }

    /// The keys of a Live Activity alert this SDK models.
    static let modelledKeys: Set<String> = ["title", "body", "sound"]
}

/// Text given as is, or as a localization key with arguments
/// (`{"loc-key":"…","loc-args":[…]}`), as Live Activity alerts write it.
public enum LocalizableText: Sendable, Hashable {
    /// Text shown as given.
    case plain(String)
    /// A key into the app's `Localizable.strings` (`loc-key`), with values for its format
    /// specifiers (`loc-args`; `nil` leaves the key out). `additionalKeys` holds keys this
    /// SDK does not model, kept when decoding and written after `loc-key` and `loc-args`;
    /// `loc-key` or `loc-args` there is an error.
    case localized(key: String, arguments: [String]?, additionalKeys: JSONObject = JSONObject())

    /// The keys of the localized form this SDK models.
    static let modelledKeys: Set<String> = ["loc-key", "loc-args"]
}

extension LocalizableText: ExpressibleByStringLiteral {
    /// Plain text.
    public init(stringLiteral value: String) { self = .plain(value) }
}
