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
/// A call's attempts share one deadline: the first attempt's start plus the client's
/// ``APNsClient/requestTimeout`` (``deadline``). A retry is made only when, after its
/// delay, as much time is left as the attempt before it took (a retry with less would
/// likely time out, and turn a clean "not delivered" into "may have reached APNs"); the
/// outcome is otherwise the last attempt's error, saying so. The caller gives each later
/// attempt only the time that is left (``remainingTime(at:)``), so a call takes about one
/// `requestTimeout` at most, whatever its attempts met (a connection that hangs until the
/// connect timeout, GOAWAYs, 503s). Time the caller holds a delivery before its attempt
/// loop takes it over (an array batch's retries wait for its first pass over every
/// notification) does not count: ``resumed(at:)``. The time is an input (`now`).
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
    /// When the call must end, in ``MonotonicTime`` nanoseconds; 0 for no deadline (the
    /// first attempt's start was not recorded).
    private(set) var deadline: UInt64
    /// When the attempt being made, or just made, started (0: unknown).
    private var attemptStartedAt: UInt64 = 0
    /// When the last attempt ended (0: none yet).
    private var lastEndedAt: UInt64 = 0
    /// How long the last attempt took, from its start to its answer or failure.
    private var lastDuration: UInt64 = 0
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

    /// A delivery governed by `retryPolicy`, with no deadline.
    init(retryPolicy: RetryPolicy) {
        self.retryPolicy = retryPolicy
        self.deadline = 0
    }

    /// A delivery governed by `retryPolicy` whose first attempt started at `startedAt`
    /// (``MonotonicTime`` nanoseconds; 0: unknown, no deadline) and whose attempts
    /// together may take `timeout`.
    init(retryPolicy: RetryPolicy, startedAt: UInt64, timeout: Duration) {
        self.retryPolicy = retryPolicy
        self.deadline = startedAt == 0 ? 0 : MonotonicTime.deadline(after: timeout, from: startedAt)
        self.attemptStartedAt = startedAt
    }

    /// The next attempt starts at `now`.
    mutating func attemptStarting(at now: UInt64) {
        attemptStartedAt = now
    }

    /// The attempt loop takes the delivery over at `now`: the time since the last attempt
    /// ended, while its caller held it (an array batch finishing its first pass before it
    /// retries), moves the deadline on by as much. Its retry's delay was already decided,
    /// from when the attempt ended.
    mutating func resumed(at now: UInt64) {
        guard deadline != 0, lastEndedAt != 0, now > lastEndedAt else { return }
        let (moved, overflow) = deadline.addingReportingOverflow(now - lastEndedAt)
        deadline = overflow ? UInt64.max : moved
        lastEndedAt = now
    }

    /// The time left for the next attempt at `now`: `nil` without a deadline, zero once it
    /// has passed.
    func remainingTime(at now: UInt64) -> Duration? {
        guard deadline != 0 else { return nil }
        return now >= deadline ? .zero : .nanoseconds(Int64(clamping: deadline - now))
    }

    /// The attempt's outcome: `nil` when it succeeded, else the error it ended in (a
    /// rejection, a transport failure). `providerToken` is the token the attempt carried
    /// (typed; `nil` with certificate credentials).
    mutating func attemptEnded(
        with error: APNsError?,
        providerToken: ProviderToken?,
        jitter: Double,
        now: UInt64
    ) -> Decision {
        guard let failure = error else { return .deliver }
        lastDuration = attemptStartedAt != 0 && now > attemptStartedAt ? now - attemptStartedAt : 0
        lastEndedAt = now
        let ended = explainedTimeout(failure)
        lastError = ended
        if let transportError = ended.transportError, transportError.mayHaveReachedAPNs {
            mayHaveReachedAPNs = true
        }
        if ended.rejection?.reason == .expiredProviderToken, let providerToken {
            guard refreshedProviderToken else {
                refreshedProviderToken = true
                awaitingRefresh = ended
                expiredToken = providerToken
                return .refreshProviderToken(providerToken)
            }
            // A token signed for this very notification was called expired too.
            return retryOrFail(Self.explained(ended, expired: providerToken, sourceKeptToken: false), jitter: jitter, now: now)
        }
        return retryOrFail(ended, jitter: jitter, now: now)
    }

    /// After ``Decision/refreshProviderToken(_:)``: whether the source gave a token other
    /// than the expired one. A source may keep it (a cache refuses a new one within 20
    /// minutes of the last, against `TooManyProviderTokenUpdates`); sending the same JWT
    /// again would only be refused again, so the answer then counts like any other.
    ///
    /// The resend with a new token follows the rule of any retry: it is made only when as
    /// much of the call's time is left as the refused attempt took (with less it would
    /// likely time out, and turn APNs' clean 403 into "may have reached APNs").
    mutating func providerTokenRefreshed(changed: Bool, jitter: Double, now: UInt64) -> Decision {
        guard let error = awaitingRefresh else {
            preconditionFailure("providerTokenRefreshed without a refresh asked for")
        }
        awaitingRefresh = nil
        if changed {
            guard deadline == 0 || (now < deadline && deadline - now > lastDuration) else {
                return .fail(ended(error, note: "not sent again with a new provider token: too little of the request's timeout, which counts from the first attempt, was left"))
            }
            return .sendAgain
        }
        let explained = expiredToken.map { Self.explained(error, expired: $0, sourceKeptToken: true) } ?? error
        return retryOrFail(explained, jitter: jitter, now: now)
    }

    /// After ``Decision/refreshProviderToken(_:)``: the source threw `error` when asked for
    /// a new token. The rejection is the outcome (not retried: without a token there is
    /// nothing to send), its detail naming the source's error rather than a token the
    /// source kept.
    mutating func providerTokenRefreshFailed(_ error: any Error, jitter: Double, now: UInt64) -> Decision {
        guard let rejection = awaitingRefresh else {
            preconditionFailure("providerTokenRefreshFailed without a refresh asked for")
        }
        awaitingRefresh = nil
        return .fail(ended(rejection, note: "the provider token source could not make a new token: \(error)"))
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
        return ended(lastError, note: "not sent again: " + detail)
    }

    /// The error of a delivery that ends because its deadline passed before the next
    /// attempt could start (``remainingTime(at:)`` is zero): the last attempt's, saying so.
    func deadlinePassed() -> APNsError {
        guard let lastError else { return .failed(.timeout(mayHaveReachedAPNs: mayHaveReachedAPNs, "the request's timeout passed before it was sent")) }
        return ended(lastError, note: "not sent again: the request's timeout, which counts from the first attempt, has passed")
    }

    /// `error` as the delivery's final outcome with `note` added to its detail.
    private func ended(_ error: APNsError, note: String) -> APNsError {
        switch error {
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
                        responseStatus: failure.responseStatus,
                isPermanent: failure.isPermanent
                    )
                )
            )
        case .invalid:
            return error
        }
    }

    private mutating func retryOrFail(_ error: APNsError, jitter: Double, now: UInt64) -> Decision {
        guard attempt < retryPolicy.maxAttempts, retryPolicy.shouldRetry(error) else {
            return .fail(finalError(error))
        }
        let delay = retryPolicy.delay(beforeRetry: attempt, jitter: jitter)
        // After the delay, as much time as the last attempt took must be left: a retry
        // with less would likely time out once sent.
        let (needed, overflow) = MonotonicTime.nanoseconds(delay).addingReportingOverflow(lastDuration)
        if deadline != 0, overflow || now >= deadline || deadline - now <= needed {
            return .fail(ended(error, note: "not sent again: too little of the request's timeout, which counts from the first attempt, would be left after the retry's delay"))
        }
        attempt += 1
        return .retry(after: delay, because: error)
    }

    /// `error` in a few words, for another error's detail: a transport failure's code and
    /// detail, APNs' status and reason.
    private static func summary(_ error: APNsError) -> String {
        switch error {
        case .failed(let failure):
            return "\(failure.code)" + (failure.detail.map { " (\($0))" } ?? "")
        case .rejected(let rejection):
            return "status \(rejection.status)" + (rejection.reason.map { " \($0.rawValue)" } ?? "")
        case .invalid(let invalid):
            return "\(invalid)"
        }
    }

    /// A timeout of an attempt after the first, which had only the time the call had left,
    /// says what the attempt before it ended in: the timeout alone would hide the cause
    /// (a connection that could not be made, say).
    private func explainedTimeout(_ error: APNsError) -> APNsError {
        guard case .failed(let failure) = error, failure.code == .timeout, let lastError,
            lastError.transportError?.code != .timeout
        else { return error }
        return .failed(
            APNsTransportError(
                code: failure.code,
                mayHaveReachedAPNs: failure.mayHaveReachedAPNs,
                detail: (failure.detail.map { $0 + "; " } ?? "") + "this attempt had what was left of the request's timeout; the attempt before it ended in "
                    + Self.summary(lastError),
                responseStatus: failure.responseStatus,
                isPermanent: failure.isPermanent
            )
        )
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
                responseStatus: failure.responseStatus,
                isPermanent: failure.isPermanent
            )
        )
    }
}
