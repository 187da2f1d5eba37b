import Foundation

/// Signature verdicts per distinct token string, shared by every connection of one server
/// thread: a token is verified once (an ES256 verification), not per request.
///
/// Lives on the server thread only.
final class TokenVerdictCache {
    @exclusivity(unchecked) private var verdicts: [String: ProviderTokenClaims?] = [:]
    private let check: ProviderTokenCheck
    /// The most distinct tokens kept; past it the cache starts again empty.
    static let limit = 10_000

    init(check: ProviderTokenCheck) {
        self.check = check
    }

    /// The claims of `token` when its signature is valid, `nil` when it is not (or the
    /// token cannot be read).
    func verifiedClaims(of token: String) -> ProviderTokenClaims? {
        if let known = verdicts[token] { return known }
        let claims = ProviderTokenClaims(jwt: token).flatMap { check.isValid(token, claims: $0) ? $0 : nil }
        if verdicts.count >= Self.limit { verdicts.removeAll() }
        verdicts[token] = claims
        return claims
    }
}

/// The provider-token rules of one connection, in the order APNs applies them (see
/// "Key kinds" in Apple's 2025 key documentation and
/// [Establishing a token-based connection to APNs](https://developer.apple.com/documentation/usernotifications/establishing-a-token-based-connection-to-apns)):
///
/// 1. an `authorization` value is present (`MissingProviderToken`),
/// 2. it is `bearer <JWT>` and the JWT's signature verifies (`InvalidProviderToken`),
/// 3. the token is under an hour old on the server's clock (`ExpiredProviderToken`),
/// 4. its key is enabled for the environment the server emulates
///    (`BadEnvironmentKeyIdInToken`),
/// 5. its key is the key the connection is bound to (`UnrelatedKeyIdInToken`): a
///    connection is bound to the key of the first token it accepted,
/// 6. it is not a new token less than 20 minutes after the connection's previous one
///    (`TooManyProviderTokenUpdates`, 429).
///
/// Every key identifier the connection carried (read from any token whose claims could be
/// read, accepted or not) is reported once, so the server can record which keys each
/// connection carried. Lives on the server thread only; one per connection.
struct TokenAuthorizer {
    /// What ``authorize(_:now:)`` found.
    struct Outcome {
        /// `nil` when the token is accepted.
        var rejection: RequestValidator.Rejection?
        /// The token's claims, when they could be read.
        var claims: ProviderTokenClaims?
        /// The topics the token's key is limited to; `nil` for a key of the whole team.
        var keyTopics: Set<String>?
        /// A key identifier this connection carries for the first time.
        var newKeyID: String?
    }

    private let verdicts: TokenVerdictCache
    private let environment: MockAPNsServer.Environment
    private let keyScopes: [String: MockAPNsServer.KeyScope]
    /// The previous request's `authorization` value and what it gave, so a connection that
    /// sends the same token again (nearly every request) skips the cache lookup.
    private var lastAuthorization: String?
    private var lastClaims: ProviderTokenClaims?
    /// The token (JWT) this connection uses now, and since when.
    private var currentToken: String?
    /// The whole `authorization` value that last carried ``currentToken``.
    private var currentAuthorization: String?
    /// What accepting ``currentAuthorization`` gave (no new key, no rejection).
    private var acceptedOutcome: Outcome?
    private var currentTokenSince = Date.distantPast
    /// The key of the first accepted token: the only key this connection takes.
    private(set) var boundKeyID: String?
    /// Every key identifier carried so far, in the order first seen.
    private(set) var keyIDs: [String] = []

    init(verdicts: TokenVerdictCache, environment: MockAPNsServer.Environment,
         keyScopes: [String: MockAPNsServer.KeyScope]) {
        self.verdicts = verdicts
        self.environment = environment
        self.keyScopes = keyScopes
    }

