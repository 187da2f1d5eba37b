import APNsCore
import APNsMockServer
import APNsTesting
import Synchronization
import Testing
@testable import APNsTransport

/// What a batch did, as its closures saw it: the order of `makeRequest` calls (and whether
/// two ever overlapped) and every `onResult` call.
final class BatchLog: Sendable {
    private struct State {
        var made: [Int] = []
        var makingNow = 0
        var overlapped = false
        var results: [Int: [Result<APNsResponse, APNsTransportError>]] = [:]
        var mismatched: [Int] = []
    }
    private let state = Mutex(State())
    let requests: [APNsRequest]
    /// Indices for which `makeRequest` returns `nil`.
    let skipped: Set<Int>

    init(requests: [APNsRequest], skipped: Set<Int> = []) {
        self.requests = requests
        self.skipped = skipped
    }

    func make(_ index: Int) -> APNsRequest? {
        state.withLock { state in
            state.made.append(index)
            state.makingNow += 1
            if state.makingNow > 1 { state.overlapped = true }
        }
        defer { state.withLock { $0.makingNow -= 1 } }
        return skipped.contains(index) ? nil : requests[index]
    }

    func result(_ index: Int, _ request: APNsRequest, _ result: Result<APNsResponse, APNsTransportError>) {
        state.withLock { state in
            state.results[index, default: []].append(result)
            if request.path != requests[index].path { state.mismatched.append(index) }
        }
    }

    var made: [Int] { state.withLock { $0.made } }
    var overlapped: Bool { state.withLock { $0.overlapped } }
    var mismatched: [Int] { state.withLock { $0.mismatched } }
    /// The one result of each index that got one; an index with two is reported by `#expect`.
    var results: [Int: Result<APNsResponse, APNsTransportError>] {
        let all = state.withLock { $0.results }
        #expect(all.values.allSatisfy { $0.count == 1 }, "an index got more than one result")
        return all.compactMapValues(\.first)
    }

    /// Checks that indices `0..<count` were made once each, in order, one call at a
    /// time, each with one result for its own request; returns the results.
    func expectEachMadeOnceInOrder(count: Int) -> [Int: Result<APNsResponse, APNsTransportError>] {
        #expect(made == Array(0..<count))
        #expect(!overlapped)
        #expect(mismatched.isEmpty)
        let results = self.results
        #expect(results.count == count)
        return results
    }

    func send(through transport: some PushTransport, window: Int) async {
        await transport.sendBatch(
            count: requests.count,
            maxConcurrency: window,
            makeRequest: { self.make($0) },
            onResult: { self.result($0, $1, $2) }
        )
    }
}

/// How many of a cancelled batch's results failed with `cancelled` as sent
/// (`mayHaveReachedAPNs`) and as not sent; records an issue for any other result, and for
/// a sent one at an index of `sentBelow` or more (only the first window was sent).
func countCancelled(_ results: [Int: Result<APNsResponse, APNsTransportError>], sentBelow: Int) -> (sent: Int, unsent: Int) {
    var sent = 0
    var unsent = 0
    for (index, result) in results {
        guard case .failure(let error) = result else {
            Issue.record("index \(index): expected cancelled, got \(result)")
            continue
        }
        #expect(error.code == .cancelled)
        if error.mayHaveReachedAPNs {
            sent += 1
            #expect(index < sentBelow)
        } else {
            unsent += 1
        }
    }
    return (sent, unsent)
}

@Suite("HTTP2Transport.sendBatch: requests made and completed on the connection threads")
struct BatchSendTests {
    @Test("10,000 notifications over 1 and 4 connections: each made once in order, one result each, each processed once", arguments: [1, 4])
    func tenThousand(connections: Int) async throws {
        let count = Sanitizer.scaled(10_000)
        try await withMockAPNsServer(configuration: .init(maxConcurrentStreams: 250)) { server in
            // A queue limit of 0 would refuse every request of `send(_:)` that finds no free
            // stream: a batch's window bounds its requests instead.
            let transport = try mockTransport(server) {
                $0.connectionCount = connections
                $0.maxQueuedRequests = 0
            }
            // Timeouts are not under test: a request may wait its turn in a window of 1,000
            // for long on a slow machine (ThreadSanitizer, parallel tests).
            let log = BatchLog(requests: try (0..<count).map { try mockPush($0, port: server.port, timeout: .seconds(300)) })
            await log.send(through: transport, window: 1_000)
            let statistics = transport.statistics
            await transport.shutdown()

            let results = log.expectEachMadeOnceInOrder(count: count)
            for (index, result) in results {
                let response = try result.get()
                #expect(response.status == 200)
                // The answer is to this index's request: the mock echoes its apns-id.
                #expect(response.apnsIDHeader == log.requests[index].apnsIDHeader)
            }
            let answered = answeredIDs(server)
            #expect(answered.count == count)
            #expect(answered.values.allSatisfy { $0 == 1 })
            #expect(statistics.responsesByStatus == [200: count])
            #expect(statistics.requestsInFlight == 0)
            // A window of 1,000 over streams of 250: the pool opened every connection it may.
            #expect(statistics.connectionsOpened == connections)
            #expect(Set(server.recordedRequests.map(\.connectionNumber)).count == connections)
        }
    }

