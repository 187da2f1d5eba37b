/// Where the client gets the provider token (JWT) for the `authorization` header.
///
/// ``ProviderTokenCache`` is the implementation almost everyone uses; conform your own
/// type only to obtain tokens elsewhere (for example from a key held in a KMS).
///
/// Every implementation must:
/// - return the same token to every caller until it is due for refresh, so that all
///   connections share one token and no request causes a signature;
/// - never return a token whose `iat` is older than 60 minutes, nor a new token less than
///   20 minutes after the previous one (APNs answers 429 TooManyProviderTokenUpdates);
/// - be safe to call from many tasks at once.
public protocol ProviderTokenSource: Sendable {
    /// The token to send now.
    func token() throws -> ProviderToken
    /// APNs answered `ExpiredProviderToken` for `token`: the next call to ``token()``
    /// should return a newer token, within the 20-minute rule.
    func invalidate(_ token: ProviderToken)
}
