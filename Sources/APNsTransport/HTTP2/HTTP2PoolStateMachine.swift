import APNsCore

/// What the pool's state machine needs of a queued request: whether it belongs to a
/// batch (batches are bounded by their window, not by `maxQueuedRequests`), whether it
/// already has its outcome (cancelled, timed out), and its deadline.
protocol PoolRequest: AnyObject {
    /// Whether the request belongs to a batch send.
    var isBatched: Bool { get }
    /// Whether the request already has its outcome.
    var isFinished: Bool { get }
    /// When the request times out, on ``MonotonicTime``'s clock.
    var deadline: UInt64 { get }
}

extension PendingRequest: PoolRequest {}

/// The decisions of one endpoint's connection pool as a value: events in, actions out.
///
/// It keeps the queue of requests waiting for a stream and, for each connection slot (by
/// ID, `0..<connectionCount`), what the pool knows of it: free streams, whether its thread
/// sleeps, is idle, connecting or up. It never starts a thread, reads a clock, draws a
/// random number, logs or finishes a request: the time and the jitter of the reconnect
/// backoff are inputs, and what to do comes back as values (connections to wake or start,
/// requests to fail, how long to wait). ``HTTP2ConnectionPool`` holds it under a lock and
/// performs the actions; the tests drive it directly, with no thread and no socket.
///
/// The model is async-http-client's `HTTPConnectionPool.StateMachine`.
struct HTTP2PoolStateMachine<Request: PoolRequest> {
    /// A connection slot: 0 up to `connectionCount - 1`, opened lazily in order.
    typealias ConnectionID = Int

    /// The fixed settings.
    struct Settings: Sendable {
        /// The most connections.
        var connectionCount: Int
        /// The most single-send requests that may wait for a stream.
        var maxQueuedRequests: Int
        /// The delays between connection attempts after failures.
        var backoff: ReconnectBackoff
        /// The endpoint, for error messages.
        var endpointDescription: String
        /// The least time between the starts of two connection attempts while another
        /// connection is up or opening, in nanoseconds (Apple asks providers to stagger
        /// opening many connections); 0 opens them at once. A pool with no connection up
        /// or opening never waits for it.
        var connectStagger: UInt64 = 0
        /// How many connections may be up or opening before ``connectStagger`` applies to
        /// the next one: a pool opens that many at once, then staggers the rest. 1 staggers
        /// every connection after the first.
        var unstaggeredConnections: Int = 1
    }

    /// What a disconnected connection should do next.
    enum ConnectPermission: Equatable {
        case connect
        case wait(nanoseconds: UInt64)
        case idle
        case exit
    }

    /// The connections to signal or start once the caller's lock is released.
    struct Wakeups: Equatable {
        /// The first sleeping connection to signal.
        var wake: ConnectionID?
        /// Further sleepers to signal, when one is not enough (rare: no allocation otherwise).
        var wakeMore: [ConnectionID] = []
        /// An idle (disconnected, waiting for demand) connection to signal.
        var wakeIdle: ConnectionID?
        /// A new connection slot to create and start.
        var start: ConnectionID?

        /// Whether there is nothing to do.
        var isEmpty: Bool { wake == nil && wakeIdle == nil && start == nil }

        /// Every sleeper to signal, in order.
        var sleepers: [ConnectionID] { (wake.map { [$0] } ?? []) + wakeMore }

        mutating func add(_ id: ConnectionID) {
            if wake == nil { wake = id } else { wakeMore.append(id) }
        }
    }

    /// The outcome of ``enqueue(_:now:)``.
    enum EnqueueAction {
        /// Queued; signal or start these connections.
        case queued(Wakeups)
        /// Not queued: fail the request with this error (never sent).
        case fail(APNsTransportError)
    }

