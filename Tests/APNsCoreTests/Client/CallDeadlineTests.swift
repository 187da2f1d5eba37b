import Foundation
import APNsTesting
import Logging
import Synchronization
import Testing

@testable import APNsCore

/// A call's attempts share one deadline, its first attempt's start plus
/// ``APNsClient/requestTimeout``: a retry whose delay would end past it is not made, and a
/// later attempt gets only the time left. Found from outside: a send to an endpoint that
/// hung until the connect timeout took one connect timeout per attempt (3 × 3 s with a
/// 5 s request timeout), and a second call twice the first.
@Suite struct CallDeadlineTests {
    static let device = mockToken(7)

    /// A client over `mock` whose sleeps are recorded, not slept (so the clock does not
    /// move while it "waits"), with the jitter at its top (delays at their bound).
    /// The deadline's clock moves 1 ms per reading, not with the machine: a whole parallel
    /// run on a loaded machine once held a batch's first pass long enough, by the real
    /// clock, that a 60-second timeout had too little left for a 100 ms retry.
    static func client(_ mock: MockTransport, timeout: Duration, policy: RetryPolicy, sleeper: CoreRecordingSleeper) -> APNsClient {
        let readings = Atomic<UInt64>(0)
        return APNsClient(
            environment: .sandbox,
            credentials: .certificate,
            transport: mock,
            retryPolicy: policy,
            requestTimeout: timeout,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
            sleep: { try await sleeper.sleep($0) },
            jitter: { 1 },
            now: { 1_000_000_000_000 + readings.add(1, ordering: .relaxed).newValue * 1_000_000 }
        )
    }

    @Test("a 503 whose retry delay ends past the request timeout is the outcome at once, in every form", arguments: RetryTests.SendForm.allCases)
    func retryPastTheDeadlineIsNotMade(form: RetryTests.SendForm) async throws {
        let mock = MockTransport()
        mock.respond(to: Self.device, with: [.rejected(.serviceUnavailable), .accepted])
        let sleeper = CoreRecordingSleeper()
        // The first retry waits 2 s (jitter 1); the call may take 1 s in all.
        let client = Self.client(mock, timeout: .seconds(1), policy: RetryPolicy(maxAttempts: 3, baseDelay: .seconds(2)), sleeper: sleeper)
        let result = await RetryTests.sendOnce(client, form, to: Self.device)
        guard case .failure(let error) = result else {
            Issue.record("accepted: the retry was sent past the call's timeout")
            return
        }
        // APNs' answer, with why it was not sent again.
        #expect(error.rejection?.reason == .serviceUnavailable, "\(error)")
        #expect(error.rejection?.detail?.contains("request's timeout") == true, "\(error)")
        #expect(mock.requests.count == 1)
        #expect(sleeper.durations.isEmpty)
    }

