/// The `sound` of a notification: a sound file's name, or the dictionary form for
/// critical alerts.
///
/// The name is a file in the app bundle or in `Library/Sounds`; `default` plays the
/// system sound. The dictionary form `{"critical":1,"name":…,"volume":0...1}` plays a
/// critical alert, which needs an entitlement from Apple.
/// See [Generating a remote notification](https://developer.apple.com/documentation/usernotifications/generating-a-remote-notification).
///
/// ```swift
/// let chime: Sound = "chime.aiff"
/// let alarm = Sound.critical(name: "alarm.caf", volume: 0.8)
/// ```
public enum Sound: Sendable, Hashable {
    /// `"sound":"<name>"`.
    case named(String)
    /// `"sound":{"critical":1?,"name":…,"volume":…?}`; `volume` must be in 0...1.
    /// `additionalKeys` holds keys of the dictionary this SDK does not model, kept when
    /// decoding and written after the modelled keys; `critical`, `name` or `volume` there
    /// is an error.
    case dictionary(name: String, isCritical: Bool, volume: Double?, additionalKeys: JSONObject = JSONObject())

    /// The system's default sound.
    public static let `default` = Sound.named("default")

    /// A critical alert sound, played even when the device is muted or in Do Not Disturb.
    /// - Parameters:
    ///   - name: the sound file, or `default`.
    ///   - volume: from 0 (silent) to 1 (full volume); `nil` lets the system choose.
    public static func critical(name: String = "default", volume: Double? = nil) -> Sound {
        .dictionary(name: name, isCritical: true, volume: volume)
    }

    /// The sound file's name.
    public var name: String {
        switch self {
        case .named(let name): return name
        case .dictionary(let name, _, _, _): return name
        }
    }

    /// The keys of the dictionary form this SDK models.
    static let modelledKeys: Set<String> = ["critical", "name", "volume"]
}

extension Sound: ExpressibleByStringLiteral {
    /// A named sound.
    public init(stringLiteral value: String) { self = .named(value) }
}