    private struct Slot: Equatable {
        var freeStreams = 0
        /// The connection waits for its socket, a timer or a wake-up, and needs a wake-up
        /// to see new work; an awake one takes queued work on its next round.
        var sleeping = false
        var isIdle = false
        var isReady = false
        var isConnecting = false
        /// A connection of this slot has been established before: the next one is a reconnect.
        var hasConnected = false
        /// Its thread has ended (after shutdown).
        var exited = false
        /// The connection is to drain and close (given back to the transport's connection
        /// budget, or drew `UnrelatedKeyIdInToken`); it takes no new request.
        var retiring = false
    }

    let settings: Settings
    private var queue = RequestQueue<Request>()
    private var slots: [Slot] = []
    private(set) var shuttingDown = false
    private(set) var shutdownDeadline: UInt64 = 0
    private(set) var consecutiveFailures = 0
    private(set) var nextConnectAttempt: UInt64 = 0
    /// When the last connection attempt started (for ``Settings/connectStagger``).
    private(set) var lastConnectStart: UInt64?
    private(set) var lastConnectError: APNsTransportError?
    private var lastQueueScan: UInt64 = 0
    /// No queued request has an earlier deadline (a lower bound: the request that had it
    /// may have left the queue since), so a scan before it would expire nothing.
    private var earliestQueuedDeadline = UInt64.max
    /// A queued request has finished (cancelled) since the last scan, which removes it.
    private var finishedWhileQueued = false
    /// Connection threads started and not yet exited.
    private(set) var runningThreads = 0
    /// The transport's connection budget refused this pool a connection: open no more
    /// until ``budgetAvailable()``.
    private(set) var budgetBlocked = false

    init(settings: Settings) {
        self.settings = settings
    }

    // MARK: Reading

    /// Requests queued (waiting or about to be taken).
    var queuedCount: Int { queue.count }

    /// How many connection slots exist (started at some point).
    var connectionSlots: Int { slots.count }

    /// Whether `id` is up (its session established and not closed).
    func isReady(_ id: ConnectionID) -> Bool { slots[id].isReady }

    /// Connections up.
    var readyCount: Int { slots.count { $0.isReady } }

    /// Whether `id` is to drain and close (see ``retire(_:)``).
    func isRetiring(_ id: ConnectionID) -> Bool { slots[id].retiring }

    /// The free streams `id` last published.
    func freeStreams(_ id: ConnectionID) -> Int { slots[id].freeStreams }

    /// Queued requests of single sends that no free stream will take, at least 0: what
    /// counts against `maxQueuedRequests`.
    var waitingRequests: Int { max(0, waitingCount(SlotSummary(slots))) }

    // MARK: Callers

