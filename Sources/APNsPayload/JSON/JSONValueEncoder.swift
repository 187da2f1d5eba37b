/// An `Encoder` that turns any `Encodable` into a ``JSONValue``, without Foundation.
///
/// Keyed containers keep the order in which the type encodes its keys (the order of
/// the properties for synthesized conformances). Integers stay integers; `Float` is
/// widened through its shortest decimal form so `0.1` stays `0.1`. NaN, infinity and
/// unsigned integers above `Int64.max` are refused.
struct JSONValueEncoder {
    /// Encodes `value`.
    static func encode(_ value: some Encodable) throws(PayloadError) -> JSONValue {
        if let json = value as? JSONValue { return json }
        if let object = value as? JSONObject { return .object(object) }
        let root = EncodingNode()
        do {
            try value.encode(to: NodeEncoder(node: root, codingPath: []))
            if value is any StringKeyedDictionary { root.sortKeys() }
        } catch let error as PayloadError {
            throw error
        } catch let EncodingError.invalidValue(_, context) {
            throw PayloadError(
                code: .customDataEncodingFailed, keyPath: Self.path(context.codingPath),
                rule: context.debugDescription)
        } catch {
            throw PayloadError(code: .customDataEncodingFailed, keyPath: "", rule: "\(error)")
        }
        return root.value
    }

    static func path(_ codingPath: [any CodingKey]) -> String {
        var path = ""
        for key in codingPath {
            if let index = key.intValue, key.stringValue == String(index) {
                path += "[\(index)]"
            } else {
                path += path.isEmpty ? key.stringValue : "." + key.stringValue
            }
        }
        return path
    }
}

/// A node of the value being built; containers write into it by reference.
private final class EncodingNode {
    enum Kind { case empty, scalar, object, array }
    var kind = Kind.empty
    var scalar = JSONValue.null
    var keys: [String] = []
    var children: [EncodingNode] = []

    /// The finished value; a type that encodes nothing becomes `{}`.
    var value: JSONValue {
        switch kind {
        case .empty: return .object(JSONObject())
        case .scalar: return scalar
        case .array: return .array(children.map(\.value))
        case .object:
            var object = JSONObject()
            for index in keys.indices { object.appendUnchecked(keys[index], children[index].value) }
            return .object(object)
        }
    }

    /// Sorts an object's keys by their UTF-8 bytes.
    func sortKeys() {
        guard kind == .object else { return }
        let order = keys.indices.sorted { keys[$0].utf8.lexicographicallyPrecedes(keys[$1].utf8) }
        keys = order.map { keys[$0] }
        children = order.map { children[$0] }
    }

    func set(_ value: JSONValue) {
        kind = .scalar
        scalar = value
        keys = []
        children = []
    }

    /// The child for `key`, replacing an earlier one with the same key.
    func child(forKey key: String) -> EncodingNode {
        if kind != .object {
            kind = .object
            keys = []
            children = []
        }
        let node = EncodingNode()
        if let index = keys.firstIndex(of: key) {
            children[index] = node
        } else {
            keys.append(key)
            children.append(node)
        }
        return node
    }

    func appendChild() -> EncodingNode {
        if kind != .array {
            kind = .array
            keys = []
            children = []
        }
        let node = EncodingNode()
        children.append(node)
        return node
    }
}

private func invalid(_ message: String, _ path: [any CodingKey]) -> EncodingError {
    EncodingError.invalidValue((), EncodingError.Context(codingPath: path, debugDescription: message))
}

private func encodeDouble(_ value: Double, _ path: [any CodingKey]) throws -> JSONValue {
    guard value.isFinite else {
        throw PayloadError.nonFinite(JSONValueEncoder.path(path))
    }
    return .double(value)
}

