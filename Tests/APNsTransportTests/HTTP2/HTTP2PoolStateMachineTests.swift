import Testing
@testable import APNsTransport

/// A request as the pool state machine sees it, with no continuation and no transport.
private final class FakeRequest: PoolRequest {
    let name: String
    let isBatched: Bool
    private var finished = false
    private let fixedDeadline: UInt64
    /// How many times the machine read ``isFinished`` or ``deadline`` (what a scan of
    /// the queue costs per request).
    private(set) var reads = 0

    var isFinished: Bool {
        get { reads += 1; return finished }
        set { finished = newValue }
    }

    var deadline: UInt64 {
        reads += 1
        return fixedDeadline
    }

    init(_ name: String, batched: Bool = false, deadline: UInt64 = .max) {
        self.name = name
        self.isBatched = batched
        self.fixedDeadline = deadline
    }
}

private typealias Machine = HTTP2PoolStateMachine<FakeRequest>

private func machine(
    connections: Int = 1,
    maxQueued: Int = 100,
    backoffBaseMS: Int64 = 500,
    staggerMS: UInt64 = 0,
    unstaggered: Int = 1
) -> Machine {
    Machine(
        settings: .init(
            connectionCount: connections,
            maxQueuedRequests: maxQueued,
            backoff: ReconnectBackoff(base: .milliseconds(backoffBaseMS), maximum: .seconds(60)),
            endpointDescription: "api.push.apple.com:443",
            connectStagger: staggerMS * 1_000_000,
            unstaggeredConnections: unstaggered
        )
    )
}

private let ms: UInt64 = 1_000_000

/// A pool whose connection 0 is up with `freeStreams` streams and has taken the one
/// request that opened it.
private func connectedPool(freeStreams: Int, maxQueued: Int = 100) -> Machine {
    var pool = machine(maxQueued: maxQueued)
    _ = pool.enqueue(FakeRequest("opener"), now: 0)
    _ = pool.connectPermission(for: 0, now: 0, jitter: 0)
    _ = pool.connectSucceeded(0, freeStreams: freeStreams)
    var taken: [FakeRequest] = []
    pool.take(for: 0, max: freeStreams, into: &taken)
    return pool
}

/// The pool's decisions, event by event, with the clock and the jitter as inputs: no
/// thread, no socket, no sleep. The scenarios are the ones issue 16 lists (lazy opening,
/// stream limits rising and falling, GOAWAY, refused streams, reconnect backoff, queue
/// limits, shutdown); the numbers they check come from the rules, not from a run.
@Suite("HTTP/2 pool state machine: events in, actions out")
struct HTTP2PoolStateMachineTests {
    private func queued(_ action: Machine.EnqueueAction) -> Machine.Wakeups? {
        if case .queued(let wakeups) = action { return wakeups }
        return nil
    }

    private func failure(_ action: Machine.EnqueueAction) -> APNsTransportError? {
        if case .fail(let error) = action { return error }
        return nil
    }

    @Test("connections open lazily, one more only when the queue outgrows what is up or opening, up to the limit")
    func lazyOpening() {
        var pool = machine(connections: 3)
        // The first request starts connection 0.
        #expect(queued(pool.enqueue(FakeRequest("a"), now: 0)) == Machine.Wakeups(start: 0))
        // A second one: connection 0 is opening and will offer a stream; 2 > 0 + 1 opens 1.
        #expect(queued(pool.enqueue(FakeRequest("b"), now: 0)) == Machine.Wakeups(start: 1))
        #expect(pool.connectPermission(for: 0, now: 0, jitter: 0) == .connect)
        #expect(pool.connectSucceeded(0, freeStreams: 1) == false)
        var taken: [FakeRequest] = []
        pool.take(for: 0, max: 1, into: &taken)
        #expect(taken.map(\.name) == ["a"])
        // Connection 0 raised its limit (SETTINGS) and has 99 free: a new request needs no
        // new connection.
        pool.publishFreeStreams(0, freeStreams: 99)
        let wakeups = queued(pool.enqueue(FakeRequest("c"), now: 0))
        #expect(wakeups?.start == nil)
        #expect(pool.connectionSlots == 2)
        // Never more than the limit: with no free stream anywhere, slot 2 opens, then none.
        pool.publishFreeStreams(0, freeStreams: 0)
        for index in 0..<10 { _ = pool.enqueue(FakeRequest("x\(index)"), now: 0) }
        #expect(pool.connectionSlots == 3)
    }

