import APNsCore
import Synchronization

/// The I/O shell of a ``ConnectionBudget`` shared by every pool of one ``HTTP2Transport``:
/// holds it under a lock and performs its decisions on the pools (asks a pool to give a
/// connection back, tells a waiting pool to try again), always after releasing its lock,
/// so that its lock and a pool's are never held together.
final class SharedConnectionBudget: Sendable {
    private struct State {
        var budget: ConnectionBudget<ObjectIdentifier>
        /// The pools that asked, by identity (removed when a pool closes: no cycle outlives it).
        var pools: [ObjectIdentifier: HTTP2ConnectionPool] = [:]
    }

    private let state: Mutex<State>

    /// A budget of `limit` connections for one transport.
    init(limit: Int) {
        state = Mutex(State(budget: ConnectionBudget(limit: limit)))
    }

    /// The most connections in all.
    var limit: Int { state.withLock { $0.budget.limit } }

    /// Connections held in all.
    var held: Int { state.withLock { $0.budget.held } }

    /// The most connections held at once so far.
    var peakHeld: Int { state.withLock { $0.budget.peakHeld } }

    /// `pool` wants to open a connection: whether it may. When it may not, it waits and
    /// its ``HTTP2ConnectionPool/budgetAvailable()`` is called once a connection frees up;
    /// the pool furthest above its fair share may be asked to give one back first.
    func request(_ pool: HTTP2ConnectionPool) -> Bool {
        let id = ObjectIdentifier(pool)
        let (decision, victim): (ConnectionBudget<ObjectIdentifier>.Decision, HTTP2ConnectionPool?) = state.withLock { state in
            state.pools[id] = pool
            let decision = state.budget.request(id, now: MonotonicTime.now())
            if case .waitAndReclaim(let victim) = decision { return (decision, state.pools[victim]) }
            return (decision, nil)
        }
        if decision == .grant { return true }
        // A pool whose last attempt was refused for good (its certificate rejected) asks
        // nobody to give a connection back: that would cost another tenant a reconnect
        // for an attempt bound to fail again. It takes a place that frees up.
        let mayReclaim = !pool.refusedForGood
        if let victim, !mayReclaim || !victim.giveBackConnection() {
            // Not asked, or it had nothing to give back after all (its connections
            // closed meanwhile).
            state.withLock { $0.budget.cancelReclaim(from: ObjectIdentifier(victim)) }
        }
        if victim == nil, mayReclaim { reclaimIdle(for: pool) }
        // A place offered to `pool` and refused (another pool holding fewer began to wait
        // since) goes on to the waiting pools, as a released one does.
        wakeNextWaiter()
        return false
    }

    /// `pool` waits holding no connection while the budget is spent: asks the holders
    /// (those keeping the most first, then the longest-granted) to give back a connection
    /// (``HTTP2ConnectionPool/giveBackIfIdle(now:evenIfBusy:)``: one above its guaranteed
    /// one, or one it has no use for); the first that does drains it, and its place goes
    /// to the waiting pools. Called when `pool` is refused, and again every so often while
    /// it waits (a holder busy then may be idle later). With `evenIfBusy` (the pool has
    /// waited a while), a holder that has had its connection long enough gives it back
    /// even if busy, when none is idle. Whether a holder gave one back.
    @discardableResult
    func reclaimIdle(for pool: HTTP2ConnectionPool, now: UInt64 = MonotonicTime.now(), evenIfBusy: Bool = false) -> Bool {
        let candidates: [HTTP2ConnectionPool] = state.withLock { state in
            state.budget.reclaimCandidates(for: ObjectIdentifier(pool), now: now).compactMap { state.pools[$0] }
        }
        for busyToo in evenIfBusy ? [false, true] : [false] {
            for candidate in candidates where candidate.giveBackIfIdle(now: now, evenIfBusy: busyToo) {
                state.withLock { $0.budget.noteReclaim(from: ObjectIdentifier(candidate), now: now) }
                return true
            }
        }
        return false
    }

    /// `pool` closed a connection the budget had granted (or failed to open it): the
    /// freed place goes to the waiting pool holding the fewest connections.
    func release(_ pool: HTTP2ConnectionPool) {
        let offered: HTTP2ConnectionPool? = state.withLock { state in
            state.budget.release(ObjectIdentifier(pool)).flatMap { state.pools[$0] }
        }
        if let offered { deliver(offered) }
        wakeNextWaiter()
    }

    /// Tells `pool` a place is held for it; withdraws it if it needs none any more.
    private func deliver(_ pool: HTTP2ConnectionPool) {
        if !pool.budgetAvailable() {
            state.withLock { $0.budget.withdraw(ObjectIdentifier(pool)) }
        }
    }

    /// Offers every free place to a waiting pool (one place per pool at a time);
    /// bounded, as each offer marks a pool or ends.
    private func wakeNextWaiter() {
        while true {
            let next: HTTP2ConnectionPool? = state.withLock { state in
                state.budget.offer().flatMap { state.pools[$0] }
            }
            guard let next else { return }
            deliver(next)
        }
    }

    /// `pool` no longer waits (its queue emptied): a place offered to it goes on to the
    /// waiting pools.
    func withdraw(_ pool: HTTP2ConnectionPool) {
        state.withLock { $0.budget.withdraw(ObjectIdentifier(pool)) }
        wakeNextWaiter()
    }

    /// `pool` closed for good: forget it (its connections have all been released).
    func remove(_ pool: HTTP2ConnectionPool) {
        state.withLock { state in
            state.budget.remove(ObjectIdentifier(pool))
            state.pools.removeValue(forKey: ObjectIdentifier(pool))
        }
        wakeNextWaiter()
    }
}
