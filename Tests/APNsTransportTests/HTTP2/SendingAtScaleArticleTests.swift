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
}
