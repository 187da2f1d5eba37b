#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import APNsCore

/// The mock transport's lock: a `pthread_mutex_t`, which ThreadSanitizer intercepts, in
/// every build. `Synchronization.Mutex` locks with `futex` calls inside an uninstrumented
/// library on Linux, so a user's `swift test --sanitize=thread` would report every access
/// under it from two tasks as a race; this is test code, where the lock's speed does not
/// matter.
final class MockLock<Value>: @unchecked Sendable {
    private var value: Value
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    /// A lock guarding `initialValue`.
    init(_ initialValue: Value) {
        value = initialValue
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

/// The first of a mock handler's answer, the request's timeout and the caller's
/// cancellation: whichever comes first is the result, the others are dropped.
final class AnswerRace: Sendable {
    private let state = MockLock<(result: Result<MockTransport.Response, APNsTransportError>?, waiter: CheckedContinuation<Result<MockTransport.Response, APNsTransportError>, Never>?)>((nil, nil))

    /// Offers `result`; only the first offer counts.
    func finish(_ result: Result<MockTransport.Response, APNsTransportError>) {
        let waiter = state.withLock { state -> CheckedContinuation<Result<MockTransport.Response, APNsTransportError>, Never>? in
            guard state.result == nil else { return nil }
            state.result = result
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: result)
    }

    /// The first result offered, once there is one.
    func result() async -> Result<MockTransport.Response, APNsTransportError> {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Result<MockTransport.Response, APNsTransportError>? in
                if let result = state.result { return result }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
