#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Nanoseconds on the monotonic clock (`CLOCK_MONOTONIC`): deadlines, PING timers and
/// backoff, and a call's deadline across its retries, read with one vDSO call and
/// compared as integers.
package enum MonotonicTime {
    /// Now, in nanoseconds since an arbitrary start.
    @inlinable @inline(__always)
    package static func now() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
    }

    /// `duration` in nanoseconds, clamped to `0...UInt64.max / 2`.
    @inlinable
    package static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        if seconds < 0 { return 0 }
        if seconds > 4_000_000_000 { return UInt64.max / 2 }
        return UInt64(seconds) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
    }

    /// `now + duration`, saturating.
    @inlinable
    package static func deadline(after duration: Duration, from now: UInt64 = MonotonicTime.now()) -> UInt64 {
        let (sum, overflow) = now.addingReportingOverflow(nanoseconds(duration))
        return overflow ? UInt64.max : sum
    }
}
