#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
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

    /// A clock that calls `now` each time it is read.
    ///
    /// - Parameter now: The current wall-clock time. Called with the cache's lock held, so
    ///   it must be quick and must not call back into the cache.
    public init(_ now: @escaping @Sendable () -> Date) {
        self.read = now
    }

    /// The system's wall clock (`Date()`): APNs compares `iat` with its own UTC clock, so
    /// keep the host's clock synchronised (NTP).
    public static let system = ProviderTokenClock { Date() }

    /// The current time.
    public func now() -> Date { read() }
}