    /// Applies the rules to one request's `authorization` value (`nil` when absent).
    mutating func authorize(_ authorization: String?, now: Date) -> Outcome {
        guard let authorization, !authorization.isEmpty else {
            return Outcome(rejection: RequestValidator.Rejection(status: 403, reason: "MissingProviderToken"))
        }
        // The token this connection was accepted with, again (nearly every request): only
        // its age can have changed. The header cache hands back the same string object,
        // so the comparison is an identity check.
        if authorization == currentAuthorization, let accepted = acceptedOutcome, let claims = accepted.claims {
            if now.timeIntervalSince1970 - Double(claims.issuedAt) > 3600 {
                var expired = accepted
                expired.rejection = RequestValidator.Rejection(status: 403, reason: "ExpiredProviderToken")
                return expired
            }
            return accepted
        }
        let claims: ProviderTokenClaims?
        if authorization == lastAuthorization {
            claims = lastClaims
        } else {
            claims = Self.isBearer(authorization) ? verdicts.verifiedClaims(of: String(authorization.dropFirst(7))) : nil
            lastAuthorization = authorization
            lastClaims = claims
        }
        guard let claims else {
            let invalid = RequestValidator.Rejection(status: 403, reason: "InvalidProviderToken")
            guard Self.isBearer(authorization) else { return Outcome(rejection: invalid) }
            // Not valid, but readable claims still say which key the client used.
            let readable = ProviderTokenClaims(jwt: String(authorization.dropFirst(7)))
            return Outcome(rejection: invalid, claims: readable, newKeyID: readable.flatMap { note($0.keyID) })
        }
        var outcome = Outcome(claims: claims, newKeyID: note(claims.keyID))
        let scope = keyScopes.isEmpty ? nil : keyScopes[claims.keyID]
        outcome.keyTopics = scope?.topics
        if now.timeIntervalSince1970 - Double(claims.issuedAt) > 3600 {
            outcome.rejection = RequestValidator.Rejection(status: 403, reason: "ExpiredProviderToken")
            return outcome
        }
        if let scope, !scope.environments.contains(environment) {
            outcome.rejection = RequestValidator.Rejection(status: 403, reason: "BadEnvironmentKeyIdInToken")
            return outcome
        }
        if let boundKeyID, boundKeyID != claims.keyID {
            outcome.rejection = RequestValidator.Rejection(status: 403, reason: "UnrelatedKeyIdInToken")
            return outcome
        }
        // The same value as the current token's (nearly every request): one memcmp.
        if authorization != currentAuthorization {
            let jwt = String(authorization.dropFirst(7))
            if let currentToken, currentToken != jwt {
                if now.timeIntervalSince(currentTokenSince) < 20 * 60 {
                    outcome.rejection = RequestValidator.Rejection(status: 429, reason: "TooManyProviderTokenUpdates")
                    return outcome
                }
            }
            if currentToken != jwt {
                currentToken = jwt
                currentTokenSince = now
            }
            currentAuthorization = authorization
        }
        boundKeyID = claims.keyID
        acceptedOutcome = Outcome(claims: claims, keyTopics: outcome.keyTopics)
        return outcome
    }

    /// Remembers `keyID` among the keys carried; returns it when it is new.
    private mutating func note(_ keyID: String) -> String? {
        // Nearly always the first (and only) key: a short linear search.
        if keyIDs.contains(keyID) { return nil }
        keyIDs.append(keyID)
        return keyID
    }

    /// `bearer ` in any case, followed by at least one character.
    static func isBearer(_ authorization: String) -> Bool {
        let utf8 = authorization.utf8
        guard utf8.count > 7 else { return false }
        var index = utf8.startIndex
        for expected in "bearer ".utf8 {
            var byte = utf8[index]
            if byte >= 0x41 && byte <= 0x5A { byte |= 0x20 }
            guard byte == expected else { return false }
            index = utf8.index(after: index)
        }
        return true
    }
}
