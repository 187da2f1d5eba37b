// The code block of Documentation/SwiftAPNs.docc/IntegrationTestingWithTheMockServer.md,
// line for line from the next line on (ArticleBlocksTests checks it), so it compiles here
// as the article shows it, imports included; ArticleBlocksTests also runs it.
import APNsMockServer
import APNsTransport

func sendThroughTheMock() async throws -> (outcomes: [APNsOutcome], statuses: [Int]) {
    let configuration = MockAPNsServer.Configuration(bundleIDs: ["com.example.app"])
    return try await withMockAPNsServer(configuration: configuration) { server in
        // Point a client at the server: its host, port and CA in one transport.
        let client = APNsClient(credentials: .certificate, transport: try server.makeTransport())

        // Script what APNs should answer.
        let token = "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0"
        server.respond(toDeviceToken: token, with: .unregistered())
        server.failNextRequests(2, with: .serviceUnavailable)

        // Send as in production: two 503s are retried, then APNs says Unregistered.
        let notification = PushNotification(payload: .alert(body: "Hello"), topic: "com.example.app")
        let outcomes = await client.send(notification, to: [try DeviceToken(hex: token)])
        await client.shutdown()

        // Read what arrived and what it was answered: 503, 503, 410.
        let statuses = server.recordedRequests.map(\.status)
        return (outcomes, statuses)
    }
}
