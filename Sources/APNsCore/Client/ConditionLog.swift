import Synchronization

/// Logs a condition once while it lasts: the first report of a condition (a refused key,
/// a failing endpoint) is a warning, the repeats are debug messages, and the condition
/// warns again only after it ended. So a batch to a million devices with a bad key warns
/// once, not a million times.
///
/// The common path (nothing wrong) costs one atomic load: ``end(_:)`` and ``endAll()``
/// take the lock only while some condition is active.
package final class ConditionLog: Sendable {
    private let active = Mutex<Set<String>>([])
    private let anyActive = Atomic<Bool>(false)

    package init() {}

    /// Whether `condition` begins now (warn), marking it active; `false` while it lasts.
    package func begins(_ condition: String) -> Bool {
        active.withLock { active in
            let inserted = active.insert(condition).inserted
            anyActive.store(true, ordering: .releasing)
            return inserted
        }
    }

    /// `condition` is over: its next report warns again.
    package func end(_ condition: String) {
        guard anyActive.load(ordering: .acquiring) else { return }
        active.withLock { active in
            active.remove(condition)
            anyActive.store(!active.isEmpty, ordering: .releasing)
        }
    }

    /// Every condition is over (the endpoint answered, say).
    package func endAll() {
        guard anyActive.load(ordering: .acquiring) else { return }
        active.withLock { active in
            active.removeAll()
            anyActive.store(false, ordering: .releasing)
        }
    }
}
