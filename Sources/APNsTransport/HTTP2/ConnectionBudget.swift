/// How many connections a transport may hold in all, shared fairly between its pools
/// (one pool per authority and credential): a pure value, events in, decisions out, with
/// no lock, thread or clock. ``SharedConnectionBudget`` keeps it under a lock for a
/// transport and performs what it decides.
///
/// The rules, in the order they apply when a pool asks for one more connection:
/// 1. **Every pool that wants a connection is guaranteed one.** A pool with none gets one
///    while the budget has room; when the budget is spent, it waits, and the pool holding
///    the most connections above its fair share is asked to give one back (it drains a
///    connection: what is in flight finishes, then it closes).
/// 2. **Beyond the first, a pool gets at most its fair share while others wait:** the
///    fair share is `limit / pools that hold or want connections` (at least 1). A pool at
///    its share is refused while another pool holding fewer waits (one that no place is
///    held for yet); when none does it may
///    grow until the budget is spent (an idle budget serves the one busy tenant). So the
///    waiting pool holding the fewest, the one a free place is offered to (rule 3), is
///    always granted it: a place is never left free while pools wait.
/// 3. **A freed connection goes to the waiting pool holding the fewest**, the earliest
///    waiter first among equals: it is *offered* to that pool, and held for it until the
///    pool asks (a pool that was not offered it cannot take it meanwhile). Each free
///    place is offered to one waiting pool, so no waiter is forgotten.
///
/// 4. **A pool that holds none and waits while every holder has only its one** would wait
///    until some pool closes (its idle timeout: 15 minutes by default): instead, the shell
///    asks the holders in ``reclaimCandidates(for:)`` order (those keeping the most
///    first, then the longest-granted) to give back a connection, and the first that
///    holds more than one, or has nothing queued, does; after a
///    second of waiting, the first that has held its connection a second does even if
///    busy (what it carries finishes first). With more credentials sending than the
///    budget has connections, they take turns. A connection given back keeps its place
///    until it has drained; one still draining after ``slowReclaim`` (its requests are
///    not being answered: a dead path) no longer holds the others back, and the next
///    holder may be asked too.
///
/// So a tenant with a million queued notifications cannot take every connection, and
/// another tenant's single alert gets a connection of its own at once, or as soon as one
/// connection of the busiest tenant has drained, or of a tenant that has nothing to send.
struct ConnectionBudget<PoolID: Hashable> {
    /// What ``request(_:)`` decided.
    enum Decision: Equatable {
        /// Open the connection (the budget counts it until ``release(_:)``).
        case grant
        /// Do not open it now; the pool waits and is named by a later ``release(_:)``.
        case wait
        /// Do not open it now; ask `pool` to close one connection, whose release will go
        /// to the waiting pools.
        case waitAndReclaim(from: PoolID)
    }

    private struct Entry {
        var held = 0
        /// Connections this pool was asked to give back and has not closed yet.
        var reclaiming = 0
        /// When it began waiting (an order, not a time); `nil` when not waiting.
        var waitingSince: UInt64?
        /// A free place is held for this pool until it asks again.
        var offered = false
        /// When it was last granted a connection (an order, not a time).
        var lastGrant: UInt64 = 0
        /// When it was last asked to give a connection back (the caller's clock).
        var reclaimAskedAt: UInt64 = 0
    }

    /// How long a connection being given back may take to drain before it stops counting
    /// as the give-back under way for a pool that waits with none (rule 4): 1 second, as
    /// long as a starved pool waits before a busy holder must share.
    static var slowReclaim: UInt64 { 1_000_000_000 }

    /// The most connections in all.
    let limit: Int
    private var entries: [PoolID: Entry] = [:]
    private var order: UInt64 = 0
    /// Connections held in all.
    private(set) var held = 0
    /// The most connections ever held at once (never above ``limit``).
    private(set) var peakHeld = 0

    /// A budget of `limit` connections (at least 1).
    init(limit: Int) {
        self.limit = max(1, limit)
    }

    // MARK: Reading

    /// Connections `pool` holds.
    func held(by pool: PoolID) -> Int { entries[pool]?.held ?? 0 }

    /// Whether `pool` waits for a connection.
    func isWaiting(_ pool: PoolID) -> Bool { entries[pool]?.waitingSince != nil }

    /// Pools that hold or want connections.
    var activePools: Int { entries.values.count { $0.held > 0 || $0.waitingSince != nil } }

    /// The most connections a pool may hold while others wait: `limit / activePools`, at least 1.
    var fairShare: Int { max(1, limit / max(1, activePools)) }

    // MARK: Events

    /// `pool` wants one more connection, at `now` (the caller's clock, for ``slowReclaim``).
    mutating func request(_ pool: PoolID, now: UInt64 = 0) -> Decision {
        var entry = entries[pool] ?? Entry()
        // Another pool waiting with fewer connections, and no place held for it yet: the
        // pool a free place is to go to first (``nextWaiter``).
        let fewerWaiting = entries.contains {
            $0.key != pool && $0.value.waitingSince != nil && !$0.value.offered && $0.value.held < entry.held
        }
        // Count the asking pool as active for the share it is judged against.
        let active = activePools + ((entry.held > 0 || entry.waitingSince != nil) ? 0 : 1)
        let share = max(1, limit / max(1, active))
        // Places offered to other pools are theirs until they ask.
        let offeredToOthers = entries.count { $0.key != pool && $0.value.offered }
        let room = held + offeredToOthers < limit
        entry.offered = false
        let grant = room && (entry.held == 0 || !fewerWaiting || entry.held < share)
        if grant {
            order += 1
            entry.lastGrant = order
            entry.held += 1
            entry.waitingSince = nil
            held += 1
            peakHeld = max(peakHeld, held)
            entries[pool] = entry
            return .grant
        }
        if entry.waitingSince == nil {
            order += 1
            entry.waitingSince = order
        }
        entries[pool] = entry
        // Reclaim only for a pool below its share, from the pool furthest above it.
        guard !room, entry.held < share, let victim = victim(excluding: pool, share: share) else {
            return .wait
        }
        entries[victim]!.reclaiming += 1
        entries[victim]!.reclaimAskedAt = now
        return .waitAndReclaim(from: victim)
    }