    @Test("a batch wider than one connection's streams keeps every connection busy, not only the first one woken")
    func spreadsOverConnections() async throws {
        try await withMockAPNsServer(configuration: .init(maxConcurrentStreams: 100)) { server in
            try await Self.spreadOverConnections(server)
        }
    }

    static func spreadOverConnections(_ server: MockAPNsServer) async throws {
        let count = Sanitizer.scaled(20_000)
        let port = server.port
        let transport = try mockTransport(server) {
            $0.connectionCount = 4
            // All four open during the warm-up, not a stagger apart.
            $0.connectionStagger = .zero
        }
        // First open all four connections, then let them fall asleep. Under a loaded test
        // run a connection can come up after a short warm-up has ended (a SYN the kernel
        // dropped is sent again a second later): warm up again, a bounded number of times,
        // until all four are open, which is this test's premise, not what it checks.
        for round in 0..<5 where server.statistics.connections < 4 {
            let warmUp = BatchLog(
                requests: try (0..<2_000).map { try mockPush(100_000 + round * 10_000 + $0, port: port, timeout: .seconds(300)) }
            )
            await warmUp.send(through: transport, window: 400)
        }
        #expect(server.statistics.connections == 4)
        try await Task.sleep(for: .milliseconds(100))
        server.removeRecordedRequests()
        // Four connections' worth. The first request wakes one connection; the other
        // 399 must wake the rest (the woken one can take only its 100), and so must the
        // refills the connections' threads make.
        let log = BatchLog(requests: try (0..<count).map { try mockPush($0, port: port, timeout: .seconds(300)) })
        await log.send(through: transport, window: 400)
        await transport.shutdown()
        #expect(log.results.values.allSatisfy { (try? $0.get().status) == 200 })
        var perConnection: [Int: Int] = [:]
        for record in server.recordedRequests { perConnection[record.connectionNumber, default: 0] += 1 }
        #expect(perConnection.count == 4, "requests per connection: \(perConnection); transport: \(transport.statistics)")
        // Evenly would be a quarter each; a connection left asleep gets none.
        #expect(perConnection.values.allSatisfy { $0 >= count / 10 }, "requests per connection: \(perConnection)")
    }

    @Test("while connections are refused, a batch waits for the next attempt: only the window's requests fail per attempt")
    func refusedConnections() async throws {
        try await withMockAPNsServer { server in
            // Long enough that the first attempts meet the refusal even on a slow (sanitized) build.
            server.refuseConnections(for: .milliseconds(1_000))
            let transport = try mockTransport(server) {
                $0.reconnectBackoffBase = .milliseconds(50)
                $0.reconnectBackoffMax = .milliseconds(100)
            }
            let log = BatchLog(requests: try (0..<1_000).map { try mockPush($0, port: server.port, timeout: .seconds(300)) })
            await log.send(through: transport, window: 10)
            let attempts = transport.statistics.connectionFailures
            await transport.shutdown()
            let results = log.results
            #expect(results.count == 1_000)
            let failures = results.values.compactMap(\.failure)
            // Refused: the TCP connection closes at once, during or before the TLS handshake.
            #expect(failures.allSatisfy { [.connectionFailed, .tlsFailure].contains($0.code) && !$0.mayHaveReachedAPNs }, "\(Set(failures.map(\.code)))")
            // Each failed attempt fails what waits for it: at most the window. A batch that
            // failed fast while the pool backs off would lose nearly all 1,000 here.
            #expect(attempts >= 1)
            #expect(failures.count <= 10 * attempts, "\(failures.count) failures over \(attempts) failed attempts")
            #expect(results.values.filter { (try? $0.get().status) == 200 }.count == 1_000 - failures.count)
        }
    }