    /// A request to queue at `now`: fails it at once when the pool is shut down, too many
    /// single sends wait for a stream, or the pool is backing off with no connection and
    /// the request's deadline comes before the next attempt (a request that can wait, a
    /// batch's or a single send, waits for the next attempt instead); otherwise queues it and
    /// says which connections to wake or start.
    ///
    /// A queued request *waits* when no stream is free for it: the queue is matched
    /// against the free streams each open connection published plus one stream for each
    /// connection not open (it opens on demand, and APNs allows every connection at least
    /// one stream). Only the requests beyond those count against `maxQueuedRequests`.
    mutating func enqueue(_ request: Request, now: UInt64) -> EnqueueAction {
        if shuttingDown {
            return .fail(.shutdown("the transport is shut down"))
        }
        let summary = SlotSummary(slots)
        if !request.isBatched, case let waiting = waitingCount(summary), waiting >= settings.maxQueuedRequests {
            return .fail(
                .queueFull("\(waiting) requests are waiting for a stream (maxQueuedRequests \(settings.maxQueuedRequests))")
            )
        }
        // While the pool backs off with nothing up, a request whose deadline comes before
        // the next attempt fails at once (waiting could only end in a timeout); one that
        // can wait for the attempt waits, so that a retry of a refused connection is not
        // spent while no connection can be tried. A batch's requests follow the same rule:
        // once the backoff outgrows the request timeout, a batch sent during an outage
        // ends in minutes, not in (notifications / window) x the request timeout. After a
        // refusal that sending again cannot fix (a proxy's 407, a refused certificate), the
        // next attempt would only meet it again: any request fails at once, saying so.
        if !summary.anyUp, consecutiveFailures > 0, now < nextConnectAttempt,
            lastConnectError?.isPermanent == true || request.deadline <= nextConnectAttempt {
            let permanent = lastConnectError?.isPermanent == true
            let waitMS = (nextConnectAttempt - now) / 1_000_000
            let detail = "not connected to \(settings.endpointDescription); the last attempt failed ("
                + (lastConnectError.map { $0.detail ?? $0.code.description } ?? "no detail")
                + "); next attempt in \(waitMS) ms"
            // The last attempt's cause names the failure: a handshake the server refused (a
            // client certificate it requires, say) is a TLS failure for every request that
            // meets it, not only for the ones that were waiting for that attempt.
            let failure: APNsTransportError = lastConnectError?.code == .tlsFailure ? .tlsFailure(detail) : .connectionFailed(detail)
            return .fail(permanent ? failure.permanent : failure)
        }
        noteQueued(request.deadline)
        queue.append(request)
        var wakeups = chooseConnections(summary)
        if wakeups.isEmpty, let id = slots.firstIndex(where: { $0.isReady && $0.sleeping }) {
            // No connection can take the request now (no free stream anywhere): wake one
            // anyway, so that it watches the queue's deadlines instead of sleeping until
            // its PING timer.
            slots[id].sleeping = false
            wakeups.add(id)
        }
        return .queued(wakeups)
    }

    /// A request the server did not process, back at the head of the queue; `nil` when
    /// the pool is shutting down (fail it), else the connections to wake.
    mutating func requeue(_ request: Request) -> Wakeups? {
        if shuttingDown { return nil }
        noteQueued(request.deadline)
        queue.prepend(request)
        return chooseConnections(SlotSummary(slots))
    }

    /// Fails queued requests whose deadline has passed; at most one scan per 10 ms, and
    /// only when a queued deadline may have passed or a queued request has finished
    /// (``queuedRequestFinished()``): a long queue is not walked every 10 ms for nothing.
    /// Returns the requests to expire (already-finished ones are dropped silently).
    mutating func expireQueued(now: UInt64) -> [Request] {
        guard now >= lastQueueScan + 10_000_000, !queue.isEmpty else { return [] }
        guard now >= earliestQueuedDeadline || finishedWhileQueued else { return [] }
        lastQueueScan = now
        finishedWhileQueued = false
        var expired: [Request] = []
        var earliest = UInt64.max
        queue.retain { request in
            if request.isFinished { return false }
            if request.deadline <= now {
                expired.append(request)
                return false
            }
            earliest = min(earliest, request.deadline)
            return true
        }
        earliestQueuedDeadline = earliest
        return expired
    }

    /// Lowers the bound of the queue's deadlines for a request about to join it.
    private mutating func noteQueued(_ deadline: UInt64) {
        earliestQueuedDeadline = queue.isEmpty ? deadline : min(earliestQueuedDeadline, deadline)
    }

    /// A request may have finished while queued (its task was cancelled): the next scan
    /// (``expireQueued(now:)``) takes it out, so that it no longer counts as waiting.
    mutating func queuedRequestFinished() {
        finishedWhileQueued = true
    }

    // MARK: Connections

    /// Pops up to `max` requests for `id` into `buffer` and records how many streams it
    /// still has free afterwards.
    mutating func take(for id: ConnectionID, max: Int, into buffer: inout [Request]) {
        slots[id].sleeping = false
        var taken = 0
        while taken < max, let request = queue.popFirst() {
            buffer.append(request)
            taken += 1
        }
        slots[id].freeStreams = max - taken
    }

