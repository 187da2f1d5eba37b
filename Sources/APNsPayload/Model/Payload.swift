/// A complete APNs payload: the `aps` dictionary and the custom keys beside it.
///
/// Build one with a factory for the kind of notification (``alert(title:body:)``,
/// ``background(_:)-(JSONObject)``, ``liveActivityUpdate(timestamp:contentState:staleDate:alert:)``,
/// ``mdm(pushMagic:)``, …) or from an ``APS`` value, add custom data, then encode it
/// for its push type, which checks the shape rules and the size limit:
///
/// ```swift
/// var payload = Payload.alert(title: "Game Request", body: "Bob wants to play poker")
/// payload.aps.badge = 5
/// payload.custom["gameID"] = "4711"
/// let body: [UInt8] = try payload.encoded(for: .alert)
/// ```
///
/// Encoding is compact and deterministic: `aps` first, then custom keys in the order
/// they were set. Within `aps`: alert, badge, sound, thread-id, category,
/// content-available, mutable-content, target-content-id, interruption-level,
/// relevance-score, filter-criteria, timestamp, event, content-state, stale-date,
/// dismissal-date, attributes-type, attributes, input-push-token, input-push-channel,
/// content-changed, url-args, then ``APS/additionalKeys``. `aps` is left out when it is
/// empty and there are custom keys (MDM, file provider, VoIP payloads).
///
/// See [Generating a remote notification](https://developer.apple.com/documentation/usernotifications/generating-a-remote-notification).
public struct Payload: Sendable, Hashable {
    /// The `aps` dictionary.
    public var aps: APS
    /// Custom keys beside `aps`, in order. A key named `aps` is refused when encoding.
    public var custom: JSONObject
    /// The push type this payload was made for, when a factory made it
    /// (``voip(_:)-(JSONObject)`` makes ``PushType/voip`` payloads, ``background(_:)-(JSONObject)``
    /// ``PushType/background`` ones, …); `nil` for a payload built from its parts. A
    /// notification made from the payload takes this push type unless it names another.
    public var pushType: PushType?

    /// A payload from its parts, for the push type `pushType` if given.
    public init(aps: APS = APS(), custom: JSONObject = JSONObject(), pushType: PushType? = nil) {
        self.aps = aps
        self.custom = custom
        self.pushType = pushType
    }

    /// Sets the custom key `key` to `value`, encoded with the SDK's own `Encoder`.
    ///
    /// - Throws: ``PayloadError`` when the value cannot be encoded (NaN, infinity, an
    ///   unsigned integer above `Int64.max`, or its `encode(to:)` throws); the key path
    ///   starts with `key`.
    public mutating func setCustom(_ key: String, to value: some Encodable) throws(PayloadError) {
        do {
            custom[key] = try JSONValue(encoding: value)
        } catch {
            var error = error
            error.keyPath = error.keyPath.isEmpty ? key : key + (error.keyPath.hasPrefix("[") ? "" : ".") + error.keyPath
            throw error
        }
    }

    /// Equal when `aps` and the custom keys are: two payloads that encode the same are
    /// equal, whatever ``pushType`` the factories recorded (a decoded payload has none).
    public static func == (lhs: Payload, rhs: Payload) -> Bool {
        lhs.aps == rhs.aps && lhs.custom == rhs.custom
    }

    /// Hashes `aps` and the custom keys, consistently with ``==(_:_:)``.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(aps)
        hasher.combine(custom)
    }

    /// This payload with the custom key `key` set to `value`.
    public func adding(_ key: String, _ value: JSONValue) -> Payload {
        var copy = self
        copy.custom[key] = value
        return copy
    }
}
