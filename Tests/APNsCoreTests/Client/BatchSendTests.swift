import APNsTesting
import Foundation
import Logging
import Synchronization
import Testing

@testable import APNsCore

@Suite struct BatchSendTests {
    /// The outcome the mock scripts for the token at `index`.
    enum Expected: Equatable { case accepted, unregistered, badDeviceToken, connectionClosed, retriedThenAccepted }
    static func expected(_ index: Int) -> Expected {
        switch index % 10 {
        case 0: .unregistered
        case 1: .connectionClosed
        case 2: .badDeviceToken
        case 3: .retriedThenAccepted
        default: .accepted
        }
    }

    @Test func thousandTokensEachGetExactlyOneOutcomeInInputOrder() async throws {
        let tokens = (0..<1000).map { mockToken($0, bytes: $0 % 7 == 0 ? 80 : 32) }
        let mock = MockTransport()
        let inFlight = Mutex((current: 0, peak: 0))
        mock.respond { request in
            inFlight.withLock {
                $0.current += 1; $0.peak = max($0.peak, $0.current)
            }
            for _ in 0..<3 { await Task.yield() }
            inFlight.withLock { $0.current -= 1 }
            return .accepted
        }
        for (index, device) in tokens.enumerated() {
            switch Self.expected(index) {
            case .unregistered:
                mock.respond(
                    to: device,
                    with: .rejected(.unregistered, timestamp: Date(timeIntervalSince1970: 1_600_000_000))
                )
            case .connectionClosed: mock.respond(to: device, with: .failure(.connectionClosed()))
            case .badDeviceToken: mock.respond(to: device, with: .rejected(.badDeviceToken))
            case .retriedThenAccepted:
                mock.respond(to: device, with: [.rejected(.tooManyRequests), .accepted(uniqueID: "u-\(index)")])
            case .accepted: break
            }
        }
        let client = APNsClient.testing(transport: mock)
        let outcomes = await client.send(sampleAlert, to: tokens, maxConcurrency: 16)

        #expect(outcomes.count == tokens.count)
        #expect(outcomes.map(\.deviceToken) == tokens)
        for (index, outcome) in outcomes.enumerated() {
            switch Self.expected(index) {
            case .accepted:
                #expect(outcome.accepted != nil)
            case .retriedThenAccepted:
                #expect(outcome.accepted?.uniqueID == "u-\(index)")
            case .unregistered:
                #expect(outcome.error?.rejection?.reason == .unregistered)
                #expect(outcome.error?.rejection?.timestamp == Date(timeIntervalSince1970: 1_600_000_000))
                #expect(outcome.error?.rejection?.deviceToken == tokens[index])
            case .badDeviceToken:
                #expect(outcome.error?.rejection?.reason == .badDeviceToken)
            case .connectionClosed:
                #expect(outcome.error?.transportError?.code == .connectionClosed)
            }
        }
        // Every token was sent exactly once, plus one retry for each TooManyRequests.
        let sent = mock.requests
        #expect(sent.count == 1000 + 100)
        var perToken: [DeviceToken: Int] = [:]
        for request in sent { perToken[request.deviceToken ?? mockToken(-1), default: 0] += 1 }
        #expect(perToken.count == 1000)
        for (index, device) in tokens.enumerated() {
            #expect(perToken[device] == (Self.expected(index) == .retriedThenAccepted ? 2 : 1))
        }
        // Every accepted notification has its own apns-id.
        let ids = outcomes.compactMap { $0.accepted?.apnsID }
        #expect(Set(ids).count == ids.count)
        #expect(inFlight.withLock { $0.peak } <= 16)
    }

