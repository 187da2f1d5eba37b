import APNsMockServer
import Logging
import ServiceLifecycle
import Synchronization
import Testing
@testable import APNsTransport

/// `HTTP2Transport` as a swift-service-lifecycle `Service`: a `ServiceGroup` keeps it up,
/// and its graceful shutdown drains the requests in flight (none lost) before the
/// connections close.
@Suite("HTTP2Transport in a ServiceGroup")
struct ServiceLifecycleTests {
    @Test("graceful shutdown lets in-flight notifications finish, then refuses new ones; run() returns")
    func gracefulShutdownDrains() async throws {
        try await withMockAPNsServer { server in
            // Answers take 300 ms, so the notifications are in flight when shutdown begins.
            server.setResponseDelay(.milliseconds(300))
            let transport = try server.makeTransport { $0.shutdownGracePeriod = .seconds(5) }
            let client = APNsClient(credentials: .certificate, transport: transport)
            let group = ServiceGroup(
                configuration: .init(services: [.init(service: transport)], logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
            )
            let running = Task { try await group.run() }

            let notification = PushNotification(payload: .alert(body: "Hi"), topic: "com.example.app")
            let tokens = try (0..<10).map { try DeviceToken(bytes: [UInt8](repeating: UInt8($0), count: 32)) }
            let sending = Task { await client.send(notification, to: tokens, maxConcurrency: 10) }
            // Bounded wait (20 s at least: the connection's TLS handshake comes first, which
            // a loaded machine can stretch past the 2 s this once allowed) until the server
            // holds all ten.
            for _ in 0..<2_000 where server.statistics.requests < 10 {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(server.statistics.requests == 10)
            await group.triggerGracefulShutdown()

            let outcomes = await sending.value
            #expect(outcomes.count == 10)
            #expect(outcomes.allSatisfy { $0.accepted != nil }, "\(outcomes.map(\.result))")
            try await running.value  // run() returned: the transport is shut down.

            do throws(APNsError) {
                _ = try await client.send(notification, to: tokens[0])
                Issue.record("a send after shutdown succeeded")
            } catch {
                #expect(error.transportError?.code == .shutdown, "\(error)")
                #expect(error.transportError?.mayHaveReachedAPNs == false)
            }
        }
    }

    @Test("graceful shutdown with a send waiting out a retry's backoff: the send ends at once with its 503, not later with shutdown")
    func gracefulShutdownEndsRetryWaits() async throws {
        try await withMockAPNsServer { server in
            server.failNextRequests(1, with: .serviceUnavailable)
            let transport = try server.makeTransport()
            // A 60-second backoff after the 503, within the call's 120 s.
            let client = APNsClient(
                credentials: .certificate, transport: transport,
                retryPolicy: RetryPolicy(maxAttempts: 3, baseDelay: .seconds(60), maxDelay: .seconds(60)),
                requestTimeout: .seconds(120))
            let group = ServiceGroup(
                configuration: .init(services: [.init(service: transport)], logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
            )
            let running = Task { try await group.run() }
            let notification = PushNotification(payload: .alert(body: "Hi"), topic: "com.example.app")
            let device = try DeviceToken(bytes: [UInt8](repeating: 7, count: 32))
            let sending = Task { () -> (APNsError?, Duration) in
                let clock = ContinuousClock()
                let started = clock.now
                do throws(APNsError) {
                    _ = try await client.send(notification, to: device)
                    return (nil, clock.now - started)
                } catch {
                    return (error, clock.now - started)
                }
            }
            // Bounded wait until the 503 was answered (the send then waits to retry).
            for _ in 0..<3000 where server.statistics.rejected < 1 {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(server.statistics.rejected == 1)
            try await Task.sleep(for: .milliseconds(50))
            await group.triggerGracefulShutdown()
            try await running.value
            let (error, took) = await sending.value
            // Before the fix the send slept out its 60 s backoff. Under a whole parallel
            // run on 2 cores (load average 10) the send's own start and its 503 have taken
            // 32 s, so the bound sits well clear of that and of the backoff.
            #expect(took < .seconds(50), "the send took \(took)")
            #expect(error?.rejection?.reason == .serviceUnavailable, "\(String(describing: error))")
            #expect(error?.rejection?.detail?.contains("the transport shut down while the send waited to retry") == true, "\(String(describing: error))")
            #expect(server.statistics.requests == 1)
            await client.shutdown()
        }
    }
}
