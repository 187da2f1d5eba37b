/// A map from HTTP/2 stream IDs to values, for the streams a connection has open.
///
/// A client opens streams with odd, increasing IDs (RFC 9113, section 5.1.1), so the
/// streams open at one moment are a window of consecutive odd numbers with holes. The
/// table is direct-mapped by the ID itself (`id >> 1` modulo a power of two): consecutive
/// streams land in consecutive slots, and an insert, look-up or removal is a shift, a mask
/// and one comparison, where a `Dictionary<Int32, _>` hashes the ID with SipHash every
/// time. An ID whose slot is taken (the open IDs span more than the table) goes to a
/// dictionary beside it; when that happens while the table is a quarter full or more, the
/// table doubles, up to 65,536 slots.
///
/// The mock server keeps its open request streams in a table of the same design
/// (`APNsMockServer/StreamTable.swift`), specialized for its stream type: measured under
/// h2load, this generic one cost the server 10–15 % more CPU per request there.
///
/// Value semantics like `Dictionary`: iterating a copy while removing from the original
/// is safe.
struct StreamTable<Value> {
    /// Stream IDs by slot; 0 (the connection's own stream, never a request) marks a free slot.
    private var ids: [Int32]
    private var values: [Value?]
    /// Entries whose slot was taken by another stream.
    private var overflow: [Int32: Value] = [:]
    /// The number of entries.
    private(set) var count = 0

    /// The most slots the table grows to.
    private static var maxSlots: Int { 1 << 16 }

    /// An empty table with `capacity` slots (rounded up to a power of two, at least 16).
    init(capacity: Int = 64) {
        var size = 16
        while size < capacity { size <<= 1 }
        ids = Array(repeating: 0, count: size)
        values = Array(repeating: nil, count: size)
    }

    /// Whether the table holds no entry.
    var isEmpty: Bool { count == 0 }

    @inline(__always)
    private func slot(_ id: Int32) -> Int { Int(UInt32(bitPattern: id) >> 1) & (ids.count - 1) }

    /// The value for `id`; setting `nil` removes it.
    subscript(id: Int32) -> Value? {
        get {
            let slot = slot(id)
            if ids[slot] == id { return values[slot] }
            return overflow.isEmpty ? nil : overflow[id]
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
        let slot = slot(id)
        if ids[slot] == id {
            values[slot] = value
            return
        }
        if !overflow.isEmpty, overflow[id] != nil {
            overflow[id] = value
            return
        }
        if ids[slot] != 0, count >= ids.count / 4, ids.count < Self.maxSlots { grow() }
        place(value, for: id)
    }

    /// Removes and returns the value for `id`.
    @discardableResult
    mutating func removeValue(forKey id: Int32) -> Value? {
        let slot = slot(id)
        if ids[slot] == id {
            let removed = values[slot]
            ids[slot] = 0
            values[slot] = nil
            count -= 1
            return removed
        }
        guard !overflow.isEmpty, let removed = overflow.removeValue(forKey: id) else { return nil }
        count -= 1
        return removed
    }

    /// Removes every entry, keeping the storage.
    mutating func removeAll() {
        guard count > 0 else { return }
        for index in ids.indices where ids[index] != 0 {
            ids[index] = 0
            values[index] = nil
        }
        overflow.removeAll()
        count = 0
    }

    /// The stream IDs, in no particular order.
    var keys: [Int32] { ids.filter { $0 != 0 } + overflow.keys }

    /// Doubles the slots and places every entry again.
    private mutating func grow() {
        let oldIDs = ids
        let oldValues = values
        let oldOverflow = overflow
        let size = ids.count * 2
        ids = Array(repeating: 0, count: size)
        values = Array(repeating: nil, count: size)
        overflow = [:]
        count = 0
        for index in oldIDs.indices where oldIDs[index] != 0 {
            if let value = oldValues[index] { place(value, for: oldIDs[index]) }
        }
        for (id, value) in oldOverflow { place(value, for: id) }
    }

    /// Adds an entry known to be absent, without growing.
    private mutating func place(_ value: Value, for id: Int32) {
        let slot = slot(id)
        if ids[slot] == 0 {
            ids[slot] = id
            values[slot] = value
        } else {
            overflow[id] = value
        }
        count += 1
    }
}

extension StreamTable: Sequence {
    /// Walks the entries: the slots in order, then the overflow.
    struct Iterator: IteratorProtocol {
        fileprivate let table: StreamTable
        fileprivate var index = 0
        fileprivate var overflow: Dictionary<Int32, Value>.Iterator

        fileprivate init(table: StreamTable) {
            self.table = table
            self.overflow = table.overflow.makeIterator()
        }

        /// The next entry.
        mutating func next() -> (key: Int32, value: Value)? {
            while index < table.ids.count {
                defer { index += 1 }
                let id = table.ids[index]
                if id != 0, let value = table.values[index] { return (id, value) }
            }
            return overflow.next()
        }
    }

    /// An iterator over a snapshot of the entries.
    func makeIterator() -> Iterator { Iterator(table: self) }

    /// The number of entries.
    var underestimatedCount: Int { count }
}