    /// The lower bound the test above cannot show: the batch really has `maxConcurrency`
    /// requests in flight at once. The first 16 answers wait until all 16 requests have
    /// arrived (bounded: 30 s), so a client sending fewer at a time is seen, not hidden.
    @Test func batchKeepsMaxConcurrencyRequestsInFlight() async throws {
        let tokens = (0..<64).map { mockToken($0) }
        let state = Mutex((arrived: 0, current: 0, peak: 0))
        let mock = MockTransport()
        mock.respond { _ in
            let arrived = state.withLock {
                $0.arrived += 1; $0.current += 1; $0.peak = max($0.peak, $0.current)
                return $0.arrived
            }
            if arrived <= 16 {
                let deadline = ContinuousClock.now + .seconds(30)
                while state.withLock({ $0.arrived }) < 16, ContinuousClock.now < deadline {
                    try? await Task.sleep(for: .milliseconds(1))
                }
            }
            state.withLock { $0.current -= 1 }
            return .accepted
        }
        let client = APNsClient.testing(transport: mock)
        let outcomes = await client.send(sampleAlert, to: tokens, maxConcurrency: 16)
        #expect(outcomes.allSatisfy { $0.accepted != nil })
        #expect(state.withLock { $0.peak } == 16)
    }

    @Test func invalidNotificationFailsEveryTokenWithoutSending() async {
        let mock = MockTransport()
        let client = APNsClient.testing(transport: mock)
        let tooLong = PushNotification(
            payload: .alert(body: "x"),
            topic: "com.example.app",
            collapseID: String(repeating: "c", count: 65)
        )
        let tokens = (0..<5).map { mockToken($0) }
        let outcomes = await client.send(tooLong, to: tokens)
        #expect(outcomes.map(\.deviceToken) == tokens)
        #expect(outcomes.allSatisfy { $0.error?.requestError?.code == .invalidCollapseID })
        #expect(mock.requests.isEmpty)
    }

    @Test func emptyListAndDegenerateConcurrency() async {
        let mock = MockTransport()
        let client = APNsClient.testing(transport: mock)
        #expect(await client.send(sampleAlert, to: []).isEmpty)
        let outcomes = await client.send(
            sampleAlert,
            to: [mockToken(1), mockToken(2), mockToken(1)],
            maxConcurrency: 0
        )
        #expect(outcomes.count == 3)
        #expect(outcomes.allSatisfy { $0.accepted != nil })
        #expect(mock.requests.count == 3)
    }

    @Test func cancelledBatchStillAccountsForEveryToken() async {
        let mock = MockTransport()
        mock.respondByDefault(with: MockTransport.Response.accepted.delayed(by: .seconds(600)))
        let client = APNsClient.testing(transport: mock)
        let tokens = (0..<50).map { mockToken($0) }
        let task = Task { await client.send(sampleAlert, to: tokens, maxConcurrency: 5) }
        while mock.requests.count < 5 { await Task.yield() }
        task.cancel()
        let outcomes = await task.value
        #expect(outcomes.count == 50)
        #expect(outcomes.map(\.deviceToken) == tokens)
        #expect(outcomes.allSatisfy { $0.error?.transportError?.code == .cancelled })
        // Those never started were certainly not sent.
        #expect(mock.requests.count < 50)
    }

    /// The forms of an array batch.
    enum ArrayForm: CaseIterable, Sendable { case tokens, deliveries, tokensWithOnOutcome }

