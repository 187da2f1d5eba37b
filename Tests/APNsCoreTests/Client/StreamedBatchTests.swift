import APNsTesting
import Foundation
import Synchronization
import Testing

@testable import APNsCore

/// The open-ended batch's handle, alone: no transport, no threads.
@Suite(.timeLimit(.minutes(2))) struct RequestFeedTests {
    @Test func suppliesGrowAndCloseEndsThem() {
        let feed = RequestFeed()
        #expect(feed.snapshot() == feed.snapshot())
        #expect(feed.snapshot().available == 0 && !feed.snapshot().closed)
        #expect(feed.supply(upTo: 3))
        #expect(feed.supply(upTo: 2))  // smaller: no change
        #expect(feed.supplied == 3)
        feed.close()
        #expect(feed.isClosed)
        #expect(feed.snapshot().closed && feed.snapshot().available == 3)
        #expect(!feed.supply(upTo: 4))
        #expect(feed.supplied == 3)
    }

    @Test("a count too large for the word the feed keeps it in is clamped, not shifted into a negative count; a negative one changes nothing")
    func hugeAndNegativeCounts() {
        let feed = RequestFeed()
        #expect(feed.supply(upTo: 5))
        #expect(feed.supply(upTo: -1))
        #expect(feed.supplied == 5)
        #expect(feed.supply(upTo: .max))
        #expect(feed.supplied == (1 << 60) - 1)
        #expect(feed.snapshot().available == (1 << 60) - 1)
        #expect(!feed.snapshot().closed)
        feed.close()
        #expect(feed.isClosed && feed.supplied == (1 << 60) - 1)
    }

    @Test func wakesOnlyABatchThatWaits() {
        let feed = RequestFeed()
        let wakes = Mutex(0)
        feed.attach(wake: { wakes.withLock { $0 += 1 } })
        #expect(feed.supply(upTo: 1))
        #expect(wakes.withLock { $0 } == 0)  // nobody waits

        // A batch that read the feed, then asks to be woken: the next supply wakes it, once.
        var seen = feed.snapshot()
        #expect(feed.waitForSupply(after: seen))
        #expect(feed.supply(upTo: 2))
        #expect(wakes.withLock { $0 } == 1)
        #expect(feed.supply(upTo: 3))
        #expect(wakes.withLock { $0 } == 1)

        // A supply between the batch's look and its wait: the wait is refused (read again).
        seen = feed.snapshot()
        #expect(feed.supply(upTo: 4))
        #expect(!feed.waitForSupply(after: seen))
        #expect(wakes.withLock { $0 } == 1)

        // Closing wakes a waiting batch too.
        seen = feed.snapshot()
        #expect(feed.waitForSupply(after: seen))
        feed.close()
        #expect(wakes.withLock { $0 } == 2)
        feed.close()
        #expect(wakes.withLock { $0 } == 2)
    }

    /// A long stream wakes its batch again and again: each wake-up costs the same (a
    /// closure kept in a lock was once re-wrapped at every wake-up, so the 200,000th call
    /// went through 400,000 thunks and overflowed the stack).
    @Test func wakesAsOftenAsAStreamNeeds() {
        let feed = RequestFeed()
        let wakes = Mutex(0)
        feed.attach(wake: { wakes.withLock { $0 += 1 } })
        for count in 1...200_000 {
            #expect(feed.waitForSupply(after: feed.snapshot()))
            feed.supply(upTo: count)
        }
        #expect(wakes.withLock { $0 } == 200_000)
    }

    @Test func sealingEndsTheIntake() {
        let feed = RequestFeed()
        #expect(feed.supply(upTo: 5))
        #expect(feed.seal() == 5)
        #expect(!feed.supply(upTo: 6))
        #expect(feed.supplied == 5)
        #expect(!feed.snapshot().closed)
    }
}

