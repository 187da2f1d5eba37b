/// A JSON value: the custom data an app receives beside `aps`, and anything the SDK
/// does not model with a type of its own.
///
/// Integers and doubles are distinct cases so that `42` stays `42` on the wire (JSON,
/// [RFC 8259 §6](https://www.rfc-editor.org/rfc/rfc8259#section-6), has a single number
/// type; apps parse `42` and `42.0` differently). Objects keep their keys in order
/// (``JSONObject``), which makes encoding deterministic.
///
/// Build values with literals:
///
/// ```swift
/// let media: JSONValue = ["type": "image", "sizes": [120, 240], "ratio": 1.5, "hd": true]
/// ```
public enum JSONValue: Sendable, Hashable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number without fraction or exponent, written as an integer.
    case integer(Int64)
    /// A number written with a fraction or exponent. Must be finite to be encoded.
    case double(Double)
    /// A string, written as raw UTF-8.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object, with its keys in order.
    case object(JSONObject)
}

extension JSONValue {
    /// The string, if this value is a string.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The integer, if this value is an integer.
    public var integerValue: Int64? {
        if case .integer(let i) = self { return i }
        return nil
    }

    /// The number as a `Double`, if this value is an integer or a double.
    public var doubleValue: Double? {
        switch self {
        case .integer(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    /// The Boolean, if this value is `true` or `false`.
    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    /// The elements, if this value is an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    /// The object, if this value is an object.
    public var objectValue: JSONObject? {
        if case .object(let o) = self { return o }
        return nil
    }

    /// The member named `key`, if this value is an object that has one.
    public subscript(key: String) -> JSONValue? {
        objectValue?[key]
    }

    /// The JSON name of this value's type, used in error messages.
    var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "boolean"
        case .integer: return "integer"
        case .double: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }
}

extension JSONValue: ExpressibleByNilLiteral {
    /// `null`.
    public init(nilLiteral: ()) { self = .null }
}

extension JSONValue: ExpressibleByBooleanLiteral {
    /// A Boolean.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension JSONValue: ExpressibleByIntegerLiteral {
    /// An integer.
    public init(integerLiteral value: Int64) { self = .integer(value) }
}

extension JSONValue: ExpressibleByFloatLiteral {
    /// A double.
    public init(floatLiteral value: Double) { self = .double(value) }
}

extension JSONValue: ExpressibleByStringLiteral {
    /// A string.
    public init(stringLiteral value: String) { self = .string(value) }
}

extension JSONValue: ExpressibleByArrayLiteral {
    /// An array.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
}

extension JSONValue: ExpressibleByDictionaryLiteral {
    /// An object whose keys keep the order of the literal. A repeated key keeps its
    /// first position and its last value.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        var object = JSONObject()
        for (key, value) in elements { object[key] = value }
        self = .object(object)
    }
}

extension JSONValue: Encodable {
    /// Encodes this value through any `Encoder`, so a `JSONValue` can sit inside a
    /// user's `Encodable` type.
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .null:
            var c = encoder.singleValueContainer()
            try c.encodeNil()
        case .bool(let b):
            var c = encoder.singleValueContainer()
            try c.encode(b)
        case .integer(let i):
            var c = encoder.singleValueContainer()
            try c.encode(i)
        case .double(let d):
            var c = encoder.singleValueContainer()
            try c.encode(d)
        case .string(let s):
            var c = encoder.singleValueContainer()
            try c.encode(s)
        case .array(let elements):
            var c = encoder.unkeyedContainer()
            for element in elements { try c.encode(element) }
        case .object(let object):
            var c = encoder.container(keyedBy: JSONKey.self)
            for (key, value) in object { try c.encode(value, forKey: JSONKey(key)) }
        }
    }
}

/// A coding key for any string.
struct JSONKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(_ string: String) { self.stringValue = string; self.intValue = nil }
    init?(stringValue: String) { self.init(stringValue) }
    init?(intValue: Int) { self.stringValue = String(intValue); self.intValue = intValue }
}

extension JSONValue: Decodable {
    /// Decodes any JSON value through any `Decoder`, so a `JSONValue` can sit inside a
    /// user's `Decodable` type. With the SDK's decoder, object keys keep their order.
    public init(from decoder: any Decoder) throws {
        if let object = try? decoder.container(keyedBy: JSONKey.self) {
            var result = JSONObject()
            for key in object.allKeys {
                result[key.stringValue] = try object.decode(JSONValue.self, forKey: key)
            }
            self = .object(result)
            return
        }
        if var array = try? decoder.unkeyedContainer() {
            var elements: [JSONValue] = []
            while !array.isAtEnd { elements.append(try array.decode(JSONValue.self)) }
            self = .array(elements)
            return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            self = .null
        } else if let bool = try? single.decode(Bool.self) {
            self = .bool(bool)
        } else if let integer = try? single.decode(Int64.self) {
            self = .integer(integer)
        } else if let double = try? single.decode(Double.self) {
            self = .double(double)
        } else {
            self = .string(try single.decode(String.self))
        }
    }
}

extension JSONObject: Decodable {
    /// Decodes a JSON object through any `Decoder`.
    public init(from decoder: any Decoder) throws {
        guard case .object(let object) = try JSONValue(from: decoder) else {
            throw DecodingError.typeMismatch(
                JSONObject.self, DecodingError.Context(codingPath: decoder.codingPath, debugDescription: "expected an object"))
        }
        self = object
    }
}

extension JSONObject: Encodable {
    /// Encodes the object through any `Encoder`.
    public func encode(to encoder: any Encoder) throws {
        try JSONValue.object(self).encode(to: encoder)
    }
}

extension JSONValue {
    /// Parses one JSON text with the SDK's own parser (RFC 8259; UTF-8 is validated).
    ///
    /// - Throws: ``PayloadError`` with kind ``PayloadError/Code/invalidJSON`` and the byte
    ///   offset of the first problem.
    public init(jsonBytes: some Collection<UInt8>) throws(PayloadError) {
        self = try JSONParser.parse(jsonBytes)
    }
}
