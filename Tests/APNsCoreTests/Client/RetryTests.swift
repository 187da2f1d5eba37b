import APNsTesting
import Foundation
import Logging
import Synchronization
import Testing

@testable import APNsCore

@Suite struct RetryTests {
    static let device = mockToken(1)

    @Test(arguments: [APNsReason.internalServerError, .serviceUnavailable, .shutdown, .tooManyRequests])
    func retryableRejectionIsRetriedWithTheSameAPNsID(reason: APNsReason) async throws {
        let mock = MockTransport()
        mock.respond(to: Self.device, with: [.rejected(reason), .accepted])
        let sleeper = CoreRecordingSleeper()
        let client = APNsClient.testing(transport: mock, sleeper: sleeper)
        let accepted = try await client.send(sampleAlert, to: Self.device)
        let requests = mock.requests
        #expect(requests.count == 2)
        #expect(requests[0].header("apns-id") == requests[1].header("apns-id"))
        #expect(accepted.apnsID == requests[0].apnsID)
        #expect(requests[0].body == requests[1].body)
        #expect(sleeper.durations.count == 1)
    }

    // Apple: a retry is the same notification again, so APNs can tell it apart from a
    // new one (same apns-id) and treat it as the sender asked (collapse, expiry, priority).
    // The attempt loop rebuilds it from the first request: every header but the
    // provider token's must come back unchanged, whichever way the loop went on.
    @Test(arguments: [APNsReason.serviceUnavailable, .expiredProviderToken])
    func aRetryResendsEveryHeaderOfTheNotification(reason: APNsReason) async throws {
        let mock = MockTransport()
        mock.respond(to: Self.device, with: [.rejected(reason), .accepted])
        let client = APNsClient.testing(transport: mock, credentials: .providerToken(CoreCountingTokenSource()))
        var notification = PushNotification(payload: .alert(title: "Score", body: "2-1"), topic: "com.example.app")
        notification.priority = .powerConsiderate
        notification.collapseID = "match-42"
        notification.expiration = .at(Date(timeIntervalSince1970: 1_900_000_000))
        _ = try await client.send(notification, to: Self.device)
        let requests = mock.requests
        try #require(requests.count == 2)
        let unchanged = { (request: APNsRequest) in request.headers.filter { $0.name != "authorization" } }
        #expect(unchanged(requests[1]) == unchanged(requests[0]))
        #expect(requests[1].header("apns-collapse-id") == "match-42")
        #expect(requests[1].header("apns-expiration") == "1900000000")
        #expect(requests[1].header("apns-priority") == "5")
        #expect(requests[1].body == requests[0].body)
    }

    /// A permanent failure (sending again cannot fix it) stays permanent when it is the
    /// delivery's final error, also when an earlier attempt may have reached APNs and the
    /// error is rebuilt to say so (found from outside: `isPermanent` came back `false`).
    @Test func aPermanentFailureStaysPermanentAsTheFinalError() async throws {
        let mock = MockTransport()
        mock.respond(to: Self.device, with: [.failure(.connectionClosed()), .failure(APNsTransportError.connectionFailed("no route").permanent)])
        let policy = RetryPolicy(maxAttempts: 3, baseDelay: .zero, maxDelay: .zero, retriesFailuresThatMayHaveReachedAPNs: true)
        let client = APNsClient.testing(transport: mock, retryPolicy: policy)
        do {
            _ = try await client.send(sampleAlert, to: Self.device)
            Issue.record("accepted")
        } catch {
            let failure = try #require(error.transportError)
            #expect(failure.code == .connectionFailed)
            #expect(failure.mayHaveReachedAPNs)
            #expect(failure.isPermanent)
        }
        #expect(mock.requests.count == 2)
    }

    @Test func givesUpAfterMaxAttemptsWithTheLastRejection() async throws {
        let mock = MockTransport()
        mock.respond(to: Self.device, with: .rejected(.serviceUnavailable))
        let sleeper = CoreRecordingSleeper()
        let policy = RetryPolicy(maxAttempts: 4, baseDelay: .seconds(1), maxDelay: .seconds(3))
        let client = APNsClient.testing(transport: mock, retryPolicy: policy, sleeper: sleeper, jitter: 1)
        do {
            _ = try await client.send(sampleAlert, to: Self.device)
            Issue.record("accepted")
        } catch {
            #expect(error.rejection?.status == 503)
            #expect(error.rejection?.reason == .serviceUnavailable)
            #expect(error.rejection?.apnsID == mock.requests.first?.apnsID)
            #expect(error.rejection?.deviceToken == Self.device)
        }
        #expect(mock.requests.count == 4)
        #expect(Set(mock.requests.compactMap { $0.header("apns-id") }).count == 1)
        // Exponential, capped at maxDelay: 1 s, 2 s, then 3 s (not 4 s).
        #expect(sleeper.durations == [.seconds(1), .seconds(2), .seconds(3)])
    }

