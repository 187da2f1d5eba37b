import APNsCore
import Synchronization

/// One call to ``HTTP2Transport/sendBatch(count:maxConcurrency:makeRequest:onResult:)``:
/// a sliding window of requests that refills itself from the threads that finish them.
///
/// A request of the batch is a ``PendingRequest`` like any other (same queue, deadlines,
/// re-sends, cancellation), except that its outcome comes back here, on the thread that
/// decided it (usually an I/O thread, while it reads the answer), instead of resuming a suspended task. That
/// thread hands the result to `onResult` and makes the next request in the same breath:
/// no task per request and no task switch per request, which is where
/// ``HTTP2Transport/send(_:)`` spends most of its CPU at tens of thousands of requests
/// per second. The caller's task is resumed once, when the last result has been handed over.
///
/// **Making requests.** ``pump(releasing:)`` is the one place that calls `makeRequest`. Whoever
/// finds room in the window pumps; a thread that finds another one pumping leaves the
/// work to it (the `pumping` flag, under the lock), so `makeRequest` runs one call at a
/// time and in index order, and a request that fails at once (shutdown, say) while being
/// enqueued does not recurse into the pump.
///
/// **Open-ended batches.** With a ``RequestFeed``, the indices come while the batch runs:
/// the pump makes what was supplied and, when it runs out with room in the window, asks
/// the feed to wake it (``RequestFeed/waitForSupply(after:)``) and stops; the producer's
/// next ``RequestFeed/supply(upTo:)`` (or ``RequestFeed/close()``) pumps again. The
/// request is asked for under the lock that decides who pumps, so a supply cannot fall
/// between a pump's last look and its stop. The batch is over when the feed is closed and
/// every supplied index has its result.
///
/// **Cancellation.** ``cancel()`` stops the pump and cancels every request in the window
/// (each fails with `cancelled`, reset if it was sent). Once the window is empty the caller
/// is resumed, and ``failUnmade()``, on the caller's task, makes the requests not made yet,
/// one by one, and fails each at once without sending it, so every index gets its one
/// outcome — without making the thread that cancelled do that work for a batch of millions.
final class BatchSend: Sendable {
    typealias Result = PendingRequest.Outcome

    private struct State {
        /// The next index to make.
        var next = 0
        /// Requests made whose outcome has not been handed over yet.
        var running = 0
        var pumping = false
        var cancelled = false
        var continuation: UnsafeContinuation<Void, Never>?
        /// The requests in the window, by slot, so that cancellation can reach them.
        var slots: [PendingRequest?]
        var freeSlots: [Int]
    }

    /// How many requests, for a batch of a fixed size (`Int.max` with a feed).
    private let count: Int
    /// Where the indices come from, for an open-ended batch.
    private let feed: RequestFeed?
    private let window: Int
    private let makeRequest: @Sendable (Int) -> APNsRequest?
    private let onResult: @Sendable (Int, APNsRequest, Result) -> Void
    /// The pool a request goes to (its credential's), or why it has none.
    private let route: @Sendable (APNsRequest) -> Swift.Result<HTTP2ConnectionPool, APNsTransportError>
    /// The statistics a request without a pool counts in (the transport's).
    private let fallbackStatistics: StatisticsBox
    private let state: Mutex<State>

    init(
        count: Int,
        feed: RequestFeed? = nil,
        window: Int,
        route: @escaping @Sendable (APNsRequest) -> Swift.Result<HTTP2ConnectionPool, APNsTransportError>,
        fallbackStatistics: StatisticsBox,
        makeRequest: @escaping @Sendable (Int) -> APNsRequest?,
        onResult: @escaping @Sendable (Int, APNsRequest, Result) -> Void
    ) {
        self.count = feed == nil ? count : .max
        self.feed = feed
        // A feed's batch has no count to bound its window (its slots are allocated here).
        self.window = max(1, min(window, feed == nil ? count : RequestFeed.maxWindow))
        self.makeRequest = makeRequest
        self.onResult = onResult
        self.route = route
        self.fallbackStatistics = fallbackStatistics
        let window = self.window
        self.state = Mutex(State(slots: Array(repeating: nil, count: window), freeSlots: Array((0..<window).reversed())))
    }

    /// Starts the batch; `continuation` is resumed after the last result was handed over,
    /// or, if the batch is cancelled, once the window is empty (see ``failUnmade()``).
    func start(_ continuation: UnsafeContinuation<Void, Never>) {
        feed?.attach(wake: { [weak self] in self?.pump() })
        let finished = state.withLock { state -> Bool in
            if feed == nil, count == 0 { return true }
            state.continuation = continuation
            return false
        }
        if finished {
            continuation.resume()
            return
        }
        pump()
    }

    /// Set when the batch is cancelled, before its window's requests are: a connection
    /// does not submit a request of a cancelled batch (``PendingRequest/markInFlight(on:_:)``).
    private let cancelledFlag = Atomic<Bool>(false)

    /// Whether the batch was cancelled.
    var isCancelled: Bool { cancelledFlag.load(ordering: .acquiring) }

