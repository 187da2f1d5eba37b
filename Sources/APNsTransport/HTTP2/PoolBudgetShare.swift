/// One pool's side of the transport's connection budget (``SharedConnectionBudget``): which
/// of its connections hold a place, what it owes back, and when it gives a place to a
/// pool that has none. A pure value with the clock as an input (``MonotonicTime``
/// nanoseconds): ``HTTP2ConnectionPool`` keeps it under its lock and performs what it
/// decides.
///
/// The sharing rules, for a budget that is spent while another pool has no connection:
/// - a pool holding more than its guaranteed one place gives one back, busy or not;
/// - a pool that has queued and sent nothing for ``idleBeforeGivingBack`` gives its place back;
/// - a pool that has waited ``starvedBeforeSharing`` with none takes a place from a busy
///   pool that has held it for ``heldBeforeSharing`` (turns, when there are more pools
///   with work than places);
/// - a place asked back while none of the pool's connections is up yet (all being
///   opened) is owed: the next one up retires at once, unless a place goes back first
///   (a connection that failed to open).
struct PoolBudgetShare: Sendable, Equatable {
    /// How long a pool must have queued nothing before it gives a connection to a pool
    /// that has none: long enough that what it sent last has usually been answered; a
    /// connection given back still drains.
    static let idleBeforeGivingBack: UInt64 = 250_000_000
    /// How long a pool keeps a connection before it must share it with a pool that has
    /// waited ``starvedBeforeSharing`` with none, busy or not.
    static let heldBeforeSharing: UInt64 = 1_000_000_000
    /// How long a pool waits with no connection before it takes one from a busy pool.
    static let starvedBeforeSharing: UInt64 = 1_000_000_000
    /// The least time between two asks for another pool's idle connection while this
    /// pool waits for a place with none.
    static let reclaimAskInterval: UInt64 = 100_000_000

    /// The connections holding a place (granted, not yet released), by ID.
    private(set) var holders: Set<Int> = []
    /// Places asked back while no connection was up: the next ones up retire at once.
    private(set) var owedRetirements = 0
    /// When a request was last queued or taken by a connection to be sent.
    private(set) var lastUsed: UInt64 = 0
    /// When the budget last granted this pool a place.
    private(set) var lastGranted: UInt64 = 0
    /// When the pool, waiting for a place with none, last asked for another's.
    private var lastReclaimAsk: UInt64 = 0
    /// Since when the pool has waited for a place with none, if it does.
    private var starvedSince: UInt64?
    /// When the pool last waited for a place with none.
    private var lastStarved: UInt64 = 0

    /// A request was queued, or taken to be sent, at `now`.
    mutating func used(at now: UInt64) {
        lastUsed = now
    }

    /// The budget granted connection `id` a place at `now`.
    mutating func granted(_ id: Int, at now: UInt64) {
        holders.insert(id)
        lastGranted = now
        starvedSince = nil
    }

    /// Connection `id` is not connected any more: whether it held a place, now to give
    /// back to the budget. A place given back pays a place owed, if any: the pool that
    /// needed it gets this one, so the next connection up keeps its own.
    mutating func released(_ id: Int) -> Bool {
        guard holders.remove(id) != nil else { return false }
        if owedRetirements > 0 { owedRetirements -= 1 }
        return true
    }

    /// Whether the pool holds no place.
    var holdsNone: Bool { holders.isEmpty }

    /// Another pool needs a place while none of this pool's connections is up to retire:
    /// whether one being opened owes it (it retires once up). `false` when every place
    /// held is owed already.
    mutating func oweRetirement() -> Bool {
        guard holders.count > owedRetirements else { return false }
        owedRetirements += 1
        return true
    }

    /// A connection is up: whether it must retire at once to pay a place owed.
    mutating func connectionUp() -> Bool {
        guard owedRetirements > 0 else { return false }
        owedRetirements -= 1
        return true
    }

    /// Whether the pool gives a connection back, at `now`, to a pool that has none, with
    /// `queued` requests of its own waiting (see the rules above); `evenIfBusy` when the
    /// other has waited ``starvedBeforeSharing``.
    func givesBack(now: UInt64, queued: Int, evenIfBusy: Bool) -> Bool {
        let idle = queued == 0 && now &- lastUsed >= Self.idleBeforeGivingBack
        let heldLongEnough = now &- lastGranted >= Self.heldBeforeSharing
        // Above its guaranteed one, a place goes back busy or not.
        return idle || holders.count > 1 || (evenIfBusy && heldLongEnough)
    }

    /// What the pool does at `now` about waiting for a place: `waiting` when the budget
    /// refused it one, it holds none and requests are queued. It asks for another pool's
    /// idle connection at most every ``reclaimAskInterval`` (`ask`), and for a busy one's
    /// too (`evenIfBusy`) once it has waited ``starvedBeforeSharing``.
    ///
    /// The wait counts from when it began until the pool is granted a place: a pause
    /// shorter than ``starvedBeforeSharing`` with nothing queued (its requests timed out
    /// waiting, the next one is on its way) does not restart it. Else a pool whose
    /// requests time out within a second, one after another, would never have waited long
    /// enough for a busy holder to share.
    mutating func waitsForAPlace(now: UInt64, waiting: Bool) -> (ask: Bool, evenIfBusy: Bool) {
        guard waiting else {
            if starvedSince != nil, now &- lastStarved >= Self.starvedBeforeSharing { starvedSince = nil }
            return (false, false)
        }
        lastStarved = now
        guard now &- lastReclaimAsk >= Self.reclaimAskInterval else { return (false, false) }
        lastReclaimAsk = now
        let since = starvedSince ?? now
        starvedSince = since
        return (true, now &- since >= Self.starvedBeforeSharing)
    }
}
