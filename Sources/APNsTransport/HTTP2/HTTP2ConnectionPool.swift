import APNsCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import Synchronization

/// The connections to one endpoint and the queue of requests waiting for a stream: the
/// I/O shell of an ``HTTP2PoolStateMachine``, which takes every decision. The shell
/// reads the clock, draws the backoff's jitter, creates and starts connections (each
/// driven by an ``EventLoop``), wakes them, finishes requests, logs and counts.
///
/// The protocol between the pool and its connections, in one place:
/// - ``enqueue(_:)`` (any task) appends a request and wakes one connection that has a
///   free stream; if none has, it wakes an idle disconnected one or starts a new one
///   (lazily, up to `connectionCount`). Each connection's free-stream count lives here.
/// - A connection (on its loop's thread) calls ``take(for:max:into:)`` with its free streams; that
///   pops requests and records what is left free. Requests the server did not process
///   come back through ``requeue(_:)`` and go first.
/// - Before connecting, a connection asks ``connectPermission(for:)``: connection
///   attempts after a failure are spaced by ``ReconnectBackoff`` for the whole pool. While
///   the pool backs off with no connection up, a single send whose deadline comes
///   before the next attempt fails at once with `connectionFailed` (never sent, so safe
///   to retry), and after a permanent refusal every request does; the others wait for
///   the attempt (see ``HTTP2PoolStateMachine/enqueue(_:now:)``).
/// - ``shutdown(gracePeriod:reason:redirectQueued:)`` fails what is queued, tells every connection to drain,
///   and returns when every connection has exited.
/// - Every connection belongs to the pool's one credential (its provider key, or its
///   client certificate): APNs pins a connection to the key of its first token. Before it
///   opens a connection, a pool asks the transport's ``SharedConnectionBudget``; when
///   refused, it opens none until ``budgetAvailable()``. Asked to
///   ``giveBackConnection()`` (another pool has none), or told by APNs that a connection
///   carries another key (`UnrelatedKeyIdInToken`), it *retires* a connection: the
///   connection drains (finishes what it carries, takes nothing new, within
///   ``Settings/retireGracePeriod``) and closes; ``drainDeadline(for:)`` tells it so.
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
        /// How long a retired connection may take to finish what it carries.
        var retireGracePeriod: Duration = .seconds(10)
        /// The least time between two connection attempts while one is up or opening.
        var connectStagger: Duration = .zero
        /// How many connections open at once before the stagger applies.
        var unstaggeredConnections: Int = 1
        /// The I/O thread of each new connection (shared by the transport's pools).
        var threads = ConnectionThreads(placement: .spread)
    }

    typealias Machine = HTTP2PoolStateMachine<PendingRequest>
    typealias ConnectPermission = Machine.ConnectPermission

    /// The decisions (a pure state machine) and the connection objects its IDs name.
    private struct Locked {
        var machine: Machine
        var connections: [HTTP2Connection] = []
        var shutdownWaiters: [CheckedContinuation<Void, Never>] = []
        /// The pool's side of the transport's connection budget: the decisions about
        /// places held, owed and given back (a pure value).
        var share = PoolBudgetShare()
        /// When each retiring connection must have closed.
        var retireDeadlines: [Int: UInt64] = [:]
        /// Connections asking the budget for a place right now (outside the lock).
        var askingBudget = 0
        /// A place was offered while a connection was asking: a refusal it gets is stale
        /// and it asks again (else the offer would be lost and the pool wait forever).
        var budgetOffered = false
        /// The pool was closed on its own (idle, or its credential's connections closed)
        /// while the transport goes on: requests that reach it late go to a new pool.
        var closedAlone = false
        /// This pool's share of the transport's `apns_requests_waiting` gauge as last
        /// added to it: every pool adds the change in its own count, so the gauge is the
        /// sum over the pools, and returns to 0 as their queues empty.
        var waitingPublished = 0

        /// The change in the pool's waiting requests since the gauge last had it, now
        /// counted as published.
        mutating func waitingChange() -> Int {
            let waiting = machine.waitingRequests
            defer { waitingPublished = waiting }
            return waiting - waitingPublished
        }
    }

    let settings: Settings
    let connector: HTTP2Connector
    let statistics: StatisticsBox
    /// Conditions warned about once while they last (failed connects, lost connections).
    let conditions = ConditionLog()
    /// The transport's connection budget, shared with its other pools (`nil`: unlimited).
    let budget: SharedConnectionBudget?
    /// What the pool's connections present: a provider key or a client certificate.
    let credential: HTTP2Transport.Credential
    /// Where a request goes that reaches the pool after ``close(gracePeriod:)``: the
    /// credential's new pool (looked up again by the transport).
    let redirect: (@Sendable (PendingRequest) -> Void)?
    private let state: SharedMutex<Locked>

    init(
        settings: Settings,
        connector: @escaping HTTP2Connector,
        statistics: StatisticsBox,
        credential: HTTP2Transport.Credential = .configured,
        budget: SharedConnectionBudget? = nil,
        redirect: (@Sendable (PendingRequest) -> Void)? = nil
    ) {
        self.redirect = redirect
        self.settings = settings
        self.connector = connector
        self.statistics = statistics
        self.credential = credential
        self.budget = budget
        self.state = SharedMutex(
            Locked(
                machine: Machine(
                    settings: .init(
                        connectionCount: settings.connectionCount,
                        maxQueuedRequests: settings.maxQueuedRequests,
                        backoff: settings.backoff,
                        endpointDescription: "\(settings.endpoint.host):\(settings.endpoint.port)",
                        connectStagger: MonotonicTime.nanoseconds(settings.connectStagger),
                        unstaggeredConnections: settings.unstaggeredConnections
                    )
                )
            )
        )
    }

    // MARK: Performing the machine's actions

    /// The connections to signal or start, resolved from IDs under the lock, performed
    /// after it is released.
    private struct Wakeups {
        var wake: HTTP2Connection?
        /// Further connections to signal (rare: `nil`, no array, otherwise).
        var wakeMore: [HTTP2Connection]?
        var wakeIdle: HTTP2Connection?
        var start: HTTP2Connection?

        /// Resolves `ids`, creating the connection object of a new slot.
        init(_ ids: Machine.Wakeups, _ locked: inout Locked, pool: HTTP2ConnectionPool) {
            wake = ids.wake.map { locked.connections[$0] }
            if !ids.wakeMore.isEmpty { wakeMore = ids.wakeMore.map { locked.connections[$0] } }
            wakeIdle = ids.wakeIdle.map { locked.connections[$0] }
            if let id = ids.start {
                let connection = HTTP2Connection(index: id, pool: pool, loop: pool.settings.threads.loopForNewConnection())
                locked.connections.append(connection)
                start = connection
            }
        }

        func run() {
            wake?.wake()
            if let wakeMore { for connection in wakeMore { connection.wake() } }
            wakeIdle?.wake()
            start?.start()
        }
    }

    private func jitter() -> Double { Double.random(in: 0...1) }

    // MARK: Callers

    /// Queues `pending` and wakes or starts a connection; fails it at once when the pool
    /// is shut down, too many requests wait for a stream, or the pool is backing off with
    /// no connection (see ``HTTP2PoolStateMachine/enqueue(_:now:)``).
    func enqueue(_ pending: PendingRequest, now: UInt64 = MonotonicTime.now()) {
        let metrics = statistics.metrics
        var waitingChange = 0
        var redirected = false
        let outcome: Result<Wakeups, APNsTransportError> = state.withLock { locked in
            locked.share.used(at: now)
            if locked.closedAlone, redirect != nil {
                redirected = true
                return .success(Wakeups(Machine.Wakeups(), &locked, pool: self))
            }
            switch locked.machine.enqueue(pending, now: now) {
            case .fail(let error): return .failure(error)
            case .queued(let ids):
                if metrics.isEnabled { waitingChange = locked.waitingChange() }
                return .success(Wakeups(ids, &locked, pool: self))
            }
        }
        if redirected, let redirect {
            // Looked up just before the pool closed: the credential's next pool takes it.
            redirect(pending)
            return
        }
        publishWaiting(waitingChange)
        // Consumed, so the wake-ups are not copied out of the result (four retains).
        switch consume outcome {
        case .failure(let error): pending.finish(.failure(error))
        case .success(let wakeups): wakeups.run()
        }
    }

    /// Whether the pool's last connection attempt was refused in a way sending again
    /// cannot fix (see ``HTTP2PoolStateMachine/refusedForGood``): such a pool takes a
    /// free place in the transport's budget, and never asks another pool to give one back.
    var refusedForGood: Bool {
        state.withLock { $0.machine.refusedForGood }
    }

    /// The pool's connection objects, open or not (for tests).
    var connectionObjects: [HTTP2Connection] {
        state.withLock { $0.connections }
    }

    /// How many queued requests count as waiting for a stream against
    /// `maxQueuedRequests` (for tests and diagnostics).
    var waitingRequests: Int {
        state.withLock { $0.machine.waitingRequests }
    }

    // MARK: Connections

    /// Pops up to `max` requests for `connection` and records how many streams it still
    /// has free afterwards. Finished requests (cancelled, timed out) are not checked here,
    /// under the pool lock: the connection skips them when it submits.
    func take(for connection: HTTP2Connection, max: Int, into buffer: inout [PendingRequest]) {
        let metrics = statistics.metrics
        let waitingChange = state.withLock { locked -> Int in
            let before = buffer.count
            locked.machine.take(for: connection.index, max: max, into: &buffer)
            // Sending counts as using the pool, as queuing does: a pool whose request
            // waited for a place is not idle (``PoolBudgetShare``) the moment it is sent.
            if buffer.count > before { locked.share.used(at: MonotonicTime.now()) }
            return metrics.isEnabled ? locked.waitingChange() : 0
        }
        publishWaiting(waitingChange)
    }

    /// Adds `change` to the transport's `apns_requests_waiting` gauge (a sum over its
    /// pools; see ``Locked/waitingPublished``).
    private func publishWaiting(_ change: Int) {
        guard change != 0 else { return }
        let gauge = statistics.metrics.waiting
        if change > 0 { gauge.increment(by: Double(change)) } else { gauge.decrement(by: Double(-change)) }
    }

    /// Puts a request the server did not process back at the head of the queue and wakes
    /// a connection that can send it (or starts one). `sentBefore` false: a request taken
    /// but never submitted, which does not count as sent again.
    ///
    /// When the pool is closing: if it was closed alone (idle, or
    /// ``HTTP2Transport/closeConnections(for:)``) while the transport goes on, the
    /// request goes to ``redirect`` (the credential's next pool), as the queued ones did;
    /// only a transport shutting down fails it.
    func requeue(_ pending: PendingRequest, sentBefore: Bool = true) {
        let (wakeups, closedAlone): (Wakeups?, Bool) = state.withLock { locked in
            (locked.machine.requeue(pending).map { Wakeups($0, &locked, pool: self) }, locked.closedAlone)
        }
        guard let wakeups else {
            if closedAlone, let redirect {
                if sentBefore { statistics.update { $0.requestsRequeued += 1 } }
                redirect(pending)
                return
            }
            pending.finish(.failure(.shutdown("the transport shut down before the request could be sent again")))
            return
        }
        if sentBefore { statistics.update { $0.requestsRequeued += 1 } }
        wakeups.run()
    }

    /// Records that `connection` has `freeStreams` free streams (responses closed some),
    /// so requests sent meanwhile are not counted as waiting for a stream.
    func publishFreeStreams(_ connection: HTTP2Connection, freeStreams: Int) {
        state.withLock { $0.machine.publishFreeStreams(connection.index, freeStreams: freeStreams) }
    }

    /// Whether `connection` may connect now; marks it idle when there is no demand, or
    /// when the transport's connection budget refuses it a place (the pool then opens no
    /// more connections until ``budgetAvailable()``).
    func connectPermission(for connection: HTTP2Connection) -> ConnectPermission {
        // Not connected now: a place the last connection held is free again.
        releaseBudget(connection)
        let now = MonotonicTime.now()
        let jitter = jitter()
        let permission = state.withLock { $0.machine.connectPermission(for: connection.index, now: now, jitter: jitter) }
        switch permission {
        case .connect:
            // While it connects (on a worker thread) or waits for the budget, the
            // connection does not look at the queue: someone else must expire what waits.
            QueueDeadlineWatch.shared.watch(self)
            guard let budget else { return .connect }
            state.withLock { $0.askingBudget += 1 }
            while true {
                let granted = budget.request(self)
                let grantedAt = granted ? MonotonicTime.now() : 0
                let decided: Bool = state.withLock { locked in
                    if granted {
                        locked.share.granted(connection.index, at: grantedAt)
                    } else if locked.budgetOffered {
                        locked.budgetOffered = false
                        return false  // a place freed meanwhile: ask again
                    } else {
                        locked.machine.budgetRefused(connection.index)
                    }
                    locked.askingBudget -= 1
                    return true
                }
                if decided { return granted ? .connect : .idle }
            }
        case .idle:
            budget?.withdraw(self)
            connectingEnded()
            return .idle
        case .wait, .exit:
            return permission
        }
    }

    /// Stops the deadline watch once no connection of the pool is being opened or
    /// waiting for the budget.
    private func connectingEnded() {
        if !state.withLock({ $0.machine.anyConnecting || $0.machine.budgetBlocked }) {
            QueueDeadlineWatch.shared.unwatch(self)
        }
    }

    /// Gives `connection`'s place in the budget back, if it holds one.
    private func releaseBudget(_ connection: HTTP2Connection) {
        guard let budget else { return }
        let held = state.withLock { $0.share.released(connection.index) }
        if held { budget.release(self) }
    }

    // MARK: The transport's connection budget

    /// The budget has a place for this pool: wakes or starts a connection if requests
    /// still wait; `false` when none needs one any more.
    func budgetAvailable() -> Bool {
        let wakeups: Wakeups? = state.withLock { locked in
            if locked.askingBudget > 0 {
                // A connection is asking now: it takes the offer (see `budgetOffered`).
                locked.budgetOffered = true
                return Wakeups(Machine.Wakeups(), &locked, pool: self)
            }
            return locked.machine.budgetAvailable().map { Wakeups($0, &locked, pool: self) }
        }
        guard let wakeups else {
            connectingEnded()
            return false
        }
        wakeups.run()
        return true
    }

    /// Another pool has no connection and the budget is spent: retire this pool's newest
    /// connection (it drains and closes, and its place goes to the waiting pools).
    /// Returns `false` when no connection is up to give back.
    func giveBackConnection() -> Bool {
        let (connection, owed): (HTTP2Connection?, Bool) = state.withLock { locked in
            if let id = locked.machine.retireCandidate { return (retireLocked(id, &locked), false) }
            // None is up yet, but some hold a place while they connect: the next one up
            // goes back.
            return (nil, locked.share.oweRetirement())
        }
        if owed { return true }
        guard let connection else { return false }
        givenBack(connection, "APNs connection given back to the transport's connection budget")
        return true
    }

    /// Counts, logs and wakes a connection retired to give its place in the budget back.
    private func givenBack(_ connection: HTTP2Connection, _ message: Logger.Message) {
        statistics.update { $0.connectionsRetired += 1 }
        settings.logger.debug(message, metadata: ["apns.credential": "\(credential)"])
        connection.wake()
    }

    /// Another pool waits with no connection and the budget is spent: if the sharing
    /// rules say so (``PoolBudgetShare/givesBack(now:queued:evenIfBusy:)``), retire this
    /// pool's newest connection: what it carries finishes, then it closes, and its place
    /// goes to the waiting pools (this pool's next requests wait their turn). Whether it
    /// did.
    func giveBackIfIdle(now: UInt64, evenIfBusy: Bool = false) -> Bool {
        let connection: HTTP2Connection? = state.withLock { locked in
            guard locked.share.givesBack(now: now, queued: locked.machine.queuedCount, evenIfBusy: evenIfBusy),
                let id = locked.machine.retireCandidate
            else { return nil }
            return retireLocked(id, &locked)
        }
        guard let connection else { return false }
        givenBack(connection, "APNs connection given back to the transport's connection budget for a credential that has none")
        return true
    }

    /// Retires `connection`: it finishes what it carries, takes nothing new and closes.
    func retire(_ connection: HTTP2Connection) {
        let retired = state.withLock { retireLocked(connection.index, &$0) }
        guard let retired else { return }
        statistics.update { $0.connectionsRetired += 1 }
        retired.wake()
    }

    private func retireLocked(_ id: Int, _ locked: inout Locked) -> HTTP2Connection? {
        guard locked.machine.retire(id) else { return nil }
        locked.retireDeadlines[id] = MonotonicTime.deadline(after: settings.retireGracePeriod)
        return locked.connections[id]
    }

    /// `connection` would carry a new provider token less than 20 minutes after its last
    /// (``ConnectionTokenUpdates``): retire it, so that the token goes on a connection
    /// where it is no update APNs refuses. Logged at debug: a reconnect near a token's
    /// refresh makes it an expected event.
    func retireForTokenUpdate(_ connection: HTTP2Connection) {
        retire(connection)
        settings.logger.debug(
            "a new provider token less than 20 minutes after this connection's last: closing it (APNs answers TooManyProviderTokenUpdates otherwise)",
            metadata: ["apns.credential": "\(credential)", "apns.endpoint": "\(settings.endpoint.host):\(settings.endpoint.port)"]
        )
    }

    /// A response arrived on `connection` with status 403: if APNs says the connection
    /// belongs to another key (`UnrelatedKeyIdInToken`), never send on it again: retire it,
    /// so the next request opens a fresh connection for its key.
    func checkKeyBinding(_ connection: HTTP2Connection, response: APNsResponse) {
        guard APNsReason(errorBody: response.body) == .unrelatedKeyIDInToken else { return }
        retire(connection)
        let level: Logger.Level = conditions.begins("unrelated-key") ? .warning : .debug
        settings.logger.log(
            level: level,
            "APNs answered UnrelatedKeyIdInToken: the connection carried another key; closing it",
            metadata: ["apns.credential": "\(credential)", "apns.endpoint": "\(settings.endpoint.host):\(settings.endpoint.port)"]
        )
    }

    /// When `connection` must have drained and closed: the shutdown deadline, or its
    /// retirement's; `nil` while it may go on.
    /// `shuttingDown`: the transport is shutting down (not this pool or connection alone).
    func drainDeadline(for connection: HTTP2Connection) -> (deadline: UInt64, shuttingDown: Bool)? {
        state.withLock { locked in
            // A pool closed alone (idle, closeConnections(for:)) drains as a shutdown does,
            // but the transport goes on: not a `shutdown` for what it carried.
            if locked.machine.shuttingDown { return (locked.machine.shutdownDeadline, !locked.closedAlone) }
            guard locked.machine.isRetiring(connection.index), let deadline = locked.retireDeadlines[connection.index] else { return nil }
            return (deadline, false)
        }
    }

    /// Connections up, requests queued, and when a request was last queued.
    var activity: (openConnections: Int, queued: Int, lastUsed: UInt64) {
        state.withLock { ($0.machine.readyCount, $0.machine.queuedCount, $0.share.lastUsed) }
    }

    /// A connection attempt failed: back off, and fail the queued requests if no other
    /// connection is up (they were never sent).
    func connectFailed(_ connection: HTTP2Connection, error: APNsTransportError) {
        let now = MonotonicTime.now()
        let jitter = jitter()
        let metrics = statistics.metrics
        let (failed, delay, waitingChange) = state.withLock { locked in
            let (failed, delay) = locked.machine.connectFailed(connection.index, error: error, now: now, jitter: jitter)
            return (failed, delay, metrics.isEnabled ? locked.waitingChange() : 0)
        }
        publishWaiting(waitingChange)
        releaseBudget(connection)
        connectingEnded()
        statistics.update { $0.connectionFailures += 1 }
        statistics.metrics.connectionsFailed.increment()
        // Once until a connection answers again; the attempts in between are debug.
        let level: Logger.Level = conditions.begins("connect-failed") ? .warning : .debug
        settings.logger.log(
            level: level,
            "APNs connection attempt failed",
            metadata: [
                "apns.endpoint": "\(settings.endpoint.host):\(settings.endpoint.port)",
                "apns.error": "\(error.debugDescription)",
                "apns.retry-in-ms": "\(delay / 1_000_000)",
            ]
        )
        for pending in failed { pending.finish(.failure(error)) }
    }

    /// A connection is up; `freeStreams` is its initial capacity.
    func connectSucceeded(_ connection: HTTP2Connection, freeStreams: Int) {
        let (reconnected, owed) = state.withLock { locked in
            let reconnected = locked.machine.connectSucceeded(connection.index, freeStreams: freeStreams)
            return (reconnected, locked.share.connectionUp())
        }
        // The budget asked for a connection back while this one was being opened.
        if owed { retire(connection) }
        connectingEnded()
        // The attempt counts as a success in `apns_connection_attempts_total` when the
        // server's SETTINGS arrive (``HTTP2Connection``): it may still fail before them.
        statistics.metrics.openConnections.increment()
        statistics.update { statistics in
            statistics.connectionsOpened += 1
            if reconnected { statistics.reconnects += 1 }
        }
    }

    /// A connection answered a request: the endpoint works, so the backoff resets.
    func connectionProved() {
        state.withLock { $0.machine.connectionProved() }
        conditions.endAll()
    }

    /// A connection sent requests but closed before any response (with `error`): back off
    /// as after a failed connect (without failing the queue); requests that fail while
    /// backing off name `error` as the last attempt's failure.
    func sessionFailedWithoutResponse(_ error: APNsTransportError) {
        let now = MonotonicTime.now()
        let jitter = jitter()
        state.withLock { $0.machine.sessionFailedWithoutResponse(error, now: now, jitter: jitter) }
    }

    /// A connection stopped taking requests (GOAWAY, closing) or closed.
    func connectionUnavailable(_ connection: HTTP2Connection, closed: Bool) {
        let wasOpen = state.withLock { locked in
            if closed { locked.retireDeadlines.removeValue(forKey: connection.index) }
            return locked.machine.connectionUnavailable(connection.index, closed: closed)
        }
        if wasOpen { statistics.metrics.openConnections.decrement() }
        // Its place in the budget is given back when the thread asks to connect again
        // (or exits): after the socket is closed, not before.
    }

    /// A request of this pool finished while it may have been queued (cancelled): the
    /// next scan takes it out of the queue.
    func queuedRequestFinished() {
        state.withLock { $0.machine.queuedRequestFinished() }
    }

    /// Fails queued requests whose deadline has passed; at most one scan per 10 ms. While
    /// the pool waits for a place in the budget with no connection, asks (every 100 ms)
    /// for an idle pool's connection (one that was busy when it was refused may be idle
    /// now) and, after ``PoolBudgetShare/starvedBeforeSharing``, for a busy one's: every credential with
    /// requests to send gets a connection, in turns when there are more such credentials
    /// than the budget has connections. A pool whose last attempt was refused for good
    /// (``refusedForGood``) asks for none: it waits for a free place.
    func expireQueued(now: UInt64) {
        let metrics = statistics.metrics
        var waitingChange = 0
        let (expired, reclaim, evenIfBusy, blocked, unconnected) = state.withLock { locked -> ([PendingRequest], Bool, Bool, Bool, String?) in
            let expired = locked.machine.expireQueued(now: now)
            // The scan also took out requests finished while queued (cancelled).
            if metrics.isEnabled { waitingChange = locked.waitingChange() }
            let unconnected = expired.isEmpty ? nil : locked.machine.noConnectionReason(at: now)
            let blocked = locked.machine.budgetBlocked && locked.share.holdsNone
            let (ask, evenIfBusy) = locked.share.waitsForAPlace(now: now, waiting: blocked && locked.machine.queuedCount > 0)
            // A credential whose last attempt was refused for good (its certificate
            // rejected in the handshake) takes a free place only: making another tenant
            // give its connection back would cost that tenant a reconnect at every
            // attempt of one that is bound to fail again.
            let refused = locked.machine.refusedForGood
            return (expired, ask && !refused, evenIfBusy && !refused, blocked, unconnected)
        }
        let why = blocked
            ? budget.map { "its credential had no connection: it waited for a place in the transport's connection budget (maxConnections \($0.limit))" }
            : unconnected
        publishWaiting(waitingChange)
        for pending in expired { pending.expire(waitingFor: why) }
        if reclaim, let budget { budget.reclaimIdle(for: self, now: now, evenIfBusy: evenIfBusy) }
    }

    /// Called by a connection about to block in poll(2) with `freeStreams` free streams;
    /// see ``HTTP2PoolStateMachine/prepareToSleep(_:freeStreams:)``.
    func prepareToSleep(_ connection: HTTP2Connection, freeStreams: Int) -> (hasWork: Bool, queueNonEmpty: Bool) {
        state.withLock { $0.machine.prepareToSleep(connection.index, freeStreams: freeStreams) }
    }

    /// Whether requests wait in the queue for a stream.
    var hasQueuedRequests: Bool {
        state.withLock { $0.machine.hasQueuedRequests }
    }

    /// The shutdown deadline, if shutdown has begun.
    var shutdownDeadline: UInt64? {
        state.withLock { $0.machine.shuttingDown ? $0.machine.shutdownDeadline : nil }
    }

    /// A connection has exited (it was let go: shutdown, or a slot no longer needed).
    func threadExited(_ connection: HTTP2Connection) {
        releaseBudget(connection)
        let waiters: [CheckedContinuation<Void, Never>] = state.withLock { locked in
            guard locked.machine.threadExited(connection.index) else { return [] }
            defer { locked.shutdownWaiters.removeAll() }
            return locked.shutdownWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    // MARK: Shutdown

    /// Closes this pool alone while the transport goes on (idle, or its credential's
    /// connections closed): as ``shutdown(gracePeriod:reason:redirectQueued:)``, but what is queued (never
    /// sent), and requests that reach it afterwards (looked up just before), go to
    /// ``redirect`` (the credential's next pool) instead of failing: the transport is
    /// not shutting down, so a key rotation mid-batch costs no notification.
    func close(gracePeriod: Duration) async {
        state.withLock { $0.closedAlone = true }
        await shutdown(
            gracePeriod: gracePeriod,
            reason: "the connections of \(credential) were closed (idle, or closeConnections(for:)) before the request was sent",
            redirectQueued: redirect != nil
        )
    }

    /// Fails what is queued (or, with `redirectQueued`, hands it to ``redirect``), lets
    /// in-flight requests finish until `gracePeriod` has passed, closes every connection
    /// with GOAWAY, and returns when all connections exited.
    func shutdown(
        gracePeriod: Duration,
        reason: String = "the transport shut down before the request was sent",
        redirectQueued: Bool = false
    ) async {
        let deadline = MonotonicTime.deadline(after: gracePeriod)
        let metrics = statistics.metrics
        var waitingChange = 0
        let (queued, connections): ([PendingRequest], [HTTP2Connection]) = state.withLock { locked in
            let (fail, signal) = locked.machine.shutdown(deadline: deadline)
            // Nothing waits any more: the pool's share of the gauge goes.
            if metrics.isEnabled { waitingChange = locked.waitingChange() }
            return (fail, signal.map { locked.connections[$0] })
        }
        publishWaiting(waitingChange)
        for pending in queued {
            if redirectQueued, let redirect {
                redirect(pending)
            } else {
                pending.finish(.failure(.shutdown(reason)))
            }
        }
        for connection in connections { connection.wake() }
        // A connection still connecting carries nothing: its attempt is given up rather
        // than waited for (up to the connect timeout, past any grace period).
        let all = state.withLock { Array($0.connections) }
        for connection in all where connection.abandonConnectAttempt() {
            threadExited(connection)
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { locked -> Bool in
                if locked.machine.runningThreads == 0 { return true }
                locked.shutdownWaiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
        // Break the pool ↔ connection reference cycle now that every connection has exited.
        state.withLock { $0.connections.removeAll() }
        QueueDeadlineWatch.shared.unwatch(self)
        budget?.remove(self)
    }
}
