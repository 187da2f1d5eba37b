import Foundation
import APNsMockServer
import Synchronization
import Testing
import APNsTransport

/// The code of Documentation/SwiftAPNs.docc/SendingAtScale.md, verbatim, so the article
/// cannot drift from the API. No request is sent, so no connection opens.
@Suite("SendingAtScale article")
struct SendingAtScaleArticleTests {
    @Test("the article's example builds a transport, reads its statistics and shuts down")
    func articleExample() async throws {
        let transport = HTTP2Transport(
            configuration: .init(
                environment: .production,
                connectionCount: 2,
                maxQueuedRequests: 20_000
            )
        )
        // … hand `transport` to an APNsClient, send …
        let statistics = transport.statistics
        print(statistics.responsesByStatus, statistics.requestsInFlight)
        await transport.shutdown()

        #expect(statistics == HTTP2Transport.Statistics())
        #expect(transport.configuration.connectionCount == 2)
        #expect(transport.statistics.connectionsOpened == 0)
        let request = try APNsRequest(method: .post, authority: "api.push.apple.com", path: "/3/device/00", headers: [], body: [])
        await #expect(throws: APNsTransportError.shutdown("the transport is shut down")) {
            _ = try await transport.send(request)
        }
    }

    @Test("the article's batch examples: the client's batch and the transport's, against the mock server")
    func batchExamples() async throws {
        try await withMockAPNsServer(configuration: .init(bundleIDs: ["com.example.app"])) { server in
            let transport = try mockTransport(server)
            let environment = APNsEnvironment.custom(host: "127.0.0.1", port: server.port)
            let client = APNsClient(environment: environment, credentials: .certificate, transport: transport)
            let notification = PushNotification(payload: .alert(body: "Hello"), topic: "com.example.app")
            let deviceTokens = try (0..<300).map { index in
                let hex = String(index, radix: 16)
                return try DeviceToken(hex: String(repeating: "0", count: 64 - hex.count) + hex)
            }
            for token in deviceTokens.prefix(7) {
                server.respond(toDeviceToken: token.hexString, with: ScriptedResponse(status: 410, reason: "Unregistered"))
            }
            let forgotten = Mutex<[DeviceToken]>([])
            @Sendable func forget(_ token: DeviceToken) { forgotten.withLock { $0.append(token) } }

            let outcomes = await client.send(notification, to: deviceTokens, maxConcurrency: 2_000)
            for outcome in outcomes where outcome.error?.rejection?.reason == .unregistered {
                forget(outcome.deviceToken)
            }

            #expect(forgotten.withLock { $0 } == Array(deviceTokens.prefix(7)))
            #expect(outcomes.dropFirst(7).allSatisfy { $0.accepted != nil })
            forgotten.withLock { $0.removeAll() }

            let summary = await client.send(notification, to: deviceTokens, maxConcurrency: 2_000) { index, outcome in
                if outcome.error?.rejection?.remedy == .removeDeviceToken { forget(outcome.deviceToken) }
            }
            print(summary)  // "300 notifications: 293 accepted, 7 rejected, 0 failed"

            #expect(summary.description == "300 notifications: 293 accepted, 7 rejected, 0 failed")
            #expect(Set(forgotten.withLock { $0 }) == Set(deviceTokens.prefix(7)))
            forgotten.withLock { $0.removeAll() }

            @Sendable func subscriberTokens() -> AsyncStream<DeviceToken> {
                AsyncStream { continuation in
                    for token in deviceTokens { continuation.yield(token) }
                    continuation.finish()
                }
            }

            let deviceTokenStream = subscriberTokens()  // an AsyncStream<DeviceToken>, a database cursor, …
            let streamed = await client.send(notification, to: deviceTokenStream, maxConcurrency: 2_000) { index, outcome in
                if outcome.error?.rejection?.remedy == .removeDeviceToken { forget(outcome.deviceToken) }
            }
            #expect(streamed.description == "300 notifications: 293 accepted, 7 rejected, 0 failed")
            #expect(Set(forgotten.withLock { $0 }) == Set(deviceTokens.prefix(7)))

            struct User { let unread: Int; let deviceToken: DeviceToken }
            let users = deviceTokens.dropFirst(7).enumerated().map { User(unread: $0.offset, deviceToken: $0.element) }
            server.removeRecordedRequests()

            let personal = await client.send(users.map { user in
                (PushNotification(payload: .alert(body: "You have \(user.unread) new messages"), topic: "com.example.app"), user.deviceToken)
            }, maxConcurrency: 2_000)

            #expect(personal.map(\.deviceToken) == users.map(\.deviceToken))
            #expect(personal.allSatisfy { $0.accepted != nil })
            // Each device got its own text, as the server decoded it (JSONSerialization).
            for record in server.recordedRequests {
                let user = try #require(users.first { $0.deviceToken.hexString == record.deviceToken })
                let object = try JSONSerialization.jsonObject(with: Data(record.body)) as? [String: Any]
                let alert = (object?["aps"] as? [String: Any])?["alert"]
                let body = (alert as? [String: Any])?["body"] as? String ?? alert as? String
                #expect(body == "You have \(user.unread) new messages")
            }
            #expect(server.recordedRequests.count == users.count)

            let requests = try (1_000..<1_200).map { try mockPush($0, port: server.port) }
            let recorded = Mutex<[Int: Int]>([:])
            @Sendable func record(_ index: Int, _ result: Result<APNsResponse, APNsTransportError>) {
                recorded.withLock { $0[index] = (try? result.get())?.status ?? 0 }
            }

            await transport.sendBatch(
                count: requests.count,
                maxConcurrency: 1_000,
                makeRequest: { index in requests[index] },
                onResult: { index, request, result in
                    record(index, result)  // called once per request, from an I/O thread
                }
            )

            await transport.shutdown()
            #expect(recorded.withLock { $0 } == Dictionary(uniqueKeysWithValues: (0..<200).map { ($0, 200) }))
        }
    }

    @Test("the article's senders on the transport's thread: 100 queues, every notification accepted once")
    func taskExecutorExample() async throws {
        try await withMockAPNsServer(configuration: .init(bundleIDs: ["com.example.app"])) { server in
            let mock = try mockTransport(server)
            // The article's configuration, pointed at the mock server.
            var configuration = mock.configuration
            await mock.shutdown()
            let credentials = APNsCredentials.certificate
            let notification = PushNotification(payload: .alert(body: "Hello"), topic: "com.example.app")
            let queues = try (0..<100).map { queue in
                try SendQueue((0..<5).map { index in
                    let hex = String(queue * 5 + index, radix: 16)
                    return (notification, try DeviceToken(hex: String(repeating: "0", count: 64 - hex.count) + hex))
                })
            }

            configuration.threadPlacement = .taskExecutorThread  // an HTTP2Transport.Configuration
            let transport = HTTP2Transport(configuration: configuration)
            let client = APNsClient(credentials: credentials, transport: transport)

            await withTaskExecutorPreference(client.taskExecutor) {
                await withTaskGroup(of: Void.self) { group in
                    for queue in queues {  // say 100: each sends its notifications one after another
                        group.addTask {
                            while let (notification, deviceToken) = queue.next() {
                                _ = try? await client.send(notification, to: deviceToken)
                            }
                        }
                    }
                }
            }

            await transport.shutdown()
            #expect(transport.statistics.responsesByStatus == [200: 500])
            #expect(Set(server.recordedRequests.map(\.deviceToken)).count == 500)
        }
    }
}

/// What the article's senders take their notifications from: one queue per task.
private final class SendQueue: Sendable {
    private let items: Mutex<[(PushNotification, DeviceToken)]>

    init(_ items: [(PushNotification, DeviceToken)]) {
        self.items = Mutex(items.reversed())
    }

    /// The next notification and device token, or `nil` when the queue is empty.
    func next() -> (PushNotification, DeviceToken)? {
        items.withLock { $0.popLast() }
    }
}
