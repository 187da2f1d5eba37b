import Foundation
import Testing
import TestTools

@testable import APNsCore

/// Seeded random runs of ``Delivery`` against what ``RetryPolicy`` and ``Delivery``
/// document: random policies, call timeouts, attempt durations, answers and transport
/// failures, provider-token refreshes, caller holds (``Delivery/resumed(at:)``) and
/// cancellations, with a model of the attempts alongside.
@Suite("Delivery: seeded random attempt sequences against the documented contract")
struct DeliveryPropertyTests {
    static let ms: UInt64 = 1_000_000
    static let token = ProviderToken(jwt: "h.c.s-1", issuedAt: Date(timeIntervalSince1970: 1_700_000_000))

    static func rejection(_ status: Int, _ reason: String) -> APNsError {
        .rejected(APNsRejection(status: status, reason: APNsReason(rawValue: reason)))
    }

    /// An attempt's outcome, at random: `nil` for accepted.
    static func randomOutcome(using rng: inout SplitMix64) -> APNsError? {
        switch Int.random(in: 0..<22, using: &rng) {
        case 0, 1: return nil
        case 2: return rejection(429, "TooManyRequests")
        case 3: return rejection(500, "InternalServerError")
        case 4: return rejection(503, "ServiceUnavailable")
        case 5: return rejection(400, "IdleTimeout")
        case 6: return rejection(400, "BadDeviceToken")
        case 7: return rejection(410, "Unregistered")
        case 8, 9: return rejection(403, "ExpiredProviderToken")
        case 10: return .failed(.connectionFailed("refused"))
        case 11: return .failed(.goAway("above last-stream-id"))
        case 12: return .failed(.streamRefused("REFUSED_STREAM"))
        case 13: return .failed(.queueFull("full"))
        case 14: return .failed(.timeout(mayHaveReachedAPNs: true, "late"))
        case 15: return .failed(.timeout(mayHaveReachedAPNs: false, "never written"))
        case 16: return .failed(.connectionClosed("lost"))
        case 17: return .failed(.streamReset("RST_STREAM INTERNAL_ERROR"))
        case 18: return .failed(.shutdown("shut down"))
        case 19: return .failed(.tlsFailure("certificate refused").permanent)
        case 20: return .failed(.protocolError("broken"))
        default: return .failed(.cancelled(mayHaveReachedAPNs: false, "cancelled"))
        }
    }

    /// The "equal jitter" bounds the policy documents for retry `n`, in nanoseconds.
    static func bounds(_ policy: RetryPolicy, retry n: Int) -> ClosedRange<UInt64> {
        let base = MonotonicTime.nanoseconds(policy.baseDelay)
        let cap = MonotonicTime.nanoseconds(policy.maxDelay)
        let exponent = min(n - 1, 40)
        let doubled = base.multipliedReportingOverflow(by: UInt64(1) << UInt64(exponent))
        let d = min(cap, doubled.overflow ? UInt64.max : doubled.partialValue)
        return (d / 2 &- min(d / 2, 1))...(d)
    }

    /// Whether the error's code (or status) is that of `original`: a final error may add
    /// to the detail, never change what happened.
    static func sameKind(_ final: APNsError, _ original: APNsError) -> Bool {
        switch (final, original) {
        case (.rejected(let a), .rejected(let b)): a.status == b.status && a.reason == b.reason
        case (.failed(let a), .failed(let b)): a.code == b.code
        default: false
        }
    }

