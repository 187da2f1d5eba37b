/// A `Decoder` that reads any `Decodable` from a ``JSONValue``, without Foundation: the
/// way back for custom data, `content-state` or `attributes` of a decoded payload.
///
/// Numbers convert when the value fits the requested type exactly (`3` reads as
/// `Double` 3.0, `3.0` reads as `Int` 3, `3.5` does not read as `Int`).
struct JSONValueDecoder {
    static func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws(PayloadError) -> T {
        do {
            return try T(from: ValueDecoder(value: value, codingPath: []))
        } catch let error as PayloadError {
            throw error
        } catch let DecodingError.typeMismatch(_, context),
            let DecodingError.valueNotFound(_, context),
            let DecodingError.dataCorrupted(context)
        {
            throw PayloadError(
                code: .typeMismatch, keyPath: JSONValueEncoder.path(context.codingPath), rule: context.debugDescription)
        } catch let DecodingError.keyNotFound(key, context) {
            throw PayloadError(
                code: .missingKey, keyPath: JSONValueEncoder.path(context.codingPath + [key]),
                rule: "no value for key \"\(key.stringValue)\"")
        } catch {
            throw PayloadError(code: .typeMismatch, keyPath: "", rule: "\(error)")
        }
    }
}

private func mismatch(_ type: Any.Type, _ value: JSONValue, _ path: [any CodingKey]) -> DecodingError {
    DecodingError.typeMismatch(
        type, DecodingError.Context(codingPath: path, debugDescription: "expected \(type), found \(value.typeName)"))
}

private func number<N: BinaryInteger>(_ type: N.Type, _ value: JSONValue, _ path: [any CodingKey]) throws -> N {
    switch value {
    case .integer(let i):
        if let n = N(exactly: i) { return n }
    case .double(let d):
        if let n = N(exactly: d) { return n }
    default:
        break
    }
    throw mismatch(type, value, path)
}

private func floating(_ value: JSONValue, _ path: [any CodingKey]) throws -> Double {
    guard let d = value.doubleValue else { throw mismatch(Double.self, value, path) }
    return d
}

private struct ValueDecoder: Decoder {
    let value: JSONValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let object) = value else { throw mismatch(JSONObject.self, value, codingPath) }
        return KeyedDecodingContainer(KeyedContainer<Key>(object: object, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = value else { throw mismatch([JSONValue].self, value, codingPath) }
        return UnkeyedContainer(elements: elements, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleValueContainer(value: value, codingPath: codingPath)
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let object: JSONObject
    let codingPath: [any CodingKey]

    var allKeys: [Key] { object.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { object[key.stringValue] != nil }

    private func value(_ key: Key) throws -> JSONValue {
        guard let value = object[key.stringValue] else {
            throw DecodingError.keyNotFound(
                key, DecodingError.Context(codingPath: codingPath, debugDescription: "no value for \(key.stringValue)"))
        }
        return value
    }

    func decodeNil(forKey key: Key) throws -> Bool { try value(key) == .null }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try SingleValueContainer(value: value(key), codingPath: codingPath + [key]).decode(type)
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type, forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try ValueDecoder(value: value(key), codingPath: codingPath + [key]).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try ValueDecoder(value: value(key), codingPath: codingPath + [key]).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        ValueDecoder(value: object["super"] ?? .null, codingPath: codingPath + [JSONKey("super")])
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        ValueDecoder(value: object[key.stringValue] ?? .null, codingPath: codingPath + [key])
    }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let elements: [JSONValue]
    let codingPath: [any CodingKey]
    var currentIndex = 0

    init(elements: [JSONValue], codingPath: [any CodingKey]) {
        self.elements = elements
        self.codingPath = codingPath
    }

    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    private var path: [any CodingKey] { codingPath + [JSONKey(intValue: currentIndex)!] }

    private mutating func next(_ type: Any.Type) throws -> JSONValue {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                type, DecodingError.Context(codingPath: path, debugDescription: "the array has no more elements"))
        }
        defer { currentIndex += 1 }
        return elements[currentIndex]
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, elements[currentIndex] == .null else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let elementPath = path
        return try SingleValueContainer(value: next(type), codingPath: elementPath).decode(type)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let elementPath = path
        return try ValueDecoder(value: next(JSONObject.self), codingPath: elementPath).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let elementPath = path
        return try ValueDecoder(value: next([JSONValue].self), codingPath: elementPath).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        let elementPath = path
        return ValueDecoder(value: try next(JSONValue.self), codingPath: elementPath)
    }
}

private struct SingleValueContainer: SingleValueDecodingContainer {
    let value: JSONValue
    let codingPath: [any CodingKey]

    func decodeNil() -> Bool { value == .null }

    func decode(_ type: Bool.Type) throws -> Bool {
        guard case .bool(let b) = value else { throw mismatch(type, value, codingPath) }
        return b
    }

    func decode(_ type: String.Type) throws -> String {
        guard case .string(let s) = value else { throw mismatch(type, value, codingPath) }
        return s
    }

    func decode(_ type: Double.Type) throws -> Double { try floating(value, codingPath) }
    func decode(_ type: Float.Type) throws -> Float { Float(try floating(value, codingPath)) }
    func decode(_ type: Int.Type) throws -> Int { try number(type, value, codingPath) }
    func decode(_ type: Int8.Type) throws -> Int8 { try number(type, value, codingPath) }
    func decode(_ type: Int16.Type) throws -> Int16 { try number(type, value, codingPath) }
    func decode(_ type: Int32.Type) throws -> Int32 { try number(type, value, codingPath) }
    func decode(_ type: Int64.Type) throws -> Int64 { try number(type, value, codingPath) }
    func decode(_ type: UInt.Type) throws -> UInt { try number(type, value, codingPath) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try number(type, value, codingPath) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try number(type, value, codingPath) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try number(type, value, codingPath) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try number(type, value, codingPath) }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        if T.self == JSONValue.self { return value as! T }
        if T.self == JSONObject.self {
            guard case .object(let object) = value else { throw mismatch(type, value, codingPath) }
            return object as! T
        }
        return try T(from: ValueDecoder(value: value, codingPath: codingPath))
    }
}

extension JSONValue {
    /// Decodes a `Decodable` value from this JSON value with the SDK's own decoder, for
    /// reading custom data, `content-state` or `attributes` back into your types.
    ///
    /// ```swift
    /// let media = try payload.custom["media"]?.decode(Media.self)
    /// ```
    ///
    /// - Throws: ``PayloadError`` of kind ``PayloadError/Code/typeMismatch`` or
    ///   ``PayloadError/Code/missingKey``, with the key path inside this value.
    public func decode<T: Decodable>(_ type: T.Type = T.self) throws(PayloadError) -> T {
        try JSONValueDecoder.decode(type, from: self)
    }
}

extension JSONObject {
    /// Decodes a `Decodable` value from this object; see ``JSONValue/decode(_:)``.
    public func decode<T: Decodable>(_ type: T.Type = T.self) throws(PayloadError) -> T {
        try JSONValueDecoder.decode(type, from: .object(self))
    }
}
