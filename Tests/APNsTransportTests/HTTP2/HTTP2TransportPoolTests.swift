import CNGHTTP2
import Logging
import Testing
@testable import APNsTransport

/// A transport wired to `server` through socket pairs (no TLS): the whole pool, I/O
/// shell and state machine run for real against nghttp2's server session.
func makeTransport(
    _ server: SocketPairHTTP2Server,
    _ configure: (inout HTTP2Transport.Configuration) -> Void = { _ in }
) -> HTTP2Transport {
    makeTransport(connector: server.connector, configure)
}

/// A transport whose connections come from `connector`, with a silent logger.
func makeTransport(
    connector: @escaping HTTP2Connector,
    _ configure: (inout HTTP2Transport.Configuration) -> Void = { _ in }
) -> HTTP2Transport {
    var configuration = HTTP2Transport.Configuration(
        environment: .production,
        logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
    )
    // Tests that count connections open them as soon as requests wait; the stagger
    // between openings has tests of its own (HTTP2PoolStateMachineTests).
    configuration.connectionStagger = .zero
    configure(&configuration)
    return HTTP2Transport(configuration: configuration, connector: connector)
}

/// Sends `count` device pushes concurrently and returns each outcome.
func sendMany(
    _ transport: HTTP2Transport,
    count: Int,
    timeout: Duration = .seconds(20)
) async throws -> [Result<APNsResponse, APNsTransportError>] {
    let requests = try (0..<count).map { try devicePush(token: $0, timeout: timeout) }
    return await withTaskGroup(of: Result<APNsResponse, APNsTransportError>.self) { group in
        for request in requests {
            group.addTask {
                do throws(APNsTransportError) {
                    return .success(try await transport.send(request))
                } catch {
                    return .failure(error)
                }
            }
        }
        var results: [Result<APNsResponse, APNsTransportError>] = []
        for await result in group { results.append(result) }
        return results
    }
}

/// Sends `requests` concurrently and returns each outcome with the index of its request.
func sendIndexed(
    _ transport: HTTP2Transport,
    requests: [APNsRequest]
) async -> [(index: Int, result: Result<APNsResponse, APNsTransportError>)] {
    await withTaskGroup(of: (Int, Result<APNsResponse, APNsTransportError>).self) { group in
        for (index, request) in requests.enumerated() {
            group.addTask {
                do throws(APNsTransportError) {
                    return (index, .success(try await transport.send(request)))
                } catch {
                    return (index, .failure(error))
                }
            }
        }
        var outcomes: [(index: Int, result: Result<APNsResponse, APNsTransportError>)] = []
        for await outcome in group { outcomes.append(outcome) }
        return outcomes
    }
}

extension APNsResponse {
    /// The response's `apns-id` header, upper-cased.
    var apnsIDHeader: String {
        headers.first { $0.name == "apns-id" }?.value.uppercased() ?? ""
    }
}

extension Result where Success == APNsResponse, Failure == APNsTransportError {
    var failure: APNsTransportError? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

@Suite("HTTP2Transport pool and I/O shell over socket pairs", .timeLimit(.minutes(1)))
struct HTTP2TransportPoolTests {
    @Test("1,000 requests on one connection: the limit rises from 1, every request answered once", arguments: [1, 4])
    func manyRequests(connections: Int) async throws {
        let server = SocketPairHTTP2Server()
        let transport = makeTransport(server) { $0.connectionCount = connections }
        let results = try await sendMany(transport, count: 1000)
        await transport.shutdown()
        await server.stop()

        #expect(results.allSatisfy { (try? $0.get().status) == 200 })
        let state = server.snapshot
        #expect(state.answeredIDs.count == 1000)
        #expect(state.answeredIDs.values.allSatisfy { $0 == 1 })
        // With answers flowing, whether the pool needs a second connection depends on how
        // fast the server answers (the queue outgrows the free streams only if answers lag),
        // so the spread is not asserted here; MockServerIntegrationTests.tenThousand holds
        // answers to prove it. Always true: the server saw exactly the connections the pool
        // opened, never more than configured, and one when one is configured.
        #expect(state.connections <= connections)
        #expect(state.connections == transport.statistics.connectionsOpened)
        let statistics = transport.statistics
        #expect(statistics.responsesByStatus == [200: 1000])
        #expect(statistics.requestsInFlight == 0)
        #expect(statistics.requestsSent == 1000)
        // One HEADERS + one DATA per request, plus a handful of connection-level frames.
        #expect(statistics.framesSent <= 2000 + 10 * state.connections + 50)
    }

