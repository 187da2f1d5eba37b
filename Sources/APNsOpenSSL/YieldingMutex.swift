import COpenSSL
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `Synchronization.Mutex` with a waiting strategy for cores shared by more threads than
/// they can run, for state that the sending tasks and every I/O thread take: the
/// transport's connection pools (`SharedMutex` in APNsTransport; ThreadSanitizer builds
/// use `TSanVisibleMutex` there instead).
///
/// It is `public` in a target that is no product (users cannot import it) because
/// callers in other modules inline and specialize a `public` `@inlinable` body; a
/// `package` one stays a generic call that looks up type metadata on every lock.
///
/// On Linux, `Mutex.withLock` on a taken lock spins for about a thousand `pause`
/// instructions before it sleeps in the kernel. That suits threads on cores of their own.
/// When the thread holding the lock has been preempted on the same core (a process pinned
/// to fewer cores than it has busy threads: `taskset`, a container's cpuset, a cgroup
/// quota), nothing the spinner does lets the holder run, and each contended lock costs
/// tens of microseconds: with four I/O loops on one core, sending from 4,000 tasks spent
/// 60 % of its CPU in that loop (43 µs per notification instead of 5; see
/// Benchmarks/README.md).
///
/// This lock takes the same `Mutex` with `withLockIfAvailable`: on a free lock that is
/// the same single compare-and-swap as `withLock`. On a taken one it retries a few times
/// with a processor pause (a holder on another core is usually done within that), then
/// gives its time slice to the holder with `sched_yield` between tries, and only after
/// that waits in `withLock` as before.
public struct YieldingMutex<Value: ~Copyable>: ~Copyable {
    @usableFromInline let base: Synchronization.Mutex<Value>

    /// A lock guarding `initialValue`.
    @inlinable public init(_ initialValue: consuming sending Value) {
        base = Synchronization.Mutex(initialValue)
    }

    /// Runs `body` with exclusive access to the value, waiting for the lock if another
    /// thread holds it.
    @inlinable public borrowing func withLock<Result, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        var tries = 0
        while true {
            if let result = try base.withLockIfAvailable(body) { return result }
            tries += 1
            if tries <= 5 {  // 1, 2, 4, 8, 16 pauses: 31 in all
                for _ in 0..<(1 << (tries - 1)) { capns_cpu_relax() }
            } else if tries <= 5 + 64 {  // then 64 yields
                sched_yield()
            } else {
                // Then wait in the kernel, as `Mutex` does: the lock is this caller's when
                // it returns, so no caller waits forever behind luckier ones.
                return try base.withLock(body)
            }
        }
    }

    /// Runs `body` with exclusive access to the value if the lock is free; `nil` otherwise.
    @inlinable public borrowing func withLockIfAvailable<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result? {
        try base.withLockIfAvailable(body)
    }
}

extension YieldingMutex: @unchecked Sendable where Value: ~Copyable {}
