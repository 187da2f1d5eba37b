/// One notification's attempts (or one broadcast's, or one channel call's) as a value:
/// the outcome of each attempt goes in, the decision comes out. It does no I/O, keeps no
/// clock and draws no random number: the jitter for a retry's delay is an input. Every
/// way of sending drives it — ``APNsClient/send(_:to:)``, both batch forms, broadcasts and
/// channel management (through the client's attempt loop) — so what happens after an
/// answer is decided in this one place.
///
/// The states and transitions:
///
/// ```
///   attempt n sent ──answer──▶ accepted                       → .deliver
///          │                 ▶ 403 ExpiredProviderToken, first time, token known
///          │                                                  → .refreshProviderToken(token)
///          │                        ├─ the source gave a new token → .sendAgain (not counted)
///          │                        └─ it kept the old one       → as any other failure
///          │                 ▶ failure the policy retries, n < maxAttempts
///          │                                                  → .retry(after:) (attempt n+1)
///          └───────────────────▶ anything else                → .fail(error)
/// ```
///
/// `mayHaveReachedAPNs` is decided here too: a final failure says the notification may
/// have reached APNs if *any* attempt may have (an earlier timeout followed by a refused
/// connection still may have delivered it).
///
/// So is the outcome of a delivery whose task is cancelled before its next attempt (while
/// it waits to retry): the last attempt's error — APNs' answer, or that attempt's
/// transport failure — not a `cancelled` that would hide what APNs said
/// (``cancelled(_:)``).
struct Delivery: Sendable, Equatable {
    /// What the caller does next.
    enum Decision: Sendable, Equatable {
        /// The attempt succeeded: hand its result to the caller.
        case deliver
        /// Invalidate this provider token, ask the source for a new one, and report with
        /// ``Delivery/providerTokenRefreshed(changed:jitter:)``.
        case refreshProviderToken(ProviderToken)
        /// Send again at once with the new provider token (not counted as an attempt).
        case sendAgain
        /// Wait `delay`, then send attempt ``Delivery/attempt`` (already advanced).
        case retry(after: Duration, because: APNsError)
        /// The final outcome: this error.
        case fail(APNsError)
    }

    /// The policy that decides retries.
    let retryPolicy: RetryPolicy
    /// The attempt being made or just made: 1 for the first.
    private(set) var attempt = 1
    /// Whether an `ExpiredProviderToken` answer has already been met with a new token
    /// (it is, once per delivery).
    private(set) var refreshedProviderToken = false
    /// Whether any attempt so far may have reached APNs.
    private(set) var mayHaveReachedAPNs = false
    /// The error the last attempt ended in (APNs' answer, or the transport failure);
    /// `nil` before any attempt ended.
    private(set) var lastError: APNsError?
    /// The error of the attempt that asked for a new provider token, while the caller
    /// fetches it.
    private var awaitingRefresh: APNsError?
    /// The token APNs called expired, while the caller fetches a new one.
    private var expiredToken: ProviderToken?

    /// A delivery governed by `retryPolicy`.
    init(retryPolicy: RetryPolicy) {
        self.retryPolicy = retryPolicy
    }

    /// The attempt's outcome: `nil` when it succeeded, else the error it ended in (a
    /// rejection, a transport failure). `providerToken` is the token the attempt carried
    /// (typed; `nil` with certificate credentials).
    mutating func attemptEnded(
        with error: APNsError?,
        providerToken: ProviderToken?,
        jitter: Double
    ) -> Decision {
        guard let error else { return .deliver }
        lastError = error
        if let transportError = error.transportError, transportError.mayHaveReachedAPNs {
            mayHaveReachedAPNs = true
        }
        if error.rejection?.reason == .expiredProviderToken, let providerToken {
            guard refreshedProviderToken else {
                refreshedProviderToken = true
                awaitingRefresh = error
                expiredToken = providerToken
                return .refreshProviderToken(providerToken)
            }
            // A token signed for this very notification was called expired too.
            return retryOrFail(Self.explained(error, expired: providerToken, sourceKeptToken: false), jitter: jitter)
        }
        return retryOrFail(error, jitter: jitter)
    }

    /// After ``Decision/refreshProviderToken(_:)``: whether the source gave a token other
    /// than the expired one. A source may keep it (a cache refuses a new one within 20
    /// minutes of the last, against `TooManyProviderTokenUpdates`); sending the same JWT
    /// again would only be refused again, so the answer then counts like any other.
    mutating func providerTokenRefreshed(changed: Bool, jitter: Double) -> Decision {
        guard let error = awaitingRefresh else {
            preconditionFailure("providerTokenRefreshed without a refresh asked for")
        }
        awaitingRefresh = nil
        if changed { return .sendAgain }
        let explained = expiredToken.map { Self.explained(error, expired: $0, sourceKeptToken: true) } ?? error
        return retryOrFail(explained, jitter: jitter)
    }

    /// An `ExpiredProviderToken` rejection with ``APNsRejection/detail`` saying what it
    /// means (the host clock is behind Apple's) and when the next token comes.
    private static func explained(_ error: APNsError, expired token: ProviderToken, sourceKeptToken: Bool) -> APNsError {
        guard case .rejected(var rejection) = error, rejection.detail == nil else { return error }
        rejection.detail = ClockSkew.detail(expired: token, sourceKeptToken: sourceKeptToken)
        return .rejected(rejection)
    }

    /// The final error of a delivery that ends without another attempt for a reason of
    /// the caller's (its task was cancelled while waiting to retry, or before an attempt):
    /// what the last attempt ended in, with `detail` added to say why it was not sent
    /// again — APNs' answer (a 503 stays that 503: it is what happened, and nothing was
    /// delivered) or that attempt's transport failure, flagged as having possibly reached
    /// APNs if any attempt may have. Only a delivery with no attempt ended yet fails with
    /// `cancelled` (`mayHaveReachedAPNs == false`: nothing was sent).
    func cancelled(_ detail: String) -> APNsError {
        guard let lastError else { return .failed(.cancelled(mayHaveReachedAPNs: mayHaveReachedAPNs, detail)) }
        let note = "not sent again: " + detail
        switch lastError {
        case .rejected(var rejection):
            rejection.detail = (rejection.detail.map { $0 + "; " } ?? "") + note
            return .rejected(rejection)
        case .failed(let failure):
            return finalError(
                .failed(
                    APNsTransportError(
                        code: failure.code,
                        mayHaveReachedAPNs: failure.mayHaveReachedAPNs,
                        detail: (failure.detail.map { $0 + "; " } ?? "") + note,
                        responseStatus: failure.responseStatus
                    )
                )
            )
        case .invalid:
            return lastError
        }
    }

    private mutating func retryOrFail(_ error: APNsError, jitter: Double) -> Decision {
        guard attempt < retryPolicy.maxAttempts, retryPolicy.shouldRetry(error) else {
            return .fail(finalError(error))
        }
        let delay = retryPolicy.delay(beforeRetry: attempt, jitter: jitter)
        attempt += 1
        return .retry(after: delay, because: error)
    }

    /// `error` as the delivery's outcome: a transport failure that certainly did not reach
    /// APNs this time still may have, if an earlier attempt may have.
    private func finalError(_ error: APNsError) -> APNsError {
        guard mayHaveReachedAPNs, case .failed(let failure) = error, !failure.mayHaveReachedAPNs else { return error }
        return .failed(
            APNsTransportError(
                code: failure.code,
                mayHaveReachedAPNs: true,
                detail: (failure.detail.map { $0 + "; " } ?? "") + "an earlier attempt may have reached APNs",
                responseStatus: failure.responseStatus
            )
        )
    }
}
