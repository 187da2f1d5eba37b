import Foundation
import Synchronization

/// Expires queued requests while no connection thread of their pool can: a connection
/// thread blocks while it connects (TCP, TLS, a proxy: up to the connect timeout), and a
/// pool whose only connection is connecting has nobody else to notice that a waiting
/// request's deadline passed.
///
/// One thread for the process, started on first use. It runs only while some pool has a
/// connection being opened (``watch(_:)`` … ``unwatch(_:)``), and then calls
/// ``HTTP2ConnectionPool/expireQueued(now:)`` on each watched pool every 10 ms; otherwise
/// it sleeps on a condition. So a request's deadline is honoured to within about 10 ms
/// wherever it waits.
final class QueueDeadlineWatch: Sendable {
    static let shared = QueueDeadlineWatch()

    private struct State {
        var pools: [ObjectIdentifier: HTTP2ConnectionPool] = [:]
        var started = false
    }

    private let state = Mutex(State())
    /// Wakes the thread when the first pool is watched (NSCondition is thread-safe).
    private nonisolated(unsafe) let condition = NSCondition()

    private init() {}

    /// Starts watching `pool` (idempotent).
    func watch(_ pool: HTTP2ConnectionPool) {
        let start = state.withLock { state -> Bool in
            state.pools[ObjectIdentifier(pool)] = pool
            defer { state.started = true }
            return !state.started
        }
        if start {
            let thread = Thread { [self] in self.run() }
            thread.name = "apns-deadlines"
            thread.start()
        }
        condition.lock()
        condition.signal()
        condition.unlock()
    }

    /// Stops watching `pool` (idempotent).
    func unwatch(_ pool: HTTP2ConnectionPool) {
        state.withLock { _ = $0.pools.removeValue(forKey: ObjectIdentifier(pool)) }
    }

    /// Whether `pool` is watched (for tests).
    func isWatching(_ pool: HTTP2ConnectionPool) -> Bool {
        state.withLock { $0.pools[ObjectIdentifier(pool)] != nil }
    }

    private func run() {
        while true {
            let pools = state.withLock { Array($0.pools.values) }
            if pools.isEmpty {
                condition.lock()
                // Re-checked under the condition's lock: a watch() between the snapshot and
                // here signals after this wait begins, or is seen by this check.
                if state.withLock({ $0.pools.isEmpty }) {
                    _ = condition.wait(until: Date(timeIntervalSinceNow: 1))
                }
                condition.unlock()
                continue
            }
            let now = MonotonicTime.now()
            for pool in pools { pool.expireQueued(now: now) }
            usleep(10_000)
        }
    }
}
