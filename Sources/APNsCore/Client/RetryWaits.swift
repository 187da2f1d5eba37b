import Synchronization

/// The calls of one ``APNsClient`` waiting out a retry's backoff, so that
/// ``APNsClient/shutdown()`` can end them at once (each with what its last attempt ended
/// in, as a cancelled wait does) and return only once none waits, instead of returning
/// while they sleep, to have them wake later to a transport that is gone. A wait ends
/// the same way when the transport alone begins shutting down (a `ServiceGroup` stopping
/// it): the attempt after it could only fail with `shutdown`.
final class RetryWaits: Sendable {
    private struct State {
        /// Waits under way, registered or about to be.
        var waiting = 0
        /// Shutdowns waiting for `waiting` to reach zero.
        var drained: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())
    /// Fired when the client shuts down.
    private let clientShutdown = ShutdownSignal()

    /// How a wait ended.
    enum Ending: Equatable {
        /// The delay passed: try again.
        case waited
        /// The client shut down first (or had already).
        case clientShutdown
        /// The transport began shutting down: an attempt after the wait could only fail.
        case transportShutdown
    }

    /// Waits `delay` with `sleep`, or until the client shuts down or `transportShutdown`
    /// returns, whichever comes first; throws when the task was cancelled.
    func wait(
        _ delay: Duration,
        sleep: @escaping @Sendable (Duration) async throws -> Void,
        transportShutdown: @escaping @Sendable () async -> Void
    ) async throws -> Ending {
        let started = state.withLock { state -> Bool in
            guard !clientShutdown.isFired else { return false }
            state.waiting += 1
            return true
        }
        guard started else { return .clientShutdown }
        defer { left() }
        return try await withThrowingTaskGroup(of: Ending.self) { group in
            group.addTask {
                try await sleep(delay)
                return .waited
            }
            group.addTask {
                await self.clientShutdown.wait()
                return .clientShutdown
            }
            group.addTask {
                await transportShutdown()
                return .transportShutdown
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { return .waited }
            try Task.checkCancellation()
            return first
        }
    }

    /// Whether the client has begun shutting down.
    var isClientShutDown: Bool { clientShutdown.isFired }

    /// Returns once the client has shut down (at once if it has), or when the task is cancelled.
    func waitForClientShutdown() async {
        await clientShutdown.wait()
    }

    private func left() {
        let drained = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.waiting -= 1
            guard state.waiting == 0 else { return [] }
            defer { state.drained.removeAll() }
            return state.drained
        }
        for continuation in drained { continuation.resume() }
    }

    /// Ends every wait under way (and refuses later ones), and returns once none is left.
    func shutdown() async {
        // Fired under the lock that counts the waits, so that a wait either counts
        // itself before it (and is woken) or sees it fired and does not start.
        state.withLock { _ in clientShutdown.fire() }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.waiting == 0 { return true }
                state.drained.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }
}