/// `APNsClient.send(_:maxConcurrency:isolation:onOutcome:)` and its one-notification form,
/// over the mock transport (the default open-ended batch, a task per request).
@Suite(.timeLimit(.minutes(2))) struct StreamedBatchTests {
    /// A streaming batch (the tokens in an array, or read from an `AsyncSequence`) gives
    /// the same outcomes as the collecting batch over the same answers, each index once,
    /// with its device token, and counts them; retries run through the attempt loop.
    @Test(arguments: [false, true]) func streamingEndsLikeTheCollectingBatch(fromSequence: Bool) async {
        let tokens = (0..<500).map { mockToken(7_000 + $0) }
        let collecting = MockTransport()
        scriptTenthsOfAnswers(collecting, tokens)
        let expected = await APNsClient.testing(transport: collecting).send(sampleAlert, to: tokens, maxConcurrency: 32)

        let streaming = MockTransport()
        scriptTenthsOfAnswers(streaming, tokens)
        let received = ReceivedOutcomes()
        let client = APNsClient.testing(transport: streaming)
        let summary: APNsBatchSummary
        if fromSequence {
            let stream = AsyncStream<DeviceToken> { continuation in
                for token in tokens { continuation.yield(token) }
                continuation.finish()
            }
            summary = await client.send(sampleAlert, to: stream, maxConcurrency: 32) { index, outcome in received.record(index, outcome) }
        } else {
            summary = await client.send(sampleAlert, to: tokens, maxConcurrency: 32) { index, outcome in received.record(index, outcome) }
        }
        received.expectSame(as: expected, tokens: tokens)
        #expect(summary.description == "500 notifications: 400 accepted, 50 rejected, 50 failed")
        #expect(summary == APNsBatchSummary(accepted: 400, rejected: 50, failed: 50))
        // Each token once, and once more for each TooManyRequests.
        #expect(streaming.requests.count == 550)
    }

    /// Different notifications, one invalid: it fails alone, unsent; the others arrive
    /// with their own payloads.
    @Test func streamOfDeliveriesSendsEachToItsDevice() async throws {
        let mock = MockTransport()
        var invalid = sampleAlert
        invalid.collapseID = String(repeating: "c", count: 65)
        let deliveries = AsyncStream<(notification: PushNotification, deviceToken: DeviceToken)> { continuation in
            for index in 0..<20 {
                let notification =
                    index == 7 ? invalid : PushNotification(payload: .alert(body: "message \(index)"), topic: "com.example.app")
                continuation.yield((notification: notification, deviceToken: mockToken(index)))
            }
            continuation.finish()
        }
        let outcomes = Mutex<[Int: APNsOutcome]>([:])
        let summary = await APNsClient.testing(transport: mock).send(deliveries, maxConcurrency: 4) { index, outcome in
            outcomes.withLock { $0[index] = outcome }
        }
        #expect(summary == APNsBatchSummary(accepted: 19, rejected: 0, failed: 1))
        let byIndex = outcomes.withLock { $0 }
        #expect(byIndex[7]?.error?.requestError?.code == .invalidCollapseID)
        #expect(byIndex[7]?.deviceToken == mockToken(7))
        #expect(mock.requests.count == 19)
        for request in mock.requests {
            let index = (0..<20).first { mockToken($0) == request.deviceToken }!
            let body = try #require(String(bytes: request.body, encoding: .utf8))
            #expect(body.contains("\"message \(index)\""))
        }
    }

    /// What arrives while the window has room is sent at once: the batch does not wait for
    /// more, nor for the stream's end.
    @Test func sendsWhatArrivesWithoutWaitingForMore() async throws {
        let mock = MockTransport()
        let (stream, input) = AsyncStream.makeStream(of: DeviceToken.self)
        let outcomes = Mutex<[Int]>([])
        let client = APNsClient.testing(transport: mock)
        let task = Task {
            await client.send(sampleAlert, to: stream, maxConcurrency: 8) { index, outcome in
                if outcome.accepted != nil { outcomes.withLock { $0.append(index) } }
            }
        }
        for index in 0..<3 {
            input.yield(mockToken(index))
            // Bounded: the outcome comes while the stream is still open.
            let deadline = ContinuousClock.now + .seconds(30)
            while outcomes.withLock({ $0.count }) <= index, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(1))
            }
            #expect(outcomes.withLock { $0.count } == index + 1)
            #expect(mock.requests.count == index + 1)
        }
        input.finish()
        let summary = await task.value
        #expect(summary == APNsBatchSummary(accepted: 3, rejected: 0, failed: 0))
        #expect(outcomes.withLock { $0.sorted() } == [0, 1, 2])
    }

    /// A fast producer is held back: with every answer held, the batch reads at most
    /// `maxConcurrency` in flight plus twice that waiting (and the element it is reading).
    @Test func readsOnlyALittleAheadOfTheWindow() async throws {
        let gate = Mutex(false)
        let mock = MockTransport()
        mock.respond { _ in
            let deadline = ContinuousClock.now + .seconds(30)
            while !gate.withLock({ $0 }), ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(1))
            }
            return .accepted
        }
        let pulled = SharedCount()
        let tokens = CountingTokens(count: 1_000, pulled: pulled)
        let count = Mutex(0)
        let client = APNsClient.testing(transport: mock)
        let task = Task {
            await client.send(sampleAlert, to: tokens, maxConcurrency: 4) { _, outcome in
                if outcome.accepted != nil { count.withLock { $0 += 1 } }
            }
        }
        let deadline = ContinuousClock.now + .seconds(30)
        while mock.requests.count < 4, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
        for _ in 0..<50 {
            try await Task.sleep(for: .milliseconds(1))
            #expect(pulled.current <= 4 + 8 + 1)
        }
        #expect(mock.requests.count == 4)
        gate.withLock { $0 = true }
        let summary = await task.value
        #expect(summary.accepted == 1_000)
        #expect(count.withLock { $0 } == 1_000)
        #expect(pulled.current == 1_000)
    }

    /// The sequence's error is thrown, typed, once every element read before it has its
    /// outcome.
    @Test func sequenceErrorIsThrownAfterTheOutcomesOfWhatWasRead() async {
        struct SourceFailed: Error, Equatable {}
        let mock = MockTransport()
        let stream = AsyncThrowingStream<DeviceToken, any Error> { continuation in
            for index in 0..<10 { continuation.yield(mockToken(index)) }
            continuation.finish(throwing: SourceFailed())
        }
        let outcomes = Mutex(0)
        let client = APNsClient.testing(transport: mock)
        await #expect(throws: SourceFailed.self) {
            try await client.send(sampleAlert, to: stream, maxConcurrency: 3) { _, _ in
                outcomes.withLock { $0 += 1 }
            }
        }
        #expect(outcomes.withLock { $0 } == 10)
        #expect(mock.requests.count == 10)
    }

    /// Cancelled: the sequence is no longer read, and every element read has exactly one
    /// outcome (those not sent fail with `cancelled`, never sent).
    @Test func cancelledStreamAccountsForEveryElementRead() async throws {
        let mock = MockTransport()
        mock.respondByDefault(with: MockTransport.Response.accepted.delayed(by: .seconds(600)))
        let pulled = SharedCount()
        let tokens = CountingTokens(count: 100_000, pulled: pulled)
        let outcomes = Mutex<[Int: Int]>([:])
        let client = APNsClient.testing(transport: mock)
        let task = Task {
            await client.send(sampleAlert, to: tokens, maxConcurrency: 5) { index, outcome in
                #expect(outcome.error?.transportError?.code == .cancelled)
                outcomes.withLock { $0[index, default: 0] += 1 }
            }
        }
        let deadline = ContinuousClock.now + .seconds(30)
        while mock.requests.count < 5, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
        task.cancel()
        let summary = await task.value
        let read = pulled.current
        #expect(read < 100_000)
        #expect(summary.failed == read)
        let byIndex = outcomes.withLock { $0 }
        #expect(byIndex.count == read)
        #expect(byIndex.values.allSatisfy { $0 == 1 })
        #expect(Set(byIndex.keys) == Set(0..<read))
    }

    /// Cancelled while notifications answered 503 wait to be retried: each still gets
    /// exactly one outcome, the answer it last got. (The retries went through an
    /// AsyncStream, whose iteration ends at cancellation: those still queued in it got no
    /// outcome at all, up to 128 in one call in an outside audit.)
    @Test func cancelledStreamGivesQueuedRetriesTheirOutcome() async throws {
        for iteration in 0..<20 {
            let mock = MockTransport()
            mock.respondByDefault(with: .rejected(.serviceUnavailable))
            let pulled = SharedCount()
            let tokens = CountingTokens(count: 100_000, pulled: pulled)
            let outcomes = Mutex<[Int: [String]]>([:])
            // Real delays between attempts, so that retries queue up behind the 50 that run.
            let client = APNsClient(
                environment: .sandbox, credentials: .certificate, transport: mock,
                retryPolicy: RetryPolicy(maxAttempts: 5, baseDelay: .milliseconds(50), maxDelay: .milliseconds(50)),
                requestTimeout: .seconds(120))
            let task = Task {
                await client.send(sampleAlert, to: tokens, maxConcurrency: 50) { index, outcome in
                    outcomes.withLock { $0[index, default: []].append(outcomeKind(outcome)) }
                }
            }
            try await Task.sleep(for: .milliseconds(5 + 3 * iteration))
            task.cancel()
            let summary = await task.value
            let read = pulled.current
            let byIndex = outcomes.withLock { $0 }
            #expect(Set(byIndex.keys) == Set(0..<read), "iteration \(iteration): \(read) read, \(byIndex.count) outcomes")
            #expect(byIndex.values.allSatisfy { $0.count == 1 }, "iteration \(iteration)")
            #expect(summary.total == read, "iteration \(iteration): summary \(summary), \(read) read")
            // A notification answered 503 ends with that answer, never as 'cancelled, never sent'.
            let answered = Set(mock.requests.compactMap(\.deviceToken))
            for (index, kinds) in byIndex where kinds.first?.hasPrefix("failed") == true {
                #expect(!answered.contains(mockToken(index)), "iteration \(iteration): index \(index) was answered 503, yet \(kinds)")
            }
        }
    }

    /// The transport shut down during an endless stream: once a send fails with
    /// `shutdown`, the sequence is no longer read and the call returns by itself (its task
    /// is not cancelled), with one outcome for each element read. What can fail with
    /// `shutdown` is bounded by what the documentation lets be outstanding when the first
    /// such failure comes — `2 × maxConcurrency` read and not sent, plus `maxConcurrency` in
    /// flight — and the one element whose read may be under way then.
    @Test(arguments: [false, true]) func shutdownStopsReadingTheSequence(pairs: Bool) async throws {
        let mock = MockTransport()
        let pulled = SharedCount()
        let tokens = CountingTokens(count: .max, pulled: pulled)
        let outcomes = Mutex<[Int: [String]]>([:])
        let returned = Mutex(false)
        let width = 5
        let client = APNsClient.testing(transport: mock)
        let task = Task {
            let record: @Sendable (Int, APNsOutcome) -> Void = { index, outcome in
                outcomes.withLock { $0[index, default: []].append(outcomeKind(outcome)) }
            }
            let summary =
                pairs
                ? await client.send(tokens.map { (notification: sampleAlert, deviceToken: $0) }, maxConcurrency: width, onOutcome: record)
                : await client.send(sampleAlert, to: tokens, maxConcurrency: width, onOutcome: record)
            returned.withLock { $0 = true }
            return summary
        }
        let started = ContinuousClock.now + .seconds(30)
        while pulled.current < 1_000, ContinuousClock.now < started { try await Task.sleep(for: .milliseconds(1)) }
        await client.shutdown()
        let deadline = ContinuousClock.now + .seconds(20)
        while !returned.withLock({ $0 }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
        #expect(returned.withLock { $0 }, "the sequence was still read \(pulled.current) elements in, 20 s after the shutdown")
        task.cancel()
        let summary = await task.value

        let read = pulled.current
        let byIndex = outcomes.withLock { $0 }
        #expect(Set(byIndex.keys) == Set(0..<read))
        #expect(byIndex.values.allSatisfy { $0.count == 1 })
        #expect(summary.total == read)
        let failedWithShutdown = byIndex.values.filter { $0 == ["failed shutdown"] }.count
        #expect(failedWithShutdown >= 1)
        #expect(summary.accepted + failedWithShutdown == read)
        #expect(failedWithShutdown <= 3 * width + 1)
        #expect(mock.requests.count == summary.accepted)
    }

    /// A quiet stream (a queue with nothing in it) when the client or its transport shuts
    /// down: the call returns without waiting for another element, the one element read
    /// has its outcome, and the stream was let go (its consumer cancelled), so what is
    /// yielded afterwards is not taken off it (found from outside: the call stayed blocked
    /// until the stream produced two more elements, and failed both with `shutdown`).
    @Test(arguments: [false, true]) func quietStreamEndsAtShutdown(transportOnly: Bool) async throws {
        let mock = MockTransport()
        let client = APNsClient.testing(transport: mock)
        let send = FedStreamedSend(client)
        send.input.yield(mockToken(1))
        #expect(await mock.waitForRequests(1, timeout: .seconds(60)))
        if transportOnly { await mock.shutdown() } else { await client.shutdown() }
        #expect(try await send.returns(within: .seconds(20)), "the call still waited for the quiet stream 20 s after the shutdown")
        // What comes later stays in the stream's producer's hands: the stream is terminated.
        if case .terminated = send.input.yield(mockToken(2)) {} else { Issue.record("the stream still takes elements after the shutdown") }
        #expect(await send.summary() == APNsBatchSummary(accepted: 1, rejected: 0, failed: 0))
        #expect(send.outcomes == [0: ["accepted"]])
        #expect(mock.requests.count == 1)
        if !transportOnly { await client.shutdown() }
    }

    /// Every element answered 503 and waiting out a 2.5-5 s backoff, the stream quiet, when
    /// the transport alone shuts down (a ServiceGroup stopping it): each ends at once with
    /// its 503 and the call returns (found from outside: blocked for good, as no outcome
    /// was `shutdown`).
    @Test func quietStreamWithRetriesWaitingEndsAtTransportShutdown() async throws {
        let mock = MockTransport()
        mock.respondByDefault(with: .rejected(.serviceUnavailable))
        let client = APNsClient(
            environment: .sandbox, credentials: .certificate, transport: mock,
            retryPolicy: RetryPolicy(maxAttempts: 5, baseDelay: .seconds(5), maxDelay: .seconds(5)),
            requestTimeout: .seconds(600)
        )
        let send = FedStreamedSend(client)
        for index in 0..<4 { send.input.yield(mockToken(index)) }
        #expect(await mock.waitForRequests(4, timeout: .seconds(60)))
        await mock.shutdown()
        #expect(try await send.returns(within: .seconds(20)), "the call still waited 20 s after the transport shut down")
        #expect(await send.summary() == APNsBatchSummary(accepted: 0, rejected: 4, failed: 0))
        #expect(send.outcomes == [0: ["rejected ServiceUnavailable"], 1: ["rejected ServiceUnavailable"], 2: ["rejected ServiceUnavailable"], 3: ["rejected ServiceUnavailable"]])
        #expect(mock.requests.count == 4)
        await client.shutdown()
    }

    /// A streamed batch started after the client or its transport has shut down reads
    /// nothing: every element stays in the stream for its producer (found from outside:
    /// one or two were taken off and failed with `shutdown`, depending on which task ran first).
    ///
    /// With `transportOnly`, the mock transport (which reports ``PushTransport/isShutDown``)
    /// shuts down; otherwise the client shuts down a transport that does not report it
    /// (the protocol's default), so the client's own state is what stops the reading.
    @Test(arguments: [false, true]) func batchStartedAfterTheShutdownReadsNothing(transportOnly: Bool) async throws {
        let mock = MockTransport()
        let client = APNsClient.testing(transport: transportOnly ? mock : UntellingTransport(mock))
        if transportOnly { await mock.shutdown() } else { await client.shutdown() }
        #expect(mock.isShutDown)
        for round in 0..<20 {
            let (stream, input) = AsyncStream<DeviceToken>.makeStream()
            for index in 0..<5 { input.yield(mockToken(index)) }
            input.finish()
            let outcomes = Mutex(0)
            let summary = await client.send(sampleAlert, to: stream, maxConcurrency: 2) { _, _ in outcomes.withLock { $0 += 1 } }
            #expect(summary == APNsBatchSummary(accepted: 0, rejected: 0, failed: 0), "round \(round)")
            #expect(outcomes.withLock { $0 } == 0, "round \(round)")
            var left = 0
            for await _ in stream { left += 1 }
            #expect(left == 5, "round \(round): \(5 - left) elements were taken off the stream")
        }
        #expect(mock.requests.isEmpty)
    }

    /// A sequence that throws `CancellationError` when its wait is cancelled (one that
    /// polls with `Task.sleep`): at a shutdown, that cancellation is the batch's own, so
    /// the call returns normally with the outcome of what was read, not the error.
    @Test func sequenceCancelledByTheShutdownThrowsNothing() async throws {
        let mock = MockTransport()
        let client = APNsClient.testing(transport: mock)
        let returned = Mutex(false)
        let task = Task { () -> Result<APNsBatchSummary, any Error> in
            let result: Result<APNsBatchSummary, any Error>
            do {
                result = .success(try await client.send(sampleAlert, to: PollingTokens()) { _, _ in })
            } catch {
                result = .failure(error)
            }
            returned.withLock { $0 = true }
            return result
        }
        #expect(await mock.waitForRequests(1, timeout: .seconds(60)))
        await client.shutdown()
        let deadline = ContinuousClock.now + .seconds(20)
        while !returned.withLock({ $0 }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
        #expect(returned.withLock { $0 }, "the call still waited 20 s after the shutdown")
        task.cancel()
        switch await task.value {
        case .success(let summary): #expect(summary == APNsBatchSummary(accepted: 1, rejected: 0, failed: 0))
        case .failure(let error): Issue.record("the call threw \(error)")
        }
    }

    /// A stream's ExpiredProviderToken: the token is refreshed at once, the notification is
    /// sent again with the new one (same `apns-id`, same payload: the retry is rebuilt from
    /// the first request), and the elements read afterwards carry the new token.
    @Test func expiredProviderTokenInAStreamIsRefreshedAndResent() async throws {
        let mock = MockTransport()
        let first = mockToken(1)
        mock.respond(to: first, with: [.rejected(.expiredProviderToken), .accepted])
        let source = CoreCountingTokenSource()
        let client = APNsClient.testing(transport: mock, credentials: .providerToken(source), retryPolicy: .never)
        let (stream, input) = AsyncStream.makeStream(of: (notification: PushNotification, deviceToken: DeviceToken).self)
        let personal = PushNotification(payload: .alert(body: "only for you"), topic: "com.example.app")
        input.yield((notification: personal, deviceToken: first))
        let outcomes = Mutex<[Int: APNsOutcome]>([:])
        let task = Task {
            await client.send(stream, maxConcurrency: 1) { index, outcome in outcomes.withLock { $0[index] = outcome } }
        }
        let deadline = ContinuousClock.now + .seconds(30)
        while outcomes.withLock({ $0.count }) < 1, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
        input.yield((notification: sampleAlert, deviceToken: mockToken(2)))
        input.finish()
        let summary = await task.value

        #expect(summary == APNsBatchSummary(accepted: 2, rejected: 0, failed: 0))
        #expect(outcomes.withLock { $0[0]?.accepted } != nil)
        let requests = mock.requests
        #expect(requests.count == 3)
        #expect(requests.map { $0.header("authorization") } == [
            "bearer header.claims.signature-1", "bearer header.claims.signature-2", "bearer header.claims.signature-2",
        ])
        #expect(requests[0].header("apns-id") == requests[1].header("apns-id"))
        #expect(requests[0].body == requests[1].body)
        #expect(String(decoding: requests[1].body, as: UTF8.self).contains("only for you"))
        #expect(requests[1].deviceToken == first && requests[2].deviceToken == mockToken(2))
        // The expired token was given back once, by the batch at once; the attempt loop
        // only asked for the new one.
        #expect(source.invalidated == ["header.claims.signature-1"])
    }

    /// Read on the caller's actor: a sequence that is not `Sendable` (its iterator holds a
    /// class) can be streamed from the main actor, and is read there.
    @MainActor @Test func nonSendableSequenceReadOnTheCallersActor() async {
        let mock = MockTransport()
        let tokens = MainActorTokens(count: 50)
        let summary = await APNsClient.testing(transport: mock).send(sampleAlert, to: tokens, maxConcurrency: 8) { _, _ in }
        #expect(summary.accepted == 50)
        #expect(tokens.log.readOnMainActor == 50)
        #expect(mock.requests.count == 50)
    }

    /// A window of `Int.max` ("no limit") is the widest window, not a crash.
    @Test func unboundedConcurrencyCountsAsTheWidestWindow() async {
        let mock = MockTransport()
        let tokens = CountingTokens(count: 300, pulled: SharedCount())
        let summary = await APNsClient.testing(transport: mock).send(sampleAlert, to: tokens, maxConcurrency: .max) { _, _ in }
        #expect(summary.accepted == 300)
    }

    /// An empty stream returns at once, and sends nothing.
    @Test func emptyStream() async {
        let mock = MockTransport()
        let stream = AsyncStream<DeviceToken> { $0.finish() }
        let summary = await APNsClient.testing(transport: mock).send(sampleAlert, to: stream) { _, _ in }
        #expect(summary == APNsBatchSummary(accepted: 0, rejected: 0, failed: 0))
        #expect(mock.requests.isEmpty)
    }
}

