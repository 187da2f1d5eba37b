/// Decides whether a provider token's signature is valid, for a mock server in token mode.
///
/// The server calls it once per distinct token string and caches the answer, so it may
/// be slow (an ES256 verification). The server itself checks the parts it can check
/// without a key: three base64url parts, integer `iat`, and age under one hour
/// (`ExpiredProviderToken`). Return `false` for `InvalidProviderToken`.
public struct ProviderTokenVerifier: Sendable {
    private let verify: @Sendable (_ token: String, _ claims: ProviderTokenClaims) -> Bool

    /// A verifier from a closure.
    /// - Parameter verify: Receives the compact JWT (without `bearer `) and its decoded
    ///   claims; returns whether the signature is valid for the key it names.
    public init(_ verify: @escaping @Sendable (_ token: String, _ claims: ProviderTokenClaims) -> Bool) {
        self.verify = verify
    }

    /// Accepts exactly the given token strings (for tests that use fixed tokens).
    public static func accepting(_ tokens: Set<String>) -> ProviderTokenVerifier {
        ProviderTokenVerifier { token, _ in tokens.contains(token) }
    }

    /// Accepts any well-formed token whose key identifier and team identifier match,
    /// without checking the signature. Only for tests that do not exercise signatures.
    public static func acceptingUnsigned(keyID: String, teamID: String) -> ProviderTokenVerifier {
        ProviderTokenVerifier { _, claims in claims.keyID == keyID && claims.teamID == teamID }
    }

    func isValid(_ token: String, claims: ProviderTokenClaims) -> Bool {
        verify(token, claims)
    }
}