    // Apple: never retry these.
    @Test(arguments: [
        APNsReason.badDeviceToken, .deviceTokenNotForTopic, .forbidden, .expiredToken, .unregistered,
        .payloadTooLarge, .badTopic, .invalidProviderToken, .tooManyProviderTokenUpdates,
    ])
    func nonRetryableRejectionIsSentOnce(reason: APNsReason) async throws {
        let mock = MockTransport()
        mock.respond(to: Self.device, with: [.rejected(reason), .accepted])
        let sleeper = CoreRecordingSleeper()
        let client = APNsClient.testing(transport: mock, sleeper: sleeper)
        do {
            _ = try await client.send(sampleAlert, to: Self.device)
            Issue.record("\(reason) was retried into success")
        } catch {
            #expect(error.rejection?.reason == reason)
            #expect(error.rejection?.status == reason.status)
        }
        #expect(mock.requests.count == 1)
        #expect(sleeper.durations.isEmpty)
    }

    @Test(arguments: [
        APNsTransportError.connectionFailed(), .goAway(), .streamRefused(), .queueFull(), .tlsFailure(),
    ])
    func failureThatNeverReachedAPNsIsRetried(failure: APNsTransportError) async throws {
        let mock = MockTransport()
        mock.respond(to: Self.device, with: [.failure(failure), .accepted])
        let client = APNsClient.testing(transport: mock)
        _ = try await client.send(sampleAlert, to: Self.device)
        #expect(mock.requests.count == 2)
        #expect(mock.requests[0].header("apns-id") == mock.requests[1].header("apns-id"))
    }

    /// Failures that may have reached APNs, and those that end a send whatever they say:
    /// shutdown, cancellation, and timeouts, even never sent (the time given is spent).
    @Test(arguments: [
        APNsTransportError.connectionClosed(), .timeout(), .streamReset(), .protocolError(),
        .shutdown(), .cancelled(mayHaveReachedAPNs: false),
        .timeout(mayHaveReachedAPNs: false, "the request timed out in the queue; it was never sent"),
        .timeout(mayHaveReachedAPNs: false, "the request timed out before it was completely written"),
        // Sending again cannot fix it: a refused client certificate.
        APNsTransportError.tlsFailure("api.push.apple.com:443 rejected the client certificate").permanent,
    ])
    func failureThatMayHaveReachedAPNsIsNotRetried(failure: APNsTransportError) async throws {
        let mock = MockTransport()
        mock.respond(to: Self.device, with: [.failure(failure), .accepted])
        let client = APNsClient.testing(transport: mock)
        do {
            _ = try await client.send(sampleAlert, to: Self.device)
            Issue.record("\(failure) was retried")
        } catch {
            #expect(error.transportError == failure)
        }
        #expect(mock.requests.count == 1)
    }

    @Test("a failure sending again cannot fix (a refused certificate or proxy credentials) is not retried, even with the opt-in")
    func permanentFailureIsNotRetried() {
        let refused = APNsTransportError.tlsFailure("api.push.apple.com:443 rejected the client certificate").permanent
        #expect(refused.isPermanent && !refused.mayHaveReachedAPNs)
        #expect(!RetryPolicy.default.shouldRetry(.failed(refused)))
        // The same failure, not permanent, is retried (it never reached APNs).
        #expect(RetryPolicy.default.shouldRetry(.failed(.tlsFailure("the handshake did not finish"))))
        #expect(!RetryPolicy(retriesFailuresThatMayHaveReachedAPNs: true).shouldRetry(.failed(refused)))
    }

    @Test("a timeout never sent is not retried by default, and is with the opt-in")
    func timeoutIsNotRetried() {
        let queued = APNsTransportError.timeout(mayHaveReachedAPNs: false, "the request timed out in the queue; it was never sent")
        #expect(!RetryPolicy.default.shouldRetry(.failed(queued)))
        #expect(RetryPolicy(retriesFailuresThatMayHaveReachedAPNs: true).shouldRetry(.failed(queued)))
        // Never sent and not a timeout: retried.
        #expect(RetryPolicy.default.shouldRetry(.failed(.connectionFailed())))
    }