    @Test("a sleeping connection with free streams is woken for new work; an awake one is not")
    func wakesSleepers() {
        var pool = connectedPool(freeStreams: 10)
        var taken: [FakeRequest] = []
        // Awake (it just took work): queueing needs no signal.
        #expect(queued(pool.enqueue(FakeRequest("b"), now: 0))?.isEmpty == true)
        pool.take(for: 0, max: 9, into: &taken)
        // About to sleep with free streams and an empty queue: marked sleeping.
        #expect(pool.prepareToSleep(0, freeStreams: 8) == (hasWork: false, queueNonEmpty: false))
        #expect(queued(pool.enqueue(FakeRequest("c"), now: 0)) == Machine.Wakeups(wake: 0))
    }

    @Test("the stream limit falls to 0: a queued request still wakes a sleeper, so its deadline is watched")
    func streamLimitZeroStillWakes() {
        var pool = connectedPool(freeStreams: 1)
        // SETTINGS_MAX_CONCURRENT_STREAMS 0: nothing free, and the connection sleeps.
        #expect(pool.prepareToSleep(0, freeStreams: 0) == (hasWork: false, queueNonEmpty: false))
        let late = FakeRequest("late", deadline: 3_000 * ms)
        #expect(queued(pool.enqueue(late, now: 0)) == Machine.Wakeups(wake: 0))
        // The woken connection polls every 10 ms; its scan expires the request on time.
        #expect(pool.expireQueued(now: 2_990 * ms).isEmpty)
        #expect(pool.expireQueued(now: 3_000 * ms).map(\.name) == ["late"])
        #expect(pool.queuedCount == 0)
    }

    @Test("a refused or GOAWAY-unprocessed request goes back first; a GOAWAY'd connection takes nothing")
    func requeueGoesFirstAndGoAwayStopsTaking() {
        var pool = machine(connections: 2)
        _ = pool.enqueue(FakeRequest("a"), now: 0)
        _ = pool.connectPermission(for: 0, now: 0, jitter: 0)
        _ = pool.connectSucceeded(0, freeStreams: 5)
        _ = pool.enqueue(FakeRequest("b"), now: 0)
        // GOAWAY on connection 0: it offers no stream from now on.
        pool.connectionUnavailable(0, closed: false)
        #expect(pool.freeStreams(0) == 0)
        let refused = FakeRequest("refused")
        let wakeups = pool.requeue(refused)
        // Three queued, nothing free, connection 0 not opening: the second slot starts.
        #expect(wakeups?.start == 1)
        _ = pool.connectPermission(for: 1, now: 0, jitter: 0)
        _ = pool.connectSucceeded(1, freeStreams: 10)
        var taken: [FakeRequest] = []
        pool.take(for: 1, max: 10, into: &taken)
        #expect(taken.map(\.name) == ["refused", "a", "b"])
    }

