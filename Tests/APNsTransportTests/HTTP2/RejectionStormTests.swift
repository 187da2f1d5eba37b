import APNsMockServer
import Testing
@testable import APNsTransport

/// APNs closes a connection that keeps sending requests it refuses. The mock server does
/// the same when asked (`Configuration.closeAfterRejections`): a batch that meets it loses
/// nothing and gets Apple's reason for every notification, once.
@Suite("A server that closes connections after rejections")
struct RejectionStormTests {
    @Test("every third rejection ends a connection: 40 notifications, 40 BadTopic answers, each once, on new connections",
          arguments: [1, 10])
    func batchThroughRejectionStorm(maxConcurrency: Int) async throws {
        var configuration = MockAPNsServer.Configuration(bundleIDs: ["com.example.app"])
        configuration.closeAfterRejections = 3
        try await withMockAPNsServer(configuration: configuration) { server in
            let transport = try mockTransport(server)
            let client = APNsClient(credentials: .certificate, transport: transport)
            // A topic the server does not serve: 400 BadTopic, which the client cannot know before sending.
            let notification = PushNotification(payload: .alert(body: "Hi"), topic: "com.other.app")
            let tokens = try (0..<40).map { index in
                try DeviceToken(bytes: [UInt8](repeating: 0xA0, count: 31) + [UInt8(index)])
            }
            let outcomes = await client.send(notification, to: tokens, maxConcurrency: maxConcurrency)
            await client.shutdown()
            #expect(outcomes.map(\.deviceToken) == tokens)
            let reasons = outcomes.map { outcome -> String in
                if case .failure(.rejected(let rejection)) = outcome.result { return rejection.reason?.rawValue ?? "-" }
                return "\(outcome.result)"
            }
            #expect(reasons.allSatisfy { $0 == "BadTopic" }, "\(reasons)")
            let statistics = server.statistics
            // Each request processed once: 40 decisions, however many were refused unprocessed.
            #expect(statistics.requests == 40)
            #expect(statistics.rejected == 40)
            if maxConcurrency == 1 {
                // One at a time: three per connection, so 14 connections, the first 13 ended by GOAWAY.
                #expect(statistics.connections == 14, "\(statistics)")
                #expect(statistics.goAways == 13, "\(statistics)")
                #expect(transport.statistics.goAwaysReceived == 13)
            } else {
                // Ten at a time: what a connection received before its GOAWAY is answered on it.
                #expect(statistics.connections >= 2, "\(statistics)")
                #expect(transport.statistics.goAwaysReceived == statistics.goAways)
            }
        }
    }
}