    @Test("with the server's limit held at 1, requests wait for the one stream and none is refused")
    func limitHeldAtOne() async throws {
        var behaviour = SocketPairHTTP2Server.Behaviour()
        behaviour.initialStreamLimit = 1
        behaviour.raisedStreamLimit = 1
        let server = SocketPairHTTP2Server(behaviour)
        let transport = makeTransport(server)
        let results = try await sendMany(transport, count: 50)
        await transport.shutdown()
        await server.stop()

        #expect(results.allSatisfy { (try? $0.get().status) == 200 })
        // nghttp2's server session refuses a stream beyond its SETTINGS_MAX_CONCURRENT_STREAMS
        // (RFC 9113 §5.1.2); none was, so none had to be sent twice.
        #expect(transport.statistics.requestsSent == 50)
        #expect(transport.statistics.requestsRequeued == 0)
        #expect(server.snapshot.answeredIDs.count == 50)
        #expect(server.snapshot.connections == 1)
    }

    @Test("GOAWAY mid-flight: requests above the last-stream-id are sent again on a new connection, none twice")
    func goAwayMidFlight() async throws {
        var behaviour = SocketPairHTTP2Server.Behaviour()
        behaviour.goAwayAfterRequests = (connection: 1, requests: 30)
        let server = SocketPairHTTP2Server(behaviour)
        let transport = makeTransport(server)
        let results = try await sendMany(transport, count: 300)
        await transport.shutdown()
        await server.stop()

        #expect(results.allSatisfy { (try? $0.get().status) == 200 })
        let state = server.snapshot
        #expect(state.answeredIDs.count == 300)
        #expect(state.answeredIDs.values.allSatisfy { $0 == 1 })
        #expect(state.connections >= 2)
        #expect(transport.statistics.goAwaysReceived == 1)
    }

    @Test("with re-sends disabled, requests above the last-stream-id fail with goAway, never sent, with the reason")
    func goAwayWithoutRequeue() async throws {
        var behaviour = SocketPairHTTP2Server.Behaviour()
        behaviour.initialStreamLimit = 100
        behaviour.goAwayAfterRequests = (connection: 1, requests: 10)
        // However slowly the 50 tasks start, 20 requests are on connection 1 when the
        // GOAWAY names the 10th: at least 10 fail.
        behaviour.goAwayOnceReceived = 20
        let server = SocketPairHTTP2Server(behaviour)
        let transport = makeTransport(server) { $0.maxRequeues = 0 }
        let results = try await sendMany(transport, count: 50)
        await transport.shutdown()
        await server.stop()

        let failures = results.compactMap(\.failure)
        let answered = server.snapshot.answeredIDs
        #expect(!failures.isEmpty)
        #expect(failures.allSatisfy { $0.code == .goAway && !$0.mayHaveReachedAPNs })
        #expect(failures.allSatisfy { $0.detail?.contains("reason Shutdown") == true })
        #expect(failures.count + answered.count == 50)
        #expect(answered.values.allSatisfy { $0 == 1 })
    }

