import APNsCore
import APNsTesting
import DeviceNotifications
import Foundation
import MetricsTestKit
import Testing

// The send-and-forget logic on the SDK's MockTransport: no sockets, no threads of our own.
// The rules checked are Apple's ("Handling notification responses from APNs"): 410
// Unregistered means stop sending to the token; 400 BadDeviceToken means the token is not
// one of this environment; other rejections say nothing about the token.

private let live = try! DeviceToken(hex: "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0")
private let unregistered = try! DeviceToken(hex: "11fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f1")
private let wrongEnvironment = try! DeviceToken(hex: "22fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f2")

private func makeNotifier(_ mock: MockTransport, metrics: TestMetrics = TestMetrics()) -> UserNotifier {
    let client = APNsClient(credentials: .certificate, transport: mock)
    return UserNotifier(client: client, registry: DeviceRegistry(), topic: "com.example.app", metricsFactory: metrics)
}

@Test func forgetsUnregisteredAndBadTokensAndKeepsTheRest() async throws {
    let mock = MockTransport()
    let metrics = TestMetrics()
    let notifier = makeNotifier(mock, metrics: metrics)
    for token in [live, unregistered, wrongEnvironment] {
        #expect(await notifier.register(token, for: "ann"))
    }
    mock.respond(to: unregistered, with: .rejected(.unregistered, timestamp: Date()))
    mock.respond(to: wrongEnvironment, with: .rejected(.badDeviceToken))

    let first = await notifier.notify(user: "ann", title: "Hi", body: "Your order shipped")
    #expect(first.devices == 3)
    #expect(first.accepted == 1)
    #expect(first.unregistered == 2)
    #expect(first.forgotten == 2)
    #expect(first.rejected == 0 && first.failed == 0 && first.invalid == 0)
    #expect(Set(first.results.compactMap(\.reason)) == ["Unregistered", "BadDeviceToken"])
    #expect(first.results.allSatisfy { !$0.deviceToken.contains(live.hexString) }, "tokens are reported redacted")
    #expect(mock.requests.count == 3)
    #expect(mock.requests.allSatisfy { $0.headers.contains { $0.name == "apns-topic" && $0.value == "com.example.app" } })

    // The dead tokens are gone: the second send reaches the live device only.
    #expect(await notifier.registry.registrations(for: "ann").map(\.deviceToken) == [live])
    mock.removeAllRequests()
    let second = await notifier.notify(user: "ann", title: nil, body: "Again")
    #expect(second.devices == 1 && second.accepted == 1 && second.unregistered == 0)
    #expect(mock.requests.count == 1)

    #expect(metrics.counterTotal(label: "example_device_tokens_forgotten_total", dimensions: [("reason", "Unregistered")]) == 1)
    #expect(metrics.counterTotal(label: "example_device_tokens_forgotten_total", dimensions: [("reason", "BadDeviceToken")]) == 1)
    #expect(try metrics.expectGauge("example_device_tokens_registered").lastValue == 1)
}

@Test func otherRejectionsKeepTheToken() async throws {
    let mock = MockTransport()
    mock.respondByDefault(with: .rejected(.deviceTokenNotForTopic))
    let notifier = makeNotifier(mock)
    await notifier.register(live, for: "ann")

    let report = await notifier.notify(user: "ann", title: nil, body: "Hello")
    #expect(report.rejected == 1 && report.unregistered == 0 && report.forgotten == 0)
    #expect(report.results.first?.reason == "DeviceTokenNotForTopic")
    #expect(await notifier.registry.count == 1)
}

@Test func aUserWithoutDevicesSendsNothing() async {
    let mock = MockTransport()
    let report = await makeNotifier(mock).notify(user: "nobody", title: nil, body: "Hello")
    #expect(report.devices == 0 && report.results.isEmpty)
    #expect(mock.requests.isEmpty)
}

@Test func aTokenBelongsToOneUserAtATime() async {
    let registry = DeviceRegistry()
    #expect(await registry.register(live, for: "ann"))
    #expect(await registry.register(live, for: "ann") == false)
    #expect(await registry.register(live, for: "bob"))
    #expect(await registry.registrations(for: "ann").isEmpty)
    #expect(await registry.registrations(for: "bob").map(\.deviceToken) == [live])
    #expect(await registry.count == 1)
    #expect(await registry.forget(unregistered) == false)
    #expect(await registry.forget(live))
    #expect(await registry.count == 0)
}

