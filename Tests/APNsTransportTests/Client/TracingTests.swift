import APNsMockServer
import InMemoryTracing
import ServiceContextModule
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