    /// Cancelled with a window of requests in flight and the rest never sent: every token
    /// still gets exactly one outcome, `cancelled`, and the ones never sent say they never
    /// reached APNs. Their requests are not built: the provider token source, asked once
    /// per request built, is asked only for the requests sent, give or take the window's
    /// worth that can be made as the cancellation lands.
    @Test(.timeLimit(.minutes(2)), arguments: ArrayForm.allCases)
    func cancelledBatchBuildsNoRequestItNeverSends(form: ArrayForm) async {
        let mock = MockTransport()
        mock.respondByDefault(with: MockTransport.Response.accepted.delayed(by: .seconds(600)))
        let source = CoreCountingTokenSource()
        let client = APNsClient.testing(transport: mock, credentials: .providerToken(source))
        let count = 10_000
        let width = 5
        let tokens = (0..<count).map { mockToken($0) }
        let task = Task { () -> [APNsOutcome] in
            switch form {
            case .tokens:
                return await client.send(sampleAlert, to: tokens, maxConcurrency: width)
            case .deliveries:
                return await client.send(tokens.map { (notification: sampleAlert, deviceToken: $0) }, maxConcurrency: width)
            case .tokensWithOnOutcome:
                let received = Mutex<[Int: [APNsOutcome]]>([:])
                await client.send(sampleAlert, to: tokens, maxConcurrency: width) { index, outcome in
                    received.withLock { $0[index, default: []].append(outcome) }
                }
                let byIndex = received.withLock { $0 }
                #expect(byIndex.values.allSatisfy { $0.count == 1 })
                return (0..<count).compactMap { byIndex[$0]?.first }
            }
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while mock.requests.count < width, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(1)) }
        task.cancel()
        let outcomes = await task.value