/// A count, shared between tasks.
final class SharedCount: Sendable {
    private let value = Mutex(0)
    func add() { value.withLock { $0 += 1 } }
    var current: Int { value.withLock { $0 } }
}

/// `count` mock tokens, counting how many were read.
struct CountingTokens: AsyncSequence, Sendable {
    let count: Int
    let pulled: SharedCount

    struct AsyncIterator: AsyncIteratorProtocol {
        var next = 0
        let count: Int
        let pulled: SharedCount

        mutating func next() async -> DeviceToken? {
            guard next < count else { return nil }
            defer { next += 1 }
            pulled.add()
            return mockToken(next)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(count: count, pulled: pulled) }
}

/// A streamed send (window 4) over an `AsyncStream` the test feeds through `input`, each
/// index's outcomes recorded by kind, and whether the call has returned.
final class FedStreamedSend: Sendable {
    private final class Record: Sendable {
        let outcomes = Mutex<[Int: [String]]>([:])
        let returned = Mutex(false)
    }

    let input: AsyncStream<DeviceToken>.Continuation
    private let record = Record()
    private let task: Task<APNsBatchSummary, Never>

    init(_ client: APNsClient) {
        let (stream, input) = AsyncStream.makeStream(of: DeviceToken.self)
        self.input = input
        let record = record
        task = Task {
            let summary = await client.send(sampleAlert, to: stream, maxConcurrency: 4) { index, outcome in
                record.outcomes.withLock { $0[index, default: []].append(outcomeKind(outcome)) }
            }
            record.returned.withLock { $0 = true }
            return summary
        }
    }