    @Test("RST_STREAM REFUSED_STREAM: the request is sent again inside the transport")
    func refusedStreamIsRetried() async throws {
        var behaviour = SocketPairHTTP2Server.Behaviour()
        behaviour.refuseRequests = [2, 5, 9]
        let server = SocketPairHTTP2Server(behaviour)
        let transport = makeTransport(server)
        let results = try await sendMany(transport, count: 20)
        await transport.shutdown()
        await server.stop()

        #expect(results.allSatisfy { (try? $0.get().status) == 200 })
        #expect(server.snapshot.answeredIDs.count == 20)
        #expect(transport.statistics.requestsRequeued == 3)
        #expect(transport.statistics.requestsSent == 23)
    }

    @Test("a dropped connection fails the written requests with mayHaveReachedAPNs, and nothing is lost")
    func droppedConnection() async throws {
        var behaviour = SocketPairHTTP2Server.Behaviour()
        behaviour.initialStreamLimit = 10
        behaviour.dropAfterRequests = 5
        behaviour.neverRespond = false
        let server = SocketPairHTTP2Server(behaviour)
        let transport = makeTransport(server)
        let requests = try (0..<10).map { try devicePush(token: $0) }
        let outcomes = await sendIndexed(transport, requests: requests)
        await transport.shutdown()
        await server.stop()

        // Each caller saw exactly one outcome.
        #expect(outcomes.count == 10)
        #expect(Set(outcomes.map(\.index)) == Set(0..<10))
        let failures = outcomes.compactMap(\.result.failure)
        #expect(!failures.isEmpty)
        #expect(failures.allSatisfy { $0.code == .connectionClosed && $0.mayHaveReachedAPNs })
        // A success is the server's answer to that very request, answered once. (A failed
        // one may have been answered by a server that closed before the answer left.)
        let answered = server.snapshot.answeredIDs
        #expect(answered.values.allSatisfy { $0 == 1 })
        for outcome in outcomes {
            let id = requests[outcome.index].apnsIDHeader
            switch outcome.result {
            case .success(let response):
                #expect(response.apnsIDHeader == id)
                #expect(answered[id] == 1)
            case .failure:
                #expect(answered[id, default: 0] <= 1)
            }
        }
        #expect(transport.statistics.connectionsLost == 1)
    }

    @Test("a request without an answer times out, its stream is reset with CANCEL")
    func timeoutResetsStream() async throws {
        var behaviour = SocketPairHTTP2Server.Behaviour()
        behaviour.neverRespond = true
        let server = SocketPairHTTP2Server(behaviour)
        let transport = makeTransport(server)
        // Three seconds, not 200 ms: the budget also covers opening the connection, which
        // a busy machine can slow down (a whole parallel run on two cores can hold a
        // thread back for more than a second), and this request must time out after it
        // was sent.
        let result = try await sendMany(transport, count: 1, timeout: .seconds(3))
        // With the stream limit at 1, a request holds the only stream (until it is
        // cancelled below) while a second one, with a 200 ms timeout, waits in the queue
        // and expires there.
        let holder = try devicePush(token: 1, timeout: .seconds(120))
        let waiter = try devicePush(token: 2, timeout: .milliseconds(200))
        let held = sendingTask(transport, holder)
        while transport.statistics.requestsSent < 2 { try await Task.sleep(for: .milliseconds(5)) }
        var queued: APNsTransportError?
        do throws(APNsTransportError) {
            _ = try await transport.send(waiter)
        } catch {
            queued = error
        }
        held.cancel()
        let sent = await held.value
        await transport.shutdown()
        await server.stop()

        #expect(result.first?.failure?.code == .timeout)
        #expect(result.first?.failure?.mayHaveReachedAPNs == true)
        #expect(queued?.code == .timeout)
        #expect(queued?.mayHaveReachedAPNs == false)
        #expect(sent?.code == .cancelled)
        #expect(sent?.mayHaveReachedAPNs == true)
        #expect(server.snapshot.resetCodes.contains(NGHTTP2_CANCEL.rawValue))
    }