    @Test("reconnect backoff: exponential with equal jitter, one probe at a time; requests that cannot wait for the next attempt fail fast, the rest wait")
    func reconnectBackoff() {
        var pool = machine(backoffBaseMS: 500)
        let first = FakeRequest("a")
        _ = pool.enqueue(first, now: 0)
        #expect(pool.connectPermission(for: 0, now: 0, jitter: 0) == .connect)
        // Failure 1 with jitter 1: 500 ms (the bound); the queue fails (no connection up).
        let (failed, delay) = pool.connectFailed(0, error: .connectionFailed("refused"), now: 0, jitter: 1)
        #expect(failed.map(\.name) == ["a"])
        #expect(delay == 500 * ms)
        // While backing off with nothing up, a single send whose deadline (450 ms) comes
        // before the next attempt (500 ms) fails at once and names the cause…
        let error = failure(pool.enqueue(FakeRequest("b", deadline: 450 * ms), now: 100 * ms))
        #expect(error?.code == .connectionFailed)
        #expect(error?.mayHaveReachedAPNs == false)
        #expect(error?.detail?.contains("the last attempt failed (refused)") == true, "\(String(describing: error))")
        #expect(error?.detail?.contains("next attempt in 400 ms") == true, "\(String(describing: error))")
        // …one whose deadline is at the attempt fails too (it could only time out)…
        #expect(failure(pool.enqueue(FakeRequest("c", deadline: 500 * ms), now: 100 * ms))?.code == .connectionFailed)
        // …and so does a batch's request: a batch sent during an outage would otherwise
        // drain one window per request timeout…
        #expect(failure(pool.enqueue(FakeRequest("short batch", batched: true, deadline: 450 * ms), now: 100 * ms))?.code == .connectionFailed)
        // …while requests with time to wait, a batch's or a single send, wait for it: a
        // retry of a refused connection is not spent while no connection can be tried.
        #expect(queued(pool.enqueue(FakeRequest("batch", batched: true), now: 100 * ms)) != nil)
        #expect(queued(pool.enqueue(FakeRequest("patient", deadline: 501 * ms), now: 100 * ms)) != nil)
        #expect(pool.hasQueuedRequests)
        #expect(pool.connectPermission(for: 0, now: 100 * ms, jitter: 0) == .wait(nanoseconds: 400 * ms))
        // The probe at 500 ms pushes the next attempt back by the backoff for 1 failure
        // (jitter 0: 250 ms), so a second thread would wait for the probe's result.
        #expect(pool.connectPermission(for: 0, now: 500 * ms, jitter: 0) == .connect)
        #expect(pool.nextConnectAttempt == 750 * ms)
        // Failure 2 with jitter 0: 2 × 500 ms × 1/2 = 500 ms.
        #expect(pool.connectFailed(0, error: .tlsFailure("bad certificate"), now: 600 * ms, jitter: 0).delay == 500 * ms)
        // A session that proves the endpoint (an answer) resets the backoff.
        pool.connectionProved()
        #expect(pool.consecutiveFailures == 0)
        #expect(pool.nextConnectAttempt == 0)
    }

    @Test("a session that sent requests and closed before any answer backs off, naming its error")
    func sessionWithoutAnswerBacksOff() {
        var pool = machine(backoffBaseMS: 1_000)
        pool.sessionFailedWithoutResponse(.protocolError("GOAWAY PROTOCOL_ERROR"), now: 0, jitter: 1)
        #expect(pool.nextConnectAttempt == 1_000 * ms)
        let error = failure(pool.enqueue(FakeRequest("a", deadline: 500 * ms), now: 0))
        #expect(error?.detail?.contains("GOAWAY PROTOCOL_ERROR") == true, "\(String(describing: error))")
    }

    @Test("maxQueuedRequests counts only single sends that no free stream (or unopened connection) will take")
    func queueLimit() {
        var pool = machine(connections: 2, maxQueued: 2)
        // Two connections not open yet: two requests are covered, two more may wait.
        for name in ["a", "b", "c", "d"] {
            #expect(queued(pool.enqueue(FakeRequest(name), now: 0)) != nil, "\(name)")
        }
        #expect(pool.waitingRequests == 2)
        let full = failure(pool.enqueue(FakeRequest("e"), now: 0))
        #expect(full?.code == .queueFull)
        #expect(full?.mayHaveReachedAPNs == false)
        // A batch's requests are bounded by its window, not by maxQueuedRequests.
        #expect(queued(pool.enqueue(FakeRequest("batch", batched: true), now: 0)) != nil)
        // Free streams published by a connection make room again.
        _ = pool.connectPermission(for: 0, now: 0, jitter: 0)
        _ = pool.connectSucceeded(0, freeStreams: 10)
        #expect(pool.waitingRequests == 0)
        #expect(queued(pool.enqueue(FakeRequest("f"), now: 0)) != nil)
    }

    @Test("no demand: a disconnected connection goes idle, and new work wakes it instead of a new slot")
    func idleConnections() {
        var pool = machine(connections: 2)
        _ = pool.enqueue(FakeRequest("a"), now: 0)
        var taken: [FakeRequest] = []
        _ = pool.connectPermission(for: 0, now: 0, jitter: 0)
        _ = pool.connectSucceeded(0, freeStreams: 1)
        pool.take(for: 0, max: 1, into: &taken)
        pool.connectionUnavailable(0, closed: true)
        #expect(pool.connectPermission(for: 0, now: 0, jitter: 0) == .idle)
        #expect(queued(pool.enqueue(FakeRequest("b"), now: 0)) == Machine.Wakeups(wakeIdle: 0))
    }

