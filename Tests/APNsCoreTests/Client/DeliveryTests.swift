import Foundation
import Testing

@testable import APNsCore

/// The delivery state machine as tables, with no transport, no task and no clock.
///
/// The expected class of every answer comes from Apple's table of `reason` values
/// (*Local and Remote Notification Programming Guide*, table 8-6, and "Handling
/// notification responses from APNs"), written out here, not read from the SDK:
/// 429 TooManyRequests, 500 InternalServerError, 503 ServiceUnavailable and Shutdown, and
/// 400 IdleTimeout are temporary ("retry later"); 403 ExpiredProviderToken asks for a new
/// provider token; everything else is final for that request.
@Suite("Delivery: one notification's attempts as a state machine")
struct DeliveryTests {
    enum Expected: Equatable {
        case retryLater, newToken, final
    }

    /// Apple's table 8-6: status, reason, and what it means for a retry.
    static let appleReasons: [(Int, String, Expected)] = [
        (400, "BadCollapseId", .final), (400, "BadDeviceToken", .final), (400, "BadExpirationDate", .final),
        (400, "BadMessageId", .final), (400, "BadPriority", .final), (400, "BadTopic", .final),
        (400, "DeviceTokenNotForTopic", .final), (400, "DuplicateHeaders", .final), (400, "IdleTimeout", .retryLater),
        (400, "MissingDeviceToken", .final), (400, "MissingTopic", .final), (400, "PayloadEmpty", .final),
        (400, "TopicDisallowed", .final), (403, "BadCertificate", .final), (403, "BadCertificateEnvironment", .final),
        (403, "ExpiredProviderToken", .newToken), (403, "Forbidden", .final), (403, "InvalidProviderToken", .final),
        (403, "MissingProviderToken", .final), (404, "BadPath", .final), (405, "MethodNotAllowed", .final),
        (410, "Unregistered", .final), (413, "PayloadTooLarge", .final), (429, "TooManyProviderTokenUpdates", .final),
        (429, "TooManyRequests", .retryLater), (500, "InternalServerError", .retryLater),
        (503, "ServiceUnavailable", .retryLater), (503, "Shutdown", .retryLater),
    ]

    static let token = ProviderToken(jwt: "h.c.s-1", issuedAt: Date(timeIntervalSince1970: 1_700_000_000))

    static func rejection(_ status: Int, _ reason: String) -> APNsError {
        .rejected(APNsRejection(status: status, reason: APNsReason(rawValue: reason)))
    }

    /// `error` (a rejection) with the detail the delivery adds to a final
    /// ExpiredProviderToken, checked for the words a user needs: the clock, NTP, and the
    /// token's `iat` (2023-11-14T22:13:20Z is 1,700,000,000 s).
    static func explained(_ error: APNsError, _ phrase: String) -> APNsError {
        guard case .rejected(var rejection) = error else { return error }
        rejection.detail = ClockSkew.detail(expired: token, sourceKeptToken: phrase != "signed for this notification")
        #expect(rejection.detail?.contains(phrase) == true)
        #expect(rejection.detail?.contains("clock is behind Apple's") == true)
        #expect(rejection.detail?.contains("NTP") == true)
        #expect(rejection.detail?.contains("2023-11-14T22:13:20Z") == true)
        return .rejected(rejection)
    }