    @Test("back-pressure: past maxQueuedRequests, send fails at once with queueFull")
    func queueFull() async throws {
        var behaviour = SocketPairHTTP2Server.Behaviour()
        behaviour.neverRespond = true
        let server = SocketPairHTTP2Server(behaviour)
        let transport = makeTransport(server) {
            $0.maxQueuedRequests = 3
            $0.shutdownGracePeriod = .milliseconds(50)
        }
        // Long enough that none of the first three expires (and frees its place) before
        // all ten have asked for one, even on a busy machine: a whole parallel run on two
        // cores can start the ten child tasks more than a second apart.
        let results = try await sendMany(transport, count: 10, timeout: .seconds(3))
        await transport.shutdown()
        await server.stop()
        // The results come back once shutdown fails what was in flight or queued.
        let full = results.compactMap(\.failure).filter { $0.code == .queueFull }
        #expect(full.count >= 6)
        #expect(full.allSatisfy { !$0.mayHaveReachedAPNs })
    }

    @Test("queued sends that are cancelled give their places in maxQueuedRequests back at once")
    func cancelledQueuedSendsFreeTheirPlaces() async throws {
        let server = SocketPairHTTP2Server(.silent(streams: 1))
        let transport = makeTransport(server) {
            $0.maxQueuedRequests = 2
            $0.shutdownGracePeriod = .milliseconds(50)
        }
        func sending(_ request: APNsRequest) -> Task<APNsTransportError?, Never> { sendingTask(transport, request) }
        func outcome(_ request: APNsRequest) async -> APNsTransportError? {
            await sending(request).value
        }
        // One request holds the only stream; two wait behind it, due in two minutes.
        let holder = sending(try devicePush(token: 1, timeout: .seconds(120)))
        for _ in 0..<4_000 where transport.statistics.requestsSent < 1 { try await Task.sleep(for: .milliseconds(5)) }
        let waiters = try [2, 3].map { sending(try devicePush(token: $0, timeout: .seconds(120))) }
        for _ in 0..<4_000 where transport.waitingRequests < 2 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(transport.waitingRequests == 2)
        #expect(await outcome(try devicePush(token: 4, timeout: .milliseconds(300)))?.code == .queueFull)
        for waiter in waiters { waiter.cancel() }
        for waiter in waiters {
            let error = await waiter.value
            #expect(error?.code == .cancelled)
            #expect(error?.mayHaveReachedAPNs == false)
        }
        // Their places come back within the pool's 10 ms watch, long before their deadlines.
        for _ in 0..<4_000 where transport.waitingRequests > 0 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(transport.waitingRequests == 0)
        let next = await outcome(try devicePush(token: 5, timeout: .milliseconds(300)))
        #expect(next?.code == .timeout)
        #expect(next?.mayHaveReachedAPNs == false)
        holder.cancel()
        #expect(await holder.value?.code == .cancelled)
        await transport.shutdown()
        await server.stop()
    }

    @Test("cancelling the calling task resets the stream and throws cancelled")
    func cancellation() async throws {
        var behaviour = SocketPairHTTP2Server.Behaviour()
        behaviour.neverRespond = true
        let server = SocketPairHTTP2Server(behaviour)
        let transport = makeTransport(server)
        let request = try devicePush()
        let task = sendingTask(transport, request)
        while transport.statistics.requestsSent == 0 { try await Task.sleep(for: .milliseconds(5)) }
        task.cancel()
        let error = await task.value
        #expect(error?.code == .cancelled)
        #expect(error?.mayHaveReachedAPNs == true)
        for _ in 0..<4_000 where server.snapshot.resetCodes.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
        #expect(server.snapshot.resetCodes == [NGHTTP2_CANCEL.rawValue])
        await transport.shutdown()
        await server.stop()
    }

