/// A JSON object whose keys keep their order.
///
/// Order matters for a deterministic encoding and for forwarding a stored payload
/// unchanged. Setting an existing key replaces its value in place; setting `nil`
/// removes it. Two objects are equal when they hold the same keys, in the same order,
/// with equal values.
public struct JSONObject: Sendable, Hashable {
    /// The keys, in order.
    public private(set) var keys: [String]
    /// The values, parallel to ``keys``.
    public private(set) var values: [JSONValue]

    /// An empty object.
    public init() {
        keys = []
        values = []
    }

    /// An empty object with room for `capacity` members.
    init(reservingCapacity capacity: Int) {
        keys = []
        values = []
        keys.reserveCapacity(capacity)
        values.reserveCapacity(capacity)
    }

    /// The number of members.
    public var count: Int { keys.count }

    /// Whether the object has no members.
    public var isEmpty: Bool { keys.isEmpty }

    /// The value for `key`; assigning `nil` removes the member.
    public subscript(key: String) -> JSONValue? {
        get {
            guard let index = keys.firstIndex(of: key) else { return nil }
            return values[index]
        }
        set {
            if let index = keys.firstIndex(of: key) {
                if let newValue {
                    values[index] = newValue
                } else {
                    keys.remove(at: index)
                    values.remove(at: index)
                }
            } else if let newValue {
                keys.append(key)
                values.append(newValue)
            }
        }
    }

    /// Appends a member without looking for an existing one; the caller knows the key is new.
    mutating func appendUnchecked(_ key: String, _ value: JSONValue) {
        keys.append(key)
        values.append(value)
    }
}

extension JSONObject: Sequence {
    /// Iterates over the members in order.
    public struct Iterator: IteratorProtocol {
        let object: JSONObject
        var index = 0

        /// The next `(key, value)` pair.
        public mutating func next() -> (key: String, value: JSONValue)? {
            guard index < object.keys.count else { return nil }
            defer { index += 1 }
            return (key: object.keys[index], value: object.values[index])
        }
    }

    /// Iterates over the members as `(key, value)` pairs, in order.
    public func makeIterator() -> Iterator { Iterator(object: self) }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    /// An object whose keys keep the order of the literal.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init()
        for (key, value) in elements { self[key] = value }
    }
}