    @Test("shutdown: queued requests fail, every connection is signalled, new ones fail, the last thread ends it")
    func shutdown() {
        var pool = machine(connections: 2)
        _ = pool.enqueue(FakeRequest("a"), now: 0)
        _ = pool.enqueue(FakeRequest("b"), now: 0)
        #expect(pool.runningThreads == 2)
        let (fail, signal) = pool.shutdown(deadline: 10_000 * ms)
        #expect(fail.map(\.name) == ["a", "b"])
        #expect(signal == [0, 1])
        #expect(pool.shutdownDeadline == 10_000 * ms)
        #expect(failure(pool.enqueue(FakeRequest("c"), now: 0))?.code == .shutdown)
        #expect(pool.requeue(FakeRequest("d")) == nil)
        #expect(pool.connectPermission(for: 0, now: 0, jitter: 0) == .exit)
        #expect(pool.threadExited(0) == false)
        #expect(pool.threadExited(1) == true)
        // A second shutdown keeps the first deadline.
        _ = pool.shutdown(deadline: 99)
        #expect(pool.shutdownDeadline == 10_000 * ms)
    }

    @Test("expired or finished requests leave the queue on a scan, at most one scan per 10 ms")
    func expiry() {
        var pool = machine()
        let soon = FakeRequest("soon", deadline: 50 * ms)
        let done = FakeRequest("done")
        done.isFinished = true
        let later = FakeRequest("later", deadline: 1_000 * ms)
        for request in [soon, done, later] { _ = pool.enqueue(request, now: 0) }
        #expect(pool.expireQueued(now: 60 * ms).map(\.name) == ["soon"])
        #expect(pool.queuedCount == 1)
        // Within 10 ms of the last scan: no scan.
        #expect(pool.expireQueued(now: 1_005 * ms).map(\.name) == ["later"])
        let next = FakeRequest("next", deadline: 1_006 * ms)
        _ = pool.enqueue(next, now: 1_005 * ms)
        #expect(pool.expireQueued(now: 1_010 * ms).isEmpty)
        #expect(pool.expireQueued(now: 1_015 * ms).map(\.name) == ["next"])
    }

    @Test("a long queue is not walked every 10 ms before its earliest deadline")
    func queueNotWalkedBeforeItsEarliestDeadline() {
        var pool = machine(maxQueued: 10_000)
        let requests = (0..<1_000).map { FakeRequest("r\($0)", deadline: 5_000 * ms + UInt64($0) * ms) }
        for request in requests { _ = pool.enqueue(request, now: 0) }
        let readsWhenQueued = requests.reduce(0) { $0 + $1.reads }
        // The connection's timer asks every 10 ms for five seconds.
        for tick in 1..<500 {
            #expect(pool.expireQueued(now: UInt64(tick) * 10 * ms).isEmpty)
        }
        #expect(requests.reduce(0) { $0 + $1.reads } == readsWhenQueued)
        #expect(pool.queuedCount == 1_000)
        // The first deadline comes: one walk, which expires exactly those due.
        #expect(pool.expireQueued(now: 5_009 * ms).map(\.name) == (0...9).map { "r\($0)" })
        #expect(pool.queuedCount == 990)
        // The walk found the next deadline (5,010 ms): nothing is walked before it.
        let readsAfterWalk = requests.reduce(0) { $0 + $1.reads }
        #expect(pool.expireQueued(now: 5_009 * ms + 10 * ms - 1).isEmpty)
        #expect(requests.reduce(0) { $0 + $1.reads } == readsAfterWalk)
        #expect(pool.expireQueued(now: 5_020 * ms).count == 11)
    }

    @Test("a request re-queued with an earlier deadline than the queue's expires on time")
    func requeuedEarlierDeadlineExpires() {
        var pool = machine()
        _ = pool.enqueue(FakeRequest("late", deadline: 5_000 * ms), now: 0)
        #expect(pool.expireQueued(now: 20 * ms).isEmpty)
        // Refused by the server and back at the head of the queue, due sooner.
        #expect(pool.requeue(FakeRequest("refused", deadline: 100 * ms)) != nil)
        #expect(pool.expireQueued(now: 90 * ms).isEmpty)
        #expect(pool.expireQueued(now: 110 * ms).map(\.name) == ["refused"])
        #expect(pool.queuedCount == 1)
    }

