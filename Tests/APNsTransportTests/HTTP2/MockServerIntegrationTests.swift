import APNsMockServer
import Logging
import Synchronization
import Testing
@testable import APNsTransport

/// A log handler that keeps the metadata of every warning, so a test can read what the
/// transport reported (the GOAWAY's last-stream-id), and every event at or above its
/// level as one line of text (label, level, message, metadata, source).
struct CapturingLogHandler: LogHandler {
    final class Store: Sendable {
        let warnings = Mutex<[Logger.Metadata]>([])
        let events = Mutex<[(level: Logger.Level, text: String)]>([])
        /// Every event's level and metadata, at or above the logger's level.
        let metadata = Mutex<[(level: Logger.Level, metadata: Logger.Metadata)]>([])
    }
    let store: Store
    var label = ""
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .warning
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        store.events.withLock { $0.append((event.level, "\(label) \(event.level) \(event.message) \(merged) \(event.source)")) }
        store.metadata.withLock { $0.append((event.level, merged)) }
        guard event.level >= .warning else { return }
        store.warnings.withLock { $0.append(merged) }
    }
}

/// A device push for the mock server: no `authorization` (the mock runs without token
/// authentication here), a distinct token and apns-id per index.
func mockPush(_ index: Int, port: Int, timeout: Duration = .seconds(20), host: String = "127.0.0.1") throws -> APNsRequest {
    let hex = String(index, radix: 16)
    let token = String(repeating: "0", count: 64 - hex.count) + hex
    let suffix = String(repeating: "0", count: 12 - hex.count) + hex
    return try APNsRequest(
        method: .post,
        authority: "\(host):\(port)",
        path: "/3/device/" + token,
        headers: [
            HeaderField(name: "apns-id", value: "00000000-0000-4000-8000-" + suffix.uppercased()),
            HeaderField(name: "apns-push-type", value: "alert"),
            HeaderField(name: "apns-expiration", value: "0"),
            HeaderField(name: "apns-priority", value: "10"),
            HeaderField(name: "apns-topic", value: "com.example.app"),
        ],
        body: Array(#"{"aps":{"alert":"Hello"}}"#.utf8),
        timeout: timeout
    )
}

func mockTransport(
    _ server: MockAPNsServer,
    _ configure: (inout HTTP2Transport.Configuration) -> Void = { _ in }
) throws -> HTTP2Transport {
    let pem = try #require(server.certificateAuthorityPEM)
    var configuration = HTTP2Transport.Configuration(
        environment: .custom(host: "127.0.0.1", port: server.port),
        tls: TLSConfiguration(trustRoots: .certificates(pem)),
        logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
    )
    if Sanitizer.name != nil {
        // A sanitized suite on 2 cores can starve the in-process server for more than
        // 20 s; with the default PING timeout the transport would then rightly give its
        // connections up as dead. Tests of the timers set their own.
        configuration.pingTimeout = .seconds(120)
    }
    // Tests that count connections open them as soon as requests wait; the stagger
    // between openings has tests of its own (HTTP2PoolStateMachineTests).
    configuration.connectionStagger = .zero
    configure(&configuration)
    return HTTP2Transport(configuration: configuration)
}

func sendToMock(
    _ transport: HTTP2Transport,
    port: Int,
    indices: Range<Int>,
    // Every request is queued at once, and the timeout counts from then: generous, since
    // timeouts are not what the callers test (the ones that are pass their own).
    timeout: Duration = .seconds(300)
) async throws -> [Result<APNsResponse, APNsTransportError>] {
    let requests = try indices.map { try mockPush($0, port: port, timeout: timeout) }
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

/// Sends `request` from a new task: its value is the failure, or `nil` if an answer came.
func sendingTask(_ transport: HTTP2Transport, _ request: APNsRequest) -> Task<APNsTransportError?, Never> {
    Task {
        do throws(APNsTransportError) {
            _ = try await transport.send(request)
            return nil
        } catch {
            return error
        }
    }
}

/// How many times each apns-id was answered by the server.
func answeredIDs(_ server: MockAPNsServer) -> [String: Int] {
    var counts: [String: Int] = [:]
    for record in server.recordedRequests { counts[record.apnsID.uppercased(), default: 0] += 1 }
    return counts
}

@Suite("HTTP2Transport against APNsMockServer (TLS + HTTP/2 on loopback)")
struct MockServerIntegrationTests {
    @Test("10,000 notifications, every one answered exactly once; with 4 connections the work spreads over all 4", arguments: [1, 4])
    func tenThousand(connections: Int) async throws {
        let count = Sanitizer.scaled(10_000)
        // A tenth of the requests fit on one connection at once, so with answers held
        // 4 connections cannot carry them all: the pool must open all 4.
        let streamLimit = max(1, count / 10)
        try await withMockAPNsServer(configuration: .init(maxConcurrentStreams: streamLimit)) { server in
            let transport = try mockTransport(server) { $0.connectionCount = connections }
            let port = server.port
            var heldAtOnce = 0
            let results: [Result<APNsResponse, APNsTransportError>]
            if connections > 1 {
                // Answers held until more requests arrived than `connections - 1`
                // connections can carry at once (no timing: a bounded wait, then release).
                server.setResponseDelay(.seconds(600))
                let sending = Task { try await sendToMock(transport, port: port, indices: 0..<count) }
                let threshold = (connections - 1) * streamLimit
                _ = await waitUntil { server.statistics.requests > threshold }
                heldAtOnce = server.statistics.requests
                server.setResponseDelay(.zero)
                results = try await sending.value
                #expect(heldAtOnce > threshold, "\(heldAtOnce) requests in flight at once, more than \(threshold) expected")
            } else {
                results = try await sendToMock(transport, port: port, indices: 0..<count)
            }
            await transport.shutdown()
            #expect(results.count == count)
            #expect(results.allSatisfy { (try? $0.get().status) == 200 })
            let answered = answeredIDs(server)
            #expect(answered.count == count)
            #expect(answered.values.allSatisfy { $0 == 1 })
            #expect(server.statistics.accepted == count)
            let statistics = transport.statistics
            #expect(statistics.responsesByStatus == [200: count])
            #expect(statistics.connectionsOpened == connections)
            #expect(server.statistics.connections == connections)
            // Every connection carried requests.
            #expect(Set(server.recordedRequests.map(\.connectionNumber)).count == connections)
            #expect(statistics.requestsInFlight == 0)
        }
    }

    @Test("GOAWAY mid-flight: nothing lost, nothing the server declared processed is sent twice")
    func goAwayMidFlight() async throws {
        try await withMockAPNsServer { server in
            let logs = CapturingLogHandler.Store()
            let transport = try mockTransport(server) {
                $0.logger = Logger(label: "test", factory: { _ in CapturingLogHandler(store: logs) })
                $0.logger.logLevel = .debug
            }
            server.sendGoAway(afterRequests: 500, reason: "Shutdown")
            let results = try await sendToMock(transport, port: server.port, indices: 0..<3_000)
            await transport.shutdown()
            #expect(results.count == 3_000)
            #expect(results.allSatisfy { (try? $0.get().status) == 200 })
            #expect(transport.statistics.goAwaysReceived == 1)
            #expect(transport.statistics.connectionsOpened == 2)

            // The GOAWAY as the transport logged it: a debug message (handled, so no
            // warning) with the reason, under the apns.* metadata keys.
            let logged = try #require(logs.metadata.withLock { $0 }.first { $0.metadata["apns.goaway.last-stream-id"] != nil })
            #expect(logged.level == .debug)
            let goAway = logged.metadata
            #expect(goAway["apns.reason"] == "Shutdown")
            #expect(logs.warnings.withLock { $0 }.allSatisfy { $0["apns.goaway.last-stream-id"] == nil })
            let lastStreamID = try #require(Int("\(goAway["apns.goaway.last-stream-id"] ?? "")"))

            // Every notification was processed exactly once: the server processes no stream
            // above the last-stream-id it announced, and the transport re-sends only those.
            let records = server.recordedRequests
            let answered = answeredIDs(server)
            #expect(answered.count == 3_000)
            #expect(answered.values.allSatisfy { $0 == 1 })
            #expect(records.filter { $0.connectionNumber == 0 }.allSatisfy { $0.streamID <= lastStreamID })
        }
    }

    @Test("a dropped connection: the requests on it fail with mayHaveReachedAPNs, the rest succeed, none twice")
    func droppedConnection() async throws {
        try await withMockAPNsServer { server in
            let transport = try mockTransport(server)
            // One answer first, so the connection has proved itself: its drop is then a
            // lost connection (the pool reconnects at once and the queued requests go out
            // on the new one). A drop before any answer counts as a failed connection
            // attempt instead: the pool backs off and fails the requests waiting for it,
            // unsent (connectionFailed, mayHaveReachedAPNs false), which is the hostile-
            // server tests' case, not this one's. Without this, a client that wrote many
            // requests before reading the first answer met that case now and then.
            #expect(try await transport.send(mockPush(6_000, port: server.port)).status == 200)
            server.dropConnection(atRequest: 100)
            let outcomes = try await sendIndexed(transport, requests: (0..<1_000).map { try mockPush($0, port: server.port) })
            // The next request reconnects.
            let after = try await transport.send(mockPush(5_000, port: server.port))
            #expect(after.status == 200)
            await transport.shutdown()
            // Each request's caller saw exactly one outcome.
            #expect(outcomes.count == 1_000)
            #expect(Set(outcomes.map(\.index)) == Set(0..<1_000))
            let failures = outcomes.compactMap(\.result.failure)
            #expect(!failures.isEmpty)
            #expect(
                failures.allSatisfy { $0.code == .connectionClosed && $0.mayHaveReachedAPNs },
                "\(Set(failures.map { "\($0.code), mayHaveReachedAPNs \($0.mayHaveReachedAPNs): \($0.detail ?? "")" }))"
            )
            // Nothing is sent twice: the failed requests may have reached the server, and
            // the transport left the retry decision to the caller. Each success is the
            // answer to its own request (its apns-id), which the server processed once.
            let answered = answeredIDs(server)
            #expect(answered.values.allSatisfy { $0 == 1 })
            for outcome in outcomes {
                guard case .success(let response) = outcome.result else { continue }
                let id = try mockPush(outcome.index, port: server.port).apnsIDHeader
                #expect(response.apnsIDHeader == id)
                #expect(answered[id] == 1)
            }
            let sentIDs = try Set((0..<1_000).map { try mockPush($0, port: server.port).apnsIDHeader })
            // Beside the burst, the server answered only the first request and the last.
            #expect(
                Set(answered.keys).subtracting(sentIDs)
                    == [try mockPush(6_000, port: server.port).apnsIDHeader, try mockPush(5_000, port: server.port).apnsIDHeader]
            )
            #expect(transport.statistics.connectionsLost == 1)
        }
    }

    @Test("a slow server: the request times out with its stream reset, the connection stays usable")
    func slowServer() async throws {
        try await withMockAPNsServer { server in
            let transport = try mockTransport(server)
            _ = try await transport.send(mockPush(0, port: server.port))
            server.setResponseDelay(.seconds(60))  // released below, after the timeouts
            // 3 s: each must be written before it expires (checked below: may have reached
            // APNs), which a loaded machine can hold back for more than a second.
            let slow = try await sendToMock(transport, port: server.port, indices: 1..<4, timeout: .seconds(3))
            server.setResponseDelay(.zero)
            let after = try await transport.send(mockPush(9, port: server.port))
            await transport.shutdown()
            for result in slow {
                guard case .failure(let error) = result else {
                    Issue.record("expected a timeout, got \(result)")
                    continue
                }
                #expect(error.code == .timeout)
                #expect(error.mayHaveReachedAPNs)
            }
            #expect(after.status == 200)
            #expect(transport.statistics.connectionsOpened == 1)
        }
    }

    @Test("a server refusing connections: bounded attempts with backoff, failures never sent")
    func refusingConnections() async throws {
        try await withMockAPNsServer { server in
            server.refuseConnections(for: .seconds(120))  // outlasts the loop below, however slow the machine
            // After a failed attempt the next one waits 2-4 s (equal jitter): sends made in
            // the first 1.6 s (at least) of a backoff fail at once. The window is wide, so
            // that a test task that resumes late (a whole parallel run on two cores can
            // delay a resumption past half a second) still sends in it.
            let transport = try mockTransport(server) {
                $0.reconnectBackoffBase = .seconds(4)
                $0.reconnectBackoffMax = .seconds(4)
                $0.connectTimeout = .seconds(5)
            }
            var failures: [APNsTransportError] = []
            let clock = ContinuousClock()
            let start = clock.now
            // A deadline shorter than the shortest backoff (2 s): a send cannot wait for
            // the next attempt, so during a backoff it fails at once.
            let request = try mockPush(0, port: server.port, timeout: .milliseconds(400))
            func failedFast(_ error: APNsTransportError) -> Bool { error.detail?.contains("next attempt in") == true }
            // Sends back to back until the pool has tried twice and at least 10 sends
            // failed during a backoff (bounded by 60 s however slow the machine).
            while transport.statistics.connectionFailures < 2 || failures.filter(failedFast).count < 10,
                  clock.now - start < .seconds(60) {
                do throws(APNsTransportError) {
                    _ = try await transport.send(request)
                } catch {
                    failures.append(error)
                }
            }
            await transport.shutdown()
            #expect(failures.allSatisfy { !$0.mayHaveReachedAPNs })
            let attempts = transport.statistics.connectionFailures
            let fast = failures.filter(failedFast).count
            // On a loaded machine a send that waited for an attempt slower than its 400 ms
            // times out in the queue (never sent).
            let timeouts = failures.filter { $0.code == .timeout }.count
            #expect(attempts >= 2)
            #expect(fast >= 10)
            // At most one request fails with each attempt; the others fail at once, unsent.
            #expect(failures.count - fast - timeouts <= attempts, "\(attempts) attempts, \(fast) fast failures, \(timeouts) timeouts, \(failures.count) in all")
            #expect(server.recordedRequests.isEmpty)
        }
    }

    @Test("shutdown with requests in flight: they fail with shutdown after the grace period, nothing hangs")
    func shutdownInFlight() async throws {
        try await withMockAPNsServer { server in
            let transport = try mockTransport(server) { $0.shutdownGracePeriod = .milliseconds(100) }
            _ = try await transport.send(mockPush(0, port: server.port))
            server.setResponseDelay(.seconds(60))  // no answer comes before the shutdown
            async let results = sendToMock(transport, port: server.port, indices: 1..<21)
            while transport.statistics.requestsSent < 21 { try await Task.sleep(for: .milliseconds(5)) }
            await transport.shutdown()
            let outcomes = try await results
            #expect(outcomes.count == 20)
            for outcome in outcomes {
                guard case .failure(let error) = outcome else {
                    Issue.record("expected a shutdown failure, got \(outcome)")
                    continue
                }
                #expect(error.code == .shutdown)
                #expect(error.mayHaveReachedAPNs)
            }
            #expect(transport.statistics.requestsInFlight == 0)
        }
    }
}
