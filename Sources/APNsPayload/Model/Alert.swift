/// The `alert` of a notification the user sees: title, subtitle, body, and their
/// localization keys.
///
/// The system shows `title`, `subtitle` and `body` as given, or looks up the
/// `*-loc-key` strings in the app's `Localizable.strings` and fills in the `*-loc-args`.
/// See [Generating a remote notification](https://developer.apple.com/documentation/usernotifications/generating-a-remote-notification)
/// and the seed's table 9-2.
///
/// ```swift
/// let alert = Alert(title: "Game Request", body: "Bob wants to play poker", actionLocKey: "PLAY")
/// let legacy = Alert.text("You got your emails.")   // "alert":"You got your emails."
/// ```
public struct Alert: Sendable, Hashable {
    /// `title`: a short string describing the purpose of the notification.
    public var title: String?
    /// `subtitle`: additional information explaining the purpose.
    public var subtitle: String?
    /// `body`: the text of the alert message. ``Payload/encoded(for:fitting:)`` may shorten it.
    public var body: String?
    /// `launch-image`: an image file in the app bundle shown as the launch image.
    public var launchImage: String?
    /// `title-loc-key`: the key of a localized title string.
    public var titleLocKey: String?
    /// `title-loc-args`: values for the format specifiers of `title-loc-key`.
    public var titleLocArgs: [String]?
    /// `subtitle-loc-key`: the key of a localized subtitle string.
    public var subtitleLocKey: String?
    /// `subtitle-loc-args`: values for the format specifiers of `subtitle-loc-key`.
    public var subtitleLocArgs: [String]?
    /// `loc-key`: the key of a localized body string.
    public var locKey: String?
    /// `loc-args`: values for the format specifiers of `loc-key`.
    public var locArgs: [String]?
    /// `action-loc-key` (legacy): the key of a localized title for the action button.
    public var actionLocKey: String?
    /// `summary-arg` (legacy, iOS 12–14): the string used in a thread's summary.
    public var summaryArg: String?
    /// `summary-arg-count` (legacy): how many items this notification adds to the summary; at least 1.
    public var summaryArgCount: Int?
    /// Keys of the `alert` dictionary this SDK does not model, kept when decoding so
    /// that forwarding a payload loses nothing. Written after the modelled keys; a key
    /// here that `Alert` models (`body`, `loc-args`, …) is an error.
    public var additionalKeys: JSONObject
    /// Whether the alert is written as a plain string, `"alert":"<body>"`, the legacy
    /// short form. Only a body may be set then; see ``text(_:)``.
    public var isPlainText: Bool

    /// An alert; every key is optional.
    public init(
        title: String? = nil,
        subtitle: String? = nil,
        body: String? = nil,
        launchImage: String? = nil,
        titleLocKey: String? = nil,
        titleLocArgs: [String]? = nil,
        subtitleLocKey: String? = nil,
        subtitleLocArgs: [String]? = nil,
        locKey: String? = nil,
        locArgs: [String]? = nil,
        actionLocKey: String? = nil,
        summaryArg: String? = nil,
        summaryArgCount: Int? = nil,
        additionalKeys: JSONObject = JSONObject()
    ) {
        self.title = title
        self.subtitle = subtitle
        self.body = body
        self.launchImage = launchImage
        self.titleLocKey = titleLocKey
        self.titleLocArgs = titleLocArgs
        self.subtitleLocKey = subtitleLocKey
        self.subtitleLocArgs = subtitleLocArgs
        self.locKey = locKey
        self.locArgs = locArgs
        self.actionLocKey = actionLocKey
        self.summaryArg = summaryArg
        self.summaryArgCount = summaryArgCount
        self.additionalKeys = additionalKeys
        self.isPlainText = false
    }

    /// An alert written as a plain string: `"alert":"<body>"`.
    public static func text(_ body: String) -> Alert {
        var alert = Alert(body: body)
        alert.isPlainText = true
        return alert
    }

    /// An alert whose body is looked up in the app's strings by `key` and formatted with `arguments`.
    public static func localized(_ key: String, arguments: [String] = []) -> Alert {
        Alert(locKey: key, locArgs: arguments.isEmpty ? nil : arguments)
    }

    /// The keys of the `alert` dictionary this SDK models.
    static let modelledKeys: Set<String> = [
        "title", "subtitle", "body", "launch-image", "title-loc-key", "title-loc-args",
        "subtitle-loc-key", "subtitle-loc-args", "loc-key", "loc-args", "action-loc-key",
        "summary-arg", "summary-arg-count",
    ]

    /// Whether any key other than `body` is set.
    var hasKeysBesideBody: Bool {
        title != nil || subtitle != nil || launchImage != nil || titleLocKey != nil
            || titleLocArgs != nil || subtitleLocKey != nil || subtitleLocArgs != nil
            || locKey != nil || locArgs != nil || actionLocKey != nil || summaryArg != nil
            || summaryArgCount != nil || !additionalKeys.isEmpty
    }
}
