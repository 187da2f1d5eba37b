import APNsCore
import Foundation
import Logging
import Synchronization

/// The connections to one endpoint and the queue of requests waiting for a stream.
///
/// The protocol between the pool and its connections, in one place:
/// - ``enqueue(_:)`` (any task) appends a request and wakes one connection that has a
///   free stream; if none has, it wakes an idle disconnected one or starts a new one
///   (lazily, up to `connectionCount`). Each connection's free-stream count lives here.
/// - A connection thread calls ``take(for:max:into:)`` with its free streams; that
///   pops requests and records what is left free. Requests the server did not process
///   come back through ``requeue(_:)`` and go first.
/// - Before connecting, a connection asks ``connectPermission(for:)``: connection
///   attempts after a failure are spaced by ``ReconnectBackoff`` for the whole pool, and
///   while the pool is backing off with no connection up, new requests fail at once
///   with `connectionFailed` (never sent, so safe to retry) rather than wait.
/// - ``shutdown(gracePeriod:)`` fails what is queued, tells every connection to drain,
///   and returns when every connection thread has exited.
final class HTTP2ConnectionPool: Sendable {
    /// Fixed settings of the pool, derived from ``HTTP2Transport/Configuration``.
    struct Settings: Sendable {
        var endpoint: TLSEndpoint
        var connectionCount: Int
        var maxQueuedRequests: Int
        var connectTimeout: Duration
        var pingInterval: UInt64
        var pingTimeout: UInt64
        var backoff: ReconnectBackoff
        var maxRequeues: Int
        var machine: HTTP2ConnectionStateMachine.Configuration
        var logger: Logger
    }

    /// What a disconnected connection should do next.
    enum ConnectPermission: Equatable {
        case connect
        case wait(nanoseconds: UInt64)
        case idle
        case exit
    }

    private struct Slot {
        let connection: HTTP2Connection
        var freeStreams = 0
        /// The connection's thread is (about to be) blocked in poll(2) and needs a signal
        /// to see new work; an awake one takes queued work on its next iteration.
        var sleeping = false
        var isIdle = false
        var isReady = false
        var isConnecting = false
        /// A connection of this slot has been established before: the next one is a reconnect.
        var hasConnected = false
    }

    private struct State {
        var queue = RequestQueue()
        var slots: [Slot] = []
        var shuttingDown = false
        var shutdownDeadline: UInt64 = 0
        var consecutiveFailures = 0
        var nextConnectAttempt: UInt64 = 0
        var lastConnectError: APNsTransportError?
        var lastQueueScan: UInt64 = 0
        var runningThreads = 0
        var shutdownWaiters: [CheckedContinuation<Void, Never>] = []
    }

    let settings: Settings
    let connector: HTTP2Connector
    let statistics: StatisticsBox
    private let state = Mutex(State())

    init(settings: Settings, connector: @escaping HTTP2Connector, statistics: StatisticsBox) {
        self.settings = settings
        self.connector = connector
        self.statistics = statistics
    }

    // MARK: Callers

    /// Queues `pending` and wakes or starts a connection; fails it at once when the pool
    /// is shut down, too many requests wait for a stream, or the pool is backing off with
    /// no connection.
    ///
    /// A queued request *waits* when no stream is free for it: the queue is matched
    /// against the free streams each open connection published (``take(for:max:into:)``,
    /// ``prepareToSleep(_:freeStreams:)``, ``publishFreeStreams(_:freeStreams:)``) plus one
    /// stream for each connection not open (being opened, idle, or not started yet): it
    /// opens on demand, and APNs allows every connection at least one stream. Only the
    /// requests beyond those count against `maxQueuedRequests`. This scans the slots (at
    /// most `connectionCount`), never the queue.
    func enqueue(_ pending: PendingRequest, now: UInt64 = MonotonicTime.now()) {
        var failure: APNsTransportError?
        var wakeups = Wakeups()
        state.withLock { state in
            if state.shuttingDown {
                failure = .shutdown("the transport is shut down")
                return
            }
            let slots = SlotSummary(state.slots)
            // A batch's window bounds its own requests (HTTP2Transport.sendBatch).
            if !pending.isBatched, case let waiting = waitingCount(state, slots), waiting >= settings.maxQueuedRequests {
                failure = .queueFull(
                    "\(waiting) requests are waiting for a stream (maxQueuedRequests \(settings.maxQueuedRequests))"
                )
                return
            }
            // While backing off with no connection, a single send fails at once rather than
            // pile up; a batch's requests wait for the next attempt instead (its window
            // bounds them), or a short outage would fail the rest of the batch in a burst.
            if !pending.isBatched, !slots.anyUp, state.consecutiveFailures > 0, now < state.nextConnectAttempt {
                let waitMS = (state.nextConnectAttempt - now) / 1_000_000
                failure = .connectionFailed(
                    "not connected to \(settings.endpoint.host):\(settings.endpoint.port); the last attempt failed ("
                        + (state.lastConnectError.map { $0.detail ?? $0.code.description } ?? "no detail")
                        + "); next attempt in \(waitMS) ms"
                )
                return
            }
            state.queue.append(pending)
            wakeups = chooseConnections(&state, slots)
            if wakeups.isEmpty, let index = state.slots.firstIndex(where: { $0.isReady && $0.sleeping }) {
                // No connection can take the request now (no free stream anywhere): wake one
                // anyway, so that it watches the queue's deadlines instead of sleeping until
                // its PING timer.
                state.slots[index].sleeping = false
                wakeups.add(state.slots[index].connection)
            }
        }
        if let failure {
            pending.finish(.failure(failure))
            return
        }
        wakeups.run()
    }