    @Test("a task cancelled before it sends: cancelled, not sent, nothing queued, no connection opened")
    func cancelledBeforeSending() async throws {
        let server = SocketPairHTTP2Server(SocketPairHTTP2Server.Behaviour())
        let transport = makeTransport(server)
        let request = try devicePush()
        let task = Task { () -> APNsTransportError? in
            withUnsafeCurrentTask { $0?.cancel() }
            do throws(APNsTransportError) {
                _ = try await transport.send(request)
                return nil
            } catch {
                return error
            }
        }
        let error = await task.value
        #expect(error?.code == .cancelled)
        #expect(error?.mayHaveReachedAPNs == false)
        #expect(transport.waitingRequests == 0)
        // Time for a connection attempt to show, had the request been queued.
        try await Task.sleep(for: .milliseconds(100))
        #expect(server.snapshot.connectAttempts.isEmpty)
        #expect(transport.statistics.requestsSent == 0)
        await transport.shutdown()
        await server.stop()
    }

    @Test("a server refusing connections: attempts back off and requests fail fast, never sent")
    func refusedConnections() async throws {
        var behaviour = SocketPairHTTP2Server.Behaviour()
        behaviour.refuseConnections = true
        let server = SocketPairHTTP2Server(behaviour)
        // A backoff of 4 s: after a failed attempt the next one waits 2-4 s (equal
        // jitter), so sends fail at once for at least 1.6 s of it: wide enough for a
        // test task that resumes late (a whole parallel run on two cores can delay a
        // resumption past half a second) to send inside it.
        let transport = makeTransport(server) {
            $0.reconnectBackoffBase = .seconds(4)
            $0.reconnectBackoffMax = .seconds(4)
        }
        var failures: [APNsTransportError] = []
        let clock = ContinuousClock()
        let start = clock.now
        // A deadline shorter than the shortest backoff (2 s): a send cannot wait for the
        // next attempt, so during a backoff it fails at once.
        let request = try devicePush(timeout: .milliseconds(400))
        func failedFast(_ error: APNsTransportError) -> Bool { error.detail?.contains("next attempt in") == true }
        // Sends back to back until the pool has tried twice and at least 10 sends failed
        // during a backoff (bounded by 60 s however slow the machine).
        while server.snapshot.connectAttempts.count < 2 || failures.filter(failedFast).count < 10,
              clock.now - start < .seconds(60) {
            do throws(APNsTransportError) {
                _ = try await transport.send(request)
            } catch {
                failures.append(error)
            }
        }
        await transport.shutdown()
        await server.stop()

        // Never sent, every one: refused by an attempt, failed at once during a backoff, or
        // (on a loaded machine, a send that waited for an attempt slower than its 400 ms)
        // timed out in the queue.
        #expect(failures.allSatisfy { ($0.code == .connectionFailed || $0.code == .timeout) && !$0.mayHaveReachedAPNs })
        let attempts = server.snapshot.connectAttempts
        let fast = failures.filter(failedFast).count
        let timeouts = failures.filter { $0.code == .timeout }.count
        #expect(attempts.count >= 2)
        #expect(fast >= 10)
        // Each attempt fails at most the one request that was waiting for it (the sends
        // are one at a time); every other send failed at once without touching the network.
        #expect(failures.count - fast - timeouts <= attempts.count, "\(attempts.count) attempts, \(fast) fast failures, \(timeouts) timeouts, \(failures.count) in all")
        // Consecutive attempts at least the jittered lower bound (base/2 = 2 s) apart.
        for (earlier, later) in zip(attempts, attempts.dropFirst()) {
            #expect(later - earlier >= 2_000_000_000)
        }
        #expect(transport.statistics.connectionFailures == attempts.count)
    }

