/// The `interruption-level`: how urgently the system presents a notification
/// (iOS 15 and later).
///
/// An open set: a level Apple adds later can be written with ``init(rawValue:)``.
/// See [UNNotificationInterruptionLevel](https://developer.apple.com/documentation/usernotifications/unnotificationinterruptionlevel).
public struct InterruptionLevel: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The value written in the payload.
    public let rawValue: String

    /// A level by its payload value.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Added to the notification list without lighting the screen or playing a sound.
    public static let passive = InterruptionLevel(rawValue: "passive")
    /// Presented immediately, lights the screen, may play a sound (the default).
    public static let active = InterruptionLevel(rawValue: "active")
    /// Presented immediately, breaking through Focus.
    public static let timeSensitive = InterruptionLevel(rawValue: "time-sensitive")
    /// Presented immediately, breaking through Focus and the mute switch (needs an entitlement).
    public static let critical = InterruptionLevel(rawValue: "critical")

    /// The payload value.
    public var description: String { rawValue }
}