    /// Each index's outcomes so far.
    var outcomes: [Int: [String]] { record.outcomes.withLock { $0 } }

    /// Whether the call returns within `bound` (polled; its task is not cancelled).
    func returns(within bound: Duration) async throws -> Bool {
        let deadline = ContinuousClock.now + bound
        while !record.returned.withLock({ $0 }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
        return record.returned.withLock { $0 }
    }

    /// The call's summary, once it returns (its task cancelled first, so a hang ends).
    func summary() async -> APNsBatchSummary {
        task.cancel()
        return await task.value
    }
}

/// One mock token, then a wait of an hour (a poll of an empty queue) that throws
/// `CancellationError` when cancelled.
struct PollingTokens: AsyncSequence, Sendable {
    struct AsyncIterator: AsyncIteratorProtocol {
        var given = false
        mutating func next() async throws -> DeviceToken? {
            if !given {
                given = true
                return mockToken(1)
            }
            try await Task.sleep(for: .seconds(3600))
            return nil
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator() }
}

/// Mock tokens from an iterator that is not `Sendable` (it shares a class with its
/// sequence), recording how many were read with the main actor's isolation.
struct MainActorTokens: AsyncSequence {
    final class Log {
        var readOnMainActor = 0
    }

    let count: Int
    let log = Log()

