/// The 61 predefined header fields every HPACK encoder and decoder share.
///
/// Implements [RFC 7541 Appendix A](https://www.rfc-editor.org/rfc/rfc7541#appendix-A)
/// and the index address space of
/// [§2.3.3](https://www.rfc-editor.org/rfc/rfc7541#section-2.3.3): static entries
/// are indices 1...61; the dynamic table follows at 62.
enum StaticHeaderTable {
    /// The number of static entries; the first dynamic index is `count + 1`.
    static let count = 61

    /// Appendix A, in index order (index 1 first).
    static let entries: [(name: String, value: String)] = [
        (":authority", ""), // 1
        (":method", "GET"), // 2
        (":method", "POST"), // 3
        (":path", "/"), // 4
        (":path", "/index.html"), // 5
        (":scheme", "http"), // 6
        (":scheme", "https"), // 7
        (":status", "200"), // 8
        (":status", "204"), // 9
        (":status", "206"), // 10
        (":status", "304"), // 11
        (":status", "400"), // 12
        (":status", "404"), // 13
        (":status", "500"), // 14
        ("accept-charset", ""), // 15
        ("accept-encoding", "gzip, deflate"), // 16
        ("accept-language", ""), // 17
        ("accept-ranges", ""), // 18
        ("accept", ""), // 19
        ("access-control-allow-origin", ""), // 20
        ("age", ""), // 21
        ("allow", ""), // 22
        ("authorization", ""), // 23
        ("cache-control", ""), // 24
        ("content-disposition", ""), // 25
        ("content-encoding", ""), // 26
        ("content-language", ""), // 27
        ("content-length", ""), // 28
        ("content-location", ""), // 29
        ("content-range", ""), // 30
        ("content-type", ""), // 31
        ("cookie", ""), // 32
        ("date", ""), // 33
        ("etag", ""), // 34
        ("expect", ""), // 35
        ("expires", ""), // 36
        ("from", ""), // 37
        ("host", ""), // 38
        ("if-match", ""), // 39
        ("if-modified-since", ""), // 40
        ("if-none-match", ""), // 41
        ("if-range", ""), // 42
        ("if-unmodified-since", ""), // 43
        ("last-modified", ""), // 44
        ("link", ""), // 45
        ("location", ""), // 46
        ("max-forwards", ""), // 47
        ("proxy-authenticate", ""), // 48
        ("proxy-authorization", ""), // 49
        ("range", ""), // 50
        ("referer", ""), // 51
        ("refresh", ""), // 52
        ("retry-after", ""), // 53
        ("server", ""), // 54
        ("set-cookie", ""), // 55
        ("strict-transport-security", ""), // 56
        ("transfer-encoding", ""), // 57
        ("user-agent", ""), // 58
        ("vary", ""), // 59
        ("via", ""), // 60
        ("www-authenticate", ""), // 61
    ]

    /// One slot of the name lookup: the hash of a name, the index of its first entry
    /// and how many consecutive entries carry it (Appendix A groups equal names).
    private struct NameSlot {
        var hash: UInt32 = 0
        var first: UInt8 = 0
        var count: UInt8 = 0
    }

    private static let slotMask = 127

    /// Open addressing over `hpackNameHash` of each distinct name (41 names, 128 slots).
    private static let nameSlots: [NameSlot] = {
        var slots = [NameSlot](repeating: NameSlot(), count: slotMask + 1)
        var index = 0
        while index < entries.count {
            let name = entries[index].name
            var count = 1
            while index + count < entries.count, entries[index + count].name == name { count += 1 }
            let hash = withUTF8(of: name) { hpackNameHash($0) }
            var slot = Int(hash) & slotMask
            while slots[slot].count != 0 { slot = (slot + 1) & slotMask }
            slots[slot] = NameSlot(hash: hash, first: UInt8(index + 1), count: UInt8(count))
            index += count
        }
        return slots
    }()

    /// Finds `name` (whose `hpackNameHash` is `nameHash`).
    ///
    /// - Returns: The index of the first entry with that name and the index of the
    ///   entry holding `value` too (nil when `value` is nil or not there), or nil if
    ///   the name is not in the table.
    @inline(__always)
    static func find(name: String, nameHash: UInt32, value: String?) -> (name: Int, field: Int?)? {
        nameSlots.withUnsafeBufferPointer { slots in
            var slot = Int(nameHash) & slotMask
            while slots[slot].count != 0 {
                let candidate = slots[slot]
                let first = Int(candidate.first)
                if candidate.hash == nameHash, entries[first - 1].name == name {
                    guard let value else { return (first, nil) }
                    for index in first..<(first + Int(candidate.count)) where entries[index - 1].value == value {
                        return (first, index)
                    }
                    return (first, nil)
                }
                slot = (slot + 1) & slotMask
            }
            return nil
        }
    }
}
