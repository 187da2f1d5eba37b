import Synchronization

/// Logs a condition once while it lasts: the first report of a condition (a refused key,
/// a failing endpoint) is a warning, the repeats are debug messages, and the condition
/// warns again only after it ended, and not within ``quietPeriod`` of its last warning.
/// So a batch to a million devices with a bad key warns once, not a million times, and a
/// condition that comes and goes with every other notification (a key refused for one
/// tenant's requests and not another's) warns once a minute, not once per notification.
///
/// The common path (nothing wrong) costs one atomic load: ``end(_:)`` and ``endAll()``
/// take the lock only while some condition is active.
package final class ConditionLog: Sendable {
    private struct State {
        var active: Set<String> = []
        /// When each condition last warned, by ``now``.
        var lastWarned: [String: ContinuousClock.Instant] = [:]
    }
    private let state = Mutex(State())
    private let anyActive = Atomic<Bool>(false)
    /// How long after a warning a condition that ended and came back stays at debug.
    package let quietPeriod: Duration
    /// How many warning times are kept before those past ``quietPeriod`` are forgotten.
    static let pruneThreshold = 64
    /// How many warning times are kept now (for tests).
    package var rememberedWarnings: Int { state.withLock { $0.lastWarned.count } }
    private let now: @Sendable () -> ContinuousClock.Instant

    /// A log whose conditions warn again, once ended, no sooner than `quietPeriod` after
    /// their last warning; `now` is the clock (tests move their own).
    package init(quietPeriod: Duration = .seconds(60), now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.quietPeriod = quietPeriod
        self.now = now
    }

    /// Whether `condition` begins now and warns, marking it active; `false` while it
    /// lasts, and when it comes back within ``quietPeriod`` of its last warning.
    package func begins(_ condition: String) -> Bool {
        state.withLock { state in
            let inserted = state.active.insert(condition).inserted
            anyActive.store(true, ordering: .releasing)
            guard inserted else { return false }
            let time = now()
            if let last = state.lastWarned[condition], time - last < quietPeriod { return false }
            if state.lastWarned.count >= Self.pruneThreshold {
                // A warning older than the quiet period no longer holds anything back:
                // forgetting it changes nothing, and keeps the table as small as the
                // conditions that warned in the last `quietPeriod`.
                let quietPeriod = quietPeriod
                state.lastWarned = state.lastWarned.filter { time - $0.value < quietPeriod }
            }
            state.lastWarned[condition] = time
            return true
        }
    }

    /// `condition` is over: its next report warns again.
    package func end(_ condition: String) {
        guard anyActive.load(ordering: .acquiring) else { return }
        state.withLock { state in
            state.active.remove(condition)
            anyActive.store(!state.active.isEmpty, ordering: .releasing)
        }
    }

    /// Every condition is over (the endpoint answered, say).
    package func endAll() {
        guard anyActive.load(ordering: .acquiring) else { return }
        state.withLock { state in
            state.active.removeAll()
            anyActive.store(false, ordering: .releasing)
        }
    }
}