    struct AsyncIterator: AsyncIteratorProtocol {
        let count: Int
        let log: Log
        var next = 0

        mutating func next() async -> DeviceToken? {
            await next(isolation: nil)
        }

        mutating func next(isolation actor: isolated (any Actor)?) async -> DeviceToken? {
            guard next < count else { return nil }
            defer { next += 1 }
            if actor === MainActor.shared { log.readOnMainActor += 1 }
            return mockToken(next)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(count: count, log: log) }
}

/// A streamed batch read on an actor stays on it: the reader does not hop to the global
/// executor and back for every element (an outside audit counted one executor job, a
/// heap allocation, per notification when the batch was started from the main actor).
@Suite(.timeLimit(.minutes(2))) struct StreamedBatchIsolationTests {
    /// A serial executor that counts the jobs it is given.
    final class CountingExecutor: SerialExecutor, @unchecked Sendable {
        // @unchecked: `queue` is itself thread-safe; `jobs` is atomic.
        let jobs = Atomic<Int>(0)
        private let queue = DispatchQueue(label: "counting-executor")
        func enqueue(_ job: consuming ExecutorJob) {
            jobs.wrappingAdd(1, ordering: .relaxed)
            let job = UnownedJob(job)
            queue.async { job.runSynchronously(on: self.asUnownedSerialExecutor()) }
        }
        func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }
    }

