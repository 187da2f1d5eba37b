#if SWIFT_APNS_TSAN_LOCKS
import APNsCore

/// In ThreadSanitizer builds (`scripts/sanitize.sh thread`), the tests' `Mutex` is
/// APNsCore's `TSanVisibleMutex`, a lock ThreadSanitizer can see; see that type for why.
typealias Mutex = TSanVisibleMutex
#endif
