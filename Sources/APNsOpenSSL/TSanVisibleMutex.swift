#if SWIFT_APNS_TSAN_LOCKS
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A lock ThreadSanitizer can see, used instead of `Synchronization.Mutex` only in the
/// builds of `scripts/sanitize.sh thread` (compiled with `-D SWIFT_APNS_TSAN_LOCKS`).
///
/// On Linux, `Synchronization.Mutex` locks with `futex` system calls inside the
/// uninstrumented `libswiftSynchronization`, so ThreadSanitizer never sees the lock and
/// reports every access under `withLock` from two threads as a race (a two-thread
/// counter under `Mutex.withLock` is enough to show it). A suppression cannot tell those
/// apart from real races, so instead this lock, built on `pthread_mutex_t` (which
/// ThreadSanitizer intercepts), stands in for `Mutex` in every module of the package
/// through the `Mutex` type aliases next to this file, and races in our code stay visible.
/// It lives in APNsOpenSSL, the lowest module that locks; APNsCore re-exports it by name.
package final class TSanVisibleMutex<Value: ~Copyable>: @unchecked Sendable {
    private var value: Value
    private let lock = POSIXMutex()

    /// A lock guarding `initialValue`.
    package init(_ initialValue: consuming sending Value) {
        value = initialValue
    }

    /// Runs `body` with exclusive access to the value.
    package func withLock<Result: ~Copyable, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    /// Runs `body` with exclusive access to the value if the lock is free; `nil` otherwise.
    package func withLockIfAvailable<Result: ~Copyable, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result? {
        guard lock.tryLock() else { return nil }
        defer { lock.unlock() }
        return try body(&value)
    }
}

/// In ThreadSanitizer builds, `Mutex` in this module is ``TSanVisibleMutex``.
typealias Mutex = TSanVisibleMutex
#endif