    /// Every reason × every attempt of a 3-attempt policy × whether the attempt carried a
    /// provider token × whether the token was already refreshed once.
    @Test(arguments: appleReasons.indices)
    func everyAppleReasonAtEveryAttempt(row: Int) {
        let (status, reason, expected) = Self.appleReasons[row]
        let error = Self.rejection(status, reason)
        for attempt in 1...3 {
            for carriesToken in [false, true] {
                for alreadyRefreshed in [false, true] {
                    var delivery = Delivery(retryPolicy: RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(100)))
                    // Bring the machine to `attempt` with retried 503s, and refresh once if asked.
                    for _ in 1..<attempt {
                        guard case .retry = delivery.attemptEnded(with: Self.rejection(503, "ServiceUnavailable"), providerToken: nil, jitter: 0, now: 0)
                        else { Issue.record("a 503 was not retried"); return }
                    }
                    if alreadyRefreshed {
                        _ = delivery.attemptEnded(with: Self.rejection(403, "ExpiredProviderToken"), providerToken: Self.token, jitter: 0, now: 0)
                        #expect(delivery.providerTokenRefreshed(changed: true, jitter: 0, now: 0) == .sendAgain)
                    }
                    #expect(delivery.attempt == attempt)
                    let decision = delivery.attemptEnded(
                        with: error,
                        providerToken: carriesToken ? Self.token : nil,
                        jitter: 1,
                        now: 0
                    )
                    let context = "\(status) \(reason), attempt \(attempt), token \(carriesToken), refreshed \(alreadyRefreshed)"
                    switch expected {
                    case .newToken where carriesToken && !alreadyRefreshed:
                        #expect(decision == .refreshProviderToken(Self.token), "\(context)")
                    case .retryLater where attempt < 3:
                        // Equal jitter with jitter 1: the upper bound, 100 ms × 2^(attempt-1).
                        let delay = Duration.milliseconds(100 * (1 << (attempt - 1)))
                        #expect(decision == .retry(after: delay, because: error), "\(context)")
                        #expect(delivery.attempt == attempt + 1, "\(context)")
                    case .newToken where carriesToken:
                        // A second ExpiredProviderToken in one delivery, for a token signed
                        // for it: final, and the rejection says the clock is behind.
                        #expect(decision == .fail(Self.explained(error, "signed for this notification")), "\(context)")
                    default:
                        #expect(decision == .fail(error), "\(context)")
                    }
                }
            }
        }
    }

    @Test("an accepted attempt is delivered, whatever came before")
    func acceptance() {
        var delivery = Delivery(retryPolicy: .default)
        _ = delivery.attemptEnded(with: Self.rejection(500, "InternalServerError"), providerToken: nil, jitter: 0.5, now: 0)
        #expect(delivery.attemptEnded(with: nil, providerToken: nil, jitter: 0.5, now: 0) == .deliver)
    }

    @Test("ExpiredProviderToken: a source that keeps the token ends it as a rejection (403 is not retried)")
    func sourceKeepsTheExpiredToken() {
        var delivery = Delivery(retryPolicy: .default)
        let expired = Self.rejection(403, "ExpiredProviderToken")
        #expect(delivery.attemptEnded(with: expired, providerToken: Self.token, jitter: 0, now: 0) == .refreshProviderToken(Self.token))
        // The source kept it: the next token may come 20 minutes after its iat at the earliest.
        #expect(delivery.providerTokenRefreshed(changed: false, jitter: 0, now: 0) == .fail(Self.explained(expired, "2023-11-14T22:33:20Z")))
        // The refresh does not count as an attempt.
        #expect(delivery.attempt == 1)
    }

    @Test("ExpiredProviderToken twice: the second is final")
    func expiredTwice() {
        var delivery = Delivery(retryPolicy: .default)
        let expired = Self.rejection(403, "ExpiredProviderToken")
        _ = delivery.attemptEnded(with: expired, providerToken: Self.token, jitter: 0, now: 0)
        #expect(delivery.providerTokenRefreshed(changed: true, jitter: 0, now: 0) == .sendAgain)
        #expect(delivery.attemptEnded(with: expired, providerToken: Self.token, jitter: 0, now: 0) == .fail(Self.explained(expired, "signed for this notification")))
    }

    /// Transport failures: RFC 9113 says a stream above a GOAWAY's last-stream-id, or
    /// refused with REFUSED_STREAM, was not processed; a timeout after the request was
    /// written may have been. The policy retries only the first kind by default.
    @Test(arguments: [
        (APNsTransportError.goAway("last-stream-id 1"), true),
        (APNsTransportError.streamRefused(), true),
        (APNsTransportError.connectionFailed(), true),
        (APNsTransportError.queueFull(), true),
        (APNsTransportError.shutdown(), false),
        (APNsTransportError.cancelled(mayHaveReachedAPNs: false), false),
        (APNsTransportError.timeout(mayHaveReachedAPNs: true), false),
        (APNsTransportError.connectionClosed(), false),
        (APNsTransportError.streamReset(), false),
        (APNsTransportError.protocolError(), false),
        (APNsTransportError.responseTooLarge("headers", status: 200), false),
    ])
    func transportFailures(failure: APNsTransportError, retried: Bool) {
        var delivery = Delivery(retryPolicy: .default)
        let decision = delivery.attemptEnded(with: .failed(failure), providerToken: Self.token, jitter: 0, now: 0)
        if retried {
            #expect(decision == .retry(after: .milliseconds(125), because: .failed(failure)))
        } else {
            #expect(decision == .fail(.failed(failure)))
        }
    }

    @Test("a final failure that did not reach APNs still says it may have, when an earlier attempt may have")
    func mayHaveReachedIsDecidedOverEveryAttempt() {
        var delivery = Delivery(retryPolicy: RetryPolicy(maxAttempts: 2, retriesFailuresThatMayHaveReachedAPNs: true))
        let first = delivery.attemptEnded(with: .failed(.timeout(mayHaveReachedAPNs: true)), providerToken: nil, jitter: 0, now: 0)
        guard case .retry = first else {
            Issue.record("a timeout was not retried under a policy that retries them: \(first)")
            return
        }
        let last = delivery.attemptEnded(with: .failed(.connectionFailed("refused")), providerToken: nil, jitter: 0, now: 0)
        guard case .fail(.failed(let failure)) = last else {
            Issue.record("expected a final failure, got \(last)")
            return
        }
        #expect(failure.code == .connectionFailed)
        #expect(failure.mayHaveReachedAPNs)
        #expect(delivery.cancelled("stop").transportError?.mayHaveReachedAPNs == true)
    }

    /// What a delivery cancelled before its next attempt ends in.
    enum Ending: Equatable {
        case rejected(status: Int, reason: String)
        case failed(APNsTransportError.Code, mayHaveReachedAPNs: Bool)
        case cancelled
    }

    /// One attempt of a delivery that goes on: APNs' answer or a transport failure that the
    /// policy retries, or an ExpiredProviderToken met with a new token.
    enum Step {
        case retried(APNsError)
        case expiredThenNewToken
    }

    /// Deliveries whose task is cancelled while they wait to retry: the attempts so far,
    /// and what the delivery must end in. The facts: what APNs answered last is what
    /// happened to the notification (a 503 delivered nothing), and a transport failure
    /// keeps its code; `mayHaveReachedAPNs` is true if any attempt may have reached APNs;
    /// only a delivery with no attempt ended is `cancelled`, with nothing sent.
    static let cancelledWhileWaiting: [(String, [Step], Ending)] = [
        ("503", [.retried(rejection(503, "ServiceUnavailable"))], .rejected(status: 503, reason: "ServiceUnavailable")),
        (
            "429, then 500",
            [.retried(rejection(429, "TooManyRequests")), .retried(rejection(500, "InternalServerError"))],
            .rejected(status: 500, reason: "InternalServerError")
        ),
        ("400 IdleTimeout", [.retried(rejection(400, "IdleTimeout"))], .rejected(status: 400, reason: "IdleTimeout")),
        ("refused connection", [.retried(.failed(.connectionFailed("refused")))], .failed(.connectionFailed, mayHaveReachedAPNs: false)),
        (
            "503, then GOAWAY above the last-stream-id",
            [.retried(rejection(503, "ServiceUnavailable")), .retried(.failed(.goAway("last-stream-id 1")))],
            .failed(.goAway, mayHaveReachedAPNs: false)
        ),
        (
            "refused connection, then 503",
            [.retried(.failed(.connectionFailed("refused"))), .retried(rejection(503, "Shutdown"))],
            .rejected(status: 503, reason: "Shutdown")
        ),
        (
            "timeout after the request was written, then refused connection",
            [.retried(.failed(.timeout(mayHaveReachedAPNs: true))), .retried(.failed(.connectionFailed("refused")))],
            .failed(.connectionFailed, mayHaveReachedAPNs: true)
        ),
        (
            "timeout after the request was written",
            [.retried(.failed(.timeout(mayHaveReachedAPNs: true)))],
            .failed(.timeout, mayHaveReachedAPNs: true)
        ),
        (
            "ExpiredProviderToken, a new token asked for",
            [.expiredThenNewToken],
            .rejected(status: 403, reason: "ExpiredProviderToken")
        ),
        ("no attempt ended yet", [], .cancelled),
    ]

    @Test("cancelled before the next attempt: the outcome is the last attempt's answer or failure", arguments: cancelledWhileWaiting.indices)
    func cancelledBeforeTheNextAttempt(row: Int) {
        let (name, steps, expected) = Self.cancelledWhileWaiting[row]
        var delivery = Delivery(retryPolicy: RetryPolicy(maxAttempts: 5, retriesFailuresThatMayHaveReachedAPNs: true))
        for step in steps {
            switch step {
            case .retried(let error):
                guard case .retry = delivery.attemptEnded(with: error, providerToken: nil, jitter: 0, now: 0) else {
                    Issue.record("\(name): \(error) was not retried; the row is wrong")
                    return
                }
            case .expiredThenNewToken:
                let expired = Self.rejection(403, "ExpiredProviderToken")
                #expect(delivery.attemptEnded(with: expired, providerToken: Self.token, jitter: 0, now: 0) == .refreshProviderToken(Self.token))
                #expect(delivery.providerTokenRefreshed(changed: true, jitter: 0, now: 0) == .sendAgain)
            }
        }
        let error = delivery.cancelled("cancelled while waiting to retry")
        let ending: Ending
        let detail: String?
        switch error {
        case .rejected(let rejection):
            ending = .rejected(status: rejection.status, reason: rejection.reason?.rawValue ?? "-")
            detail = rejection.detail
        case .failed(let failure) where failure.code == .cancelled:
            ending = .cancelled
            detail = failure.detail
            #expect(!failure.mayHaveReachedAPNs, "\(name): nothing was sent")
        case .failed(let failure):
            ending = .failed(failure.code, mayHaveReachedAPNs: failure.mayHaveReachedAPNs)
            detail = failure.detail
        case .invalid:
            Issue.record("\(name): \(error)")
            return
        }
        #expect(ending == expected, "\(name)")
        // Why it ended there is said, for the logs.
        #expect(detail?.contains("cancelled while waiting to retry") == true, "\(name): \(detail ?? "no detail")")
    }
}
