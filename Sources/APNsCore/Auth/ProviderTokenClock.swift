#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Where ``ProviderTokenCache`` reads the time: the `iat` of new tokens and the age of the
/// current one.
///
/// Production code uses ``system``. Tests inject a clock they move by hand, so refresh
/// rules are checked without waiting (or sleeping) for 50 minutes.
///
/// ```swift
/// let clock = ProviderTokenClock { Date(timeIntervalSince1970: 1_437_179_036) }
/// ```
public struct ProviderTokenClock: Sendable {
    private let read: @Sendable () -> Date
    /// Time that never steps (the system's monotonic clock unless a test gives its own):
    /// how long ago a token was signed when the wall clock was set back behind its `iat`.
    let elapsed: @Sendable () -> Duration

    /// A clock that calls `now` each time it is read.
    ///
    /// - Parameter now: The current wall-clock time. Called with the cache's lock held, so
    ///   it must be quick and must not call back into the cache.
    public init(_ now: @escaping @Sendable () -> Date) {
        self.read = now
        self.elapsed = Self.monotonic
    }

    /// A clock with its own monotonic time, for tests that step the wall clock.
    init(now: @escaping @Sendable () -> Date, elapsed: @escaping @Sendable () -> Duration) {
        self.read = now
        self.elapsed = elapsed
    }

    private static let origin = ContinuousClock.now
    private static let monotonic: @Sendable () -> Duration = { ContinuousClock.now - origin }

    /// The system's wall clock: APNs compares `iat` with its own UTC clock, so keep the
    /// host's clock synchronised (NTP).
    ///
    /// On Linux it reads `CLOCK_REALTIME_COARSE`, which the kernel updates every tick (1 to
    /// 10 ms) and which costs a fifth of a precise read: the cache reads the clock once per
    /// request, and its decisions are in whole seconds and minutes. Elsewhere, `Date()`.
    public static let system = ProviderTokenClock { systemNow() }

    /// The wall clock, to the kernel's tick on Linux (see ``system``).
    static func systemNow() -> Date {
        #if os(Linux)
        var time = timespec()
        if clock_gettime(CLOCK_REALTIME_COARSE, &time) == 0 {
            return Date(timeIntervalSince1970: Double(time.tv_sec) + Double(time.tv_nsec) / 1_000_000_000)
        }
        #endif
        return Date()
    }

    /// The current time.
    public func now() -> Date { read() }
}
