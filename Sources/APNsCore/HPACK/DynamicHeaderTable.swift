#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The encoder's copy of the dynamic table: a FIFO of header fields bounded by a
/// size in octets, with lookups by name through a small chained hash table.
///
/// Implements [RFC 7541 §2.3.2](https://www.rfc-editor.org/rfc/rfc7541#section-2.3.2)
/// and [§4](https://www.rfc-editor.org/rfc/rfc7541#section-4): an entry's size is its
/// name length plus its value length (in octets) plus 32; new entries go in front
/// (dynamic index 1, HPACK index 62); entries are evicted from the end until the
/// table fits its maximum size; an entry larger than the maximum empties the table
/// and is not added.
///
/// Every inserted entry gets a sequence number (1, 2, …). The entry with sequence
/// number `s` sits at dynamic index `insertedCount - s + 1`, so insertions never
/// renumber anything. Lookups hash the *name* only (like nghttp2): each bucket holds
/// the newest sequence number whose name hashes there, and each entry links to the
/// next older entry of its bucket. A chain is ordered newest first, so a walk stops at
/// the first evicted entry; eviction itself never touches the chains. Values are
/// compared byte for byte along the (short) chain and never hashed.
struct DynamicHeaderTable: Sendable {
    /// The overhead RFC 7541 §4.1 adds to every entry.
    static let entryOverhead = 32

    /// The size in octets of a table entry for `name` and `value` (§4.1).
    @inline(__always)
    static func entrySize(name: String, value: String) -> Int {
        name.utf8.count + value.utf8.count + entryOverhead
    }

    private static let bucketMask = 255

    private struct Entry: Sendable {
        var field: HeaderField
        var size: Int
        var nameHash: UInt32
        /// The sequence number of the next older entry in the same bucket; 0 if none.
        var olderInBucket: Int
    }

    /// Live entries, oldest first, starting at `head`.
    private var storage: [Entry] = []
    private var head = 0
    /// The sequence number of `storage[0]`.
    private var storageBase = 1
    /// The number of entries inserted since the table was created: the sequence
    /// number of the newest entry.
    private var insertedCount = 0
    /// The newest sequence number per bucket of name hashes; 0 if none.
    private var buckets = [Int](repeating: 0, count: DynamicHeaderTable.bucketMask + 1)

    /// The sum of the sizes of the entries (§4.1).
    private(set) var size = 0
    /// The maximum size the decoder has been told about (§4.2).
    private(set) var maximumSize: Int

    init(maximumSize: Int) {
        self.maximumSize = maximumSize
    }

    /// The number of entries.
    var count: Int { storage.count - head }

    /// The sequence number of the oldest live entry.
    @inline(__always)
    private var oldestSequence: Int { storageBase + head }

    /// The entries, newest first (HPACK index 62 first).
    var fields: [HeaderField] {
        storage[head...].reversed().map(\.field)
    }

    /// Finds `name` in the table, and with `value` (unless `value` is nil) the field.
    ///
    /// - Returns: The dynamic indices (1 = newest) of the newest entry holding the
    ///   whole field and of the newest entry with the name, each nil if none.
    @inline(__always)
    func find(name: String, nameHash: UInt32, value: UnsafeBufferPointer<UInt8>?) -> (field: Int?, name: Int?) {
        var nameIndex: Int?
        let oldest = oldestSequence
        var sequence = buckets[Int(nameHash) & Self.bucketMask]
        return storage.withUnsafeBufferPointer { entries in
            while sequence >= oldest {
                let entry = entries[sequence - storageBase]
                if entry.nameHash == nameHash, entry.field.name == name {
                    let index = insertedCount - sequence + 1
                    if nameIndex == nil { nameIndex = index }
                    guard let value else { return (nil, nameIndex) }
                    if Self.equal(entry.field.value, value) { return (index, nameIndex) }
                }
                sequence = entry.olderInBucket
            }
            return (nil, nameIndex)
        }
    }

    @inline(__always)
    private static func equal(_ string: String, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard string.utf8.count == bytes.count else { return false }
        return withUTF8(of: string) { stored in
            bytes.count == 0 || memcmp(stored.baseAddress!, bytes.baseAddress!, bytes.count) == 0
        }
    }

    /// Adds `field` in front, evicting old entries to make room (§4.4).
    mutating func insert(_ field: HeaderField, size entrySize: Int, nameHash: UInt32) {
        guard entrySize <= maximumSize else {
            // §4.4: an entry larger than the maximum size empties the table.
            evict(toFit: 0)
            return
        }
        evict(toFit: maximumSize - entrySize)
        insertedCount += 1
        let bucket = Int(nameHash) & Self.bucketMask
        storage.append(Entry(field: field, size: entrySize, nameHash: nameHash, olderInBucket: buckets[bucket]))
        buckets[bucket] = insertedCount
        size += entrySize
    }

    /// Changes the maximum size, evicting entries that no longer fit (§4.3).
    mutating func setMaximumSize(_ newMaximum: Int) {
        maximumSize = newMaximum
        evict(toFit: newMaximum)
    }

    /// Evicts the oldest entries until `size <= limit`.
    private mutating func evict(toFit limit: Int) {
        while size > limit, head < storage.count {
            size -= storage[head].size
            head += 1
        }
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            storageBase = insertedCount + 1
            head = 0
        } else if head >= 64, head * 2 >= storage.count {
            // Reclaim the evicted prefix in place; amortised O(1) per eviction.
            storage.removeSubrange(0..<head)
            storageBase += head
            head = 0
        }
    }
}
