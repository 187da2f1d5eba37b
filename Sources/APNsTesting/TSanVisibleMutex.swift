#if SWIFT_APNS_TSAN_LOCKS
import APNsCore

/// In ThreadSanitizer builds (`scripts/sanitize.sh thread`), `Mutex` in this module is
/// APNsCore's `TSanVisibleMutex`, a lock ThreadSanitizer can see; see that type for why.
/// Without it, `MockTransport`'s state lock was invisible and every test sending through
/// the mock from two tasks got a false race report.
typealias Mutex = TSanVisibleMutex
#endif