        #expect(outcomes.map(\.deviceToken) == tokens)
        #expect(outcomes.allSatisfy { $0.error?.transportError?.code == .cancelled })
        let sent = Set(mock.requests.compactMap(\.deviceToken))
        #expect(sent.count < count)
        #expect(outcomes.filter { !sent.contains($0.deviceToken) }.allSatisfy { $0.error?.transportError?.mayHaveReachedAPNs == false })
        #expect(source.tokenCalls <= mock.requests.count + width, "requests built: \(source.tokenCalls), sent: \(mock.requests.count)")
    }

    @Test func batchSummaryIsLoggedAtDebug() async {
        let store = CoreCapturingLogHandler.Store()
        let logger = Logger(label: "test") { _ in CoreCapturingLogHandler(store: store) }
        let mock = MockTransport()
        mock.respond(to: mockToken(2), with: .rejected(.unregistered))
        mock.respond(to: mockToken(3), with: .failure(.connectionClosed()))
        let client = APNsClient.testing(transport: mock, logger: logger)
        let outcomes = await client.send(sampleAlert, to: [mockToken(1), mockToken(2), mockToken(3)])
        #expect(outcomes.map { $0.error == nil } == [true, false, false])
        let summary = store.all.filter { $0.contains("batch sent") }
        #expect(summary.count == 1)
        #expect(summary.first?.hasPrefix("debug") == true)
        for part in [#""apns.accepted": 1"#, #""apns.rejected": 1"#, #""apns.failed": 1"#, #""apns.count": 3"#] {
            #expect(summary.first?.contains(part) == true, "\(part)")
        }
    }

    /// A batch logs each notification's end as a single send does: debug for a rejection
    /// or failure, a warning when the credentials are wrong; final rejections are decided
    /// in the first pass, and retryable ones are retried.
    @Test func batchLogsEachEndingLikeASingleSend() async {
        let store = CoreCapturingLogHandler.Store()
        let logger = Logger(label: "test") { _ in CoreCapturingLogHandler(store: store) }
        let mock = MockTransport()
        mock.respond(to: mockToken(2), with: .rejected(.unregistered))
        mock.respond(to: mockToken(3), with: .rejected(.invalidProviderToken))
        mock.respond(to: mockToken(4), with: [.rejected(.serviceUnavailable), .accepted])
        let client = APNsClient.testing(transport: mock, logger: logger)
        let tokens = (1...4).map { mockToken($0) }
        let outcomes = await client.send(sampleAlert, to: tokens)
        #expect(outcomes[0].accepted != nil)
        #expect(outcomes[1].error?.rejection?.reason == .unregistered)
        #expect(outcomes[2].error?.rejection?.reason == .invalidProviderToken)
        #expect(outcomes[3].accepted != nil)
        let lines = store.all
        let notAccepted = lines.filter { $0.contains("notification not accepted") }
        #expect(notAccepted.count == 1)
        #expect(notAccepted.first?.hasPrefix("debug") == true)
        #expect(notAccepted.first?.contains("Unregistered") == true)
        let credentials = lines.filter { $0.contains("notification rejected: check the credentials") }
        #expect(credentials.count == 1)
        #expect(credentials.first?.hasPrefix("warning") == true)
        #expect(lines.filter { $0.contains("retrying notification") }.count == 1)
        #expect(mock.requests(to: mockToken(4)).count == 2)
        #expect(mock.requests(to: mockToken(2)).count == 1)
    }

    /// The warning says which credentials to fix, as the transport names a connection's
    /// (a transport may serve many teams and keys), in every form of sending; never the JWT.
    @Test(arguments: RetryTests.SendForm.allCases)
    func credentialWarningNamesTheKey(form: RetryTests.SendForm) async throws {
        let store = CoreCapturingLogHandler.Store()
        let logger = Logger(label: "test") { _ in CoreCapturingLogHandler(store: store) }
        let mock = MockTransport()
        mock.respond(to: RetryTests.device, with: .rejected(.invalidProviderToken))
        let cache = try ProviderTokenCache(key: ProviderKey.generate(), keyID: "KEY4567890", teamID: "TEAM123456")
        let client = APNsClient.testing(transport: mock, credentials: .providerToken(cache), logger: logger)
        _ = await RetryTests.sendOnce(client, form, to: RetryTests.device)
        let warnings = store.all.filter { $0.hasPrefix("warning") }
        #expect(warnings.count == 1, "\(warnings)")
        #expect(warnings.first?.contains("team TEAM123456 key KEY4567890") == true, "\(warnings)")
        let jwt = try cache.token().jwt
        #expect(!store.all.contains { $0.contains(jwt) })
    }

    /// A key APNs refuses warns once for a whole batch, not once per device (issue 17:
    /// a million warnings for a million devices); the others are debug. After an
    /// acceptance, the same refusal warns again (the condition ended and came back).
    @Test func refusedCredentialsWarnOncePerCondition() async {
        let store = CoreCapturingLogHandler.Store()
        var logger = Logger(label: "test") { _ in CoreCapturingLogHandler(store: store) }
        logger.logLevel = .debug
        let mock = MockTransport()
        let refused = (0..<200).map { mockToken(20_000 + $0) }
        for token in refused { mock.respond(to: token, with: .rejected(.invalidProviderToken)) }
        let client = APNsClient.testing(transport: mock, logger: logger)
        let outcomes = await client.send(sampleAlert, to: refused, maxConcurrency: 50)
        #expect(outcomes.allSatisfy { $0.error?.rejection?.reason == .invalidProviderToken })
        let warnings = store.all.filter { $0.hasPrefix("warning") }
        #expect(warnings.count == 1, "\(warnings.count) warnings")
        #expect(warnings.first?.contains("check the credentials") == true)
        #expect(store.all.filter { $0.hasPrefix("debug") && $0.contains("notification not accepted") }.count == 199)

        // An acceptance ends the condition; a refusal right after it is debug (within a
        // minute of the warning): refusals that alternate with acceptances do not warn
        // once each.
        for _ in 0..<5 {
            _ = try? await client.send(sampleAlert, to: mockToken(30_000))
            _ = try? await client.send(sampleAlert, to: refused[0])
        }
        #expect(store.all.filter { $0.hasPrefix("warning") }.count == 1)
    }

    /// The condition log's rules, with a clock the test moves: once while it lasts, again
    /// after it ended, but not within the quiet period of the last warning.
    @Test func conditionLogWarnsOncePerConditionAndQuietPeriod() {
        let start = ContinuousClock.now
        let elapsed = Mutex(Duration.zero)
        let log = ConditionLog(quietPeriod: .seconds(60), now: { start + elapsed.withLock { $0 } })
        #expect(log.begins("credentials:InvalidProviderToken"))
        #expect(!log.begins("credentials:InvalidProviderToken"))  // while it lasts
        #expect(log.begins("provider-token"))  // another condition warns on its own
        log.endAll()
        elapsed.withLock { $0 = .seconds(10) }
        #expect(!log.begins("credentials:InvalidProviderToken"))  // back within the quiet period
        log.endAll()
        elapsed.withLock { $0 = .seconds(61) }
        #expect(log.begins("credentials:InvalidProviderToken"))  // ended, and a minute passed
        #expect(!log.begins("credentials:InvalidProviderToken"))
    }

    /// A condition log keeps no more warning times than the conditions that warned within
    /// its quiet period (a hostile server inventing a reason per answer grew it by one
    /// entry per notification: 191 MB for 10,000 answers with 16 KB reasons).
    @Test func conditionLogForgetsWarningsPastTheQuietPeriod() {
        let start = ContinuousClock.now
        let elapsed = Mutex(Duration.zero)
        let log = ConditionLog(quietPeriod: .seconds(60), now: { start + elapsed.withLock { $0 } })
        for index in 0..<10_000 {
            elapsed.withLock { $0 = .milliseconds(100 * index) }  // ten new conditions a second
            #expect(log.begins("condition \(index)"))
            log.end("condition \(index)")
        }
        // At most the last minute's 600 warnings, and the threshold's worth besides.
        #expect(log.rememberedWarnings <= 600 + 64, "\(log.rememberedWarnings)")
        // What is still within the quiet period still holds the condition back.
        #expect(!log.begins("condition 9999"))
    }

    /// Refusals with reasons Apple does not document are one condition: a server that
    /// invents a reason per answer gets one warning, not one per notification.
    @Test func undocumentedRefusalsWarnOnce() async {
        let store = CoreCapturingLogHandler.Store()
        let logger = Logger(label: "test") { _ in CoreCapturingLogHandler(store: store) }
        let mock = MockTransport()
        let tokens = (0..<300).map { mockToken(30_000 + $0) }
        for (index, token) in tokens.enumerated() {
            mock.respond(to: token, with: .rejected(APNsReason(rawValue: "Invented\(index)"), status: 403))
        }
        let client = APNsClient.testing(transport: mock, logger: logger)
        let outcomes = await client.send(sampleAlert, to: tokens)
        #expect(outcomes.allSatisfy { $0.error?.rejection?.status == 403 })
        let warnings = store.all.filter { $0.hasPrefix("warning") }
        #expect(warnings.count == 1, "\(warnings.count) warnings")
        #expect(client.conditions.rememberedWarnings <= 2)
    }

    /// An invalid notification: every index is handed over as invalid, nothing is sent.
    @Test func streamingBatchOfAnInvalidNotification() async {
        let mock = MockTransport()
        var notification = sampleAlert
        notification.collapseID = String(repeating: "c", count: 65)
        let count = Mutex(0)
        let summary = await APNsClient.testing(transport: mock).send(notification, to: (0..<20).map { mockToken($0) }) { _, outcome in
            guard case .failure(.invalid) = outcome.result else { return }
            count.withLock { $0 += 1 }
        }
        #expect(count.withLock { $0 } == 20)
        #expect(summary == APNsBatchSummary(accepted: 0, rejected: 0, failed: 20))
        #expect(mock.requests.isEmpty)
    }

    @Test func sharedAPNsIDIsSentToEveryToken() async throws {
        let mock = MockTransport()
        let client = APNsClient.testing(transport: mock)
        var notification = sampleAlert
        notification.apnsID = try APNsID("eabeae54-14a8-11e5-b60b-1697f925ec7b")
        _ = await client.send(notification, to: [mockToken(1), mockToken(2)])
        #expect(
            mock.requests.map { $0.header("apns-id") }
                == Array(repeating: "eabeae54-14a8-11e5-b60b-1697f925ec7b", count: 2)
        )
    }
}

