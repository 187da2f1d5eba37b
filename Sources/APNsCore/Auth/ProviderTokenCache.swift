// CONTRACT STUB — replaced by the Auth implementation; the signatures are what
// the client facade uses and must keep their shape.
import Foundation

/// CONTRACT: a provider token (JWT) and when it was issued.
public struct ProviderToken: Sendable, Hashable {
    /// The compact JWS: `header.claims.signature`.
    public let jwt: String
    /// The `iat` claim.
    public let issuedAt: Date
    /// `bearer <jwt>`, the value of the `authorization` header.
    public var authorizationValue: String { "bearer " + jwt }
}

/// CONTRACT: one cached provider token shared by every connection and task.
public final class ProviderTokenCache: ProviderTokenSource {
    /// CONTRACT: the current token, signing a new one only when needed.
    public func token() throws -> ProviderToken {
        ProviderToken(jwt: "stub", issuedAt: Date())
    }
    /// CONTRACT: APNs answered ExpiredProviderToken for `token`.
    public func invalidate(_ token: ProviderToken) {}
}