    @Test("a queued request cancelled before any deadline leaves the queue at the next scan")
    func cancelledQueuedRequestLeavesTheQueue() {
        // Up, its one stream taken by the request that opened it.
        var pool = connectedPool(freeStreams: 1, maxQueued: 2)
        let first = FakeRequest("first", deadline: 60_000 * ms)
        let second = FakeRequest("second", deadline: 60_000 * ms)
        _ = pool.enqueue(first, now: 0)
        _ = pool.enqueue(second, now: 0)
        #expect(pool.waitingRequests == 2)
        #expect(failure(pool.enqueue(FakeRequest("third"), now: 0))?.code == .queueFull)
        // The second's task is cancelled: the transport tells the machine.
        second.isFinished = true
        pool.queuedRequestFinished()
        #expect(pool.expireQueued(now: 20 * ms).isEmpty)
        #expect(pool.queuedCount == 1)
        #expect(pool.waitingRequests == 1)
        #expect(queued(pool.enqueue(FakeRequest("third"), now: 20 * ms)) != nil)
    }
    @Test("after a refusal sending again cannot fix (a proxy's 407), a single send fails at once, permanent, instead of waiting for an attempt that would meet it again")
    func permanentRefusalFailsAtOnce() {
        var pool = machine(backoffBaseMS: 500)
        _ = pool.enqueue(FakeRequest("a"), now: 0)
        #expect(pool.connectPermission(for: 0, now: 0, jitter: 0) == .connect)
        _ = pool.connectFailed(0, error: APNsTransportError.connectionFailed("the proxy answered 407").permanent, now: 0, jitter: 1)
        // A deadline long after the next attempt: it would wait, were the refusal not permanent.
        let error = failure(pool.enqueue(FakeRequest("b", deadline: 30_000 * ms), now: 100 * ms))
        #expect(error?.code == .connectionFailed)
        #expect(error?.isPermanent == true, "\(String(describing: error))")
        #expect(error?.mayHaveReachedAPNs == false)
        #expect(error?.detail?.contains("407") == true, "\(String(describing: error))")
        // A batch's request too: the next attempt would only meet the refusal again.
        #expect(failure(pool.enqueue(FakeRequest("batch", batched: true), now: 100 * ms))?.isPermanent == true)
    }

    @Test("a request that times out in the queue while no connection is up says why: the last attempt's failure, or the attempt under way")
    func queueTimeoutNamesTheConnectFailure() {
        var pool = machine(backoffBaseMS: 500)
        #expect(pool.noConnectionReason(at: 0) == nil)
        _ = pool.enqueue(FakeRequest("a", batched: true), now: 0)
        #expect(pool.connectPermission(for: 0, now: 0, jitter: 0) == .connect)
        // A request timeout shorter than the connect timeout ends before the first
        // attempt fails: the attempt under way is the cause.
        #expect(pool.noConnectionReason(at: 250 * ms)?.contains("yet: the connection attempt started 250 ms earlier had not finished") == true,
                "\(String(describing: pool.noConnectionReason(at: 250 * ms)))")
        _ = pool.connectFailed(0, error: .tlsFailure("the TLS handshake did not finish within 1.0 seconds"), now: 0, jitter: 1)
        #expect(pool.noConnectionReason(at: 0)?.contains("the last connection attempt failed (the TLS handshake did not finish within 1.0 seconds)") == true,
                "\(String(describing: pool.noConnectionReason(at: 0)))")
        // Up again: nothing to explain.
        _ = pool.enqueue(FakeRequest("b", batched: true), now: 600 * ms)
        #expect(pool.connectPermission(for: 0, now: 600 * ms, jitter: 0) == .connect)
        _ = pool.connectSucceeded(0, freeStreams: 10)
        #expect(pool.noConnectionReason(at: 700 * ms) == nil)
    }
}

