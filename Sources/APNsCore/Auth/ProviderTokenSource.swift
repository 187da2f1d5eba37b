/// Where the client gets the provider token (JWT) for the `authorization` header.
///
/// ``ProviderTokenCache`` is the implementation almost everyone uses; conform your own
/// type only to obtain tokens elsewhere (for example from a key held in a KMS).
///
/// Both methods are synchronous and may be called on the transport's I/O threads (a
/// batch makes its requests there): they must not block. A source backed by a remote
/// signer fetches or signs its next token ahead of time, in a task of its own, and
/// ``token()`` returns what it holds.
///
/// Every implementation must:
/// - return the same token to every caller until it is due for refresh, so that all
///   connections share one token and no request causes a signature;
/// - never return a token whose `iat` is older than 60 minutes, nor a new token less than
///   20 minutes after the previous one (APNs answers 429 TooManyProviderTokenUpdates);
/// - be safe to call from many tasks at once.
public protocol ProviderTokenSource: Sendable {
    /// The token to send now.
    ///
    /// Called for every request, so it must be cheap when the current token is still
    /// good: a lookup, not a signature. An error it throws is the outcome of the
    /// notification that asked (after an `ExpiredProviderToken`, it is named in that
    /// rejection's ``APNsRejection/detail``).
    func token() throws -> ProviderToken
    /// APNs answered `403 ExpiredProviderToken` for `token`: the next call to ``token()``
    /// should return a newer token, within the 20-minute rule.
    ///
    /// Ignore a `token` that is no longer the current one (a refresh already happened), so
    /// that many requests failing with one old token cause one new token. See
    /// ``ProviderTokenCache/invalidate(_:)`` for what the built-in cache does with a token
    /// younger than 20 minutes.
    func invalidate(_ token: ProviderToken)
}
