#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What ``ProviderTokenVerifier`` read from a token whose signature it checked.
///
/// The verifier checks structure and signature only; how old ``issuedAt`` may be is the
/// caller's rule (APNs refuses tokens older than one hour with `ExpiredProviderToken`).
public struct VerifiedProviderToken: Sendable, Hashable {
    /// The `kid` header: the key that signed the token.
    public let keyID: String
    /// The `iss` claim: the team id.
    public let teamID: String
    /// The `iat` claim, in whole seconds since 1970-01-01 UTC.
    public let issuedAtSeconds: Int64

    /// The `iat` claim as a date.
    public var issuedAt: Date { Date(timeIntervalSince1970: Double(issuedAtSeconds)) }
}
