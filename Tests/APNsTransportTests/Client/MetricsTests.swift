import APNsMockServer
import APNsTesting
import MetricsTestKit
import Testing
@testable import APNsTransport

/// The client's and the transport's swift-metrics, read with swift-metrics' own test kit,
/// against what the mock server was told to answer: five devices accepted, one
/// `410 Unregistered`, one `503` retried.
@Suite("Metrics through swift-metrics' test kit")
struct MetricsTests {
    static let dead = "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0"

    @Test("outcome counters by reason, retries by cause, connections, in-flight and durations")
    func countersMetersAndTimers() async throws {
        let metrics = TestMetrics()
        try await withMockAPNsServer { server in
            server.respond(toDeviceToken: Self.dead, with: .unregistered())
            server.failNextRequests(1, with: .serviceUnavailable)
            let transport = try server.makeTransport { $0.metricsFactory = metrics }
            let client = APNsClient(credentials: .certificate, transport: transport, requestTimeout: .seconds(120), metricsFactory: metrics)
            let notification = PushNotification(payload: .alert(body: "Hi"), topic: "com.example.app")

            // One single send (meets the 503, retried, accepted), then a batch of five.
            _ = try await client.send(notification, to: DeviceToken(bytes: [UInt8](repeating: 1, count: 32)))
            let live = try (2..<6).map { try DeviceToken(bytes: [UInt8](repeating: UInt8($0), count: 32)) }
            let outcomes = await client.send(notification, to: live + [try DeviceToken(hex: Self.dead)])
            #expect(outcomes.filter { $0.accepted != nil }.count == 4)
            #expect(server.statistics.requests == 7)
            await client.shutdown()
        }
        let dimensions = [("push_type", "alert"), ("environment", "custom")]
        #expect(try metrics.expectCounter("apns_notifications_sent_total", dimensions).totalValue == 6)
        #expect(try metrics.expectCounter("apns_notifications_accepted_total", dimensions).totalValue == 5)
        #expect(try metrics.expectCounter("apns_notifications_rejected_total", dimensions + [("reason", "Unregistered")]).totalValue == 1)
        #expect(metrics.counters(label: "apns_notifications_failed_total").isEmpty)
        #expect(try metrics.expectCounter("apns_retries_total", [("environment", "custom"), ("cause", "retry_later")]).totalValue == 1)

        // The transport: one connection opened and closed, nothing left in flight, a
        // duration for every request (seven, the retry included).
        #expect(try metrics.expectCounter("apns_connection_attempts_total", [("result", "success")]).totalValue == 1)
        #expect(try metrics.expectMeter("apns_connections_open").lastValue == 0)
        #expect(try metrics.expectMeter("apns_connections_open").values.max() == 1)
        #expect(try metrics.expectMeter("apns_requests_in_flight").lastValue == 0)
        // By result: five 200s, the 503 and the 410, nothing unanswered.
        let accepted = try metrics.expectTimer("apns_request_duration_seconds", [("result", "accepted")])
        let rejected = try metrics.expectTimer("apns_request_duration_seconds", [("result", "rejected")])
        #expect(accepted.values.count == 5)
        #expect(rejected.values.count == 2)
        #expect((try? metrics.expectTimer("apns_request_duration_seconds", [("result", "failed")]))?.values.isEmpty ?? true)
        #expect((accepted.values + rejected.values).allSatisfy { $0 > 0 })
    }

