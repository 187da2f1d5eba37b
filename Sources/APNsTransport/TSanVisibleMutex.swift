import APNsCore

#if SWIFT_APNS_TSAN_LOCKS
/// In ThreadSanitizer builds (`scripts/sanitize.sh thread`), `Mutex` in this module is
/// APNsCore's `TSanVisibleMutex`, a lock ThreadSanitizer can see; see that type for why.
typealias Mutex = TSanVisibleMutex

/// In ThreadSanitizer builds, the lock of state many threads take at once is
/// `TSanVisibleMutex` too.
typealias SharedMutex = TSanVisibleMutex
#else
/// The lock of state that the sending tasks and every I/O thread take (the pools):
/// APNsCore's `YieldingMutex`, which does not spin for long when the holder may be
/// waiting for the same core.
typealias SharedMutex = YieldingMutex
#endif
