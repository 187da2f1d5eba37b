/// A first-in first-out queue over an array with a moving head: O(1) amortized push and
/// pop without the reallocation `removeFirst` would cost.
struct FIFOQueue<Element> {
    private var storage: [Element?] = []
    private var head = 0

    /// The number of elements.
    var count: Int { storage.count - head }
    var isEmpty: Bool { count == 0 }

    mutating func append(_ element: Element) {
        storage.append(element)
    }

    /// Puts `element` first (for requests that go back to the front after a GOAWAY).
    mutating func prepend(_ element: Element) {
        if head > 0 {
            head -= 1
            storage[head] = element
        } else {
            storage.insert(element, at: 0)
        }
    }

    mutating func popFirst() -> Element? {
        guard head < storage.count else { return nil }
        let element = storage[head]
        storage[head] = nil
        head += 1
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 1024 && head * 2 > storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return element
    }

    /// Keeps only the elements for which `keep` returns `true`, in order.
    mutating func retain(_ keep: (Element) -> Bool) {
        var kept: [Element?] = []
        kept.reserveCapacity(count)
        for index in head..<storage.count {
            if let element = storage[index], keep(element) { kept.append(element) }
        }
        storage = kept
        head = 0
    }

    /// Removes and returns every element.
    mutating func removeAll() -> [Element] {
        let all = storage[head...].compactMap { $0 }
        storage.removeAll()
        head = 0
        return all
    }
}

/// The pool's queue of requests waiting for a stream, which also counts how many of them
/// belong to a batch (``PendingRequest/isBatched``): those are bounded by their batch's
/// window, so `maxQueuedRequests` counts only the others.
struct RequestQueue<Request: PoolRequest> {
    private var queue = FIFOQueue<Request>()
    /// Queued requests that belong to a batch.
    private(set) var batchedCount = 0

    var count: Int { queue.count }
    var isEmpty: Bool { queue.isEmpty }
    /// Queued requests of single ``HTTP2Transport/send(_:)`` calls.
    var singleCount: Int { queue.count - batchedCount }

    mutating func append(_ pending: Request) {
        if pending.isBatched { batchedCount += 1 }
        queue.append(pending)
    }

    mutating func prepend(_ pending: Request) {
        if pending.isBatched { batchedCount += 1 }
        queue.prepend(pending)
    }

    mutating func popFirst() -> Request? {
        guard let pending = queue.popFirst() else { return nil }
        if pending.isBatched { batchedCount -= 1 }
        return pending
    }

    mutating func retain(_ keep: (Request) -> Bool) {
        var batched = 0
        queue.retain { pending in
            guard keep(pending) else { return false }
            if pending.isBatched { batched += 1 }
            return true
        }
        batchedCount = batched
    }

    mutating func removeAll() -> [Request] {
        batchedCount = 0
        return queue.removeAll()
    }
}
