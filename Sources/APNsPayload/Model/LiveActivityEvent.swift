/// The `event` of a Live Activity push: start, update or end the activity.
///
/// An open set, as ``InterruptionLevel`` is: an event Apple adds later can be written
/// with ``init(rawValue:)``, and is sent as given (the rules for `start`, `update` and
/// `end` apply to those three only).
///
/// See [Starting and updating Live Activities with ActivityKit push notifications](https://developer.apple.com/documentation/activitykit/starting-and-updating-live-activities-with-activitykit-push-notifications).
public struct LiveActivityEvent: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The value written in the payload.
    public let rawValue: String

    /// An event by its payload value.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Starts a Live Activity (push-to-start, iOS 17.2); needs `attributes-type` and `attributes`.
    public static let start = LiveActivityEvent(rawValue: "start")
    /// Updates the activity's `content-state`.
    public static let update = LiveActivityEvent(rawValue: "update")
    /// Ends the activity, optionally with a final `content-state` and a `dismissal-date`.
    public static let end = LiveActivityEvent(rawValue: "end")

    /// The payload value.
    public var description: String { rawValue }
}
