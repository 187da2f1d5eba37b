/// A Swift value that is a JSON value: strings, numbers, booleans, arrays and
/// string-keyed dictionaries of such values, optionals (`nil` is `null`), and
/// ``JSONValue`` and ``JSONObject`` themselves.
///
/// It lets a literal hold Swift values, not only literals:
///
/// ```swift
/// let caller: String = user.name
/// let payload = Payload.voip(["caller": caller, "video": isVideo])
/// ```
///
/// (A literal made of literals alone builds a ``JSONObject`` directly.)
public protocol JSONRepresentable: Sendable {
    /// The value as JSON.
    var jsonValue: JSONValue { get }
}

extension JSONValue: JSONRepresentable {
    /// The value itself.
    public var jsonValue: JSONValue { self }
}

extension JSONObject: JSONRepresentable {
    /// The object as a JSON value.
    public var jsonValue: JSONValue { .object(self) }
}

extension String: JSONRepresentable {
    /// A JSON string.
    public var jsonValue: JSONValue { .string(self) }
}

extension Substring: JSONRepresentable {
    /// A JSON string.
    public var jsonValue: JSONValue { .string(String(self)) }
}

extension Bool: JSONRepresentable {
    /// `true` or `false`.
    public var jsonValue: JSONValue { .bool(self) }
}

extension Int: JSONRepresentable {
    /// A JSON integer.
    public var jsonValue: JSONValue { .integer(Int64(self)) }
}

extension Int64: JSONRepresentable {
    /// A JSON integer.
    public var jsonValue: JSONValue { .integer(self) }
}

extension Int32: JSONRepresentable {
    /// A JSON integer.
    public var jsonValue: JSONValue { .integer(Int64(self)) }
}

extension Double: JSONRepresentable {
    /// A JSON number (it must be finite to be encoded).
    public var jsonValue: JSONValue { .double(self) }
}

extension Array: JSONRepresentable where Element: JSONRepresentable {
    /// A JSON array.
    public var jsonValue: JSONValue { .array(map(\.jsonValue)) }
}

extension Dictionary: JSONRepresentable where Key == String, Value: JSONRepresentable {
    /// A JSON object, its keys sorted (a `Dictionary` has no order of its own).
    public var jsonValue: JSONValue {
        var object = JSONObject()
        for key in keys.sorted() { object[key] = self[key]?.jsonValue }
        return .object(object)
    }
}

extension Optional: JSONRepresentable where Wrapped: JSONRepresentable {
    /// The value, or `null`.
    public var jsonValue: JSONValue { self?.jsonValue ?? .null }
}

extension JSONObject {
    /// An object from Swift values, its keys in the order given:
    /// `JSONObject(["caller": caller, "count": count])`.
    public init(_ members: KeyValuePairs<String, any JSONRepresentable>) {
        self.init()
        for (key, value) in members { self[key] = value.jsonValue }
    }
}

extension Payload {
    /// A VoIP call notification whose data holds Swift values:
    /// `Payload.voip(["caller": caller])`. See ``voip(_:)-(JSONObject)``. (Disfavoured,
    /// so a literal that is a ``JSONObject`` stays one.)
    @_disfavoredOverload
    public static func voip(_ data: KeyValuePairs<String, any JSONRepresentable>) -> Payload {
        voip(JSONObject(data))
    }

    /// A background update whose custom data holds Swift values:
    /// `Payload.background(["article": articleID])`. See ``background(_:)-(JSONObject)``.
    /// (Disfavoured, so a literal that is a ``JSONObject`` stays one.)
    @_disfavoredOverload
    public static func background(_ custom: KeyValuePairs<String, any JSONRepresentable>) -> Payload {
        background(JSONObject(custom))
    }
}
