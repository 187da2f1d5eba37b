#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What an `ExpiredProviderToken` answer for a young token means, in words: the text the
/// client puts in the rejection's ``APNsRejection/detail`` and the cache in its warning.
///
/// APNs refuses a provider token whose `iat` is more than an hour old by Apple's clock, and
/// a new token more often than every 20 minutes
/// ([Establishing a token-based connection to APNs](https://developer.apple.com/documentation/usernotifications/establishing-a-token-based-connection-to-apns)).
/// A token this host signed less than an hour ago that APNs calls expired therefore says
/// this host's clock is behind Apple's, which no new signature can fix.
enum ClockSkew {
    /// The least a token may be used before the next may be signed: 20 minutes.
    static let minimumTokenLifetime: TimeInterval = 20 * 60

    /// The detail of a final `ExpiredProviderToken` rejection of `token`.
    /// - Parameter sourceKeptToken: The token source refused to sign a new token (a
    ///   ``ProviderTokenCache`` does for a token younger than 20 minutes); `false` when a
    ///   new token was signed for this notification and was called expired as well.
    static func detail(expired token: ProviderToken, sourceKeptToken: Bool) -> String {
        let issued = format(token.issuedAt)
        let next = format(token.issuedAt.addingTimeInterval(minimumTokenLifetime))
        if sourceKeptToken {
            return "APNs called the provider token issued at \(issued) expired, and the token source kept it: "
                + "a new token may be signed at most every 20 minutes (APNs answers TooManyProviderTokenUpdates otherwise), "
                + "so the next comes at \(next) at the earliest. A token refused before it is an hour old means this host's clock is behind Apple's "
                + "(or was set back): synchronise it (NTP)"
        }
        return "APNs called a provider token expired that was signed for this notification (iat \(issued)): "
            + "this host's clock is behind Apple's by more than an hour; synchronise it (NTP)"
    }

    /// `2026-11-26T03:40:00Z`.
    static func format(_ date: Date) -> String {
        date.formatted(.iso8601)
    }
}