    /// `id` has `freeStreams` free streams (answers closed some).
    mutating func publishFreeStreams(_ id: ConnectionID, freeStreams: Int) {
        slots[id].freeStreams = freeStreams
    }

    /// Whether `id` may connect at `now`; marks it idle when there is no demand. With
    /// failures behind, one probe at a time: the attempt pushes the next one back by the
    /// backoff (drawn with `jitter`, in `0...1`).
    mutating func connectPermission(for id: ConnectionID, now: UInt64, jitter: Double) -> ConnectPermission {
        if shuttingDown { return .exit }
        if queue.isEmpty {
            slots[id].isIdle = true
            // The pool withdraws from the transport's budget here (nothing waits), so it no
            // longer waits for a place either: the next demand asks the budget again.
            // Left blocked, a pool whose other connection the budget had refused would
            // open nothing for later requests, and no place would ever be offered to it.
            budgetBlocked = false
            return .idle
        }
        slots[id].isIdle = false
        if now < nextConnectAttempt {
            return .wait(nanoseconds: nextConnectAttempt - now)
        }
        if settings.connectStagger > 0, let last = lastConnectStart,
            now < last &+ settings.connectStagger,
            othersUpOrOpening(besides: id) >= max(1, settings.unstaggeredConnections)
        {
            // Enough connections carry (or are about to carry) the load: this one opens a
            // stagger after the last attempt, not at the same moment.
            return .wait(nanoseconds: last &+ settings.connectStagger - now)
        }
        if consecutiveFailures > 0 {
            nextConnectAttempt = now + backoffNanoseconds(jitter: jitter)
        }
        lastConnectStart = now
        slots[id].isConnecting = true
        return .connect
    }

    /// How many connections other than `id` are up or being opened.
    private func othersUpOrOpening(besides id: ConnectionID) -> Int {
        var count = 0
        for index in slots.indices where index != id && (slots[index].isReady || slots[index].isConnecting) {
            count += 1
        }
        return count
    }

    /// Whether the last connection attempt was refused in a way sending again cannot fix
    /// (a client certificate the server rejected, a proxy's 407) and no connection has
    /// answered since.
    var refusedForGood: Bool { consecutiveFailures > 0 && lastConnectError?.isPermanent == true }

    /// Whether any connection is being opened (its thread blocked in connect).
    var anyConnecting: Bool { slots.contains { $0.isConnecting } }

    /// A connection attempt of `id` failed at `now` with `error`: back off, and return the
    /// queued requests to fail if no other connection is up or connecting (they were
    /// never sent), with the delay before the next attempt.
    mutating func connectFailed(_ id: ConnectionID, error: APNsTransportError, now: UInt64, jitter: Double) -> (fail: [Request], delay: UInt64) {
        slots[id].isConnecting = false
        consecutiveFailures += 1
        let delay = backoffNanoseconds(jitter: jitter)
        nextConnectAttempt = now + delay
        lastConnectError = error
        let anyUp = slots.contains { $0.isReady || $0.isConnecting }
        return (anyUp ? [] : queue.removeAll(), delay)
    }

    /// Whether requests wait for a stream.
    var hasQueuedRequests: Bool { !queue.isEmpty }

    /// Why queued requests have no connection at `now`, when none is up: the last
    /// connection attempt's failure, or that the attempt under way has not finished (a
    /// request timeout shorter than the connect timeout ends before any attempt fails).
    /// For the detail of a request that times out in the queue.
    func noConnectionReason(at now: UInt64) -> String? {
        guard !slots.contains(where: { $0.isReady }) else { return nil }
        if consecutiveFailures > 0, let lastConnectError {
            return "not connected to \(settings.endpointDescription): the last connection attempt failed ("
                + (lastConnectError.detail ?? lastConnectError.code.description) + ")"
        }
        guard anyConnecting, let start = lastConnectStart else { return nil }
        let elapsed = now > start ? (now - start) / 1_000_000 : 0
        return "not connected to \(settings.endpointDescription) yet: the connection attempt started \(elapsed) ms earlier had not finished"
            + " (it may take up to the transport's connect timeout)"
    }

