/// The `aps` dictionary: the keys Apple defines, which tell the system how to deliver
/// the notification.
///
/// Every key is optional; the ``Payload`` factories set the right ones for each kind of
/// notification, and encoding checks the rules (ranges, keys that need or exclude
/// others). Keys this SDK does not model are kept in ``additionalKeys``.
/// See [Generating a remote notification](https://developer.apple.com/documentation/usernotifications/generating-a-remote-notification).
public struct APS: Sendable, Hashable {
    /// `alert` for a notification the user sees. A Live Activity uses ``liveActivityAlert`` instead.
    public var alert: Alert?
    /// `badge`: the number on the app icon; 0 removes it. Never negative.
    public var badge: Int?
    /// `sound`.
    public var sound: Sound?
    /// `thread-id`: groups notifications.
    public var threadID: String?
    /// `category`: the identifier of a registered notification category (custom actions).
    public var category: String?
    /// `content-available: 1`: a background update; the app is woken to fetch data.
    public var contentAvailable: Bool
    /// `mutable-content: 1`: the Notification Service Extension may modify the notification.
    public var mutableContent: Bool
    /// `target-content-id`: the window or content to bring forward when the notification opens.
    public var targetContentID: String?
    /// `interruption-level`.
    public var interruptionLevel: InterruptionLevel?
    /// `relevance-score`: from 0 to 1, how the system ranks this notification in a summary.
    public var relevanceScore: Double?
    /// `filter-criteria`: the Focus filter this notification matches.
    public var filterCriteria: String?

    // MARK: Live Activity

    /// `timestamp`: when the Live Activity content was produced, in UNIX seconds. Required with ``event``.
    public var timestamp: Int?
    /// `event`: start, update or end a Live Activity.
    public var event: LiveActivityEvent?
    /// `content-state`: the activity's dynamic content (its `ContentState`, encoded).
    public var contentState: JSONObject?
    /// `stale-date`: when the content becomes outdated, in UNIX seconds.
    public var staleDate: Int?
    /// `dismissal-date`: when an ended activity leaves the Lock Screen, in UNIX seconds.
    public var dismissalDate: Int?
    /// `attributes-type`: the name of the `ActivityAttributes` type; required to start.
    public var attributesType: String?
    /// `attributes`: the static attributes; required to start.
    public var attributes: JSONObject?
    /// `input-push-token: 1`: asks the started activity for an update token.
    public var inputPushToken: Bool
    /// `input-push-channel`: the broadcast channel the started activity subscribes to.
    public var inputPushChannel: String?
    /// `alert` of a Live Activity push; mutually exclusive with ``alert``.
    public var liveActivityAlert: LiveActivityAlert?

    // MARK: Widgets, controls, Safari

    /// `content-changed: true`: a widget's timeline or a control's state should reload.
    public var contentChanged: Bool
    /// `url-args`: values for the placeholders of a Safari website push's URL format.
    public var urlArgs: [String]?

    /// Keys this SDK does not model, kept when decoding so forwarding loses nothing;
    /// written after the modelled keys. A key here that the SDK models is an error.
    public var additionalKeys: JSONObject

    /// The values decoding read for the flags `content-available`, `mutable-content`,
    /// `input-push-token` and `content-changed` when they differ from what the SDK writes
    /// (`0`, `false`, or `true` for a `1` flag): written back instead of the canonical form
    /// while they still agree with the flag, so forwarding keeps them. Setting the flag to
    /// the other value makes the SDK write its canonical form (or nothing) again.
    var flagSpellings: JSONObject = JSONObject()

    /// The value decoding read for the sound dictionary's `critical` when it differs from
    /// the `1` the SDK writes (`true`, `false`, `0`): written back instead while the sound
    /// is a dictionary whose ``Sound/dictionary(name:isCritical:volume:additionalKeys:)``
    /// flag agrees with it, as ``flagSpellings`` are for the `aps` flags.
    var soundCriticalSpelling: JSONValue?

