/// A map from HTTP/2 stream IDs to values, for the streams a connection has open.
///
/// A client opens streams with odd, increasing IDs (RFC 9113, section 5.1.1), so the
/// streams open at one moment are a window of consecutive odd numbers with holes. The
/// table is open-addressed with linear probing and hashes an ID by itself (`id >> 1`
/// modulo a power of two): consecutive streams land in consecutive slots, a look-up is a
/// shift, a mask and usually one comparison, and nothing is hashed with SipHash as a
/// `Dictionary<Int32, _>` does for every insert, look-up and removal. Removal shifts the
/// following entries back (no tombstones), so a long-lived connection never degrades.
/// The load factor stays at or under one half.
///
/// Value semantics like `Dictionary`: iterating a copy while removing from the original
/// is safe.
struct StreamTable<Value> {
    /// Stream IDs by slot; 0 (the connection's own stream, never a request) marks a free slot.
    private var ids: [Int32]
    private var values: [Value?]
    private var mask: Int
    /// The number of entries.
    private(set) var count = 0

    /// An empty table with room for `capacity` entries before it grows.
    init(capacity: Int = 64) {
        var size = 16
        while size < capacity * 2 { size <<= 1 }
        ids = Array(repeating: 0, count: size)
        values = Array(repeating: nil, count: size)
        mask = size - 1
    }

    /// Whether the table holds no entry.
    var isEmpty: Bool { count == 0 }

    @inline(__always)
    private func home(_ id: Int32) -> Int { Int(UInt32(bitPattern: id) >> 1) & mask }

    /// The slot holding `id`, if any.
    @inline(__always)
    private func slot(of id: Int32) -> Int? {
        var index = home(id)
        while true {
            let found = ids[index]
            if found == id { return index }
            if found == 0 { return nil }
            index = (index &+ 1) & mask
        }
    }

    /// The value for `id`; setting `nil` removes it.
    subscript(id: Int32) -> Value? {
        get {
            guard let index = slot(of: id) else { return nil }
            return values[index]
        }
        set {
            if let newValue {
                insert(newValue, for: id)
            } else {
                removeValue(forKey: id)
            }
        }
    }

    /// Sets the value for `id` (not 0), replacing an earlier one.
    mutating func insert(_ value: Value, for id: Int32) {
        precondition(id != 0, "stream 0 is the connection, not a stream of the table")
        if let index = slot(of: id) {
            values[index] = value
            return
        }
        if (count + 1) * 2 > ids.count { grow() }
        var index = home(id)
        while ids[index] != 0 { index = (index &+ 1) & mask }
        ids[index] = id
        values[index] = value
        count += 1
    }

    /// Removes and returns the value for `id`.
    @discardableResult
    mutating func removeValue(forKey id: Int32) -> Value? {
        guard var hole = slot(of: id) else { return nil }
        let removed = values[hole]
        ids[hole] = 0
        values[hole] = nil
        count -= 1
        // Backward shift: move each following entry of the run into the hole when its home
        // slot does not lie cyclically in (hole, index].
        var index = hole
        while true {
            index = (index &+ 1) & mask
            let next = ids[index]
            if next == 0 { break }
            let wanted = home(next)
            let stays = hole <= index ? (hole < wanted && wanted <= index) : (hole < wanted || wanted <= index)
            if stays { continue }
            ids[hole] = next
            values[hole] = values[index]
            ids[index] = 0
            values[index] = nil
            hole = index
        }
        return removed
    }

    /// Removes every entry, keeping the storage.
    mutating func removeAll() {
        guard count > 0 else { return }
        for index in ids.indices where ids[index] != 0 {
            ids[index] = 0
            values[index] = nil
        }
        count = 0
    }

    /// The stream IDs, in no particular order.
    var keys: [Int32] { ids.filter { $0 != 0 } }

    private mutating func grow() {
        let oldIDs = ids
        let oldValues = values
        let size = ids.count * 2
        ids = Array(repeating: 0, count: size)
        values = Array(repeating: nil, count: size)
        mask = size - 1
        count = 0
        for index in oldIDs.indices where oldIDs[index] != 0 {
            insert(oldValues[index]!, for: oldIDs[index])
        }
    }
}

extension StreamTable: Sequence {
    /// Walks the entries in slot order.
    struct Iterator: IteratorProtocol {
        fileprivate let table: StreamTable
        fileprivate var index = 0

        /// The next entry.
        mutating func next() -> (key: Int32, value: Value)? {
            while index < table.ids.count {
                defer { index += 1 }
                let id = table.ids[index]
                if id != 0, let value = table.values[index] { return (id, value) }
            }
            return nil
        }
    }

    /// An iterator over a snapshot of the entries.
    func makeIterator() -> Iterator { Iterator(table: self) }

    /// The number of entries.
    var underestimatedCount: Int { count }
}
