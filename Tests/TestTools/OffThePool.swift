import Foundation

/// Runs `body`, which blocks (waits for a child process, reads a pipe to its end), on a
/// thread of its own and returns its result: not on Swift's cooperative pool, which has
/// one thread per core (two on the machines that run this suite). A test that blocks a
/// pool thread for seconds, two at once (parametrized cases run in parallel), stalls
/// every other test of the run, and those with a bound on how long an outcome may take
/// turn red.
public func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}