    /// Device tokens from an array, each read without suspending (as a sequence that
    /// implements `next(isolation:)` is).
    struct ArrayFeed: AsyncSequence {
        let tokens: [DeviceToken]
        struct Iterator: AsyncIteratorProtocol {
            var rest: ArraySlice<DeviceToken>
            mutating func next() async -> DeviceToken? { rest.popFirst() }
            mutating func next(isolation actor: isolated (any Actor)?) async -> DeviceToken? { rest.popFirst() }
        }
        func makeAsyncIterator() -> Iterator { Iterator(rest: tokens[...]) }
    }

    actor Reader {
        let executor = CountingExecutor()
        nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

        func send(_ tokens: [DeviceToken], with client: APNsClient) async -> APNsBatchSummary {
            await client.send(sampleAlert, to: ArrayFeed(tokens: tokens), maxConcurrency: 100) { _, _ in }
        }
    }

    @Test func readingOnAnActorDoesNotHopPerElement() async {
        let count = 2_000
        let client = APNsClient.testing(transport: MockTransport())
        let reader = Reader()
        let summary = await reader.send((0..<count).map { mockToken($0) }, with: client)
        #expect(summary == APNsBatchSummary(accepted: count, rejected: 0, failed: 0))
        // The reader resumes on its actor when it waited for room (about once per half
        // window), not once per element.
        let jobs = reader.executor.jobs.load(ordering: .relaxed)
        #expect(jobs < count / 4, "\(jobs) jobs on the reader's executor for \(count) notifications")
    }
}

/// A transport that hands each request to a `MockTransport` and keeps the protocol's
/// defaults for everything else: in particular it never reports ``PushTransport/isShutDown``.
private final class UntellingTransport: PushTransport {
    let mock: MockTransport
    init(_ mock: MockTransport) { self.mock = mock }

    nonisolated(nonsending) func send(_ request: APNsRequest) async throws(APNsTransportError) -> APNsResponse {
        try await mock.send(request)
    }

    func shutdown() async { await mock.shutdown() }
}