    @Test("shutdown fails in-flight requests after the grace period, closes with GOAWAY and refuses new ones")
    func shutdownWithRequestsInFlight() async throws {
        let server = SocketPairHTTP2Server(.silent())
        let transport = makeTransport(server) { $0.shutdownGracePeriod = .milliseconds(100) }
        async let results = sendMany(transport, count: 5)
        while transport.statistics.requestsSent < 5 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(!transport.isShutDown)
        await transport.shutdown()
        #expect(transport.isShutDown)
        let outcomes = try await results
        #expect(outcomes.compactMap(\.failure).count == 5)
        #expect(outcomes.compactMap(\.failure).allSatisfy { $0.code == .shutdown && $0.mayHaveReachedAPNs })
        for _ in 0..<4_000 where server.snapshot.goAwaysFromClient == 0 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(server.snapshot.goAwaysFromClient == 1)
        await #expect(throws: APNsTransportError.shutdown("the transport is shut down")) {
            _ = try await transport.send(try devicePush())
        }
        #expect(transport.statistics.requestsInFlight == 0)
        await server.stop()
    }

    @Test("an unanswered PING closes the connection; its request fails with mayHaveReachedAPNs")
    func pingTimeout() async throws {
        var behaviour = SocketPairHTTP2Server.Behaviour()
        behaviour.neverRespond = true
        behaviour.ignorePings = true
        let server = SocketPairHTTP2Server(behaviour)
        let transport = makeTransport(server) {
            $0.pingInterval = .milliseconds(100)
            $0.pingTimeout = .milliseconds(100)
        }
        let results = try await sendMany(transport, count: 1)
        await transport.shutdown()
        await server.stop()
        // Here every connection ignores PINGs alike, so this shows only that the dead
        // connection closes; ConnectionFaultTests.unansweredPingMovesQueuedWork black-holes
        // one connection of the mock server and shows where the work behind it goes.
        let failure = results.first?.failure
        #expect(failure?.code == .connectionClosed)
        #expect(failure?.mayHaveReachedAPNs == true)
        #expect(failure?.detail?.contains("PING") == true)
    }

    @Test("a request for another authority gets its own pool and endpoint")
    func otherAuthority() async throws {
        let server = SocketPairHTTP2Server()
        let transport = makeTransport(server)
        let request = try devicePush(authority: "api-manage-broadcast.push.apple.com:2196")
        let response = try await transport.send(request)
        _ = try await transport.send(try devicePush())
        await transport.shutdown()
        await server.stop()
        #expect(response.status == 200)
        #expect(
            server.snapshot.endpoints == [
                TLSEndpoint(host: "api-manage-broadcast.push.apple.com", port: 2196),
                TLSEndpoint(host: "api.push.apple.com", port: 443),
            ]
        )
    }

    @Test(
        "authorities parse as host, host:port or [v6]:port (RFC 3986 §3.2.2)",
        arguments: [
            ("api.push.apple.com", TLSEndpoint(host: "api.push.apple.com", port: 443)),
            ("api.push.apple.com:2197", TLSEndpoint(host: "api.push.apple.com", port: 2197)),
            ("[::1]:8443", TLSEndpoint(host: "::1", port: 8443)),
            ("[::1]", TLSEndpoint(host: "::1", port: 443)),
        ]
    )
    func authorityParsing(authority: String, endpoint: TLSEndpoint) {
        #expect(HTTP2Transport.endpoint(authority: authority) == endpoint)
    }

    @Test("malformed authorities are refused", arguments: ["", ":443", "host:", "host:99999", "[::1"])
    func badAuthority(authority: String) {
        #expect(HTTP2Transport.endpoint(authority: authority) == nil)
    }

    @Test("reconnect backoff doubles from the base, is capped, and jitters within [d/2, d]")
    func backoff() {
        let backoff = ReconnectBackoff(base: .milliseconds(100), maximum: .seconds(1))
        #expect(backoff.delay(afterFailures: 0, jitter: 1) == .zero)
        #expect(backoff.delay(afterFailures: 1, jitter: 1) == .milliseconds(100))
        #expect(backoff.delay(afterFailures: 1, jitter: 0) == .milliseconds(50))
        #expect(backoff.delay(afterFailures: 3, jitter: 1) == .milliseconds(400))
        #expect(backoff.delay(afterFailures: 10, jitter: 1) == .seconds(1))
        #expect(backoff.delay(afterFailures: 50, jitter: 0) == .milliseconds(500))
    }
}