/// The pool's side of the transport's connection budget and of retiring a connection.
@Suite("HTTP/2 pool state machine: budget and retirement")
struct HTTP2PoolBudgetTests {
    @Test func aRefusedConnectionIdlesAndNoOtherOpensUntilTheBudgetHasRoom() {
        var pool = machine(connections: 2)
        guard case .queued(let first) = pool.enqueue(FakeRequest("a"), now: 0) else {
            Issue.record("not queued")
            return
        }
        #expect(first.start == 0)
        #expect(pool.connectPermission(for: 0, now: 0, jitter: 0) == .connect)
        pool.budgetRefused(0)
        #expect(pool.budgetBlocked)
        #expect(!pool.anyConnecting)
        // More demand opens nothing while the budget is spent.
        guard case .queued(let second) = pool.enqueue(FakeRequest("b"), now: 0) else {
            Issue.record("not queued")
            return
        }
        #expect(second.start == nil && second.wakeIdle == nil)
        // Room: the idle connection is woken (not a new one started).
        let wakeups = pool.budgetAvailable()
        #expect(wakeups?.wakeIdle == 0)
        #expect(wakeups?.start == nil)
        #expect(!pool.budgetBlocked)
    }

    /// Soak finding (2026-11-28): a tenant's pool held requests for minutes with no
    /// connection while the budget had room. Its second connection had been refused a
    /// place; its queue then emptied (a batch cancelled) and its first connection, going
    /// idle, withdrew the pool from the budget, but the pool still counted itself blocked:
    /// later requests opened nothing and waited for an offer that never came.
    @Test func aConnectionGoingIdleForNoDemandUnblocksThePoolItWithdrewFromTheBudget() {
        var pool = machine(connections: 2)
        _ = pool.enqueue(FakeRequest("a"), now: 0)
        #expect(pool.connectPermission(for: 0, now: 0, jitter: 0) == .connect)
        _ = pool.connectSucceeded(0, freeStreams: 1)
        var taken: [FakeRequest] = []
        pool.take(for: 0, max: 1, into: &taken)
        // More than connection 0 can take: a second connection, which the budget refuses.
        guard case .queued(let more) = pool.enqueue(FakeRequest("b"), now: 0) else {
            Issue.record("not queued")
            return
        }
        #expect(more.start == 1)
        #expect(pool.connectPermission(for: 1, now: 0, jitter: 0) == .connect)
        pool.budgetRefused(1)
        #expect(pool.budgetBlocked)
        // The queue empties (connection 0 takes what waits), then connection 0 closes and
        // finds nothing to do: it goes idle, and the pool withdraws from the budget.
        pool.take(for: 0, max: 1, into: &taken)
        _ = pool.connectionUnavailable(0, closed: true)
        #expect(pool.connectPermission(for: 0, now: 1, jitter: 0) == .idle)
        #expect(!pool.budgetBlocked)
        // New work wakes a connection, which asks the budget again.
        guard case .queued(let later) = pool.enqueue(FakeRequest("c"), now: 2) else {
            Issue.record("not queued")
            return
        }
        #expect(later.wakeIdle != nil || later.start != nil)
    }

    @Test func roomIsDeclinedWhenNothingWaits() {
        var pool = machine()
        _ = pool.enqueue(FakeRequest("a"), now: 0)
        _ = pool.connectPermission(for: 0, now: 0, jitter: 0)
        pool.budgetRefused(0)
        var expired: [FakeRequest] = []
        // The request times out meanwhile: the queue is empty when room comes.
        pool.take(for: 0, max: 1, into: &expired)
        #expect(pool.budgetAvailable() == nil)
    }

    @Test func aRetiredConnectionTakesNothingAndIsNotRetiredTwice() {
        var pool = connectedPool(freeStreams: 10)
        #expect(pool.retireCandidate == 0)
        let retired = pool.retire(0)
        #expect(retired)
        #expect(pool.isRetiring(0))
        #expect(pool.freeStreams(0) == 0)
        let again = pool.retire(0)
        #expect(!again)
        #expect(pool.retireCandidate == nil)
        // Closed: it may connect again, as a fresh connection.
        let closed = pool.connectionUnavailable(0, closed: true)
        #expect(closed)
        #expect(!pool.isRetiring(0))
        #expect(pool.readyCount == 0)
    }

    @Test("with a stagger, a second connection opens only that long after the first; a pool with none up never waits")
    func connectionsOpenStaggered() {
        var pool = machine(connections: 3, staggerMS: 250)
        for name in ["a", "b", "c"] { _ = pool.enqueue(FakeRequest(name), now: 0) }
        #expect(pool.connectionSlots == 3)
        // The first opens at once.
        #expect(pool.connectPermission(for: 0, now: 0, jitter: 0) == .connect)
        // The second waits out the stagger from the first attempt's start...
        #expect(pool.connectPermission(for: 1, now: 100 * ms, jitter: 0) == .wait(nanoseconds: 150 * ms))
        #expect(pool.connectPermission(for: 1, now: 250 * ms, jitter: 0) == .connect)
        // ...and the third from the second's.
        #expect(pool.connectPermission(for: 2, now: 300 * ms, jitter: 0) == .wait(nanoseconds: 200 * ms))
        #expect(pool.connectPermission(for: 2, now: 500 * ms, jitter: 0) == .connect)
    }

