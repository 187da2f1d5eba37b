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
            // Bounded wait until the server holds all ten.
            for _ in 0..<200 where server.statistics.requests < 10 {
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
}