    @Test("a retry that fits is made, and has only what is left of the request timeout", arguments: RetryTests.SendForm.allCases)
    func retryHasTheTimeLeft(form: RetryTests.SendForm) async throws {
        let mock = MockTransport()
        mock.respond(to: Self.device, with: [.rejected(.serviceUnavailable), .failure(.connectionFailed("refused")), .accepted])
        let sleeper = CoreRecordingSleeper()
        let client = Self.client(mock, timeout: .seconds(60), policy: RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(100)), sleeper: sleeper)
        let result = await RetryTests.sendOnce(client, form, to: Self.device)
        #expect((try? result.get()) != nil, "\(result)")
        let timeouts = mock.requests.map(\.timeout)
        try #require(timeouts.count == 3)
        // The first attempt has the whole timeout; each later one less than the one before
        // (the clock moved), and more than nothing.
        #expect(timeouts.first == .seconds(60))
        #expect(timeouts[1] < timeouts[0] && timeouts[1] > .zero, "\(timeouts)")
        #expect(timeouts[2] < timeouts[1] && timeouts[2] > .zero, "\(timeouts)")
        #expect(sleeper.durations == [.milliseconds(100), .milliseconds(200)])
    }

    /// An array batch retries after its first pass over every notification; that wait is
    /// not the notifications' time. Found from outside: 1,000 tokens answered 503 then 200,
    /// 300 ms per answer, a 2 s timeout: 5 accepted, the rest "not sent again" or timed out.
    @Test("an array batch's retries, made after its first pass, still have their time", arguments: [RetryTests.SendForm.tokenArray, .deliveryArray])
    func arrayBatchRetriesAfterItsFirstPass(form: RetryTests.SendForm) async throws {
        let mock = MockTransport()
        let tokens = (0..<10).map { mockToken(500 + $0) }
        for token in tokens { mock.respond(to: token, with: [.rejected(.serviceUnavailable), .accepted]) }
        // The client's clock moves 1 s at every reading: each attempt takes about 1 s of
        // it, and the first pass over ten notifications, one at a time, about 20 s, long
        // after the 5 s request timeout of the first notification. (A clock of the test's
        // own: on a loaded machine, the real one would make the attempts' length vary.)
        let ticks = Atomic<UInt64>(1_000_000_000)
        let client = APNsClient(
            environment: .sandbox,
            credentials: .certificate,
            transport: mock,
            retryPolicy: RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(1)),
            requestTimeout: .seconds(5),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
            sleep: { try await CoreRecordingSleeper().sleep($0) },
            jitter: { 1 },
            now: { ticks.add(1_000_000_000, ordering: .relaxed).newValue }
        )
        let outcomes: [APNsOutcome]
        switch form {
        case .deliveryArray: outcomes = await client.send(tokens.map { (notification: sampleAlert, deviceToken: $0) }, maxConcurrency: 1)
        default: outcomes = await client.send(sampleAlert, to: tokens, maxConcurrency: 1)
        }
        #expect(outcomes.count == tokens.count)
        let notAccepted = outcomes.filter { $0.accepted == nil }
        #expect(notAccepted.isEmpty, "\(notAccepted.count) not accepted, the first: \(String(describing: notAccepted.first?.result))")
        #expect(mock.requests.count == 2 * tokens.count)
        // Each retry had what its notification had left: less than the whole timeout.
        let retries = mock.requests.suffix(tokens.count)
        #expect(retries.allSatisfy { $0.timeout < .seconds(5) && $0.timeout > .zero }, "\(retries.map(\.timeout))")
    }

    @Test("a delivery's retries stop at its deadline; a later attempt's timeout names what the attempt before ended in")
    func deliveryTable() {
        let second: UInt64 = 1_000_000_000
        let policy = RetryPolicy(maxAttempts: 5, baseDelay: .seconds(1), maxDelay: .seconds(1))
        let refused = APNsError.failed(.connectionFailed("refused"))
        // Started at t = 10 s with 5 s to go: the deadline is t = 15 s.
        var delivery = Delivery(retryPolicy: policy, startedAt: 10 * second, timeout: .seconds(5))
        #expect(delivery.deadline == 15 * second)
        #expect(delivery.remainingTime(at: 12 * second) == .seconds(3))
        #expect(delivery.remainingTime(at: 15 * second) == .zero)
        #expect(delivery.remainingTime(at: 20 * second) == .zero)

        // Refused at t = 10.5 s (the attempt took 0.5 s): the 1 s delay and another 0.5 s
        // fit in the 4.5 s left.
        #expect(delivery.attemptEnded(with: refused, providerToken: nil, jitter: 1, now: 10 * second + second / 2) == .retry(after: .seconds(1), because: refused))
        // Attempt 2 starts at 11.5 s and times out at the deadline, never sent: not retried
        // (a timeout never is), and its detail says what the attempt before it ended in.
        delivery.attemptStarting(at: 11 * second + second / 2)
        let timedOut = APNsError.failed(.timeout(mayHaveReachedAPNs: false, "the request timed out in the queue; it was never sent"))
        guard case .fail(let final) = delivery.attemptEnded(with: timedOut, providerToken: nil, jitter: 1, now: 15 * second) else {
            Issue.record("a timeout was retried")
            return
        }
        #expect(final.transportError?.code == .timeout)
        #expect(final.transportError?.mayHaveReachedAPNs == false)
        #expect(final.transportError?.detail?.contains("the attempt before it ended in") == true, "\(final)")
        #expect(final.transportError?.detail?.contains("refused") == true, "\(final)")

        // After the delay, as much time as the last attempt took must be left. Refused at
        // 12 s after 2 s: 1 s + 2 s needed, 3 s left: not made (a retry with less would
        // likely time out once sent). At 11.9 s after 1.9 s: 2.9 s needed, 3.1 s left: made.
        var tight = Delivery(retryPolicy: policy, startedAt: 10 * second, timeout: .seconds(5))
        guard case .fail(let tightError) = tight.attemptEnded(with: refused, providerToken: nil, jitter: 1, now: 12 * second) else {
            Issue.record("retried with less time left than the last attempt took")
            return
        }
        #expect(tightError.transportError?.code == .connectionFailed)
        #expect(tightError.transportError?.mayHaveReachedAPNs == false)
        #expect(tightError.transportError?.detail?.contains("not sent again") == true, "\(tightError)")
        #expect(tight.attempt == 1)
        var fits = Delivery(retryPolicy: policy, startedAt: 10 * second, timeout: .seconds(5))
        #expect(fits.attemptEnded(with: refused, providerToken: nil, jitter: 1, now: 11 * second + 9 * second / 10) == .retry(after: .seconds(1), because: refused))

        // A 503 APNs answered at once, too late for the delay: APNs' answer is the outcome.
        var late = Delivery(retryPolicy: policy, startedAt: 14 * second + second / 2, timeout: .milliseconds(600))
        let unavailable = APNsError.rejected(APNsRejection(status: 503, reason: .serviceUnavailable, apnsID: nil, deviceToken: nil))
        guard case .fail(let lateError) = late.attemptEnded(with: unavailable, providerToken: nil, jitter: 1, now: 14 * second + second / 2 + 1_000) else {
            Issue.record("retried past the deadline")
            return
        }
        #expect(lateError.rejection?.status == 503)
        #expect(lateError.rejection?.detail?.contains("not sent again") == true, "\(lateError)")

        // The time a caller held the delivery before its attempt loop took it over (an
        // array batch's first pass) does not count: refused at 10.1 s, taken over at 20 s,
        // the deadline moves from 15 s to 24.9 s.
        var held = Delivery(retryPolicy: policy, startedAt: 10 * second, timeout: .seconds(5))
        #expect(held.attemptEnded(with: refused, providerToken: nil, jitter: 1, now: 10 * second + second / 10) == .retry(after: .seconds(1), because: refused))
        held.resumed(at: 20 * second)
        #expect(held.deadline == 24 * second + 9 * second / 10)
        #expect(held.remainingTime(at: 21 * second) == .nanoseconds(Int64(3 * second + 9 * second / 10)))

        // An earlier attempt that may have reached APNs still says so at the deadline.
        let mayHave = RetryPolicy(maxAttempts: 5, baseDelay: .seconds(1), maxDelay: .seconds(1), retriesFailuresThatMayHaveReachedAPNs: true)
        var doubtful = Delivery(retryPolicy: mayHave, startedAt: 10 * second, timeout: .seconds(5))
        let closed = APNsError.failed(.connectionClosed())
        #expect(doubtful.attemptEnded(with: closed, providerToken: nil, jitter: 1, now: 10 * second + second / 10) == .retry(after: .seconds(1), because: closed))
        doubtful.attemptStarting(at: 14 * second)
        guard case .fail(let doubtfulEnd) = doubtful.attemptEnded(with: refused, providerToken: nil, jitter: 1, now: 14 * second + 1) else {
            Issue.record("retried past the deadline")
            return
        }
        #expect(doubtfulEnd.transportError?.mayHaveReachedAPNs == true, "\(doubtfulEnd)")
        #expect(doubtful.deadlinePassed().transportError?.mayHaveReachedAPNs == true)

        // A token renewed after ExpiredProviderToken: its resend is the same attempt; when
        // it times out, the detail still says what the attempt before it ended in.
        let token = ProviderToken(jwt: "header.claims.signature", issuedAt: Date(timeIntervalSince1970: 0))
        var renewed = Delivery(retryPolicy: policy, startedAt: 10 * second, timeout: .seconds(5))
        let expired = APNsError.rejected(APNsRejection(status: 403, reason: .expiredProviderToken, apnsID: nil, deviceToken: nil))
        #expect(renewed.attemptEnded(with: expired, providerToken: token, jitter: 1, now: 10 * second + 1) == .refreshProviderToken(token))
        #expect(renewed.providerTokenRefreshed(changed: true, jitter: 1, now: 10 * second + 2) == .sendAgain)
        renewed.attemptStarting(at: 10 * second + 3)
        guard case .fail(let renewedEnd) = renewed.attemptEnded(with: .failed(.timeout(mayHaveReachedAPNs: true)), providerToken: token, jitter: 1, now: 15 * second) else {
            Issue.record("a timeout was retried")
            return
        }
        #expect(renewedEnd.transportError?.detail?.contains("the attempt before it ended in status 403 ExpiredProviderToken") == true, "\(renewedEnd)")

        // The resend with a new token needs as much time left as the refused attempt
        // took: a 403 after 2 s of a 5 s call (3 s left) is resent; after 3 s (2 s left)
        // APNs' answer is the outcome, not a timeout that may have reached APNs.
        var slowRefusal = Delivery(retryPolicy: policy, startedAt: 10 * second, timeout: .seconds(5))
        #expect(slowRefusal.attemptEnded(with: expired, providerToken: token, jitter: 1, now: 12 * second) == .refreshProviderToken(token))
        #expect(slowRefusal.providerTokenRefreshed(changed: true, jitter: 1, now: 12 * second) == .sendAgain)
        var lateRefusal = Delivery(retryPolicy: policy, startedAt: 10 * second, timeout: .seconds(5))
        #expect(lateRefusal.attemptEnded(with: expired, providerToken: token, jitter: 1, now: 13 * second) == .refreshProviderToken(token))
        guard case .fail(let lateRefusalEnd) = lateRefusal.providerTokenRefreshed(changed: true, jitter: 1, now: 13 * second) else {
            Issue.record("resent with a new token with too little time left")
            return
        }
        #expect(lateRefusalEnd.rejection?.reason == .expiredProviderToken, "\(lateRefusalEnd)")
        #expect(lateRefusalEnd.rejection?.detail?.contains("not sent again with a new provider token") == true, "\(lateRefusalEnd)")

        // Without a recorded start there is no deadline: retries as the policy says.
        var open = Delivery(retryPolicy: policy, startedAt: 0, timeout: .seconds(5))
        #expect(open.deadline == 0)
        #expect(open.remainingTime(at: 99 * second) == nil)
        #expect(open.attemptEnded(with: refused, providerToken: nil, jitter: 1, now: 99 * second) == .retry(after: .seconds(1), because: refused))
    }
}