    /// `id` is up with `freeStreams` streams; whether it is a reconnect of its slot.
    mutating func connectSucceeded(_ id: ConnectionID, freeStreams: Int) -> Bool {
        slots[id].isConnecting = false
        slots[id].isReady = true
        slots[id].freeStreams = freeStreams
        defer { slots[id].hasConnected = true }
        return slots[id].hasConnected
    }

    /// A connection answered a request: the endpoint works, so the backoff resets.
    mutating func connectionProved() {
        consecutiveFailures = 0
        nextConnectAttempt = 0
    }

    /// A connection sent requests but closed before any response, with `error`: back off
    /// as after a failed connect (without failing the queue).
    mutating func sessionFailedWithoutResponse(_ error: APNsTransportError, now: UInt64, jitter: Double) {
        lastConnectError = error
        consecutiveFailures += 1
        nextConnectAttempt = now + backoffNanoseconds(jitter: jitter)
    }

    /// `id` stopped taking requests (GOAWAY, closing, probing) or, with `closed`, closed;
    /// whether this closed a connection that was up.
    @discardableResult
    mutating func connectionUnavailable(_ id: ConnectionID, closed: Bool) -> Bool {
        slots[id].freeStreams = 0
        if closed { slots[id].retiring = false }
        guard closed, slots[id].isReady else { return false }
        slots[id].isReady = false
        return true
    }

    /// `id` is about to block in poll(2) with `freeStreams` free streams.
    ///
    /// - Returns: `hasWork`: requests wait and the connection has a stream for them, so it
    ///   must not block; `queueNonEmpty`: requests wait (their deadlines need the timer).
    ///   When `hasWork` is `false` the connection is marked sleeping, so the next
    ///   ``enqueue(_:now:)`` signals it.
    mutating func prepareToSleep(_ id: ConnectionID, freeStreams: Int) -> (hasWork: Bool, queueNonEmpty: Bool) {
        let queueNonEmpty = !queue.isEmpty
        if queueNonEmpty && freeStreams > 0 { return (true, true) }
        slots[id].freeStreams = freeStreams
        slots[id].sleeping = true
        return (false, queueNonEmpty)
    }

    /// `id`'s thread has ended; whether it was the last one during shutdown (the shutdown
    /// waiters may resume).
    mutating func threadExited(_ id: ConnectionID) -> Bool {
        slots[id].isReady = false
        slots[id].freeStreams = 0
        slots[id].exited = true
        runningThreads -= 1
        return runningThreads == 0 && shuttingDown
    }

    // MARK: The transport's connection budget

    /// The budget refused the connection `id` was about to open: it goes idle, and the
    /// pool opens no more connections until ``budgetAvailable()``.
    mutating func budgetRefused(_ id: ConnectionID) {
        slots[id].isConnecting = false
        slots[id].isIdle = true
        budgetBlocked = true
    }

    /// The budget has a connection for this pool: the connection to wake or start, or
    /// `nil` when the pool no longer needs one (its queue emptied, or it shut down).
    mutating func budgetAvailable() -> Wakeups? {
        budgetBlocked = false
        guard !shuttingDown, !queue.isEmpty else { return nil }
        var wakeups = Wakeups()
        // A connection on its way (about to ask the budget) takes the place.
        if slots.contains(where: { !$0.isIdle && !$0.isReady && !$0.exited }) { return wakeups }
        guard openAnotherSlot(into: &wakeups) else { return nil }
        return wakeups
    }

    /// Marks `id` to drain (finish what it carries, take nothing new) and close; whether
    /// it was up and not already retiring.
    mutating func retire(_ id: ConnectionID) -> Bool {
        guard slots[id].isReady, !slots[id].retiring else { return false }
        slots[id].retiring = true
        slots[id].freeStreams = 0
        return true
    }