    @Test func optInRetriesFailuresThatMayHaveReachedAPNs() async throws {
        let mock = MockTransport()
        mock.respond(to: Self.device, with: [.failure(.connectionClosed()), .failure(.timeout()), .accepted])
        let policy = RetryPolicy(retriesFailuresThatMayHaveReachedAPNs: true)
        let client = APNsClient.testing(transport: mock, retryPolicy: policy)
        _ = try await client.send(sampleAlert, to: Self.device)
        #expect(mock.requests.count == 3)
    }

    @Test("cancelled as a retry's wait ends: the error is attempt 1's, which may have reached APNs")
    func cancellationBeforeARetryRemembersTheEarlierAttempt() async throws {
        // The first attempt times out after it was sent (it may have reached APNs) and the
        // policy retries it; the task is cancelled as the retry's wait ends, so the call ends
        // before attempt 2 is sent. The error is what attempt 1 ended in: its timeout, which
        // says the notification may have reached APNs.
        let mock = MockTransport()
        mock.respond(to: Self.device, with: [.failure(.timeout()), .accepted])
        let client = APNsClient(
            environment: .sandbox,
            credentials: .certificate,
            transport: mock,
            retryPolicy: RetryPolicy(retriesFailuresThatMayHaveReachedAPNs: true),
            requestTimeout: .seconds(120),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
            // The wait ends by the caller's cancellation, as Task.sleep does (the wait runs
            // beside the client's shutdown signal, in a child of the calling task).
            sleep: { _ in throw CancellationError() },
            jitter: { 1 }
        )
        let result = await Task { try await client.send(sampleAlert, to: Self.device) }.result
        guard case .failure(let failure) = result, let error = failure as? APNsError else {
            Issue.record("accepted after cancellation")
            return
        }
        #expect(error.transportError?.code == .timeout)
        #expect(error.transportError?.mayHaveReachedAPNs == true)
        #expect(mock.requests.count == 1)
    }

    /// `result` is a cancellation that says the notification may have reached APNs, after
    /// exactly one request.
    static func expectCancelledAfterOneRequest(
        _ result: Result<APNsAccepted, any Error>, _ mock: MockTransport, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        guard case .failure(let failure) = result, let error = failure as? APNsError else {
            Issue.record("accepted after cancellation", sourceLocation: sourceLocation)
            return
        }
        #expect(error.transportError?.code == .cancelled, sourceLocation: sourceLocation)
        #expect(error.transportError?.mayHaveReachedAPNs == true, sourceLocation: sourceLocation)
        #expect(mock.requests.count == 1, sourceLocation: sourceLocation)
    }

    /// The ways to send one notification, for checks that every form agrees.
    enum SendForm: CaseIterable, Sendable {
        case single, tokenArray, deliveryArray, tokenStream
    }

    /// `notification` to `device` through `form` of the public API: its one outcome.
    static func sendOnce(_ client: APNsClient, _ form: SendForm, to device: DeviceToken) async -> Result<APNsAccepted, APNsError> {
        switch form {
        case .single:
            do throws(APNsError) {
                return .success(try await client.send(sampleAlert, to: device))
            } catch {
                return .failure(error)
            }
        case .tokenArray:
            let outcomes = await client.send(sampleAlert, to: [device])
            return outcomes.count == 1 ? outcomes[0].result : .failure(.failed(.protocolError("\(outcomes.count) outcomes")))
        case .deliveryArray:
            let outcomes = await client.send([(notification: sampleAlert, deviceToken: device)])
            return outcomes.count == 1 ? outcomes[0].result : .failure(.failed(.protocolError("\(outcomes.count) outcomes")))
        case .tokenStream:
            let received = Mutex<[APNsOutcome]>([])
            let tokens = AsyncStream<DeviceToken> { continuation in
                continuation.yield(device)
                continuation.finish()
            }
            await client.send(sampleAlert, to: tokens) { _, outcome in
                received.withLock { $0.append(outcome) }
            }
            let outcomes = received.withLock { $0 }
            return outcomes.count == 1 ? outcomes[0].result : .failure(.failed(.protocolError("\(outcomes.count) outcomes")))
        }
    }