    @Test("a batch's queued requests do not count against maxQueuedRequests for single sends")
    func queueLimitCountsSingleSendsOnly() async throws {
        try await withMockAPNsServer(configuration: .init(maxConcurrentStreams: 10)) { server in
            let transport = try mockTransport(server) { $0.maxQueuedRequests = 5 }
            let port = server.port
            server.setResponseDelay(.seconds(600))  // released below
            let log = BatchLog(requests: try (0..<100).map { try mockPush($0, port: port, timeout: .seconds(300)) })
            let batch = Task { await log.send(through: transport, window: 100) }
            // 10 in flight, 90 queued: far more than maxQueuedRequests.
            #expect(await waitUntil { server.statistics.requests == 10 })
            #expect(transport.waitingRequests == 0)
            let singles = Task { try await sendToMock(transport, port: port, indices: 1_000..<1_005) }
            #expect(await waitUntil { transport.waitingRequests == 5 })
            // The sixth single send is one too many: the limit still holds for them.
            let sixth = try mockPush(2_000, port: port)
            do throws(APNsTransportError) {
                _ = try await transport.send(sixth)
                Issue.record("the sixth single send was queued")
            } catch {
                #expect(error.code == .queueFull)
                #expect(!error.mayHaveReachedAPNs)
            }
            server.setResponseDelay(.zero)
            await batch.value
            let singleResults = try await singles.value
            await transport.shutdown()
            #expect(log.results.count == 100)
            #expect(log.results.values.allSatisfy { (try? $0.get().status) == 200 })
            #expect(singleResults.allSatisfy { (try? $0.get().status) == 200 })
        }
    }

    @Test("the window bounds the requests in flight; skipped indices get no result")
    func windowAndSkips() async throws {
        try await withMockAPNsServer(configuration: .init(maxConcurrentStreams: 1_000)) { server in
            let transport = try mockTransport(server)
            let skipped: Set<Int> = [0, 7, 8, 99, 199]
            let log = BatchLog(requests: try (0..<200).map { try mockPush($0, port: server.port, timeout: .seconds(300)) }, skipped: skipped)
            // Answers held: the server sees exactly the window's worth, then nothing more.
            server.setResponseDelay(.seconds(600))
            let sending = Task { await log.send(through: transport, window: 25) }
            #expect(await waitUntil { server.statistics.requests == 25 })
            // A bounded look for a 26th request: the batch must not make one while 25 are held.
            for _ in 0..<20 { await Task.yield() }
            try await Task.sleep(for: .milliseconds(50))
            #expect(server.statistics.requests == 25)
            #expect(log.made.count == 25 + 3)  // 0, 7 and 8 were skipped on the way
            server.setResponseDelay(.zero)
            await sending.value
            await transport.shutdown()
            #expect(log.made == Array(0..<200))
            let results = log.results
            #expect(Set(results.keys) == Set(0..<200).subtracting(skipped))
            #expect(results.values.allSatisfy { (try? $0.get().status) == 200 })
            #expect(server.recordedRequests.count == 200 - skipped.count)
        }
    }

    @Test("cancelling the task: in-flight requests fail as sent, the rest are made and fail unsent; every index has one outcome")
    func cancellation() async throws {
        try await withMockAPNsServer { server in
            let transport = try mockTransport(server)
            _ = try await transport.send(mockPush(10_000, port: server.port))  // the stream limit rises
            let count = 300
            let log = BatchLog(requests: try (0..<count).map { try mockPush($0, port: server.port, timeout: .seconds(300)) })
            server.setResponseDelay(.seconds(600))  // never answered before the cancellation
            let sending = Task { await log.send(through: transport, window: 50) }
            #expect(await waitUntil { server.statistics.requests == 51 })
            sending.cancel()
            await sending.value
            server.setResponseDelay(.zero)
            let statistics = transport.statistics
            await transport.shutdown()

            #expect(log.made == Array(0..<count))
            let results = log.results
            #expect(results.count == count)
            let (sent, unsent) = countCancelled(results, sentBelow: 50)
            #expect(sent == 50)
            #expect(unsent == count - 50)
            #expect(statistics.requestsInFlight == 0)
            // Only the window's requests reached the server (plus the first one).
            #expect(server.statistics.requests == 51)
        }
    }

    @Test("shutdown during a batch: the batch returns, and every request has one outcome")
    func shutdownDuringBatch() async throws {
        try await withMockAPNsServer { server in
            let transport = try mockTransport(server) { $0.shutdownGracePeriod = .milliseconds(100) }
            _ = try await transport.send(mockPush(10_000, port: server.port))
            let count = 500
            let log = BatchLog(requests: try (0..<count).map { try mockPush($0, port: server.port, timeout: .seconds(300)) })
            server.setResponseDelay(.seconds(600))
            let sending = Task { await log.send(through: transport, window: 20) }
            #expect(await waitUntil { server.statistics.requests == 21 })
            await transport.shutdown()
            await sending.value
            server.setResponseDelay(.zero)
            let results = log.results
            #expect(results.count == count)
            for (index, result) in results {
                guard case .failure(let error) = result else {
                    Issue.record("index \(index): expected shutdown, got \(result)")
                    continue
                }
                #expect(error.code == .shutdown)
                // The 20 in flight were sent; the rest were refused before being sent.
                #expect(error.mayHaveReachedAPNs == (index < 20), "index \(index): \(error)")
            }
        }
    }