    /// The connection to give back to the budget: the newest one up and not retiring.
    var retireCandidate: ConnectionID? {
        slots.lastIndex { $0.isReady && !$0.retiring }
    }

    // MARK: Shutdown

    /// Shutdown begins (or goes on) at `deadline`: the queued requests to fail (never
    /// sent) and the connections to signal so they drain and exit.
    mutating func shutdown(deadline: UInt64) -> (fail: [Request], signal: [ConnectionID]) {
        if !shuttingDown {
            shuttingDown = true
            shutdownDeadline = deadline
        }
        return (queue.removeAll(), Array(slots.indices))
    }

    // MARK: Choosing connections

    /// What one pass over the slots knows (at most `connectionCount` of them).
    private struct SlotSummary {
        /// The free streams the connections published, in all.
        var freeStreams = 0
        /// Connections up.
        var ready = 0
        /// Connections being opened (or about to be): neither up nor idle.
        var opening = 0
        /// Whether a connection is up or connecting.
        var anyUp = false

        init(_ slots: [Slot]) {
            for slot in slots where !slot.exited {
                freeStreams += slot.freeStreams
                if slot.isReady { ready += 1 } else if !slot.isIdle { opening += 1 }
                if slot.isReady || slot.isConnecting { anyUp = true }
            }
        }
    }

    /// Queued requests of single sends that no free stream will take (negative when
    /// streams are to spare).
    private func waitingCount(_ summary: SlotSummary) -> Int {
        min(queue.singleCount, queue.count - summary.freeStreams - (settings.connectionCount - summary.ready))
    }

    /// Picks the connections to wake for new work, and wakes an idle one or starts a new
    /// one when the queue holds more requests than the free streams of the connections
    /// up or opening (one each for those opening).
    ///
    /// An awake connection takes queued requests on its next loop iteration without a
    /// system call, up to its free streams; sleepers with free streams are woken for what
    /// the awake ones cannot take. Without that, a queue refilled from one busy
    /// connection's answers (a batch) would only ever feed that connection.
    private mutating func chooseConnections(_ summary: SlotSummary) -> Wakeups {
        var wakeups = Wakeups()
        var awakeFree = 0
        var anySleeper = false
        for slot in slots where slot.freeStreams > 0 {
            if slot.sleeping { anySleeper = true } else { awakeFree += slot.freeStreams }
        }
        var uncovered = queue.count - awakeFree
        if anySleeper, uncovered > 0 {
            for id in slots.indices where slots[id].sleeping && slots[id].freeStreams > 0 {
                slots[id].sleeping = false
                wakeups.add(id)
                uncovered -= slots[id].freeStreams
                if uncovered <= 0 { break }
            }
        }
        // More capacity is needed when the queue outgrows the streams the connections up
        // or opening will offer (and the transport's budget has room).
        guard !budgetBlocked, queue.count > summary.freeStreams + summary.opening else { return wakeups }
        _ = openAnotherSlot(into: &wakeups)
        return wakeups
    }

    /// Wakes an idle connection (one whose thread still runs) or starts a new one, up to
    /// the limit; `false` when the pool has no connection left to open.
    private mutating func openAnotherSlot(into wakeups: inout Wakeups) -> Bool {
        if let id = slots.firstIndex(where: { $0.isIdle && !$0.exited }) {
            slots[id].isIdle = false
            wakeups.wakeIdle = id
            return true
        }
        guard slots.count < settings.connectionCount else { return false }
        slots.append(Slot())
        runningThreads += 1
        wakeups.start = slots.count - 1
        return true
    }

    private func backoffNanoseconds(jitter: Double) -> UInt64 {
        MonotonicTime.nanoseconds(settings.backoff.delay(afterFailures: consecutiveFailures, jitter: jitter))
    }
}
