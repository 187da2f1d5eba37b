import APNsTesting
import Foundation
import Logging
import Synchronization
import Testing

@testable import APNsCore

// The code of HandlingResponses.md and TestingWithTheMockTransport.md, compiled and run.

private final class TokenStore: Sendable {
    let removed = Mutex<[DeviceToken]>([])
    func remove(_ token: DeviceToken) async throws { removed.withLock { $0.append(token) } }
}

private final class RetryQueue: Sendable {
    let queued = Mutex<Int>(0)
    func retryLater(_ notification: PushNotification, to token: DeviceToken) { queued.withLock { $0 += 1 } }
}

@Suite struct ArticleCodeTests {
    /// HandlingResponses.md, "One call, one outcome".
    private func handle(
        client: APNsClient,
        notification: PushNotification,
        deviceToken: DeviceToken,
        store: TokenStore,
        queue: RetryQueue,
        logger: Logger
    ) async throws {
        do {
            let accepted = try await client.send(notification, to: deviceToken)
            logger.debug("accepted", metadata: ["apns.id": "\(accepted.apnsID?.uuidString ?? "-")"])
        } catch {
            switch error {
            case .rejected(let rejection):
                // APNs answered with an error status; `rejection.remedy` says what to do.
                if rejection.remedy == .removeDeviceToken {
                    try await store.remove(deviceToken)
                }
            case .failed(let failure):
                // No answer. `mayHaveReachedAPNs` says whether a resend could duplicate.
                if !failure.mayHaveReachedAPNs { queue.retryLater(notification, to: deviceToken) }
            case .invalid(let problem):
                // Never sent: fix the notification (`problem.description` says what is wrong).
                logger.error("invalid notification: \(problem)")
            }
        }
    }

    @Test func handlingResponsesSwitch() async throws {
        let mock = MockTransport()
        let store = TokenStore()
        let queue = RetryQueue()
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let gone = mockToken(1)
        let unreachable = mockToken(2)
        mock.respond(to: gone, with: .rejected(.unregistered))
        mock.respond(to: unreachable, with: .failure(.connectionFailed()))
        let client = APNsClient.testing(transport: mock, retryPolicy: .never)
        for device in [gone, unreachable, mockToken(3)] {
            try await handle(
                client: client,
                notification: sampleAlert,
                deviceToken: device,
                store: store,
                queue: queue,
                logger: logger
            )
        }
        #expect(store.removed.withLock { $0 } == [gone])
        #expect(queue.queued.withLock { $0 } == 1)
    }

    @Test func handlingResponsesRetryPolicy() {
        let transport = MockTransport()
        let tokenSource = CoreCountingTokenSource()
        let client = APNsClient(
            credentials: .providerToken(tokenSource),
            transport: transport,
            retryPolicy: RetryPolicy(maxAttempts: 5, baseDelay: .milliseconds(500), maxDelay: .seconds(30))
        )
        #expect(client.retryPolicy.maxAttempts == 5)
    }

    @Test func mockArticleSnippets() async throws {
        let mock = MockTransport()
        let live = try DeviceToken(hex: "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0")
        let token = try DeviceToken(hex: "abcd")
        mock.respond(to: token, with: [.rejected(.serviceUnavailable), .accepted])
        mock.respond { request in request.header("apns-push-type") == "voip" ? .accepted : .rejected(.badTopic) }
        let client = APNsClient.testing(transport: mock)
        _ = try await client.send(
            PushNotification(payload: .alert(body: "x"), pushType: .voip, topic: "com.example.app"),
            to: live
        )
        _ = try await client.send(sampleAlert, to: token)
        let request = try #require(mock.requests(to: live).first)
        #expect(request.header("apns-topic") == "com.example.app.voip")
        #expect(request.header("apns-push-type") == "voip")
        #expect(mock.requests(to: token).count == 2)
        let answers: [MockTransport.Response] = [
            .accepted, .accepted(uniqueID: "u"), .rejected(.unregistered, status: 410, timestamp: Date()),
            .response(APNsResponse(status: 500)), .failure(.connectionClosed()),
            MockTransport.Response.accepted.delayed(by: .milliseconds(50)),
        ]
        #expect(answers.count == 6)
    }
}
