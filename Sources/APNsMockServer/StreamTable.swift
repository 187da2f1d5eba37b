/// A connection's open request streams by stream identifier: a direct-mapped table
/// (a client's stream identifiers are odd and rise by two, so the open ones rarely share a
/// slot) with a dictionary for those that do. A request then costs no hashing to open and
/// close its stream. The table starts small and doubles, up to 4,096 slots, when streams
/// start to share slots. Each slot counts the streams of the dictionary that map to it, so
/// that a look-up hashes only when one of them may be the stream sought: a client whose
/// DATA frames wait for flow control keeps a few streams open long enough to share a slot
/// with later ones, and the dictionary then holds a stream most of the time.
///
/// Lives on the server thread only; one per connection.
struct StreamTable {
    private var ids: [Int32]
    /// The streams, owned here.
    private var slots: [ServerConnection.Stream?]
    /// The same streams unretained, for ``withStream(_:_:)``: nghttp2's per-field and
    /// per-chunk callbacks then reach a stream without a retain and a release.
    private var views: [Unmanaged<ServerConnection.Stream>?]
    private var overflow: [Int32: ServerConnection.Stream] = [:]
    /// How many streams of ``overflow`` map to each slot.
    private var overflowInSlot: [UInt32]
    /// How many streams are open.
    private(set) var count = 0

    init() {
        ids = Array(repeating: 0, count: 64)
        slots = Array(repeating: nil, count: 64)
        views = Array(repeating: nil, count: 64)
        overflowInSlot = Array(repeating: 0, count: 64)
    }

    var isEmpty: Bool { count == 0 }

    @inline(__always)
    private func slot(_ id: Int32) -> Int {
        Int(truncatingIfNeeded: id >> 1) & (slots.count - 1)
    }

    /// The open stream `id`, if any.
    subscript(id: Int32) -> ServerConnection.Stream? {
        let slot = slot(id)
        if ids[slot] == id, let stream = slots[slot] { return stream }
        return overflowInSlot[slot] == 0 ? nil : overflow[id]
    }

    /// Calls `body` with open stream `id` (borrowed, not retained), or returns `nil`.
    @inline(__always)
    func withStream<Result>(_ id: Int32, _ body: (ServerConnection.Stream) -> Result) -> Result? {
        let slot = slot(id)
        if ids[slot] == id, let view = views[slot] { return view._withUnsafeGuaranteedRef(body) }
        guard overflowInSlot[slot] != 0, let stream = overflow[id] else { return nil }
        return body(stream)
    }

    /// Open stream `id` unretained, if it is in its slot (not in the overflow): a hint's
    /// address only (see ``ServerConnection/prefetchStream(_:)``).
    @inline(__always)
    func unretained(_ id: Int32) -> Unmanaged<ServerConnection.Stream>? {
        let slot = slot(id)
        return ids[slot] == id ? views[slot] : nil
    }

    /// Records `stream` as stream `id`, replacing any stream recorded as `id`.
    mutating func insert(_ stream: consuming ServerConnection.Stream, as id: Int32) {
        if remove(id) != nil {}
        var slot = slot(id)
        if slots[slot] != nil, count >= slots.count / 4, slots.count < 4096 {
            grow()
            slot = self.slot(id)
        }
        if slots[slot] == nil {
            ids[slot] = id
            views[slot] = Unmanaged.passUnretained(stream)
            slots[slot] = stream
        } else {
            overflow[id] = stream
            overflowInSlot[slot] += 1
        }
        count += 1
    }

    /// Removes and returns stream `id`, if open.
    @discardableResult
    mutating func remove(_ id: Int32) -> ServerConnection.Stream? {
        let slot = slot(id)
        if ids[slot] == id, let stream = slots[slot] {
            slots[slot] = nil
            views[slot] = nil
            ids[slot] = 0
            count -= 1
            return stream
        }
        guard overflowInSlot[slot] != 0, let stream = overflow.removeValue(forKey: id) else { return nil }
        overflowInSlot[slot] -= 1
        count -= 1
        return stream
    }

    /// Calls `body` with every open stream.
    func forEach(_ body: (ServerConnection.Stream) -> Void) {
        for stream in slots { if let stream { body(stream) } }
        for stream in overflow.values { body(stream) }
    }

    /// Forgets every stream.
    mutating func removeAll() {
        for index in slots.indices {
            slots[index] = nil
            views[index] = nil
            ids[index] = 0
            overflowInSlot[index] = 0
        }
        overflow.removeAll()
        count = 0
    }

    /// Doubles the slots and places every stream again.
    private mutating func grow() {
        var entries: [(Int32, ServerConnection.Stream)] = Array(overflow)
        for index in slots.indices { if let stream = slots[index] { entries.append((ids[index], stream)) } }
        ids = Array(repeating: 0, count: slots.count * 2)
        slots = Array(repeating: nil, count: slots.count * 2)
        views = Array(repeating: nil, count: slots.count)
        overflowInSlot = Array(repeating: 0, count: slots.count)
        overflow.removeAll()
        for (id, stream) in entries {
            let slot = slot(id)
            if slots[slot] == nil {
                ids[slot] = id
                views[slot] = Unmanaged.passUnretained(stream)
                slots[slot] = stream
            } else {
                overflow[id] = stream
                overflowInSlot[slot] += 1
            }
        }
    }
}