@Suite struct ConcurrencyTests {
    @Test func clientAndMockAreUsableFromDetachedTasks() async throws {
        let mock = MockTransport()
        let source = CoreCountingTokenSource()
        let client = APNsClient(environment: .sandbox, credentials: .providerToken(source), transport: mock)
        let unregistered = mockToken(7)
        mock.respond(to: unregistered, with: .rejected(.unregistered))
        let tasks = (0..<50).map { worker in
            Task.detached { () -> (accepted: Int, rejected: Int) in
                var counts = (accepted: 0, rejected: 0)
                for item in 0..<20 {
                    let device = item == 0 && worker % 5 == 0 ? unregistered : mockToken(worker * 100 + item + 1000)
                    do throws(APNsError) {
                        _ = try await client.send(sampleAlert, to: device)
                        counts.accepted += 1
                    } catch {
                        if error.rejection?.reason == .unregistered { counts.rejected += 1 }
                    }
                }
                return counts
            }
        }
        var accepted = 0
        var rejected = 0
        for task in tasks {
            let counts = await task.value
            accepted += counts.accepted
            rejected += counts.rejected
        }
        #expect(accepted == 990)
        #expect(rejected == 10)
        let requests = mock.requests
        #expect(requests.count == 1000)
        #expect(Set(requests.compactMap(\.apnsID)).count == 1000)
        #expect(source.tokenCalls == 1000)
        #expect(mock.requests(to: unregistered).count == 10)
    }

