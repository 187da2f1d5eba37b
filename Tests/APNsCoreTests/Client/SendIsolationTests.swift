import APNsTesting
import Synchronization
import Testing

@testable import APNsCore

/// A transport that notes the isolation each `send` ran in (`#isolation`, which in a
/// `nonisolated(nonsending)` function is the caller's) and hands the request to a
/// `MockTransport`, which accepts it.
private final class IsolationNotingTransport: PushTransport {
    let mock = MockTransport()
    private let seen = Mutex<[String]>([])

    var isolations: [String] { seen.withLock { $0 } }

    nonisolated(nonsending) func send(_ request: APNsRequest) async throws(APNsTransportError) -> APNsResponse {
        let isolation = #isolation
        seen.withLock { $0.append(isolation.map { String(describing: type(of: $0)) } ?? "none") }
        return try await mock.send(request)
    }

    func shutdown() async { await mock.shutdown() }
}

/// An actor that sends through a client, as a server's request handler might.
private actor NotificationDesk {
    let client: APNsClient
    init(client: APNsClient) { self.client = client }

    func send(_ notification: PushNotification, to token: DeviceToken) async throws(APNsError) -> APNsAccepted {
        try await client.send(notification, to: token)
    }
}

/// `APNsClient.send(_:to:)` and `PushTransport.send(_:)` are `nonisolated(nonsending)`
/// (SE-0461): the send runs on its caller's executor and reaches the transport without a
/// hop. What Swift defines `#isolation` to be in such a function is the fact checked here.
@Suite struct SendIsolationTests {
    static let device = try! DeviceToken(hex: "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f1")
    static let notification = PushNotification(payload: .alert(title: "Score", body: "2-1"), topic: "com.example.app")

    private static func client(_ transport: IsolationNotingTransport) -> APNsClient {
        APNsClient(environment: .sandbox, credentials: .certificate, transport: transport)
    }

    @Test("from an actor, the transport's send runs isolated to that actor")
    func fromAnActor() async throws {
        let transport = IsolationNotingTransport()
        let desk = NotificationDesk(client: Self.client(transport))
        _ = try await desk.send(Self.notification, to: Self.device)
        #expect(transport.isolations == ["NotificationDesk"])
        #expect(transport.mock.requests.count == 1)
    }

    @Test("from the main actor, on the main actor")
    @MainActor func fromTheMainActor() async throws {
        let transport = IsolationNotingTransport()
        _ = try await Self.client(transport).send(Self.notification, to: Self.device)
        #expect(transport.isolations == ["MainActor"])
    }

    @Test("from a task with no isolation, with none")
    func fromAPlainTask() async throws {
        let transport = IsolationNotingTransport()
        let client = Self.client(transport)
        let accepted = await Task.detached { try? await client.send(Self.notification, to: Self.device) }.value
        #expect(accepted != nil)
        #expect(transport.isolations == ["none"])
    }
}
