import APNsCore
import APNsTesting
import Foundation
import Synchronization
import Testing

// What a user writes to test their own "remove the token on Unregistered" logic:
// quoted in README.md and TestingWithTheMockTransport.md.

/// The user's code under test: sends to every stored token and forgets dead ones.
final class Notifier: Sendable {
    let client: APNsClient
    let tokens: Mutex<Set<DeviceToken>>

    init(client: APNsClient, tokens: Set<DeviceToken>) {
        self.client = client
        self.tokens = Mutex(tokens)
    }

    func broadcast(_ notification: PushNotification) async {
        let outcomes = await client.send(notification, to: Array(tokens.withLock { $0 }))
        for outcome in outcomes where outcome.error?.rejection?.remedy == .removeDeviceToken {
            _ = tokens.withLock { $0.remove(outcome.deviceToken) }
        }
    }
}

@Test func removesTokenOnUnregistered() async throws {
    let live = try DeviceToken(hex: "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0")
    let dead = try DeviceToken(hex: "11fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f1")
    let mock = MockTransport()
    mock.respond(to: dead, with: .rejected(.unregistered, timestamp: Date()))
    let client = APNsClient(environment: .sandbox, credentials: .certificate, transport: mock)
    let notifier = Notifier(client: client, tokens: [live, dead])

    await notifier.broadcast(PushNotification(payload: .alert(body: "Hi"), topic: "com.example.app"))

    #expect(notifier.tokens.withLock { $0 } == [live])
    #expect(mock.requests.count == 2)
}

@Suite struct MockArticleTests {
    /// TestingWithTheMockTransport.md, "Inspecting what was sent".
    @Test func mockArticleInspection() async throws {
        let live = try DeviceToken(hex: "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0")
        let mock = MockTransport()
        let client = APNsClient(environment: .sandbox, credentials: .certificate, transport: mock)
        let notifier = Notifier(client: client, tokens: [live])
        await notifier.broadcast(PushNotification(payload: .alert(body: "Hi"), topic: "com.example.app"))

        let request = try #require(mock.requests(to: live).first)
        #expect(request.header("apns-topic") == "com.example.app")
        #expect(request.header("apns-push-type") == "alert")
    }
}
