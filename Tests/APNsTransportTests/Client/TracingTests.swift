import APNsMockServer
import InMemoryTracing
import ServiceContextModule
import Synchronization
import APNsTesting
import Testing
import Tracing
@testable import APNsTransport

/// The client's spans, read with swift-distributed-tracing's in-memory tracer, against
/// what the mock server was told to answer.
@Suite("Tracing through swift-distributed-tracing's in-memory tracer")
struct TracingTests {
    static let dead = "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0"

    @Test("one span per notification under the caller's span, and one per batch, with the outcome's attributes")
    func spans() async throws {
        let tracer = InMemoryTracer()
        try await withMockAPNsServer { server in
            server.respond(toDeviceToken: Self.dead, with: .unregistered())
            server.failNextRequests(1, with: .serviceUnavailable)
            let client = APNsClient(credentials: .certificate, transport: try server.makeTransport(), requestTimeout: .seconds(120), tracer: tracer)
            let notification = PushNotification(payload: .alert(body: "Hi"), topic: "com.example.app")

            // A caller's span is the parent of the notification's.
            let parent = tracer.startSpan("request handler")
            try await ServiceContext.withValue(parent.context) {
                _ = try await client.send(notification, to: DeviceToken(bytes: [UInt8](repeating: 1, count: 32)))
            }
            parent.end()
            let tokens = [try DeviceToken(bytes: [UInt8](repeating: 2, count: 32)), try DeviceToken(hex: Self.dead)]
            _ = await client.send(notification, to: tokens)
            await client.shutdown()
        }
        let spans = tracer.finishedSpans
        let single = try #require(spans.first { $0.operationName == "APNs notification" && $0.parentSpanID != nil && $0.attributes["apns.attempts"] != nil })
        let handler = try #require(spans.first { $0.operationName == "request handler" })
        #expect(single.parentSpanID == handler.spanID)
        #expect(single.kind == .client)
        #expect(single.attributes["apns.outcome"]?.toSpanAttribute() == "accepted")
        #expect(single.attributes["apns.status"]?.toSpanAttribute() == 200)
        // The 503 was retried: two attempts.
        #expect(single.attributes["apns.attempts"]?.toSpanAttribute() == 2)
        #expect(single.attributes["apns.push_type"]?.toSpanAttribute() == "alert")

        let batch = try #require(spans.first { $0.operationName == "APNs batch" })
        #expect(batch.attributes["apns.batch.count"]?.toSpanAttribute() == 2)
        #expect(batch.attributes["apns.batch.accepted"]?.toSpanAttribute() == 1)
        #expect(batch.attributes["apns.batch.rejected"]?.toSpanAttribute() == 1)
        let children = spans.filter { $0.parentSpanID == batch.spanID }
        #expect(children.count == 2)
        let rejected = try #require(children.first { $0.attributes["apns.outcome"]?.toSpanAttribute() == "rejected" })
        #expect(rejected.attributes["apns.reason"]?.toSpanAttribute() == "Unregistered")
        #expect(rejected.attributes["apns.status"]?.toSpanAttribute() == 410)
        #expect(rejected.status?.code == .error)
        #expect(rejected.errors.count == 1)
    }

