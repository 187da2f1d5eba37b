import Synchronization

/// A one-way signal for "shutdown has begun": tasks wait for it (or for their own
/// cancellation), and ``fire()`` wakes every one of them, and any that waits later at once.
///
/// ``APNsClient`` waits out a retry's backoff against its own signal and its transport's
/// (``PushTransport/waitUntilShutdown()``), so that a send does not sleep on towards a
/// transport that is gone.
package final class ShutdownSignal: Sendable {
    private struct State {
        var isFired = false
        var nextID = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Mutex(State())

    /// A signal not yet fired.
    package init() {}

    /// Whether ``fire()`` has been called.
    package var isFired: Bool { state.withLock { $0.isFired } }

    /// Wakes every waiter, now and later. Calling it again has no further effect.
    package func fire() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.isFired = true
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once the signal has fired (at once if it has), or as soon as the calling
    /// task is cancelled.
    package func wait() async {
        let id = state.withLock { state -> Int in
            defer { state.nextID += 1 }
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.isFired || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume()
        }
    }
}
