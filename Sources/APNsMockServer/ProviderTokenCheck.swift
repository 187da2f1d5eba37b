import APNsCore

/// Decides whether a provider token's signature is valid, for a mock server in token mode.
///
/// The server calls it once per distinct token string and caches the answer, so it may
/// be slow (an ES256 verification). The server itself checks the parts it can check
/// without a key: three base64url parts, integer `iat`, and age under one hour
/// (`ExpiredProviderToken`). Return `false` for `InvalidProviderToken`.
public struct ProviderTokenCheck: Sendable {
    private let verify: @Sendable (_ token: String, _ claims: ProviderTokenClaims) -> Bool

    /// A verifier from a closure.
    /// - Parameter verify: Receives the compact JWT (without `bearer `) and its decoded
    ///   claims; returns whether the signature is valid for the key it names.
    public init(_ verify: @escaping @Sendable (_ token: String, _ claims: ProviderTokenClaims) -> Bool) {
        self.verify = verify
    }

    /// Accepts exactly the given token strings (for tests that use fixed tokens).
    public static func accepting(_ tokens: Set<String>) -> ProviderTokenCheck {
        ProviderTokenCheck { token, _ in tokens.contains(token) }
    }

    /// Accepts any well-formed token whose key identifier and team identifier match,
    /// without checking the signature. Only for tests that do not exercise signatures.
    public static func acceptingUnsigned(keyID: String, teamID: String) -> ProviderTokenCheck {
        ProviderTokenCheck { _, claims in claims.keyID == keyID && claims.teamID == teamID }
    }

    /// Verifies the ES256 signature with APNsCore's ``APNsCore/ProviderTokenVerifier``, as
    /// APNs does with the public keys of your developer account: register the public key
    /// of each `.p8` under its key id and its team id, then pass the verifier here.
    ///
    /// A token is valid when its `kid` names a registered key, that key's signature
    /// verifies, and, for a key registered with a team id, its `iss` is that team: a token
    /// signed by a registered key but issued for another team gets `403
    /// InvalidProviderToken`, as on APNs. A key registered without a team id accepts any
    /// `iss`.
    ///
    /// ```swift
    /// var keys = ProviderTokenVerifier()
    /// keys.register(providerKey, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
    /// let configuration = MockAPNsServer.Configuration(
    ///     bundleIDs: ["com.example.app"], authentication: .providerToken(.signature(keys)))
    /// ```
    public static func signature(_ verifier: ProviderTokenVerifier) -> ProviderTokenCheck {
        ProviderTokenCheck { token, claims in
            // The verifier checks the signature and binds the key to its team; the server
            // read `claims` from the same token with its own parser, and both readings
            // must name the same key and team.
            guard let verified = try? verifier.verify(token) else { return false }
            return verified.keyID == claims.keyID && verified.teamID == claims.teamID
        }
    }

    func isValid(_ token: String, claims: ProviderTokenClaims) -> Bool {
        verify(token, claims)
    }
}
