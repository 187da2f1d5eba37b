import CNGHTTP2
import Testing
@testable import APNsTransport

/// The response limits of the connection state machine, against nghttp2's server session
/// (an independent HTTP/2 implementation): what the client advertises, and what happens
/// to a response past a limit. The hostile-server suite checks the same through the
/// whole transport, with a server that breaks rules nghttp2 would not.
@Suite("Response limits: header list and body")
struct ResponseLimitTests {
    private func machine(headers: Int = 16_384, body: Int = 16_384, channelBody: Int = 4 << 20) throws -> HTTP2ConnectionStateMachine {
        var configuration = HTTP2ConnectionStateMachine.Configuration()
        configuration.maxHeaderListSize = headers
        configuration.maxBodySize = body
        configuration.maxChannelBodySize = channelBody
        return try HTTP2ConnectionStateMachine(configuration: configuration)
    }

    /// nghttp2's server session, with 10 streams, after the prefaces were exchanged.
    private func connectedServer(_ client: HTTP2ConnectionStateMachine) throws -> InMemoryHTTP2Server {
        let server = InMemoryHTTP2Server(maxConcurrentStreams: 10)
        try exchange(client, server)
        return server
    }

    @Test("the client advertises SETTINGS_MAX_HEADER_LIST_SIZE as nghttp2 reads it")
    func advertisesHeaderListSize() throws {
        let client = try machine(headers: 12_345)
        let server = try connectedServer(client)
        #expect(server.receivedSettings[Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue)] == 12_345)
    }

    @Test("a 400 body past the limit: RST_STREAM CANCEL, responseTooLarge with status 400, the connection goes on")
    func bodyPastTheLimit() throws {
        let client = try machine(body: 1_000)
        let server = try connectedServer(client)
        let big = try client.submit(devicePush(token: 1))
        let small = try client.submit(devicePush(token: 2))
        try exchange(client, server)
        server.respond(big, status: 400, body: Array(repeating: UInt8(ascii: "x"), count: 5_000))
        server.respond(small, status: 400, body: Array(#"{"reason":"BadDeviceToken"}"#.utf8))
        let events = try exchange(client, server)

        let refused = events.compactMap { event -> (Int32, APNsTransportError)? in
            if case .responseRefused(let id, let error) = event { return (id, error) }
            return nil
        }
        #expect(refused.count == 1)
        #expect(refused.first?.0 == big)
        #expect(refused.first?.1.code == .responseTooLarge)
        #expect(refused.first?.1.responseStatus == 400)
        #expect(refused.first?.1.mayHaveReachedAPNs == true)
        #expect(refused.first?.1.detail?.contains("maxResponseBodySize") == true)
        // No other event for the refused stream (its close is silent).
        #expect(!events.contains { if case .streamClosed(big, _, _, _, _) = $0 { true } else { false } })
        #expect(!events.contains { if case .response(big, _) = $0 { true } else { false } })
        // The other answer is whole.
        #expect(events.contains(.response(streamID: small, APNsResponse(status: 400, body: Array(#"{"reason":"BadDeviceToken"}"#.utf8)))))
        // nghttp2's server session received our RST_STREAM with CANCEL (0x8).
        #expect(server.frames.contains { $0.type == UInt8(NGHTTP2_RST_STREAM.rawValue) && $0.streamID == big && $0.errorCode == NGHTTP2_CANCEL.rawValue })
        #expect(client.availableStreams == 10)
        #expect(client.connectionError == nil)
    }

    @Test("a 200 whose headers pass the limit: responseTooLarge, status 200, the detail says APNs accepted it")
    func headersPastTheLimit() throws {
        let client = try machine(headers: 2_048)
        let server = try connectedServer(client)
        let id = try client.submit(devicePush(token: 1))
        try exchange(client, server)
        // 40 fields of 100 octets each (+32 per field): about 5,400 octets.
        let fields = (0..<40).map { ("x-filler-\($0)", String(repeating: "v", count: 90)) }
        server.respond(id, status: 200, headers: fields)
        let events = try exchange(client, server)
        guard case .responseRefused(id, let error)? = events.first(where: { if case .responseRefused = $0 { true } else { false } }) else {
            Issue.record("no responseRefused event: \(events)")
            return
        }
        #expect(error.code == .responseTooLarge)
        #expect(error.responseStatus == 200)
        #expect(error.detail?.contains("APNs accepted the notification") == true)
        #expect(error.detail?.contains("maxResponseHeaderListSize") == true)
        #expect(client.connectionError == nil)

        // The connection stays usable.
        let next = try client.submit(devicePush(token: 2))
        try exchange(client, server)
        server.respond(next, status: 200)
        #expect(try exchange(client, server).contains(.response(streamID: next, APNsResponse(status: 200))))
    }

    @Test("a channel management answer may be larger than a push answer")
    func channelBodiesHaveTheirOwnLimit() throws {
        let client = try machine(body: 1_000, channelBody: 100_000)
        let server = try connectedServer(client)
        let request = try APNsRequest(
            method: .get,
            authority: "api-manage-broadcast.push.apple.com:2196",
            path: "/1/apps/com.example.app/all-channels",
            headers: [],
            body: []
        )
        let id = try client.submit(request)
        try exchange(client, server)
        let body = Array(("{\"channels\":[" + String(repeating: "\"dHN0LXNyY2gtY2hubA==\",", count: 2_000) + "\"x\"]}").utf8)
        server.respond(id, status: 200, body: body)
        #expect(try exchange(client, server).contains(.response(streamID: id, APNsResponse(status: 200, body: body))))
    }

    @Test("before the server's SETTINGS, one request goes out, not one more each time the last one is cancelled")
    func oneRequestBeforeSettings() throws {
        let client = try machine()
        #expect(client.availableStreams == 1)
        let id = try client.submit(devicePush(token: 1))
        #expect(client.availableStreams == 0)
        client.cancelStream(id)
        var output: [UInt8] = []
        try client.collectOutput(into: &output)
        #expect(client.availableStreams == 0)
        #expect(!client.settingsReceived)
    }
}
