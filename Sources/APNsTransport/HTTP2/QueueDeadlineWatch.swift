import APNsCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// Expires queued requests while no connection of their pool can: a pool whose only
/// connection is being opened (on a ``ConnectWorkers`` thread: TCP, TLS, a proxy, up to
/// the connect timeout), or whose connections all wait for a place in the transport's
/// connection budget, has nobody else to notice that a waiting request's deadline passed.
///
/// It is a timer on one of the shared ``EventLoopGroup``'s loops (no thread of its own):
/// while some pool is watched (``watch(_:)`` … ``unwatch(_:)``) it calls
/// ``HTTP2ConnectionPool/expireQueued(now:)`` on each watched pool every 10 ms; otherwise
/// it is not scheduled. So a request's deadline is honoured to within about 10 ms wherever
/// it waits.
final class QueueDeadlineWatch: EventLoopHandler, Sendable {
    static let shared = QueueDeadlineWatch()

    private struct State {
        var pools: [ObjectIdentifier: HTTP2ConnectionPool] = [:]
        /// The timer is set (or about to be): a new watch need not set it.
        var scheduled = false
        var attached = false
    }

    private let state = Mutex(State())
    private let loop: EventLoop?
    private let token: EventLoop.Token

    /// How often watched pools are scanned.
    private static let interval: UInt64 = 10_000_000

    init(group: EventLoopGroup = .shared) {
        loop = group.next()
        token = loop?.makeToken() ?? 0
    }

    /// Starts watching `pool` (idempotent).
    func watch(_ pool: HTTP2ConnectionPool) {
        let (schedule, attach) = state.withLock { state -> (Bool, Bool) in
            state.pools[ObjectIdentifier(pool)] = pool
            defer {
                state.scheduled = true
                state.attached = true
            }
            return (!state.scheduled, !state.attached)
        }
        guard schedule, let loop else { return }
        loop.execute { [self] in
            if attach { loop.attach(self, as: token) }
            loop.setDeadline(token, at: MonotonicTime.now() + Self.interval)
        }
    }

    /// Stops watching `pool` (idempotent).
    func unwatch(_ pool: HTTP2ConnectionPool) {
        state.withLock { _ = $0.pools.removeValue(forKey: ObjectIdentifier(pool)) }
    }

    /// Whether `pool` is watched (for tests).
    func isWatching(_ pool: HTTP2ConnectionPool) -> Bool {
        state.withLock { $0.pools[ObjectIdentifier(pool)] != nil }
    }

    /// The timer: scans the watched pools, and sets itself again while any is watched.
    func handleEvent(readable: Bool, writable: Bool) {
        let pools = state.withLock { state -> [HTTP2ConnectionPool] in
            if state.pools.isEmpty { state.scheduled = false }
            return Array(state.pools.values)
        }
        guard !pools.isEmpty else { return }
        let now = MonotonicTime.now()
        for pool in pools { pool.expireQueued(now: now) }
        loop?.setDeadline(token, at: MonotonicTime.now() + Self.interval)
    }
}