    /// Queued requests of single sends that no free stream will take (negative when
    /// streams are to spare): the queue less the published free streams and one stream
    /// per connection not open, and at most the single sends queued (a batch's requests
    /// are bounded by its window, not by `maxQueuedRequests`).
    private func waitingCount(_ state: State, _ slots: SlotSummary) -> Int {
        min(state.queue.singleCount, state.queue.count - slots.freeStreams - (settings.connectionCount - slots.ready))
    }

    /// How many queued requests count as waiting for a stream against
    /// `maxQueuedRequests` (for tests and diagnostics).
    var waitingRequests: Int {
        state.withLock { state in max(0, waitingCount(state, SlotSummary(state.slots))) }
    }

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
            for slot in slots {
                freeStreams += slot.freeStreams
                if slot.isReady { ready += 1 } else if !slot.isIdle { opening += 1 }
                if slot.isReady || slot.isConnecting { anyUp = true }
            }
        }
    }

    /// The connections to signal or start once the pool lock is released.
    private struct Wakeups {
        var wake: HTTP2Connection?
        /// Further sleepers to wake, when one is not enough (rare: no allocation otherwise).
        var wakeMore: [HTTP2Connection] = []
        var wakeIdle: HTTP2Connection?
        var start: HTTP2Connection?

        var isEmpty: Bool { wake == nil && wakeIdle == nil && start == nil }

        mutating func add(_ connection: HTTP2Connection) {
            if wake == nil { wake = connection } else { wakeMore.append(connection) }
        }

        func run() {
            wake?.wakeup.signal()
            for connection in wakeMore { connection.wakeup.signal() }
            wakeIdle?.wakeup.signal()
            start?.start()
        }
    }

    /// Picks the connections to wake for new work, and wakes an idle one or starts a new
    /// one when the queue holds more requests than the free streams of the connections
    /// up or opening (one each for those opening). `slots` is the caller's summary of the
    /// slots under the same lock (choosing changes only `sleeping`, which it does not
    /// count), so the per-request path passes over the slots once or twice. Called under
    /// the lock.
    ///
    /// An awake connection takes queued requests on its next loop iteration without a
    /// system call, up to its free streams; sleepers with free streams are woken for
    /// what the awake ones cannot take. Without that, a queue refilled from one busy
    /// connection's thread (a batch) would only ever feed that connection.
    private func chooseConnections(_ state: inout State, _ slots: SlotSummary) -> Wakeups {
        var wakeups = Wakeups()
        var awakeFree = 0
        var anySleeper = false
        for slot in state.slots where slot.freeStreams > 0 {
            if slot.sleeping { anySleeper = true } else { awakeFree += slot.freeStreams }
        }
        var uncovered = state.queue.count - awakeFree
        if anySleeper, uncovered > 0 {
            for index in state.slots.indices where state.slots[index].sleeping && state.slots[index].freeStreams > 0 {
                state.slots[index].sleeping = false
                wakeups.add(state.slots[index].connection)
                uncovered -= state.slots[index].freeStreams
                if uncovered <= 0 { break }
            }
        }
        // More capacity is needed when the queue outgrows the streams the connections
        // up or opening will offer; otherwise a burst queued while one connection had
        // free streams would stay on that connection alone.
        guard state.queue.count > slots.freeStreams + slots.opening else { return wakeups }
        if let index = state.slots.firstIndex(where: { $0.isIdle }) {
            state.slots[index].isIdle = false
            wakeups.wakeIdle = state.slots[index].connection
        } else if state.slots.count < settings.connectionCount {
            let connection = HTTP2Connection(index: state.slots.count, pool: self)
            state.slots.append(Slot(connection: connection))
            state.runningThreads += 1
            wakeups.start = connection
        }
        return wakeups
    }

    // MARK: Connections

    /// Pops up to `max` requests for `connection` and records how many streams it still
    /// has free afterwards.
    func take(for connection: HTTP2Connection, max: Int, into buffer: inout [PendingRequest]) {
        state.withLock { state in
            let index = connection.index
            state.slots[index].sleeping = false
            var taken = 0
            // Finished requests (cancelled, timed out) are not checked here, under the
            // pool lock: the connection skips them when it submits.
            while taken < max, let pending = state.queue.popFirst() {
                buffer.append(pending)
                taken += 1
            }
            state.slots[index].freeStreams = max - taken
        }
    }

    /// Puts a request the server did not process back at the head of the queue and wakes
    /// a connection that can send it (or starts one).
    func requeue(_ pending: PendingRequest) {
        var wakeups = Wakeups()
        let shuttingDown = state.withLock { state -> Bool in
            if state.shuttingDown { return true }
            state.queue.prepend(pending)
            wakeups = chooseConnections(&state, SlotSummary(state.slots))
            return false
        }
        if shuttingDown {
            pending.finish(.failure(.shutdown("the transport shut down before the request could be sent again")))
            return
        }
        statistics.update { $0.requestsRequeued += 1 }
        wakeups.run()
    }

    /// Records that `connection` has `freeStreams` free streams (responses closed some),
    /// so requests sent meanwhile are not counted as waiting for a stream.
    func publishFreeStreams(_ connection: HTTP2Connection, freeStreams: Int) {
        state.withLock { $0.slots[connection.index].freeStreams = freeStreams }
    }

    /// Whether `connection` may connect now; marks it idle when there is no demand.
    func connectPermission(for connection: HTTP2Connection) -> ConnectPermission {
        let now = MonotonicTime.now()
        let permission = state.withLock { state -> ConnectPermission in
            let index = connection.index
            if state.shuttingDown { return .exit }
            if state.queue.isEmpty {
                state.slots[index].isIdle = true
                return .idle
            }
            state.slots[index].isIdle = false
            if now < state.nextConnectAttempt {
                return .wait(nanoseconds: state.nextConnectAttempt - now)
            }
            if state.consecutiveFailures > 0 {
                // One probe at a time while failing: the others wait for its result.
                state.nextConnectAttempt = now + backoffNanoseconds(failures: state.consecutiveFailures)
            }
            state.slots[index].isConnecting = true
            return .connect
        }
        if permission == .connect {
            // The thread blocks while it connects: someone else must expire what waits.
            QueueDeadlineWatch.shared.watch(self)
        }
        return permission
    }

    /// Stops the deadline watch once no connection of the pool is being opened.
    private func connectingEnded() {
        let anyConnecting = state.withLock { state in state.slots.contains { $0.isConnecting } }
        if !anyConnecting { QueueDeadlineWatch.shared.unwatch(self) }
    }

    private func backoffNanoseconds(failures: Int) -> UInt64 {
        MonotonicTime.nanoseconds(settings.backoff.delay(afterFailures: failures, jitter: Double.random(in: 0...1)))
    }

    /// A connection attempt failed: back off, and fail the queued requests if no other
    /// connection is up (they were never sent).
    func connectFailed(_ connection: HTTP2Connection, error: APNsTransportError) {
        let now = MonotonicTime.now()
        let (failed, delay): ([PendingRequest], UInt64) = state.withLock { state in
            state.slots[connection.index].isConnecting = false
            state.consecutiveFailures += 1
            let delay = backoffNanoseconds(failures: state.consecutiveFailures)
            state.nextConnectAttempt = now + delay
            state.lastConnectError = error
            let anyUp = state.slots.contains { $0.isReady || $0.isConnecting }
            return (anyUp ? [] : state.queue.removeAll(), delay)
        }
        connectingEnded()
        statistics.update { $0.connectionFailures += 1 }
        settings.logger.warning(
            "APNs connection attempt failed",
            metadata: [
                "endpoint": "\(settings.endpoint.host):\(settings.endpoint.port)",
                "error": "\(error.debugDescription)",
                "retryInMilliseconds": "\(delay / 1_000_000)",
            ]
        )
        for pending in failed { pending.finish(.failure(error)) }
    }

    /// A connection is up; `freeStreams` is its initial capacity.
    func connectSucceeded(_ connection: HTTP2Connection, freeStreams: Int) {
        let reconnected = state.withLock { state -> Bool in
            state.slots[connection.index].isConnecting = false
            state.slots[connection.index].isReady = true
            state.slots[connection.index].freeStreams = freeStreams
            defer { state.slots[connection.index].hasConnected = true }
            return state.slots[connection.index].hasConnected
        }
        connectingEnded()
        statistics.update { statistics in
            statistics.connectionsOpened += 1
            if reconnected { statistics.reconnects += 1 }
        }
    }

    /// A connection answered a request: the endpoint works, so the backoff resets.
    func connectionProved() {
        state.withLock { state in
            state.consecutiveFailures = 0
            state.nextConnectAttempt = 0
        }
    }

    /// A connection sent requests but closed before any response (with `error`): back off
    /// as after a failed connect (without failing the queue); requests that fail while
    /// backing off name `error` as the last attempt's failure.
    func sessionFailedWithoutResponse(_ error: APNsTransportError) {
        let now = MonotonicTime.now()
        state.withLock { state in
            state.lastConnectError = error
            state.consecutiveFailures += 1
            state.nextConnectAttempt = now + backoffNanoseconds(failures: state.consecutiveFailures)
        }
    }

    /// A connection stopped taking requests (GOAWAY, closing) or closed.
    func connectionUnavailable(_ connection: HTTP2Connection, closed: Bool) {
        state.withLock { state in
            state.slots[connection.index].freeStreams = 0
            if closed { state.slots[connection.index].isReady = false }
        }
    }

    /// Fails queued requests whose deadline has passed; at most one scan per 10 ms.
    func expireQueued(now: UInt64) {
        let expired: [PendingRequest] = state.withLock { state in
            guard now >= state.lastQueueScan + 10_000_000, !state.queue.isEmpty else { return [] }
            state.lastQueueScan = now
            var expired: [PendingRequest] = []
            state.queue.retain { pending in
                if pending.isFinished { return false }
                if pending.deadline <= now {
                    expired.append(pending)
                    return false
                }
                return true
            }
            return expired
        }
        for pending in expired { pending.expire() }
    }

    /// Called by a connection about to block in poll(2) with `freeStreams` free streams.
    ///
    /// - Returns: `hasWork`: requests wait and the connection has a stream for them, so it
    ///   must not block; `queueNonEmpty`: requests wait (their deadlines need the timer).
    ///   When `hasWork` is `false` the connection is marked sleeping, so the next
    ///   ``enqueue(_:)`` signals it.
    func prepareToSleep(_ connection: HTTP2Connection, freeStreams: Int) -> (hasWork: Bool, queueNonEmpty: Bool) {
        state.withLock { state in
            let queueNonEmpty = !state.queue.isEmpty
            if queueNonEmpty && freeStreams > 0 { return (true, true) }
            state.slots[connection.index].freeStreams = freeStreams
            state.slots[connection.index].sleeping = true
            return (false, queueNonEmpty)
        }
    }

    /// The shutdown deadline, if shutdown has begun.
    var shutdownDeadline: UInt64? {
        state.withLock { $0.shuttingDown ? $0.shutdownDeadline : nil }
    }

    /// A connection thread has ended.
    func threadExited(_ connection: HTTP2Connection) {
        let waiters: [CheckedContinuation<Void, Never>] = state.withLock { state in
            state.slots[connection.index].isReady = false
            state.slots[connection.index].freeStreams = 0
            state.runningThreads -= 1
            guard state.runningThreads == 0, state.shuttingDown else { return [] }
            defer { state.shutdownWaiters.removeAll() }
            return state.shutdownWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    // MARK: Shutdown

    /// Fails what is queued, lets in-flight requests finish until `gracePeriod` has
    /// passed, closes every connection with GOAWAY, and returns when all threads exited.
    func shutdown(gracePeriod: Duration) async {
        let deadline = MonotonicTime.deadline(after: gracePeriod)
        let (queued, connections): ([PendingRequest], [HTTP2Connection]) = state.withLock { state in
            if !state.shuttingDown {
                state.shuttingDown = true
                state.shutdownDeadline = deadline
            }
            return (state.queue.removeAll(), state.slots.map(\.connection))
        }
        for pending in queued {
            pending.finish(.failure(.shutdown("the transport shut down before the request was sent")))
        }
        for connection in connections { connection.wakeup.signal() }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state -> Bool in
                if state.runningThreads == 0 { return true }
                state.shutdownWaiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
        // Break the pool ↔ connection reference cycle now that every thread has exited.
        state.withLock { $0.slots.removeAll() }
    }
}