    /// Stops making requests and cancels the ones in the window.
    func cancel() {
        cancelledFlag.store(true, ordering: .releasing)
        let (inWindow, continuation): ([PendingRequest], UnsafeContinuation<Void, Never>?) = state.withLock { state in
            state.cancelled = true
            return (state.slots.compactMap { $0 }, takeContinuationIfDone(&state))
        }
        continuation?.resume()
        for pending in inWindow where pending.cancel() {
            // Still queued: the pool's next scan takes it out of the queue.
            if case .success(let pool) = route(pending.request) { pool.queuedRequestFinished() }
        }
    }

    /// After a cancelled batch resumed its caller: makes each request not made yet and
    /// hands it over failed with `cancelled` (`mayHaveReachedAPNs == false`), in order.
    /// Called on the caller's task, when no pump runs any more.
    func failUnmade() {
        // A feed is sealed: what it supplied until now is owed a result; nothing after.
        let end = feed?.seal() ?? count
        let unmade: Range<Int> = state.withLock { state in
            defer { state.next = end }
            return state.next..<max(state.next, end)
        }
        for index in unmade {
            guard let request = makeRequest(index) else { continue }
            onResult(index, request, .failure(.cancelled(mayHaveReachedAPNs: false, "the batch was cancelled before the request was sent")))
        }
    }

    /// The caller's continuation, taken, when the batch has nothing left to do on other
    /// threads: nothing in the window, no pump running, and every request made (a feed
    /// closed and all it supplied made), or the batch cancelled. Called under the lock.
    private func takeContinuationIfDone(_ state: inout State) -> UnsafeContinuation<Void, Never>? {
        guard state.running == 0, !state.pumping else { return nil }
        if !state.cancelled {
            if let feed {
                let supplied = feed.snapshot()
                guard supplied.closed, state.next >= supplied.available else { return nil }
            } else if state.next < count {
                return nil
            }
        }
        defer { state.continuation = nil }
        return state.continuation
    }

    /// The end of the indices the pump may make now: the batch's count, or what the feed
    /// supplied. When the feed has nothing more yet, it is asked to wake the batch at the
    /// next supply (only when the window has room: otherwise a finishing request pumps).
    /// Called under the lock, by the pump.
    private func madeLimit(next: Int, hasRoom: Bool) -> Int {
        guard let feed else { return count }
        var supplied = feed.snapshot()
        while next >= supplied.available, !supplied.closed, hasRoom {
            if feed.waitForSupply(after: supplied) { break }
            supplied = feed.snapshot()
        }
        return supplied.available
    }

    /// Hands the outcome of the request at `index` (in `slot`) over, frees its place in the
    /// window and refills it. Called once per request, by ``PendingRequest/finish(_:)``.
    func complete(_ index: Int, slot: Int, request: APNsRequest, outcome: Result) {
        onResult(index, request, outcome)
        pump(releasing: slot)
    }

    /// Makes and queues requests while the window has room; see the type's documentation.
    /// `released`, a slot whose request finished (or was skipped), is freed under the same
    /// lock as the first turn is taken; the caller is resumed when it was the batch's last.
    private func pump(releasing released: Int? = nil) {
        var owner = false
        var releasing = released
        while true {
            var finished: UnsafeContinuation<Void, Never>?
            let turn: (index: Int, slot: Int)? = state.withLock { state in
                if let slot = releasing {
                    state.slots[slot] = nil
                    state.freeSlots.append(slot)
                    state.running -= 1
                }
                if !owner {
                    // Another thread pumps: it takes this slot, and resumes the caller if
                    // this was the last request (it checks when it stops).
                    if state.pumping { return nil }
                    state.pumping = true
                    owner = true
                }
                guard !state.cancelled, state.next < madeLimit(next: state.next, hasRoom: !state.freeSlots.isEmpty), let slot = state.freeSlots.popLast() else {
                    state.pumping = false
                    finished = takeContinuationIfDone(&state)
                    return nil
                }
                defer { state.next += 1 }
                state.running += 1
                return (state.next, slot)
            }
            releasing = nil
            guard let (index, slot) = turn else {
                finished?.resume()
                return
            }
            guard let request = makeRequest(index) else {
                releasing = slot
                continue
            }
            // One lookup per request: the pool gives the statistics and takes the request.
            let pool = route(request)
            let statistics = (try? pool.get())?.statistics ?? fallbackStatistics
            let now = MonotonicTime.now()
            let pending = PendingRequest(
                request: request,
                deadline: MonotonicTime.deadline(after: request.timeout, from: now),
                statistics: statistics,
                batch: self,
                index: index,
                slot: slot
            )
            statistics.recordAccepted()
            let cancelled = state.withLock { state in
                state.slots[slot] = pending
                return state.cancelled
            }
            if cancelled {
                pending.finish(.failure(.cancelled(mayHaveReachedAPNs: false, "the batch was cancelled before the request was sent")))
            } else {
                switch consume pool {
                case .success(let pool): pool.enqueue(pending, now: now)
                case .failure(let error): pending.finish(.failure(error))
                }
            }
        }
    }
}