private func encodeFloat(_ value: Float, _ path: [any CodingKey]) throws -> JSONValue {
    guard value.isFinite else {
        throw PayloadError.nonFinite(JSONValueEncoder.path(path))
    }
    // Widen via the shortest decimal form: Float 0.1 becomes Double 0.1, not 0.100000001.
    return .double(Double(value.description) ?? Double(value))
}

private func encodeUnsigned(_ value: some UnsignedInteger & FixedWidthInteger, _ path: [any CodingKey]) throws -> JSONValue {
    guard let integer = Int64(exactly: value) else {
        throw PayloadError.outOfRange(JSONValueEncoder.path(path), "\(value) does not fit a JSON integer (Int64)")
    }
    return .integer(integer)
}

/// Encodes a nested value into `node`, short-circuiting values that are already JSON.
private func encodeNested(_ value: some Encodable, into node: EncodingNode, path: [any CodingKey]) throws {
    if let json = value as? JSONValue {
        if case .double(let d) = json, !d.isFinite { throw PayloadError.nonFinite(JSONValueEncoder.path(path)) }
        node.set(json)
        return
    }
    if let object = value as? JSONObject {
        node.set(.object(object))
        return
    }
    try value.encode(to: NodeEncoder(node: node, codingPath: path))
    if value is any StringKeyedDictionary { node.sortKeys() }
}

/// `[String: V]`, whose iteration order changes from process to process: the encoder
/// sorts its keys so that encoding stays deterministic.
private protocol StringKeyedDictionary {}
extension Dictionary: StringKeyedDictionary where Key == String {}