    /// APNs answered 503 and the client waits to retry; the caller cancels during that
    /// wait. APNs' answer is the outcome (nothing was delivered, and the 503 says why), in
    /// every form, through the public API; nothing more is sent.
    @Test(.timeLimit(.minutes(2)), arguments: SendForm.allCases)
    func cancelledDuringTheBackoffKeepsAPNsAnswer(form: SendForm) async throws {
        let mock = MockTransport()
        mock.respond(to: Self.device, with: [.rejected(.serviceUnavailable), .accepted])
        let store = CoreCapturingLogHandler.Store()
        let client = APNsClient(
            environment: .sandbox,
            credentials: .certificate,
            transport: mock,
            retryPolicy: RetryPolicy(maxAttempts: 3, baseDelay: .seconds(600), maxDelay: .seconds(600)),
            requestTimeout: .seconds(3_600),  // the wait must fit in the call's timeout
            logger: Logger(label: "test") { _ in CoreCapturingLogHandler(store: store) }
        )
        let task = Task { await Self.sendOnce(client, form, to: Self.device) }
        // The client says it retries, then waits 5 to 10 minutes.
        let deadline = ContinuousClock.now + .seconds(60)
        while !store.all.contains(where: { $0.contains("retrying notification") }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(1))
        }
        task.cancel()
        let result = await task.value
        guard case .failure(let error) = result else {
            Issue.record("accepted: the retry was sent despite the cancellation")
            return
        }
        #expect(error.rejection?.status == 503, "\(error)")
        #expect(error.rejection?.reason == .serviceUnavailable, "\(error)")
        #expect(mock.requests.count == 1)
    }

    @Test func expiredProviderTokenIsRefreshedOnce() async throws {
        let mock = MockTransport()
        mock.respond(to: Self.device, with: [.rejected(.expiredProviderToken), .accepted])
        let source = CoreCountingTokenSource()
        let sleeper = CoreRecordingSleeper()
        let client = APNsClient.testing(
            transport: mock,
            credentials: .providerToken(source),
            retryPolicy: .never,
            sleeper: sleeper
        )
        _ = try await client.send(sampleAlert, to: Self.device)
        let requests = mock.requests
        #expect(requests.count == 2)
        #expect(requests[0].header("authorization") == "bearer header.claims.signature-1")
        #expect(requests[1].header("authorization") == "bearer header.claims.signature-2")
        #expect(requests[0].header("apns-id") == requests[1].header("apns-id"))
        #expect(source.invalidated == ["header.claims.signature-1"])
        #expect(source.tokenCalls == 2)
        #expect(sleeper.durations.isEmpty)
    }

    @Test func expiredProviderTokenTwiceIsNotRefreshedAgain() async throws {
        let mock = MockTransport()
        mock.respond(to: Self.device, with: .rejected(.expiredProviderToken))
        let source = CoreCountingTokenSource()
        let client = APNsClient.testing(transport: mock, credentials: .providerToken(source))
        do {
            _ = try await client.send(sampleAlert, to: Self.device)
            Issue.record("accepted")
        } catch {
            #expect(error.rejection?.reason == .expiredProviderToken)
            #expect(error.rejection?.remedy == .fixCredentials)
        }
        #expect(mock.requests.count == 2)
        #expect(source.invalidated.count == 1)
    }

    /// A source that keeps its token after invalidate (as the cache does within 20
    /// minutes of its last token): the client must not send the same JWT again.
    @Test func expiredProviderTokenKeptBySourceIsNotResent() async throws {
        struct KeepingSource: ProviderTokenSource {
            func token() throws -> ProviderToken {
                ProviderToken(jwt: "header.claims.kept", issuedAt: Date(timeIntervalSince1970: 0))
            }
            func invalidate(_ token: ProviderToken) {}
        }
        let mock = MockTransport()
        mock.respond(to: Self.device, with: [.rejected(.expiredProviderToken), .accepted])
        let client = APNsClient.testing(transport: mock, credentials: .providerToken(KeepingSource()))
        do {
            _ = try await client.send(sampleAlert, to: Self.device)
            Issue.record("accepted with a token APNs had just called expired")
        } catch {
            #expect(error.rejection?.reason == .expiredProviderToken)
        }
        #expect(mock.requests.count == 1)
    }

    /// A source that cannot make a new token after invalidate (its signer is down): the
    /// rejection says so, naming the source's error, not that the source kept the token.
    @Test(arguments: [false, true])
    func expiredProviderTokenWhoseRenewalFailsNamesTheSourcesError(batch: Bool) async throws {
        struct SignerDown: Error, CustomStringConvertible { var description: String { "the signing service is unreachable" } }
        final class FailingAfterInvalidate: ProviderTokenSource {
            let invalidated = Mutex(false)
            func token() throws -> ProviderToken {
                if invalidated.withLock({ $0 }) { throw SignerDown() }
                return ProviderToken(jwt: "header.claims.first", issuedAt: Date(timeIntervalSince1970: 0))
            }
            func invalidate(_ token: ProviderToken) { invalidated.withLock { $0 = true } }
        }
        let mock = MockTransport()
        mock.respond(to: Self.device, with: [.rejected(.expiredProviderToken), .accepted])
        let client = APNsClient.testing(transport: mock, credentials: .providerToken(FailingAfterInvalidate()))
        let outcome: Result<APNsAccepted, APNsError>
        if batch {
            outcome = try #require(await client.send(sampleAlert, to: [Self.device]).first).result
        } else {
            do { outcome = .success(try await client.send(sampleAlert, to: Self.device)) } catch { outcome = .failure(error) }
        }
        guard case .failure(let error) = outcome else {
            Issue.record("accepted without a new token")
            return
        }
        #expect(error.rejection?.reason == .expiredProviderToken, "\(error)")
        #expect(error.rejection?.detail?.contains("the provider token source could not make a new token: the signing service is unreachable") == true, "\(error)")
        #expect(error.rejection?.detail?.contains("kept it") != true, "\(error)")
        #expect(mock.requests.count == 1)
    }

    @Test func backoffBoundsAreHalfToFullOfTheExponentialBound() {
        let policy = RetryPolicy(maxAttempts: 10, baseDelay: .milliseconds(100), maxDelay: .seconds(1))
        let bounds: [Duration] = [
            .milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .seconds(1), .seconds(1),
        ]
        for (index, bound) in bounds.enumerated() {
            let retry = index + 1
            #expect(policy.delay(beforeRetry: retry, jitter: 1) == bound)
            #expect(policy.delay(beforeRetry: retry, jitter: 0) == bound / 2)
            let middle = policy.delay(beforeRetry: retry, jitter: 0.5)
            #expect(middle > bound / 2 && middle < bound)
        }
        // Huge retry counts and out-of-range jitter stay in bounds.
        #expect(policy.delay(beforeRetry: 1000, jitter: 7) == .seconds(1))
        #expect(policy.delay(beforeRetry: 1000, jitter: -3) == .milliseconds(500))
        #expect(policy.delay(beforeRetry: 2, jitter: .nan) == .milliseconds(100))
    }

    @Test func jitterIsAppliedThroughTheClient() async throws {
        let mock = MockTransport()
        mock.respond(to: Self.device, with: .rejected(.tooManyRequests))
        let sleeper = CoreRecordingSleeper()
        let policy = RetryPolicy(maxAttempts: 3, baseDelay: .seconds(2), maxDelay: .seconds(60))
        let client = APNsClient.testing(transport: mock, retryPolicy: policy, sleeper: sleeper, jitter: 0)
        _ = try? await client.send(sampleAlert, to: Self.device)
        #expect(sleeper.durations == [.seconds(1), .seconds(2)])
    }

    @Test func invalidNotificationIsNeverSent() async throws {
        let mock = MockTransport()
        let client = APNsClient.testing(transport: mock)
        let background = PushNotification(
            body: .raw(Array("{\"aps\":{\"content-available\":1}}".utf8)),
            pushType: .background,
            topic: "com.example.app",
            priority: .immediate
        )
        do {
            _ = try await client.send(background, to: Self.device)
            Issue.record("sent")
        } catch {
            #expect(error.requestError?.code == .invalidPriority)
        }
        #expect(mock.requests.isEmpty)
    }

    /// A payload that cannot be encoded: the client's error carries the payload's own
    /// error, so its size, limit, push type and key path can be read without parsing the
    /// description (found from outside: only the text had them).
    @Test func aPayloadErrorKeepsItsFieldsThroughTheClient() async throws {
        let mock = MockTransport()
        let client = APNsClient.testing(transport: mock)
        // Apple: an alert's payload may be 4096 bytes; `{"aps":{"alert":{"body":"…"}}}` adds 29.
        let oversized = PushNotification(payload: .alert(body: String(repeating: "a", count: 4096 - 28)), topic: "com.example.app")
        do {
            _ = try await client.send(oversized, to: Self.device)
            Issue.record("sent")
        } catch {
            let payloadError = try #require(error.requestError?.payloadError)
            #expect(payloadError.code == .payloadTooLarge)
            #expect(payloadError.size == 4097)
            #expect(payloadError.limit == 4096)
            #expect(payloadError.pushType == .alert)
        }
        let loud = PushNotification(payload: Payload(aps: APS(sound: .critical(name: "a", volume: 1.5))), topic: "com.example.app")
        let outcomes = await client.send(loud, to: [Self.device])
        #expect(outcomes.first?.error?.requestError?.payloadError?.keyPath == "aps.sound.volume")
        #expect(outcomes.first?.error?.requestError?.payloadError?.code == .valueOutOfRange)
        #expect(mock.requests.isEmpty)
    }

    @Test func oversizedPayloadIsInvalidAndNeverSent() async throws {
        let mock = MockTransport()
        let client = APNsClient.testing(transport: mock)
        // 4096 bytes is the limit for an alert (Apple); 5120 for VoIP.
        let oversized = PushNotification(body: .raw([UInt8](repeating: 0x20, count: 4097)), topic: "com.example.app")
        do {
            _ = try await client.send(oversized, to: Self.device)
            Issue.record("sent")
        } catch {
            #expect(error.requestError?.code == .invalidPayload)
            #expect(error.requestError?.description.contains("4097") == true)
        }
        let outcomes = await client.send(oversized, to: [Self.device, mockToken(2)])
        #expect(outcomes.allSatisfy { $0.error?.requestError?.code == .invalidPayload })
        #expect(mock.requests.isEmpty)
    }

    @Test func failingTokenSourceMeansInvalidNotSent() async throws {
        let mock = MockTransport()
        let client = APNsClient.testing(transport: mock, credentials: .providerToken(CoreFailingTokenSource()))
        do {
            _ = try await client.send(sampleAlert, to: Self.device)
            Issue.record("sent")
        } catch {
            #expect(error.requestError?.code == .providerTokenUnavailable)
        }
        #expect(mock.requests.isEmpty)
    }

    @Test func certificateCredentialsSendNoAuthorization() async throws {
        let mock = MockTransport()
        let client = APNsClient.testing(transport: mock, credentials: .certificate)
        _ = try await client.send(sampleAlert, to: Self.device)
        #expect(mock.requests.first?.header("authorization") == nil)
        #expect(mock.requests.first?.authority == "api.sandbox.push.apple.com")
    }

    @Test func cancellationDuringAnAnswerIsACancelledFailure() async throws {
        let mock = MockTransport()
        mock.respondByDefault(with: MockTransport.Response.accepted.delayed(by: .seconds(600)))
        let client = APNsClient.testing(transport: mock)
        let task = Task { try await client.send(sampleAlert, to: Self.device) }
        while mock.requests.isEmpty { await Task.yield() }
        task.cancel()
        Self.expectCancelledAfterOneRequest(await task.result, mock)
    }

    @Test func logsNeverContainTheJWTOrWholeDeviceToken() async throws {
        let store = CoreCapturingLogHandler.Store()
        let logger = Logger(label: "test") { _ in CoreCapturingLogHandler(store: store) }
        let mock = MockTransport()
        let device = try DeviceToken(hex: "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0")
        mock.respond(
            to: device,
            with: [.rejected(.expiredProviderToken), .rejected(.serviceUnavailable), .rejected(.invalidProviderToken)]
        )
        let client = APNsClient.testing(
            transport: mock,
            credentials: .providerToken(CoreCountingTokenSource()),
            logger: logger
        )
        _ = try? await client.send(sampleAlert, to: device)
        let lines = store.all
        #expect(lines.count >= 4)
        #expect(lines.allSatisfy { !$0.contains("header.claims.signature") && !$0.contains(device.hexString) })
        #expect(lines.contains { $0.contains("00fc13ad…") })
        // Only the credentials problem is logged above debug.
        #expect(lines.filter { $0.hasPrefix("warning") }.count == 1)
        #expect(lines.allSatisfy { $0.hasPrefix("trace") || $0.hasPrefix("debug") || $0.hasPrefix("warning") })
    }
}