    /// One seeded delivery; returns a description of the first broken rule.
    static func run(seed: UInt64) -> String? {
        var rng = SplitMix64(seed: seed)
        let policy = RetryPolicy(
            maxAttempts: Int.random(in: 0...6, using: &rng),
            baseDelay: .milliseconds(Int64.random(in: 1...500, using: &rng)),
            maxDelay: .milliseconds(Int64.random(in: 1...4000, using: &rng)),
            retriesFailuresThatMayHaveReachedAPNs: Bool.random(using: &rng)
        )
        var now: UInt64 = 5_000_000_000 + UInt64.random(in: 0...1_000_000, using: &rng)
        let hasDeadline = Int.random(in: 0..<4, using: &rng) != 0
        let timeout = Duration.milliseconds(Int64.random(in: 50...20_000, using: &rng))
        var delivery = hasDeadline
            ? Delivery(retryPolicy: policy, startedAt: now, timeout: timeout)
            : Delivery(retryPolicy: policy)
        let carriesToken = Bool.random(using: &rng)
        var attempts = 1
        var retries = 0
        var refreshes = 0
        var anyMayHaveReached = false
        var lastError: APNsError?
        var trace: [String] = ["policy \(policy.maxAttempts)x \(policy.baseDelay)..\(policy.maxDelay) mayReach \(policy.retriesFailuresThatMayHaveReachedAPNs), deadline \(hasDeadline ? "\(timeout)" : "none")"]
        func broken(_ message: String) -> String { "seed \(seed): \(message)\n  \(trace.joined(separator: "; "))" }

        // Checks a final failure against the model.
        func checkFinal(_ error: APNsError, lastError: APNsError?) -> String? {
            if let lastError, !sameKind(error, lastError) { return broken("final \(error) is not the last attempt's \(lastError)") }
            if case .failed(let failure) = error, failure.mayHaveReachedAPNs != anyMayHaveReached {
                return broken("final failure says mayHaveReachedAPNs \(failure.mayHaveReachedAPNs); the attempts say \(anyMayHaveReached)")
            }
            return nil
        }

        for _ in 0..<40 {
            if delivery.attempt != attempts { return broken("attempt is \(delivery.attempt), the model counts \(attempts)") }
            if attempts > policy.maxAttempts { return broken("attempt \(attempts) beyond maxAttempts \(policy.maxAttempts)") }
            // The attempt runs for at most what is left of the call's time.
            let remaining = delivery.remainingTime(at: now).map(MonotonicTime.nanoseconds)
            if hasDeadline, remaining == nil { return broken("no remaining time with a deadline") }
            var took = UInt64.random(in: 0...800, using: &rng) * ms
            var outcome = randomOutcome(using: &rng)
            if let remaining, took >= remaining {
                took = remaining
                if outcome != nil || Bool.random(using: &rng) { outcome = .failed(.timeout(mayHaveReachedAPNs: Bool.random(using: &rng), "the attempt's time ran out")) }
            }
            now += took
            if let failure = outcome?.transportError, failure.mayHaveReachedAPNs { anyMayHaveReached = true }
            trace.append("attempt \(attempts) took \(took / ms)ms: \(outcome.map { "\($0)" } ?? "accepted")")
            let jitter = Double.random(in: 0...1, using: &rng)
            let remainingBefore = delivery.remainingTime(at: now).map(MonotonicTime.nanoseconds)
            var decision = delivery.attemptEnded(with: outcome, providerToken: carriesToken ? token : nil, jitter: jitter, now: now)
            if outcome != nil { lastError = outcome }
            if case .refreshProviderToken(let expired) = decision {
                refreshes += 1
                if refreshes > 1 { return broken("a second provider-token refresh in one delivery") }
                if expired != token || outcome?.rejection?.reason != .expiredProviderToken { return broken("refresh asked for \(outcome.map { "\($0)" } ?? "nil")") }
                switch Int.random(in: 0..<3, using: &rng) {
                case 0:
                    decision = delivery.providerTokenRefreshFailed(HTTP2LikeError(), jitter: jitter, now: now)
                    guard case .fail(let error) = decision, sameKind(error, outcome!) else { return broken("refresh failure gave \(decision)") }
                case 1:
                    decision = delivery.providerTokenRefreshed(changed: true, jitter: jitter, now: now)
                    trace.append("new token: \(decision)")
                    if case .sendAgain = decision {
                        if let remainingBefore, remainingBefore == 0 { return broken("sendAgain after the deadline") }
                        if delivery.attempt != attempts { return broken("sendAgain counted as an attempt") }
                        delivery.attemptStarting(at: now)
                        continue
                    }
                    guard case .fail = decision, hasDeadline else { return broken("a changed token gave \(decision)") }
                default:
                    decision = delivery.providerTokenRefreshed(changed: false, jitter: jitter, now: now)
                    trace.append("token kept: \(decision)")
                }
            }
            switch decision {
            case .deliver:
                if outcome != nil { return broken("delivered a failed attempt") }
                return nil
            case .sendAgain:
                return broken("sendAgain outside a refresh")
            case .refreshProviderToken:
                return broken("a refresh asked for twice in one step")
            case .fail(let error):
                trace.append("fail: \(error)")
                if outcome == nil { return broken("failed an accepted attempt") }
                if let problem = checkFinal(error, lastError: lastError) { return problem }
                // A retryable error with attempts left fails only for want of time.
                if let outcome, policy.shouldRetry(outcome), attempts < policy.maxAttempts,
                    outcome.rejection?.reason != .expiredProviderToken, !hasDeadline
                {
                    return broken("a retryable \(outcome) failed with \(attempts) of \(policy.maxAttempts) attempts and no deadline")
                }
                if let outcome, let remainingBefore, policy.shouldRetry(outcome), attempts < policy.maxAttempts, refreshes == 0 {
                    let delay = MonotonicTime.nanoseconds(policy.delay(beforeRetry: attempts, jitter: jitter))
                    if remainingBefore > delay + took {
                        return broken("a retryable \(outcome) failed with \(remainingBefore / ms) ms left, more than the delay \(delay / ms) ms + the attempt's \(took / ms) ms")
                    }
                }
                return nil
            case .retry(let delay, let because):
                retries += 1
                let nanos = MonotonicTime.nanoseconds(delay)
                trace.append("retry \(retries) after \(Double(nanos) / Double(ms))ms")
                guard let outcome else { return broken("retried an accepted attempt") }
                if !policy.shouldRetry(because) && because.rejection?.reason != .expiredProviderToken {
                    return broken("retried \(because), which the policy does not retry")
                }
                if !sameKind(because, outcome) { return broken("retry because \(because), the attempt ended in \(outcome)") }
                if attempts >= policy.maxAttempts { return broken("retry beyond maxAttempts") }
                let range = bounds(policy, retry: retries)
                if nanos < range.lowerBound || nanos > range.upperBound + 2 {
                    return broken("retry \(retries)'s delay \(nanos) ns outside \(bounds(policy, retry: retries))")
                }
                // After the delay, as much time must be left as the attempt took.
                if let remainingBefore, remainingBefore <= nanos + took {
                    return broken("retry with \(remainingBefore / ms) ms left, delay \(nanos / ms) ms + last attempt \(took / ms) ms")
                }
                attempts += 1
                // Sometimes the caller holds the delivery before its attempt loop takes it
                // over (an array batch's first pass over every notification): that time
                // does not count against the call's deadline.
                if Bool.random(using: &rng) {
                    let before = delivery.remainingTime(at: now)
                    let hold = UInt64.random(in: 0...2_000, using: &rng) * ms
                    now += hold
                    delivery.resumed(at: now)
                    let after = delivery.remainingTime(at: now)
                    trace.append("held \(hold / ms)ms")
                    if before != after { return broken("a hold of \(hold / ms) ms changed the remaining time from \(String(describing: before)) to \(String(describing: after))") }
                }
                now += nanos
                // Sometimes the task is cancelled while it waits: the last attempt's error stands.
                if Int.random(in: 0..<8, using: &rng) == 0 {
                    let final = delivery.cancelled("the task was cancelled")
                    trace.append("cancelled: \(final)")
                    return checkFinal(final, lastError: lastError)
                }
                if let left = delivery.remainingTime(at: now), left == .zero {
                    let final = delivery.deadlinePassed()
                    return checkFinal(final, lastError: lastError)
                }
                delivery.attemptStarting(at: now)
            }
        }
        return broken("no final outcome after 40 steps")
    }