    /// `pool` no longer wants a connection (its queue emptied, it shut down).
    mutating func withdraw(_ pool: PoolID) {
        guard var entry = entries[pool] else { return }
        entry.waitingSince = nil
        entry.offered = false
        store(entry, pool)
    }

    /// `pool` closed one of its connections (or failed to open it): the waiting pool the
    /// freed place is offered to (see ``offer()``), if any.
    mutating func release(_ pool: PoolID) -> PoolID? {
        if var entry = entries[pool], entry.held > 0 {
            entry.held -= 1
            held -= 1
            if entry.reclaiming > 0 { entry.reclaiming -= 1 }
            store(entry, pool)
        }
        return offer()
    }

    /// Offers a free place (one not held and not offered yet) to ``nextWaiter``, which
    /// should ask again now; `nil` when no place is free or nobody waits.
    mutating func offer() -> PoolID? {
        let offers = entries.values.count { $0.offered }
        guard held + offers < limit, let next = nextWaiter else { return nil }
        entries[next]!.offered = true
        return next
    }

    /// The waiting pool a free place goes to: the one holding the fewest connections,
    /// the earliest waiter among equals (pools already offered one excluded).
    var nextWaiter: PoolID? {
        var best: (id: PoolID, held: Int, since: UInt64)?
        for (id, entry) in entries where !entry.offered {
            guard let since = entry.waitingSince else { continue }
            if best == nil || (entry.held, since) < (best!.held, best!.since) { best = (id, entry.held, since) }
        }
        return best?.id
    }

    /// The pools to ask, in order, to give back a connection, for `pool`, which waits
    /// holding none while the budget is spent (rule 4); empty when `pool` is not in that
    /// state, or when as many connections are already being given back as such pools
    /// wait. Pools keeping more connections come first, then the longest-granted. A
    /// give-back asked ``slowReclaim`` or longer before `now` does not count as under way.
    func reclaimCandidates(for pool: PoolID, now: UInt64 = 0) -> [PoolID] {
        guard let entry = entries[pool], entry.waitingSince != nil, entry.held == 0 else { return [] }
        let offers = entries.values.count { $0.offered }
        guard held + offers >= limit else { return [] }
        let starved = entries.values.count { $0.waitingSince != nil && $0.held == 0 }
        let reclaiming = entries.values.reduce(0) { sum, entry in
            sum + (now &- entry.reclaimAskedAt < Self.slowReclaim ? entry.reclaiming : 0)
        }
        guard reclaiming < starved else { return [] }
        // The pools keeping the most first (one above its guaranteed connection gives one
        // back before a pool gives up its only one), the longest-granted among equals.
        return entries
            .filter { $0.key != pool && $0.value.held - $0.value.reclaiming >= 1 }
            .sorted {
                let (left, right) = ($0.value.held - $0.value.reclaiming, $1.value.held - $1.value.reclaiming)
                return left != right ? left > right : $0.value.lastGrant < $1.value.lastGrant
            }
            .map(\.key)
    }

    /// `pool` agreed to give a connection back (rule 4): its release will go to the
    /// waiting pools, and it is not asked again meanwhile.
    mutating func noteReclaim(from pool: PoolID, now: UInt64 = 0) {
        entries[pool]?.reclaiming += 1
        entries[pool]?.reclaimAskedAt = now
    }

    /// `pool` was asked to give a connection back (``Decision/waitAndReclaim(from:)``)
    /// but had none to give: the mark is cleared.
    mutating func cancelReclaim(from pool: PoolID) {
        guard var entry = entries[pool], entry.reclaiming > 0 else { return }
        entry.reclaiming -= 1
        store(entry, pool)
    }

    /// `pool` is gone: its connections are released (call ``release(_:)`` per connection
    /// first when they close one by one).
    mutating func remove(_ pool: PoolID) {
        if let entry = entries.removeValue(forKey: pool) { held -= entry.held }
    }

    // MARK: Private

    private mutating func store(_ entry: Entry, _ pool: PoolID) {
        if entry.held == 0, entry.waitingSince == nil, entry.reclaiming == 0, !entry.offered {
            entries.removeValue(forKey: pool)
        } else {
            entries[pool] = entry
        }
    }

    /// The pool with the most connections not already being reclaimed, if that is more
    /// than `share` (or more than one, so that every pool keeps its guaranteed one).
    private func victim(excluding pool: PoolID, share: Int) -> PoolID? {
        var best: (PoolID, Int)?
        for (id, entry) in entries where id != pool {
            let keeps = entry.held - entry.reclaiming
            if keeps > max(1, share), keeps > (best?.1 ?? 0) { best = (id, keeps) }
        }
        if best == nil {
            // Nobody is above the share: take from any pool holding more than one.
            for (id, entry) in entries where id != pool {
                let keeps = entry.held - entry.reclaiming
                if keeps > 1, keeps > (best?.1 ?? 0) { best = (id, keeps) }
            }
        }
        return best?.0
    }
}