    @Test("a span per broadcast and channel call under the caller's span: operation, request ID, outcome, attempts")
    func channelCallSpans() async throws {
        let tracer = InMemoryTracer()
        let broadcasts = Mutex(0)
        // Creating answers 201 with a channel ID; the first broadcast 503, the next 200;
        // deleting 400 BadChannelId.
        let mock = MockTransport { request in
            if request.method == .post, request.path.hasPrefix("/1/apps/") {
                return .response(APNsResponse(status: 201, headers: [HeaderField(name: "apns-channel-id", value: "dHN0MTIzMTIzMTIzMTIzMQ==")], body: []))
            }
            if request.method == .post {
                let first = broadcasts.withLock { count in
                    count += 1
                    return count == 1
                }
                return .response(APNsResponse(status: first ? 503 : 200, headers: [], body: first ? Array(#"{"reason":"ServiceUnavailable"}"#.utf8) : []))
            }
            return .response(APNsResponse(status: 400, headers: [], body: Array(#"{"reason":"BadChannelId"}"#.utf8)))
        }
        let client = APNsClient(credentials: .certificate, transport: mock, requestTimeout: .seconds(120), tracer: tracer)
        let parent = tracer.startSpan("request handler")
        let requestID = try APNsRequestID("0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d")
        try await ServiceContext.withValue(parent.context) {
            let channel = try await client.createChannel(bundleID: "com.example.scores", requestID: requestID).value
            _ = try await client.broadcast(
                Payload.liveActivityUpdate(timestamp: 1_168_364_460, contentState: ["score": "1"]), to: channel, bundleID: "com.example.scores")
            await #expect(throws: APNsError.self) { try await client.deleteChannel(channel, bundleID: "com.example.scores") }
        }
        parent.end()
        let handler = try #require(tracer.finishedSpans.first { $0.operationName == "request handler" })
        let spans = tracer.finishedSpans.filter { $0.operationName == "APNs channel call" }
        #expect(spans.count == 3)
        #expect(spans.allSatisfy { $0.parentSpanID == handler.spanID && $0.kind == .client })
        func span(_ operation: String) throws -> FinishedInMemorySpan {
            try #require(spans.first { $0.attributes["apns.operation"]?.toSpanAttribute() == operation.toSpanAttribute() })
        }
        let create = try span("create")
        #expect(create.attributes["apns.request_id"]?.toSpanAttribute() == "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d")
        #expect(create.attributes["apns.outcome"]?.toSpanAttribute() == "accepted")
        let broadcast = try span("broadcast")
        #expect(broadcast.attributes["apns.outcome"]?.toSpanAttribute() == "accepted")
        #expect(broadcast.attributes["apns.attempts"]?.toSpanAttribute() == 2)
        let delete = try span("delete")
        #expect(delete.attributes["apns.outcome"]?.toSpanAttribute() == "rejected")
        #expect(delete.attributes["apns.reason"]?.toSpanAttribute() == "BadChannelId")
        #expect(delete.attributes["apns.status"]?.toSpanAttribute() == 400)
        #expect(delete.status?.code == .error)
    }

    /// Found from outside: the batch's span of an invalid notification was never ended,
    /// though its notifications' spans were.
    @Test("an invalid notification sent to an array of tokens: its batch span ends too, counting every token failed")
    func invalidBatchSpanEnds() async throws {
        let tracer = InMemoryTracer()
        let client = APNsClient(credentials: .certificate, transport: MockTransport(), requestTimeout: .seconds(120), tracer: tracer)
        var notification = PushNotification(payload: .alert(body: "Hi"), topic: "com.example.app")
        notification.collapseID = String(repeating: "c", count: 65)  // Apple's limit is 64 bytes
        let tokens = try (1...3).map { try DeviceToken(bytes: [UInt8](repeating: UInt8($0), count: 32)) }
        let outcomes = await client.send(notification, to: tokens)
        let summary = await client.send(notification, to: tokens) { _, _ in }
        await client.shutdown()
        #expect(outcomes.allSatisfy { if case .failure(.invalid) = $0.result { true } else { false } })
        #expect(summary.failed == 3)
        let batches = tracer.finishedSpans.filter { $0.operationName == "APNs batch" }
        #expect(batches.count == 2, "\(tracer.activeSpans.map(\.operationName))")
        for batch in batches {
            #expect(batch.attributes["apns.batch.count"]?.toSpanAttribute() == 3)
            #expect(batch.attributes["apns.batch.failed"]?.toSpanAttribute() == 3)
            #expect(tracer.finishedSpans.filter { $0.parentSpanID == batch.spanID }.count == 3)
        }
        #expect(tracer.activeSpans.isEmpty)
    }

    @Test("a streamed batch (tokens from an AsyncSequence) has its batch span, counted at its end, and a span per notification")
    func streamedBatchSpans() async throws {
        let tracer = InMemoryTracer()
        try await withMockAPNsServer { server in
            server.respond(toDeviceToken: Self.dead, with: .unregistered())
            let client = APNsClient(credentials: .certificate, transport: try server.makeTransport(), requestTimeout: .seconds(120), tracer: tracer)
            let notification = PushNotification(payload: .alert(body: "Hi"), topic: "com.example.app")
            let tokens = [try DeviceToken(bytes: [UInt8](repeating: 3, count: 32)), try DeviceToken(hex: Self.dead), try DeviceToken(bytes: [UInt8](repeating: 4, count: 32))]
            let stream = AsyncStream<DeviceToken> { continuation in
                for token in tokens { continuation.yield(token) }
                continuation.finish()
            }
            _ = await client.send(notification, to: stream) { _, _ in }
            await client.shutdown()
        }
        let spans = tracer.finishedSpans
        let batch = try #require(spans.first { $0.operationName == "APNs batch" })
        #expect(batch.attributes["apns.batch.count"]?.toSpanAttribute() == 3)
        #expect(batch.attributes["apns.batch.accepted"]?.toSpanAttribute() == 2)
        #expect(batch.attributes["apns.batch.rejected"]?.toSpanAttribute() == 1)
        let children = spans.filter { $0.parentSpanID == batch.spanID }
        #expect(children.count == 3)
        #expect(children.filter { $0.attributes["apns.outcome"]?.toSpanAttribute() == "accepted" }.count == 2)
        let rejected = try #require(children.first { $0.attributes["apns.outcome"]?.toSpanAttribute() == "rejected" })
        #expect(rejected.attributes["apns.reason"]?.toSpanAttribute() == "Unregistered")
    }
}