    @Test("a pool opens its first unstaggered connections together, then one per stagger")
    func firstConnectionsOpenTogether() {
        var pool = machine(connections: 6, staggerMS: 250, unstaggered: 4)
        for index in 0..<6 { _ = pool.enqueue(FakeRequest("r\(index)"), now: 0) }
        #expect(pool.connectionSlots == 6)
        // Four open at the same moment: fewer than four others are up or opening.
        for id in 0..<4 {
            #expect(pool.connectPermission(for: id, now: 0, jitter: 0) == .connect)
        }
        // The fifth finds four opening: it waits a stagger after the last start...
        #expect(pool.connectPermission(for: 4, now: 10 * ms, jitter: 0) == .wait(nanoseconds: 240 * ms))
        #expect(pool.connectPermission(for: 4, now: 250 * ms, jitter: 0) == .connect)
        // ...and the sixth a stagger after the fifth.
        #expect(pool.connectPermission(for: 5, now: 260 * ms, jitter: 0) == .wait(nanoseconds: 240 * ms))
        #expect(pool.connectPermission(for: 5, now: 500 * ms, jitter: 0) == .connect)
    }

    @Test("once fewer than the unstaggered count are up, a replacement opens at once")
    func replacementBelowTheBurstDoesNotWait() {
        var pool = machine(connections: 3, staggerMS: 250, unstaggered: 2)
        for index in 0..<3 { _ = pool.enqueue(FakeRequest("r\(index)"), now: 0) }
        #expect(pool.connectPermission(for: 0, now: 0, jitter: 0) == .connect)
        #expect(pool.connectPermission(for: 1, now: 0, jitter: 0) == .connect)
        #expect(pool.connectPermission(for: 2, now: 0, jitter: 0) == .wait(nanoseconds: 250 * ms))
        _ = pool.connectSucceeded(0, freeStreams: 1)
        _ = pool.connectSucceeded(1, freeStreams: 1)
        // Connection 1 closes: one is up, fewer than two, so slot 2 opens at once.
        _ = pool.connectionUnavailable(1, closed: true)
        #expect(pool.connectPermission(for: 2, now: 5 * ms, jitter: 0) == .connect)
    }

    @Test("the stagger never delays a pool whose connections are all down")
    func staggerDoesNotDelayTheOnlyConnection() {
        var pool = machine(connections: 2, staggerMS: 250)
        _ = pool.enqueue(FakeRequest("a"), now: 0)
        _ = pool.enqueue(FakeRequest("b"), now: 0)
        #expect(pool.connectPermission(for: 0, now: 0, jitter: 0) == .connect)
        // Connection 0 closed before slot 1 asked: nothing is up or opening, so slot 1
        // opens at once (only the backoff after failures governs a pool with none up).
        _ = pool.connectSucceeded(0, freeStreams: 1)
        _ = pool.connectionUnavailable(0, closed: true)
        #expect(pool.connectPermission(for: 1, now: 10 * ms, jitter: 0) == .connect)
    }

    @Test("while backing off after a refused handshake, a single send fails as a TLS failure, never sent")
    func backoffAfterATLSFailureKeepsItsCause() {
        var pool = machine(backoffBaseMS: 500)
        _ = pool.enqueue(FakeRequest("a"), now: 0)
        #expect(pool.connectPermission(for: 0, now: 0, jitter: 0) == .connect)
        _ = pool.connectFailed(0, error: .tlsFailure("the server requires a client certificate"), now: 0, jitter: 1)
        var error: APNsTransportError?
        if case .fail(let failure) = pool.enqueue(FakeRequest("b", deadline: 200 * ms), now: 100 * ms) { error = failure }
        #expect(error?.code == .tlsFailure)
        #expect(error?.mayHaveReachedAPNs == false)
        #expect(error?.detail?.contains("the server requires a client certificate") == true, "\(String(describing: error))")
    }

}
