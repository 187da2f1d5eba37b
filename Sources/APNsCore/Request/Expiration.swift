#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The `apns-expiration` of a notification: until when APNs stores it for an offline device.
///
/// See [Sending notification requests to APNs](https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns).
public struct Expiration: Sendable, Hashable, CustomStringConvertible {
    private enum Storage: Sendable, Hashable {
        case none
        case seconds(Int64)
        /// A date that is no UNIX time APNs takes, with what is wrong with it.
        case invalid(String)
    }
    private let storage: Storage

    /// No `apns-expiration` header: APNs applies its own storage policy.
    public static let none = Expiration(storage: .none)

    /// `apns-expiration: 0`: deliver now or never; APNs does not store the notification.
    public static let immediately = Expiration(storage: .seconds(0))

    /// Store and retry delivery until `date` (sent as whole UNIX seconds, rounded down).
    /// A date that is not a number (NaN) or before 1970 makes an expiration that
    /// ``headerValue()`` refuses, naming the date.
    public static func at(_ date: Date) -> Expiration {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        if seconds.isNaN {
            return Expiration(storage: .invalid("apns-expiration is not a date (its time interval is NaN)"))
        }
        if seconds < 0 {
            let shown = seconds > -Double(Int64.max) ? String(Int64(seconds)) : "-infinity"
            return Expiration(storage: .invalid("apns-expiration is before 1970 (\(shown) seconds from 1970)"))
        }
        if seconds >= Double(Int64.max) { return Expiration(storage: .seconds(Int64.max)) }
        return Expiration(storage: .seconds(Int64(seconds)))
    }

    /// Store and retry delivery until the UNIX time `seconds`.
    public static func unixTime(_ seconds: Int64) -> Expiration { Expiration(storage: .seconds(seconds)) }

    private init(storage: Storage) { self.storage = storage }

    /// The header value, or `nil` for ``none``.
    ///
    /// - Throws: ``APNsRequestError`` with code ``APNsRequestError/Code/invalidExpiration`` for
    ///   a date before 1970.
    public func headerValue() throws(APNsRequestError) -> String? {
        switch storage {
        case .none: return nil
        case .invalid(let problem):
            throw APNsRequestError(.invalidExpiration, header: "apns-expiration", problem)
        case .seconds(let seconds):
            guard seconds >= 0 else {
                throw APNsRequestError(
                    .invalidExpiration,
                    header: "apns-expiration",
                    "apns-expiration is before 1970 (UNIX time \(seconds))"
                )
            }
            return String(seconds)
        }
    }

    /// `none`, or the UNIX time in seconds.
    public var description: String {
        switch storage {
        case .none: "none"
        case .seconds(let seconds): String(seconds)
        case .invalid: "invalid"
        }
    }
}
