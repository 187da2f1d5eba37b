#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A `pthread_mutex_t` with a stable address: the one wrapper the package has for it.
///
/// ThreadSanitizer intercepts `pthread_mutex_*`, so what this lock guards stays visible to
/// it (``TSanVisibleMutex`` is built on it for that reason). The transport uses it where a
/// lock is taken and given back in separate statements, or shared with a condition
/// variable (`pthread_cond_timedwait` needs ``handle``); `Synchronization.Mutex` suits the rest.
package final class POSIXMutex: @unchecked Sendable {
    /// The mutex, for `pthread_cond_*` calls made while holding it.
    package let handle: UnsafeMutablePointer<pthread_mutex_t>

    /// An unlocked mutex.
    package init() {
        handle = .allocate(capacity: 1)
        handle.initialize(to: pthread_mutex_t())
        pthread_mutex_init(handle, nil)
    }

    deinit {
        pthread_mutex_destroy(handle)
        handle.deallocate()
    }

    /// Waits for the mutex and takes it.
    package func lock() { pthread_mutex_lock(handle) }

    /// Takes the mutex if it is free.
    /// - Returns: Whether it was taken.
    package func tryLock() -> Bool { pthread_mutex_trylock(handle) == 0 }

    /// Gives the mutex back.
    package func unlock() { pthread_mutex_unlock(handle) }

    /// Runs `body` holding the mutex.
    package func withLock<Result, E: Error>(_ body: () throws(E) -> Result) throws(E) -> Result {
        lock()
        defer { unlock() }
        return try body()
    }
}
