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
    static func client(_ mock: MockTransport, timeout: Duration, policy: RetryPolicy, sleeper: CoreRecordingSleeper) -> APNsClient {
        APNsClient(
            environment: .sandbox,
            credentials: .certificate,
            transport: mock,
            retryPolicy: policy,
            requestTimeout: timeout,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
            sleep: { try await sleeper.sleep($0) },
            jitter: { 1 }
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
        #expect(timeouts.count == 3)
        // The first attempt has the whole timeout; each later one less than the one before
        // (the clock moved), and more than nothing.
        #expect(timeouts.first == .seconds(60))
        #expect(timeouts[1] < timeouts[0] && timeouts[1] > .zero, "\(timeouts)")
        #expect(timeouts[2] < timeouts[1] && timeouts[2] > .zero, "\(timeouts)")
        #expect(sleeper.durations == [.milliseconds(100), .milliseconds(200)])
    }

    @Test("a delivery's retries stop at its deadline; a later attempt's timeout names what the attempt before ended in")
    func deliveryTable() {
        let second: UInt64 = 1_000_000_000
        let policy = RetryPolicy(maxAttempts: 5, baseDelay: .seconds(1), maxDelay: .seconds(1))
        // Started at t = 10 s with 5 s to go: the deadline is t = 15 s.
        var delivery = Delivery(retryPolicy: policy, startedAt: 10 * second, timeout: .seconds(5))
        #expect(delivery.deadline == 15 * second)
        #expect(delivery.remainingTime(at: 12 * second) == .seconds(3))
        #expect(delivery.remainingTime(at: 15 * second) == .zero)
        #expect(delivery.remainingTime(at: 20 * second) == .zero)

        // A refused connection at t = 13 s: a 1 s delay ends at 14 s, before the deadline.
        let refused = APNsError.failed(.connectionFailed("refused"))
        #expect(delivery.attemptEnded(with: refused, providerToken: nil, jitter: 1, now: 13 * second) == .retry(after: .seconds(1), because: refused))
        // Attempt 2 times out at the deadline, never sent: not retried (a timeout never is),
        // and its detail says what attempt 1 ended in.
        let timedOut = APNsError.failed(.timeout(mayHaveReachedAPNs: false, "the request timed out in the queue; it was never sent"))
        guard case .fail(let final) = delivery.attemptEnded(with: timedOut, providerToken: nil, jitter: 1, now: 15 * second) else {
            Issue.record("a timeout was retried")
            return
        }
        #expect(final.transportError?.code == .timeout)
        #expect(final.transportError?.mayHaveReachedAPNs == false)
        #expect(final.transportError?.detail?.contains("attempt 1 ended in") == true, "\(final)")
        #expect(final.transportError?.detail?.contains("refused") == true, "\(final)")

        // At t = 14.5 s a 1 s delay would end past the deadline: the refusal is the outcome.
        var late = Delivery(retryPolicy: policy, startedAt: 10 * second, timeout: .seconds(5))
        guard case .fail(let lateError) = late.attemptEnded(with: refused, providerToken: nil, jitter: 1, now: 14 * second + second / 2) else {
            Issue.record("retried past the deadline")
            return
        }
        #expect(lateError.transportError?.code == .connectionFailed)
        #expect(lateError.transportError?.mayHaveReachedAPNs == false)
        #expect(lateError.transportError?.detail?.contains("not sent again") == true, "\(lateError)")
        #expect(late.attempt == 1)

        // A delay that ends exactly at the deadline leaves no time to send: not made.
        var exact = Delivery(retryPolicy: policy, startedAt: 10 * second, timeout: .seconds(5))
        #expect(exact.attemptEnded(with: refused, providerToken: nil, jitter: 1, now: 14 * second) != .retry(after: .seconds(1), because: refused))

        // An earlier attempt that may have reached APNs still says so at the deadline.
        let mayHave = RetryPolicy(maxAttempts: 5, baseDelay: .seconds(1), maxDelay: .seconds(1), retriesFailuresThatMayHaveReachedAPNs: true)
        var doubtful = Delivery(retryPolicy: mayHave, startedAt: 10 * second, timeout: .seconds(5))
        let closed = APNsError.failed(.connectionClosed())
        #expect(doubtful.attemptEnded(with: closed, providerToken: nil, jitter: 1, now: 11 * second) == .retry(after: .seconds(1), because: closed))
        guard case .fail(let doubtfulEnd) = doubtful.attemptEnded(with: refused, providerToken: nil, jitter: 1, now: 14 * second + 1) else {
            Issue.record("retried past the deadline")
            return
        }
        #expect(doubtfulEnd.transportError?.mayHaveReachedAPNs == true, "\(doubtfulEnd)")
        #expect(doubtful.deadlinePassed().transportError?.mayHaveReachedAPNs == true)

        // Without a recorded start there is no deadline: retries as the policy says.
        var open = Delivery(retryPolicy: policy, startedAt: 0, timeout: .seconds(5))
        #expect(open.deadline == 0)
        #expect(open.remainingTime(at: 99 * second) == nil)
        #expect(open.attemptEnded(with: refused, providerToken: nil, jitter: 1, now: 99 * second) == .retry(after: .seconds(1), because: refused))
    }
}
