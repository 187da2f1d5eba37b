import Synchronization

/// The calls of one ``APNsClient`` waiting out a retry's backoff, so that
/// ``APNsClient/shutdown()`` can end them at once (each with what its last attempt ended
/// in, as a cancelled wait does) and return only once none waits, instead of returning
/// while they sleep, to have them wake later to a transport that is gone.
final class RetryWaits: Sendable {
    private struct State {
        var isShutdown = false
        var nextID = 0
        /// The waits under way, by ID: each resumes with `false` when the client shuts down.
        var waiters: [Int: CheckedContinuation<Bool, Never>] = [:]
        /// Waits under way, registered or about to be.
        var waiting = 0
        /// Shutdowns waiting for `waiting` to reach zero.
        var drained: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    /// Waits `delay` with `sleep`. Returns `true` when the delay passed, `false` when the
    /// client shut down first (or had already); throws when the task was cancelled.
    func wait(_ delay: Duration, sleep: @escaping @Sendable (Duration) async throws -> Void) async throws -> Bool {
        let started = state.withLock { state -> Bool in
            guard !state.isShutdown else { return false }
            state.waiting += 1
            return true
        }
        guard started else { return false }
        defer { left() }
        return try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await sleep(delay)
                return true
            }
            group.addTask { await self.shutdownSignal() }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { return true }
            try Task.checkCancellation()
            return first
        }
    }

    /// Returns `false` once the client shuts down, or as soon as the task is cancelled
    /// (the sleep beside it has then ended first, or is ending).
    private func shutdownSignal() async -> Bool {
        let id = state.withLock { state -> Int in
            defer { state.nextID += 1 }
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.isShutdown || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume(returning: false) }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume(returning: false)
        }
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
        let waiters = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.isShutdown = true
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: false) }
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