    /// A different notification per device: each request carries its own body, one
    /// invalid notification fails alone, a rejected-then-accepted one is retried with its
    /// own body and apns-id, and the outcomes come back in input order.
    @Test func personalizedBatchSendsEachNotificationToItsDevice() async throws {
        let mock = MockTransport()
        let tokens = (0..<300).map { mockToken(2_000 + $0) }
        mock.respond(to: tokens[7], with: [.rejected(.tooManyRequests), .accepted])
        let deliveries = tokens.enumerated().map { index, token -> (notification: PushNotification, deviceToken: DeviceToken) in
            if index == 42 {
                // 65 bytes of collapse id: invalid, never sent.
                return (PushNotification(payload: .alert(body: "x"), topic: "com.example.app", collapseID: String(repeating: "c", count: 65)), token)
            }
            return (PushNotification(payload: .alert(body: "Message \(index)"), topic: "com.example.app"), token)
        }
        let client = APNsClient.testing(transport: mock)
        let outcomes = await client.send(deliveries, maxConcurrency: 16)

        #expect(outcomes.map(\.deviceToken) == tokens)
        guard case .failure(.invalid(let invalid)) = outcomes[42].result else {
            Issue.record("expected invalid, got \(outcomes[42].result)")
            return
        }
        #expect(invalid.code == .invalidCollapseID)
        for (index, outcome) in outcomes.enumerated() where index != 42 {
            #expect(outcome.accepted != nil, "\(index): \(outcome.result)")
        }
        // Each device got its own body (checked with JSONSerialization), once; device 7 twice.
        var bodies: [DeviceToken: [String]] = [:]
        var ids: [DeviceToken: Set<String>] = [:]
        for request in mock.requests {
            let token = try #require(request.deviceToken)
            let object = try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any]
            let alert = (object?["aps"] as? [String: Any])?["alert"]
            let body = (alert as? [String: Any])?["body"] as? String ?? alert as? String ?? ""
            bodies[token, default: []].append(body)
            ids[token, default: []].insert(request.header("apns-id") ?? "")
        }
        #expect(bodies[tokens[42]] == nil)
        #expect(bodies[tokens[7]] == ["Message 7", "Message 7"])
        #expect(ids[tokens[7]]?.count == 1)
        for (index, token) in tokens.enumerated() where index != 42 && index != 7 {
            #expect(bodies[token] == ["Message \(index)"])
        }
        #expect(Set(ids.values.compactMap(\.first)).count == 299)
        #expect(client.statistics.retriesByReason == ["TooManyRequests": 1])
    }
}

