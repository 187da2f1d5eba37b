/// The encoder's copy of the dynamic table: a FIFO of header fields bounded by a
/// size in octets, with hash-map lookups by field and by name.
///
/// Implements [RFC 7541 §2.3.2](https://www.rfc-editor.org/rfc/rfc7541#section-2.3.2)
/// and [§4](https://www.rfc-editor.org/rfc/rfc7541#section-4): an entry's size is its
/// name length plus its value length (in octets) plus 32; new entries go in front
/// (dynamic index 1, HPACK index 62); entries are evicted from the end until the
/// table fits its maximum size; an entry larger than the maximum empties the table
/// and is not added.
///
/// Every inserted entry gets a sequence number. The entry with sequence number `s`
/// sits at dynamic index `insertedCount - s + 1`, so lookups store sequence numbers and
/// insertions never renumber anything.
struct DynamicHeaderTable: Sendable {
    /// The overhead RFC 7541 §4.1 adds to every entry.
    static let entryOverhead = 32

    /// The size in octets of a table entry for `name` and `value` (§4.1).
    @inline(__always)
    static func entrySize(name: String, value: String) -> Int {
        name.utf8.count + value.utf8.count + entryOverhead
    }

    private struct Entry: Sendable {
        var field: HeaderField
        var size: Int
    }

    /// Live entries, oldest first, starting at `head`.
    private var storage: [Entry] = []
    private var head = 0
    /// The number of entries inserted since the table was created.
    private var insertedCount = 0
    /// The newest sequence number of every field in the table.
    private var fieldSequence: [HeaderField: Int] = [:]
    /// The newest sequence number of every name in the table.
    private var nameSequence: [String: Int] = [:]

    /// The sum of the sizes of the entries (§4.1).
    private(set) var size = 0
    /// The maximum size the decoder has been told about (§4.2).
    private(set) var maximumSize: Int

    init(maximumSize: Int) {
        self.maximumSize = maximumSize
    }

    /// The number of entries.
    var count: Int { storage.count - head }

    /// The entry at dynamic index `index` (1 is the newest).
    func field(atDynamicIndex index: Int) -> HeaderField {
        storage[storage.count - index].field
    }

    /// The entries, newest first (HPACK index 62 first).
    var fields: [HeaderField] {
        storage[head...].reversed().map(\.field)
    }

    /// The dynamic index (1 = newest) of `field`, if the table holds it.
    @inline(__always)
    func dynamicIndex(of field: HeaderField) -> Int? {
        guard let sequence = fieldSequence[field] else { return nil }
        return insertedCount - sequence + 1
    }

    /// The dynamic index (1 = newest) of the newest entry named `name`, if any.
    @inline(__always)
    func dynamicIndex(ofName name: String) -> Int? {
        guard let sequence = nameSequence[name] else { return nil }
        return insertedCount - sequence + 1
    }

    /// Whether the table holds an entry named `name`.
    func containsName(_ name: String) -> Bool {
        nameSequence[name] != nil
    }

    /// Adds `field` in front, evicting old entries to make room (§4.4).
    mutating func insert(_ field: HeaderField, size entrySize: Int) {
        guard entrySize <= maximumSize else {
            // §4.4: an entry larger than the maximum size empties the table.
            evict(toFit: 0)
            return
        }
        evict(toFit: maximumSize - entrySize)
        insertedCount += 1
        storage.append(Entry(field: field, size: entrySize))
        size += entrySize
        fieldSequence[field] = insertedCount
        nameSequence[field.name] = insertedCount
    }

    /// Changes the maximum size, evicting entries that no longer fit (§4.3).
    mutating func setMaximumSize(_ newMaximum: Int) {
        maximumSize = newMaximum
        evict(toFit: newMaximum)
    }

    /// Evicts the oldest entries until `size <= limit`.
    private mutating func evict(toFit limit: Int) {
        while size > limit, head < storage.count {
            let entry = storage[head]
            let sequence = insertedCount - (storage.count - head) + 1
            size -= entry.size
            head += 1
            if fieldSequence[entry.field] == sequence {
                fieldSequence[entry.field] = nil
            }
            if nameSequence[entry.field.name] == sequence {
                nameSequence[entry.field.name] = nil
            }
        }
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64, head * 2 >= storage.count {
            // Reclaim the evicted prefix in place; amortised O(1) per eviction.
            storage.removeSubrange(0..<head)
            head = 0
        }
    }
}