    @Test("each request's timeout counts from when the batch makes it")
    func timeouts() async throws {
        try await withMockAPNsServer { server in
            let transport = try mockTransport(server)
            _ = try await transport.send(mockPush(10_000, port: server.port))
            server.setResponseDelay(.seconds(600))
            // 2 s each: every request must be written before it expires (each checked as
            // sent, a timeout that may have reached APNs), which a loaded machine can hold
            // back for more than the half second this once allowed.
            let log = BatchLog(requests: try (0..<12).map { try mockPush($0, port: server.port, timeout: .seconds(2)) })
            // A window of 4: three rounds of timeouts, each made after the last timed out.
            await log.send(through: transport, window: 4)
            server.setResponseDelay(.zero)
            let after = try await transport.send(mockPush(10_001, port: server.port))
            await transport.shutdown()
            let results = log.results
            #expect(results.count == 12)
            for result in results.values {
                guard case .failure(let error) = result else {
                    Issue.record("expected a timeout, got \(result)")
                    continue
                }
                #expect(error.code == .timeout)
                #expect(error.mayHaveReachedAPNs)
            }
            // All 12 were sent: none timed out waiting behind the window.
            #expect(server.statistics.requests >= 13)
            #expect(after.status == 200)
        }
    }

    @Test("GOAWAY in the middle of a batch: nothing lost, nothing sent twice")
    func goAway() async throws {
        try await withMockAPNsServer { server in
            let transport = try mockTransport(server)
            server.sendGoAway(afterRequests: 500, reason: "Shutdown")
            let log = BatchLog(requests: try (0..<3_000).map { try mockPush($0, port: server.port, timeout: .seconds(300)) })
            await log.send(through: transport, window: 400)
            await transport.shutdown()
            let results = log.results
            #expect(results.count == 3_000)
            #expect(results.values.allSatisfy { (try? $0.get().status) == 200 })
            let answered = answeredIDs(server)
            #expect(answered.count == 3_000)
            #expect(answered.values.allSatisfy { $0 == 1 })
            #expect(transport.statistics.goAwaysReceived == 1)
            #expect(transport.statistics.connectionsOpened == 2)
        }
    }
}

@Suite("PushTransport.sendBatch's default implementation (a window of tasks)")
struct DefaultBatchSendTests {
    @Test("through MockTransport: made once in order, one result each, the window respected")
    func throughMockTransport() async throws {
        let transport = MockTransport()
        let peak = Mutex((now: 0, peak: 0))
        transport.respond { _ in
            peak.withLock { $0.now += 1; $0.peak = max($0.peak, $0.now) }
            try? await Task.sleep(for: .milliseconds(1))
            peak.withLock { $0.now -= 1 }
            return .accepted
        }
        let log = BatchLog(requests: try (0..<300).map { try mockPush($0, port: 443) }, skipped: [3, 250])
        await log.send(through: transport, window: 16)
        #expect(log.made == Array(0..<300))
        #expect(!log.overlapped)
        #expect(log.mismatched.isEmpty)
        let results = log.results
        #expect(Set(results.keys) == Set(0..<300).subtracting([3, 250]))
        #expect(results.values.allSatisfy { (try? $0.get().status) == 200 })
        #expect(peak.withLock { $0.peak } <= 16)
        #expect(peak.withLock { $0.peak } > 1)
    }

    @Test("send(_:maxConcurrency:) returns the results in the order of the requests")
    func arrayForm() async throws {
        let transport = MockTransport()
        transport.respond { request in
            // Later requests answer sooner, so completion order differs from input order.
            let index = Int(request.path.suffix(4), radix: 16) ?? 0
            try? await Task.sleep(for: .microseconds(100 * (40 - index)))
            return .accepted
        }
        let requests = try (0..<40).map { try mockPush($0, port: 443) }
        let results = await transport.send(requests, maxConcurrency: 8)
        #expect(results.count == 40)
        for (request, result) in zip(requests, results) {
            #expect((try? result.get())?.apnsIDHeader == request.apnsIDHeader)
        }
    }
}