private struct NodeEncoder: Encoder {
    let node: EncodingNode
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if node.kind != .object {
            node.kind = .object
            node.keys = []
            node.children = []
        }
        return KeyedEncodingContainer(KeyedContainer<Key>(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if node.kind != .array {
            node.kind = .array
            node.keys = []
            node.children = []
        }
        return UnkeyedContainer(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleValueContainer(node: node, codingPath: codingPath)
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: EncodingNode
    let codingPath: [any CodingKey]

    private func put(_ value: JSONValue, _ key: Key) {
        node.child(forKey: key.stringValue).set(value)
    }

    mutating func encodeNil(forKey key: Key) throws { put(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { put(.bool(value), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { put(.string(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        put(try encodeDouble(value, codingPath + [key]), key)
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        put(try encodeFloat(value, codingPath + [key]), key)
    }
    mutating func encode(_ value: Int, forKey key: Key) throws { put(.integer(Int64(value)), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { put(.integer(Int64(value)), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { put(.integer(Int64(value)), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { put(.integer(Int64(value)), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { put(.integer(value), key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws {
        put(try encodeUnsigned(value, codingPath + [key]), key)
    }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { put(.integer(Int64(value)), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { put(.integer(Int64(value)), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { put(.integer(Int64(value)), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws {
        put(try encodeUnsigned(value, codingPath + [key]), key)
    }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try encodeNested(value, into: node.child(forKey: key.stringValue), path: codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let child = node.child(forKey: key.stringValue)
        return NodeEncoder(node: child, codingPath: codingPath + [key]).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let child = node.child(forKey: key.stringValue)
        return NodeEncoder(node: child, codingPath: codingPath + [key]).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        superEncoder(forKey: Key(stringValue: "super")!)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        NodeEncoder(node: node.child(forKey: key.stringValue), codingPath: codingPath + [key])
    }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let node: EncodingNode
    let codingPath: [any CodingKey]
    var count: Int { node.children.count }

    private var nextPath: [any CodingKey] { codingPath + [JSONKey(intValue: count)!] }

    mutating func encodeNil() throws { node.appendChild().set(.null) }
    mutating func encode(_ value: Bool) throws { node.appendChild().set(.bool(value)) }
    mutating func encode(_ value: String) throws { node.appendChild().set(.string(value)) }
    mutating func encode(_ value: Double) throws {
        let json = try encodeDouble(value, nextPath)
        node.appendChild().set(json)
    }
    mutating func encode(_ value: Float) throws {
        let json = try encodeFloat(value, nextPath)
        node.appendChild().set(json)
    }
    mutating func encode(_ value: Int) throws { node.appendChild().set(.integer(Int64(value))) }
    mutating func encode(_ value: Int64) throws { node.appendChild().set(.integer(value)) }
    mutating func encode(_ value: UInt64) throws {
        let json = try encodeUnsigned(value, nextPath)
        node.appendChild().set(json)
    }
    mutating func encode(_ value: UInt) throws {
        let json = try encodeUnsigned(value, nextPath)
        node.appendChild().set(json)
    }
    mutating func encode<T: Encodable>(_ value: T) throws {
        let path = nextPath
        try encodeNested(value, into: node.appendChild(), path: path)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let path = nextPath
        return NodeEncoder(node: node.appendChild(), codingPath: path).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let path = nextPath
        return NodeEncoder(node: node.appendChild(), codingPath: path).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        let path = nextPath
        return NodeEncoder(node: node.appendChild(), codingPath: path)
    }
}

private struct SingleValueContainer: SingleValueEncodingContainer {
    let node: EncodingNode
    let codingPath: [any CodingKey]

    mutating func encodeNil() throws { node.set(.null) }
    mutating func encode(_ value: Bool) throws { node.set(.bool(value)) }
    mutating func encode(_ value: String) throws { node.set(.string(value)) }
    mutating func encode(_ value: Double) throws { node.set(try encodeDouble(value, codingPath)) }
    mutating func encode(_ value: Float) throws { node.set(try encodeFloat(value, codingPath)) }
    mutating func encode(_ value: Int) throws { node.set(.integer(Int64(value))) }
    mutating func encode(_ value: Int8) throws { node.set(.integer(Int64(value))) }
    mutating func encode(_ value: Int16) throws { node.set(.integer(Int64(value))) }
    mutating func encode(_ value: Int32) throws { node.set(.integer(Int64(value))) }
    mutating func encode(_ value: Int64) throws { node.set(.integer(value)) }
    mutating func encode(_ value: UInt) throws { node.set(try encodeUnsigned(value, codingPath)) }
    mutating func encode(_ value: UInt8) throws { node.set(.integer(Int64(value))) }
    mutating func encode(_ value: UInt16) throws { node.set(.integer(Int64(value))) }
    mutating func encode(_ value: UInt32) throws { node.set(.integer(Int64(value))) }
    mutating func encode(_ value: UInt64) throws { node.set(try encodeUnsigned(value, codingPath)) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        try encodeNested(value, into: node, path: codingPath)
    }
}

extension JSONValue {
    /// Encodes any `Encodable` value with the SDK's own encoder (not Foundation's).
    ///
    /// - Throws: ``PayloadError`` of kind ``PayloadError/Code/nonFiniteNumber`` for NaN or
    ///   infinity, ``PayloadError/Code/valueOutOfRange`` for an unsigned integer above
    ///   `Int64.max`, ``PayloadError/Code/customDataEncodingFailed`` when the value's own
    ///   `encode(to:)` throws; the key path says where.
    public init(encoding value: some Encodable) throws(PayloadError) {
        self = try JSONValueEncoder.encode(value)
    }
}

extension JSONObject {
    /// Encodes an `Encodable` value that encodes as an object (a struct or class with
    /// keyed properties, a `[String: …]` dictionary).
    ///
    /// - Throws: ``PayloadError`` of kind ``PayloadError/Code/typeMismatch`` when the value
    ///   is not an object, or any error of ``JSONValue/init(encoding:)``.
    public init(encoding value: some Encodable) throws(PayloadError) {
        let json = try JSONValueEncoder.encode(value)
        guard case .object(let object) = json else {
            throw PayloadError.mismatch("", expected: "a value that encodes as a JSON object", found: json)
        }
        self = object
    }
}