    @Test("broadcasts and channel calls: counted once each by operation and final outcome, apart from notifications")
    func channelCalls() async throws {
        let metrics = TestMetrics()
        // Creating answers 201 with a channel ID, a broadcast 400 BadChannelId (Apple's
        // reason for a channel ID it cannot read), deleting a 302 APNs never answers.
        let mock = MockTransport { request in
            switch request.method {
            case .post where request.path.hasPrefix("/1/apps/"):
                return .response(APNsResponse(status: 201, headers: [HeaderField(name: "apns-channel-id", value: "dHN0MTIzMTIzMTIzMTIzMQ==")], body: []))
            case .post:
                return .response(APNsResponse(status: 400, headers: [], body: Array(#"{"reason":"BadChannelId"}"#.utf8)))
            default:
                return .response(APNsResponse(status: 302, headers: [], body: []))
            }
        }
        let client = APNsClient(credentials: .certificate, transport: mock, retryPolicy: .never, metricsFactory: metrics)
        let channel = try await client.createChannel(bundleID: "com.example.scores").value
        let update = Payload.liveActivityUpdate(timestamp: 1_168_364_460, contentState: ["score": "1"])
        await #expect(throws: APNsError.self) { try await client.broadcast(update, to: channel, bundleID: "com.example.scores") }
        await #expect(throws: APNsError.self) { try await client.deleteChannel(channel, bundleID: "com.example.scores") }
        func calls(_ operation: String, _ result: String) throws -> Int64 {
            try metrics.expectCounter("apns_channel_calls_total", [("environment", "production"), ("operation", operation), ("result", result)]).totalValue
        }
        #expect(try calls("create", "accepted") == 1)
        #expect(try calls("broadcast", "rejected") == 1)
        #expect(try calls("delete", "failed") == 1)
        #expect(metrics.counters(label: "apns_channel_calls_total").count == 3)
        #expect(metrics.counters(label: "apns_notifications_sent_total").isEmpty)
    }

    @Test("a failure says its code and whether it may have reached APNs; no dimension carries a token")
    func failureDimensions() async throws {
        let metrics = TestMetrics()
        let mock = MockTransport()
        mock.respond(to: try DeviceToken(hex: Self.dead), with: .failure(.timeout(mayHaveReachedAPNs: true)))
        let client = APNsClient(credentials: .certificate, transport: mock, retryPolicy: .never, metricsFactory: metrics)
        let notification = PushNotification(payload: .background(), topic: "com.example.app")
        _ = try? await client.send(notification, to: DeviceToken(hex: Self.dead))
        let failed = try metrics.expectCounter(
            "apns_notifications_failed_total",
            [("push_type", "background"), ("environment", "production"), ("code", "timeout"), ("may_have_reached_apns", "true")]
        )
        #expect(failed.totalValue == 1)
        for counter in metrics.counters {
            for (_, value) in counter.dimensions {
                #expect(!value.contains("00fc13ad"), "\(counter.label) \(counter.dimensions)")
            }
        }
    }

    /// A transport with one connection, whose attempts wait (60 s connect timeout) at a
    /// listener where the kernel completes the TCP handshake and nobody answers the
    /// ClientHello, reporting to `metrics`; the listener is the caller's to close.
    static func silentTransport(_ metrics: TestMetrics) throws -> (LoopbackListener, HTTP2Transport) {
        let silent = try LoopbackListener(address: "127.0.0.1", port: 0)
        var configuration = silent.silentEndpointConfiguration()
        configuration.connectTimeout = .seconds(60)
        configuration.connectionCount = 1
        configuration.metricsFactory = metrics
        return (silent, HTTP2Transport(configuration: configuration))
    }

    /// Found from outside: requests that timed out in the queue (or were failed by a
    /// shutdown) left their count in `apns_requests_waiting`: 49 after 50 timeouts, there
    /// for good.
    @Test("requests that time out waiting for a connection take their count out of apns_requests_waiting", .timeLimit(.minutes(1)))
    func waitingGaugeAfterTimeouts() async throws {
        let metrics = TestMetrics()
        let (silent, transport) = try Self.silentTransport(metrics)
        defer { silent.close() }
        let port = silent.port
        // 3 s each: the gauge's peak needs many of the twenty waiting at once, so the last
        // must ask before the first has expired, however late a loaded machine starts the
        // child tasks (they have 3 s to, not 300 ms).
        let failed = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<20 {
                group.addTask { (try? await transport.send(mockPush(index, port: port, timeout: .seconds(3)))) == nil }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        let waiting = try metrics.expectMeter("apns_requests_waiting")
        let afterTimeouts = waiting.lastValue
        await transport.shutdown()
        #expect(failed == 20)
        // Nineteen waited (the connection being opened counts one stream); none is left.
        #expect((waiting.values.max() ?? 0) >= 10, "\(waiting.values)")
        #expect(afterTimeouts == 0, "\(waiting.values.suffix(5))")
        #expect(waiting.lastValue == 0)
    }

    /// Found from outside: each credential's pool set the gauge to its own count, so a
    /// second tenant's send zeroed the first tenant's 290 waiting requests.
    @Test("apns_requests_waiting counts every credential's waiting requests, and falls to 0 when they end", .timeLimit(.minutes(1)))
    func waitingGaugeOverCredentials() async throws {
        let metrics = TestMetrics()
        let (silent, transport) = try Self.silentTransport(metrics)
        defer { silent.close() }
        let tenants = try MultiTenantTests.tenants(2)
        let clients = try tenants.map { tenant in
            APNsClient(
                environment: .custom(host: "127.0.0.1", port: silent.port),
                credentials: .providerToken(try ProviderTokenCache(key: tenant.key, keyID: tenant.keyID, teamID: tenant.teamID)),
                transport: transport, retryPolicy: .never, requestTimeout: .seconds(30)
            )
        }
        // Single sends: what counts against maxQueuedRequests, and so in the gauge.
        let first = Task {
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<10 {
                    group.addTask { _ = try? await clients[0].send(MultiTenantTests.alert, to: MultiTenantTests.device(index)) }
                }
            }
        }
        // The first tenant's ten wait (nine for a stream, one for the connection).
        let nine = await waitUntil { (try? metrics.expectMeter("apns_requests_waiting"))?.lastValue == 9 }
        let second = Task { try? await clients[1].send(MultiTenantTests.alert, to: MultiTenantTests.device(99)) }
        // The second tenant's one waits for its own connection: no stream is missing for
        // it, and the first tenant's nine still wait.
        let eleven = await waitUntil { transport.statistics.requestsInFlight == 11 }
        try await Task.sleep(for: .milliseconds(50))
        let waiting = try metrics.expectMeter("apns_requests_waiting")
        let withBoth = waiting.lastValue
        await transport.shutdown()
        await first.value
        _ = await second.value
        #expect(nine && eleven, "\(waiting.values)")
        #expect(withBoth == 9, "\(waiting.values)")
        #expect(waiting.lastValue == 0, "\(waiting.values.suffix(5))")
    }
}