    /// An `aps` dictionary; every key is optional.
    public init(
        alert: Alert? = nil,
        badge: Int? = nil,
        sound: Sound? = nil,
        threadID: String? = nil,
        category: String? = nil,
        contentAvailable: Bool = false,
        mutableContent: Bool = false,
        targetContentID: String? = nil,
        interruptionLevel: InterruptionLevel? = nil,
        relevanceScore: Double? = nil,
        filterCriteria: String? = nil,
        timestamp: Int? = nil,
        event: LiveActivityEvent? = nil,
        contentState: JSONObject? = nil,
        staleDate: Int? = nil,
        dismissalDate: Int? = nil,
        attributesType: String? = nil,
        attributes: JSONObject? = nil,
        inputPushToken: Bool = false,
        inputPushChannel: String? = nil,
        liveActivityAlert: LiveActivityAlert? = nil,
        contentChanged: Bool = false,
        urlArgs: [String]? = nil,
        additionalKeys: JSONObject = JSONObject()
    ) {
        self.alert = alert
        self.badge = badge
        self.sound = sound
        self.threadID = threadID
        self.category = category
        self.contentAvailable = contentAvailable
        self.mutableContent = mutableContent
        self.targetContentID = targetContentID
        self.interruptionLevel = interruptionLevel
        self.relevanceScore = relevanceScore
        self.filterCriteria = filterCriteria
        self.timestamp = timestamp
        self.event = event
        self.contentState = contentState
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
        self.attributesType = attributesType
        self.attributes = attributes
        self.inputPushToken = inputPushToken
        self.inputPushChannel = inputPushChannel
        self.liveActivityAlert = liveActivityAlert
        self.contentChanged = contentChanged
        self.urlArgs = urlArgs
        self.additionalKeys = additionalKeys
    }

    /// Whether no key is set.
    public var isEmpty: Bool {
        !hasAlert && badge == nil && sound == nil && threadID == nil && category == nil
            && flag("content-available", contentAvailable) == nil && flag("mutable-content", mutableContent) == nil
            && targetContentID == nil && interruptionLevel == nil
            && relevanceScore == nil && filterCriteria == nil && timestamp == nil && event == nil
            && contentState == nil && staleDate == nil && dismissalDate == nil && attributesType == nil
            && attributes == nil && flag("input-push-token", inputPushToken) == nil && inputPushChannel == nil
            && liveActivityAlert == nil && flag("content-changed", contentChanged) == nil && urlArgs == nil
            && additionalKeys.isEmpty
    }

    /// Whether ``alert`` is set. A pattern match: `alert == nil` goes through an
    /// unspecialized generic and copies the whole `Alert`.
    var hasAlert: Bool {
        if case .some = alert { return true }
        return false
    }

    /// The flags whose spelling decoding keeps, in the order the SDK writes them.
    static let flagOrder = ["content-available", "mutable-content", "input-push-token", "content-changed"]

    /// The canonical value of each flag: what the SDK writes when it is set.
    static let flagCanonicalValues: JSONObject = [
        "content-available": 1, "mutable-content": 1, "input-push-token": 1, "content-changed": true,
    ]

    /// What is written for the flag `key` whose value is `isSet`: the decoded spelling while
    /// it agrees with `isSet`, otherwise the canonical value when set, and nothing when not.
    func flag(_ key: String, _ isSet: Bool) -> JSONValue? {
        if let spelling = flagSpellings[key], spelling.flagReading == isSet { return spelling }
        return isSet ? APS.flagCanonicalValues[key] : nil
    }

    /// The keys the SDK models, in the order it writes them.
    static let modelledKeys: Set<String> = [
        "alert", "badge", "sound", "thread-id", "category", "content-available",
        "mutable-content", "target-content-id", "interruption-level", "relevance-score",
        "filter-criteria", "timestamp", "event", "content-state", "stale-date",
        "dismissal-date", "attributes-type", "attributes", "input-push-token",
        "input-push-channel", "content-changed", "url-args",
    ]
}
