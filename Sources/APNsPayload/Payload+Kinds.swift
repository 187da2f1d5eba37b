// Factories for each kind of notification: the keys each one needs, and nothing else.

extension Payload {
    /// A visible alert with an optional title: `{"aps":{"alert":{"title":…,"body":…}}}`.
    /// Send it with push type ``PushType/alert``.
    public static func alert(title: String? = nil, body: String) -> Payload {
        Payload(aps: APS(alert: Alert(title: title, body: body)), pushType: .alert)
    }

    /// A visible alert with any alert keys, badge, sound and category.
    /// Send it with push type ``PushType/alert``.
    ///
    /// ```swift
    /// let payload = Payload.alert(.text("You got your emails."), badge: 9, sound: "bingbong.aiff")
    /// ```
    public static func alert(
        _ alert: Alert,
        badge: Int? = nil,
        sound: Sound? = nil,
        category: String? = nil,
        threadID: String? = nil
    ) -> Payload {
        Payload(aps: APS(alert: alert, badge: badge, sound: sound, threadID: threadID, category: category), pushType: .alert)
    }

    /// A background update: `content-available: 1` and no alert, sound or badge, with
    /// optional custom data. Send it with push type ``PushType/background`` and priority 5.
    /// See [Pushing background updates to your App](https://developer.apple.com/documentation/usernotifications/pushing-background-updates-to-your-app).
    public static func background(_ custom: JSONObject = JSONObject()) -> Payload {
        Payload(aps: APS(contentAvailable: true), custom: custom, pushType: .background)
    }

    /// A VoIP call notification for PushKit: free-form data (up to 5120 bytes) that the
    /// app's `PKPushRegistryDelegate` reads, beside an empty `aps` (`{"aps":{},...}`), as
    /// APNs expects every payload to carry one. Send it with push type ``PushType/voip``.
    public static func voip(_ data: JSONObject) -> Payload {
        Payload(custom: data, pushType: .voip)
    }

    /// Starts a Live Activity remotely (push-to-start, iOS 17.2).
    /// Send it with push type ``PushType/liveactivity``.
    ///
    /// Apple requires an alert in a payload that starts a Live Activity: encoding for
    /// ``PushType/liveactivity`` refuses a start without `alert` (``PayloadError/Code/missingKey``
    /// at `aps.alert`).
    ///
    /// - Parameters:
    ///   - timestamp: when the content was produced, UNIX seconds.
    ///   - attributesType: the name of the app's `ActivityAttributes` type.
    ///   - attributes: its static attributes.
    ///   - contentState: its initial `ContentState`.
    ///   - alert: the alert that announces the activity; required to send the start.
    ///   - staleDate: when the content becomes outdated, UNIX seconds.
    ///   - inputPushToken: whether the activity should report an update push token.
    ///   - inputPushChannel: a broadcast channel the activity subscribes to.
    public static func liveActivityStart(
        timestamp: Int,
        attributesType: String,
        attributes: JSONObject,
        contentState: JSONObject,
        alert: LiveActivityAlert? = nil,
        staleDate: Int? = nil,
        inputPushToken: Bool = false,
        inputPushChannel: String? = nil
    ) -> Payload {
        Payload(aps: APS(
            timestamp: timestamp, event: .start, contentState: contentState, staleDate: staleDate,
            attributesType: attributesType, attributes: attributes, inputPushToken: inputPushToken,
            inputPushChannel: inputPushChannel, liveActivityAlert: alert), pushType: .liveactivity)
    }

    /// Updates a Live Activity's content. Send it with push type ``PushType/liveactivity``.
    /// - Parameters:
    ///   - timestamp: when the content was produced, UNIX seconds; the system ignores older updates.
    ///   - contentState: the new `ContentState`.
    ///   - staleDate: when the content becomes outdated, UNIX seconds.
    ///   - alert: an alert that lights the screen with the update.
    public static func liveActivityUpdate(
        timestamp: Int,
        contentState: JSONObject,
        staleDate: Int? = nil,
        alert: LiveActivityAlert? = nil
    ) -> Payload {
        Payload(aps: APS(
            timestamp: timestamp, event: .update, contentState: contentState, staleDate: staleDate,
            liveActivityAlert: alert), pushType: .liveactivity)
    }

    /// Ends a Live Activity. Send it with push type ``PushType/liveactivity``.
    /// - Parameters:
    ///   - timestamp: when the content was produced, UNIX seconds.
    ///   - contentState: the final `ContentState`, if it changed.
    ///   - dismissalDate: when the ended activity leaves the Lock Screen, UNIX seconds.
    ///   - alert: an alert that announces the end.
    public static func liveActivityEnd(
        timestamp: Int,
        contentState: JSONObject? = nil,
        dismissalDate: Int? = nil,
        alert: LiveActivityAlert? = nil
    ) -> Payload {
        Payload(aps: APS(
            timestamp: timestamp, event: .end, contentState: contentState, dismissalDate: dismissalDate,
            liveActivityAlert: alert), pushType: .liveactivity)
    }

    /// Asks the system to reload a widget's timeline or a control's state:
    /// `{"aps":{"content-changed":true}}`. Send it with push type ``PushType/widgets``
    /// or ``PushType/controls`` (the payload names neither: say which in the notification).
    public static func contentChanged() -> Payload {
        Payload(aps: APS(contentChanged: true))
    }

    /// The same payload for `pushType` (``PushType/widgets`` or ``PushType/controls``), so
    /// that a notification made from it has that push type without saying it again.
    public static func contentChanged(for pushType: PushType) -> Payload {
        Payload(aps: APS(contentChanged: true), pushType: pushType)
    }

    /// Tells a File Provider extension that content changed:
    /// `{"container-identifier":…,"domain":…}` with no `aps`.
    /// Send it with push type ``PushType/fileprovider``.
    /// - Parameters:
    ///   - containerIdentifier: the item identifier of the container to enumerate again
    ///     (for example `NSFileProviderWorkingSetContainerItemIdentifier`).
    ///   - domain: the identifier of the File Provider domain.
    public static func fileProvider(containerIdentifier: String, domain: String) -> Payload {
        Payload(custom: ["container-identifier": .string(containerIdentifier), "domain": .string(domain)], pushType: .fileprovider)
    }

    /// Wakes a device enrolled in Mobile Device Management: `{"mdm":"<push magic>"}`.
    /// Send it with push type ``PushType/mdm``.
    /// - Parameter pushMagic: the `PushMagic` string the device sent when it enrolled.
    public static func mdm(pushMagic: String) -> Payload {
        Payload(custom: ["mdm": .string(pushMagic)], pushType: .mdm)
    }
}
