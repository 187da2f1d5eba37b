import APNsOpenSSL

/// APNsOpenSSL's lock for state that many threads take at once, under the name the other
/// modules use through `import APNsCore`; see that type for why.
package typealias YieldingMutex = APNsOpenSSL.YieldingMutex

#if SWIFT_APNS_TSAN_LOCKS
/// In ThreadSanitizer builds (`scripts/sanitize.sh thread`), the pthread lock of
/// APNsOpenSSL (the lowest module that locks), under the name the other modules and the
/// tests use through `import APNsCore`; see that type for why.
package typealias TSanVisibleMutex = APNsOpenSSL.TSanVisibleMutex

/// In ThreadSanitizer builds, `Mutex` in this module is ``TSanVisibleMutex``.
typealias Mutex = TSanVisibleMutex
#endif