    struct HTTP2LikeError: Error {}

    @Test("attempts within maxAttempts, delays within the equal-jitter bounds and the deadline, one final outcome that keeps the last error and mayHaveReachedAPNs (2,000 seeds)")
    func randomDeliveries() {
        var failures: [String] = []
        for seed in PropertySeeds.range(2_000) {
            if let failure = Self.run(seed: seed) { failures.append(failure) }
        }
        #expect(failures.isEmpty, "\(failures.count) seeds failed; first: \(failures.prefix(3).joined(separator: "\n"))")
    }

    @Test("RetryPolicy.delay stays within [d/2, d] for any retry number and jitter, NaN and out-of-range included (seeded)")
    func delayBounds() {
        var rng = SplitMix64(seed: 0xDE1A7)
        for _ in 0..<20_000 {
            let policy = RetryPolicy(
                maxAttempts: 5,
                baseDelay: .nanoseconds(Int64.random(in: 0...10_000_000_000, using: &rng)),
                maxDelay: .nanoseconds(Int64.random(in: 0...100_000_000_000, using: &rng))
            )
            let retry = Int.random(in: -3...100, using: &rng)
            let jitter: Double = switch Int.random(in: 0..<6, using: &rng) {
            case 0: .nan
            case 1: -Double.random(in: 0...10, using: &rng)
            case 2: 1 + Double.random(in: 0...10, using: &rng)
            default: Double.random(in: 0...1, using: &rng)
            }
            let delay = MonotonicTime.nanoseconds(policy.delay(beforeRetry: retry, jitter: jitter))
            let range = Self.bounds(policy, retry: max(1, retry))
            // Double arithmetic: allow a few nanoseconds of rounding at the ends.
            let lower = range.lowerBound &- min(range.lowerBound, 2)
            #expect(delay >= lower && delay <= range.upperBound + 2, "retry \(retry), jitter \(jitter), base \(policy.baseDelay), max \(policy.maxDelay): \(delay) ns outside \(range)")
        }
    }
}
