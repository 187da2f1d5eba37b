import CNGHTTP2
import Testing
@testable import APNsTransport

/// A device push shaped like Apple's example request ("Sending notification requests to
/// APNs"): POST /3/device/<token> with the apns-* headers and a bearer token.
func devicePush(
    token: Int = 0,
    body: [UInt8] = Array(#"{"aps":{"alert":"Hello"}}"#.utf8),
    authority: String = "api.push.apple.com",
    timeout: Duration = .seconds(30)
) throws -> APNsRequest {
    let hex = String(repeating: "0", count: 56) + String(format8(token))
    let id = "\(String(format8(token)))-0000-4000-8000-000000000000".uppercased()
    return try APNsRequest(
        method: .post,
        authority: authority,
        path: "/3/device/" + hex,
        headers: [
            HeaderField(name: "authorization", value: "bearer eyJhbGciOiJFUzI1NiIsImtpZCI6IkFCQzEyMzRERUYifQ.e30.sig"),
            HeaderField(name: "apns-id", value: id),
            HeaderField(name: "apns-push-type", value: "alert"),
            HeaderField(name: "apns-expiration", value: "0"),
            HeaderField(name: "apns-priority", value: "10"),
            HeaderField(name: "apns-topic", value: "com.example.app"),
        ],
        body: body,
        timeout: timeout
    )
}

/// `value` as eight lowercase hex digits.
func format8(_ value: Int) -> String {
    let hex = String(UInt32(truncatingIfNeeded: value), radix: 16)
    return String(repeating: "0", count: 8 - hex.count) + hex
}

@Suite("HTTP/2 connection state machine against an nghttp2 server session")
struct HTTP2ConnectionStateMachineTests {
    @Test("the stream limit starts at 1 and follows the server's SETTINGS upwards")
    func streamLimitRises() throws {
        let client = try HTTP2ConnectionStateMachine()
        let server = InMemoryHTTP2Server(maxConcurrentStreams: 1)
        #expect(client.availableStreams == 1)
        try exchange(client, server)
        let first = try client.submit(devicePush(token: 1))
        #expect(client.availableStreams == 0)
        try exchange(client, server)
        #expect(server.completedStreams == [first])

        server.submitSettings(maxConcurrentStreams: 500)
        let events = try exchange(client, server)
        #expect(events.contains(.settingsChanged(maxConcurrentStreams: 500, headerTableSize: 4096)))
        #expect(client.availableStreams == 499)

        var ids: [Int32] = []
        for token in 2...10 { ids.append(try client.submit(devicePush(token: token))) }
        try exchange(client, server)
        #expect(client.availableStreams == 490)
        #expect(server.completedStreams == [first] + ids)

        server.respond(first, status: 200, headers: [("apns-id", "X")])
        let answered = try exchange(client, server)
        #expect(answered.contains(.response(streamID: first, APNsResponse(status: 200, headers: [HeaderField(name: "apns-id", value: "X")]))))
        #expect(client.availableStreams == 491)
    }

    @Test("a lowered limit stops new streams until enough close")
    func streamLimitFalls() throws {
        let client = try HTTP2ConnectionStateMachine()
        let server = InMemoryHTTP2Server(maxConcurrentStreams: 4)
        try exchange(client, server)
        let ids = try (0..<4).map { try client.submit(devicePush(token: $0)) }
        try exchange(client, server)
        server.submitSettings(maxConcurrentStreams: 2)
        try exchange(client, server)
        #expect(client.availableStreams == 0)
        server.respond(ids[0], status: 200)
        server.respond(ids[1], status: 200)
        server.respond(ids[2], status: 200)
        try exchange(client, server)
        #expect(client.availableStreams == 1)
    }

    @Test(
        "each request is one HEADERS and one DATA frame with END_STREAM, and never PRIORITY (bodies within the window)",
        arguments: [1, 256, 4096, 5120]
    )
    func oneHeadersOneData(bodySize: Int) throws {
        let client = try HTTP2ConnectionStateMachine()
        let server = InMemoryHTTP2Server(maxConcurrentStreams: 100)
        try exchange(client, server)
        let body = [UInt8](repeating: UInt8(ascii: "a"), count: bodySize)
        // As many as the connection's flow-control window (65,535 bytes) holds whole: at
        // its edge a body is split (see FlowControlWindowTests).
        let count = min(20, 65_535 / bodySize)
        for token in 0..<count { _ = try client.submit(devicePush(token: token, body: body)) }
        try exchange(client, server)

        let headers = server.frames(ofType: NGHTTP2_HEADERS)
        let data = server.frames(ofType: NGHTTP2_DATA)
        #expect(headers.count == count)
        #expect(data.count == count)
        #expect(data.allSatisfy { $0.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0 && $0.length == bodySize })
        #expect(headers.allSatisfy { $0.flags & UInt8(NGHTTP2_FLAG_PRIORITY.rawValue) == 0 })
        #expect(headers.allSatisfy { $0.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) == 0 })
        #expect(server.frames(ofType: NGHTTP2_PRIORITY).isEmpty)
        #expect(server.bodies.values.allSatisfy { $0 == body })
        #expect(client.framesSent.headers == count)
        #expect(client.framesSent.data == count)
    }

    @Test("a request without a body is a single HEADERS frame with END_STREAM")
    func bodylessRequest() throws {
        let client = try HTTP2ConnectionStateMachine()
        let server = InMemoryHTTP2Server(maxConcurrentStreams: 10)
        try exchange(client, server)
        let request = try APNsRequest(method: .get, authority: "api-manage-broadcast.push.apple.com:2196", path: "/1/apps/com.example.app/all-channels", headers: [], body: [])
        let id = try client.submit(request)
        try exchange(client, server)
        #expect(server.frames(ofType: NGHTTP2_DATA).isEmpty)
        #expect(server.frames(ofType: NGHTTP2_HEADERS).map(\.flags).allSatisfy { $0 & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0 })
        #expect(server.completedStreams == [id])
    }

    @Test("headers arrive in the request's order, flagged never-indexed exactly where the APNs policy says")
    func headerFlags() throws {
        let client = try HTTP2ConnectionStateMachine()
        let server = InMemoryHTTP2Server(maxConcurrentStreams: 10)
        try exchange(client, server)
        let first = try devicePush(token: 1)
        let second = try devicePush(token: 2)
        let id1 = try client.submit(first)
        let id2 = try client.submit(second)
        try exchange(client, server)

        // The policy (APNsHeaderEncoder's table, Apple's advice to keep per-request values
        // out of the server's small table): :path and authorization are never indexed;
        // :method/:scheme/:authority/apns-topic/apns-push-type/apns-priority are indexed;
        // apns-id and apns-expiration are indexed the first time only.
        let neverIndexedFirst: Set<String> = [":path", "authorization"]
        let neverIndexedLater: Set<String> = [":path", "authorization", "apns-id", "apns-expiration"]
        let received1 = try #require(server.headers[id1])
        let received2 = try #require(server.headers[id2])
        #expect(received1.map(\.name) == first.headers.map(\.name))
        #expect(received1.map(\.value) == first.headers.map(\.value))
        #expect(received2.map(\.name) == second.headers.map(\.name))
        #expect(Set(received1.filter(\.neverIndexed).map(\.name)) == neverIndexedFirst)
        #expect(Set(received2.filter(\.neverIndexed).map(\.name)) == neverIndexedLater)
    }

    @Test("the client announces large windows, no server push and no RFC 7540 priorities")
    func clientSettingsAndWindows() throws {
        // A body limit above the 200,000-octet answer below: this test is about the windows.
        var configuration = HTTP2ConnectionStateMachine.Configuration()
        configuration.maxBodySize = 1 << 20
        let client = try HTTP2ConnectionStateMachine(configuration: configuration)
        let server = InMemoryHTTP2Server(maxConcurrentStreams: 10)
        try exchange(client, server)
        #expect(server.receivedSettings[Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue)] == 0)
        #expect(server.receivedSettings[Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue)] == 1 << 24)
        // RFC 9218 §2.1: SETTINGS_NO_RFC7540_PRIORITIES is 0x09.
        #expect(server.receivedSettings[0x09] == 1)
        // nghttp2's view of how much it may send us on the connection: far above 65,535.
        #expect(nghttp2_session_get_remote_window_size(server.session) >= 1 << 30)

        // A response larger than the default 65,535-octet windows arrives without any
        // WINDOW_UPDATE round trip stalling it.
        let id = try client.submit(devicePush())
        try exchange(client, server)
        let big = [UInt8](repeating: 0x7B, count: 200_000)
        server.respond(id, status: 400, body: big)
        let serverBytes = server.output()
        try serverBytes.withUnsafeBytes { try client.receive($0) }
        var events: [HTTP2ConnectionEvent] = []
        client.takeEvents(into: &events)
        #expect(events.count == 1)
        #expect(events.first == .response(streamID: id, APNsResponse(status: 400, body: big)), "\(events.count) events")
    }

    @Test("GOAWAY mid-flight: streams up to last-stream-id finish, those above are reported unprocessed")
    func goAwayMidFlight() throws {
        let client = try HTTP2ConnectionStateMachine()
        let server = InMemoryHTTP2Server(maxConcurrentStreams: 10)
        try exchange(client, server)
        let ids = try (0..<5).map { try client.submit(devicePush(token: $0)) }
        #expect(ids == [1, 3, 5, 7, 9])
        try exchange(client, server)
        server.respond(1, status: 200)
        server.respond(3, status: 200)
        server.goAway(lastStreamID: 5, debugData: #"{"reason":"Shutdown"}"#)
        let events = try exchange(client, server)

        #expect(events.contains(.response(streamID: 1, APNsResponse(status: 200))))
        #expect(events.contains(.response(streamID: 3, APNsResponse(status: 200))))
        #expect(events.contains(.goAway(lastStreamID: 5, errorCode: 0, debugData: Array(#"{"reason":"Shutdown"}"#.utf8))))
        let unprocessed = events.compactMap { event -> Int32? in
            if case .streamClosed(let id, _, true, _, _) = event { return id }
            return nil
        }
        #expect(Set(unprocessed) == [7, 9])
        #expect(!events.contains { if case .streamClosed(5, _, _, _, _) = $0 { return true } else { return false } })
        #expect(client.availableStreams == 0)
        #expect(throws: APNsTransportError.self) { try client.submit(devicePush(token: 9)) }

        server.respond(5, status: 200)
        let later = try exchange(client, server)
        #expect(later.contains(.response(streamID: 5, APNsResponse(status: 200))))
        #expect(client.openStreams == 0)
        #expect(APNsReason(errorBody: Array(#"{"reason":"Shutdown"}"#.utf8)) == .shutdown)
    }

    @Test(
        "RST_STREAM: REFUSED_STREAM is unprocessed, any other code may have been processed",
        arguments: [
            (NGHTTP2_REFUSED_STREAM.rawValue, true),
            (NGHTTP2_INTERNAL_ERROR.rawValue, false),
            (NGHTTP2_CANCEL.rawValue, false),
        ]
    )
    func resetStream(code: UInt32, unprocessed: Bool) throws {
        let client = try HTTP2ConnectionStateMachine()
        let server = InMemoryHTTP2Server(maxConcurrentStreams: 10)
        try exchange(client, server)
        let id = try client.submit(devicePush())
        try exchange(client, server)
        server.reset(id, errorCode: code)
        let events = try exchange(client, server)
        #expect(events == [.streamClosed(streamID: id, errorCode: code, unprocessed: unprocessed)])
        #expect(client.availableStreams == 10)
    }

    @Test(
        "a reset after the answer's header block arrived: processed, whatever the code, and the status is kept",
        arguments: [NGHTTP2_REFUSED_STREAM.rawValue, NGHTTP2_NO_ERROR.rawValue, NGHTTP2_INTERNAL_ERROR.rawValue]
    )
    func resetAfterStatus(code: UInt32) throws {
        let client = try HTTP2ConnectionStateMachine()
        let server = InMemoryHTTP2Server(maxConcurrentStreams: 10)
        try exchange(client, server)
        let id = try client.submit(devicePush())
        try exchange(client, server)
        server.beginResponse(id, status: 200)
        #expect(try exchange(client, server).isEmpty)
        #expect(client.responseStatus(of: id) == 200)
        server.reset(id, errorCode: code)
        let events = try exchange(client, server)
        // RFC 9113 §8.7: REFUSED_STREAM means no processing happened before the reset; an
        // answer that began says otherwise, so the request must not be sent again.
        #expect(events == [.streamClosed(streamID: id, errorCode: code, unprocessed: false, status: 200)])
    }

    @Test("above a GOAWAY's last-stream-id but already answering: processed")
    func goAwayAfterStatus() throws {
        let client = try HTTP2ConnectionStateMachine()
        let server = InMemoryHTTP2Server(maxConcurrentStreams: 10)
        try exchange(client, server)
        let first = try client.submit(devicePush())
        let second = try client.submit(devicePush(token: 1))
        try exchange(client, server)
        server.beginResponse(second, status: 410)
        try exchange(client, server)
        server.goAway(lastStreamID: first, debugData: #"{"reason":"Shutdown"}"#)
        server.reset(second, errorCode: NGHTTP2_REFUSED_STREAM.rawValue)
        let events = try exchange(client, server)
        #expect(events.contains(.streamClosed(streamID: second, errorCode: NGHTTP2_REFUSED_STREAM.rawValue, unprocessed: false, status: 410)))
    }

    @Test("PING is answered by the server and reported")
    func pingAck() throws {
        let client = try HTTP2ConnectionStateMachine()
        let server = InMemoryHTTP2Server(maxConcurrentStreams: 10)
        try exchange(client, server)
        client.ping()
        let events = try exchange(client, server)
        #expect(events == [.pingAcknowledged])
        #expect(server.frames(ofType: NGHTTP2_PING).count == 1)
    }

    @Test("cancelling a stream (timeout, task cancellation) sends RST_STREAM CANCEL and drops its late answer")
    func cancelStream() throws {
        let client = try HTTP2ConnectionStateMachine()
        let server = InMemoryHTTP2Server(maxConcurrentStreams: 10)
        try exchange(client, server)
        let slow = try client.submit(devicePush(token: 1))
        let fast = try client.submit(devicePush(token: 2))
        try exchange(client, server)
        client.cancelStream(slow)
        server.respond(fast, status: 200)
        let events = try exchange(client, server)
        let resets = server.frames(ofType: NGHTTP2_RST_STREAM)
        #expect(resets.map(\.streamID) == [slow])
        #expect(resets.map(\.errorCode) == [NGHTTP2_CANCEL.rawValue])
        #expect(events == [.response(streamID: fast, APNsResponse(status: 200))])
        #expect(client.openStreams == 0)
    }

    @Test("a SETTINGS_HEADER_TABLE_SIZE change is reported and later requests still decode")
    func headerTableSize() throws {
        let client = try HTTP2ConnectionStateMachine()
        let server = InMemoryHTTP2Server(maxConcurrentStreams: 10, headerTableSize: 0)
        let events = try exchange(client, server)
        #expect(events.contains(.settingsChanged(maxConcurrentStreams: 10, headerTableSize: 0)))
        let id = try client.submit(devicePush())
        try exchange(client, server)
        #expect(server.completedStreams == [id])
        #expect(server.headers[id]?.count == 10)
    }

    @Test("many requests go out in one output buffer: one socket write for the batch")
    func batchedOutput() throws {
        let client = try HTTP2ConnectionStateMachine()
        let server = InMemoryHTTP2Server(maxConcurrentStreams: 100)
        try exchange(client, server)
        for token in 0..<50 { _ = try client.submit(devicePush(token: token)) }
        var bytes: [UInt8] = []
        try client.collectOutput(into: &bytes)
        #expect(server.receive(bytes) == bytes.count)
        #expect(server.completedStreams.count == 50)
    }

    @Test("garbage from the peer makes nghttp2 send GOAWAY with an error, and the machine reports a protocol error")
    func garbageInput() throws {
        let client = try HTTP2ConnectionStateMachine()
        let garbage = [UInt8](repeating: 0xFF, count: 64)
        do {
            try garbage.withUnsafeBytes { try client.receive($0) }
        } catch {
            #expect((error as? APNsTransportError)?.code == .protocolError)
        }
        var bytes: [UInt8] = []
        try client.collectOutput(into: &bytes)
        #expect(client.connectionError?.code == .protocolError)
        // An independent server session parses the client's output: preface, SETTINGS,
        // WINDOW_UPDATE, then GOAWAY with a non-zero error code.
        let observer = InMemoryHTTP2Server()
        #expect(observer.receive(bytes) == bytes.count)
        let goAways = observer.frames(ofType: NGHTTP2_GOAWAY)
        #expect(goAways.count == 1)
        #expect(goAways.first.map { $0.errorCode != 0 } == true)
    }
}

@Suite("Request bodies and the server's flow-control window (RFC 9113 §6.9)")
struct FlowControlWindowTests {
    /// A body that does not fit the window whole is split at its edge, as RFC 9113 allows
    /// a sender to: holding it back until it fits would leave the window's last bytes
    /// unused, and a server that grants more window once half is consumed (nghttp2's rule)
    /// would then grant only half per round trip.
    @Test("the client fills the connection window to its last byte, splitting the body that reaches its edge")
    func windowUsedToTheLastByte() throws {
        let client = try HTTP2ConnectionStateMachine()
        let server = InMemoryHTTP2Server(maxConcurrentStreams: 100)
        try exchange(client, server)
        let body = [UInt8](repeating: UInt8(ascii: "x"), count: 1_000)
        // 66 bodies of 1,000 bytes: 66,000 bytes for a window of 65,535 (RFC 9113 §6.9.2).
        var ids: [Int32] = []
        for token in 0..<66 { ids.append(try client.submit(devicePush(token: token, body: body))) }
        var bytes: [UInt8] = []
        try client.collectOutput(into: &bytes)
        #expect(server.receive(bytes) >= 0)
        // Nothing from the server (no WINDOW_UPDATE) has reached the client yet.
        let received = server.bodies.values.reduce(0) { $0 + $1.count }
        #expect(received == 65_535)
        #expect(server.completedStreams.count == 65)
        // Once the server's WINDOW_UPDATE arrives, the rest follows, every body whole.
        try exchange(client, server)
        #expect(Set(server.completedStreams) == Set(ids))
        #expect(ids.allSatisfy { server.bodies[$0] == body })
    }

    @Test("a request whose body waits for the window is unsent until its END_STREAM goes out, whatever of it the server has")
    func unsentUntilTheBodyEnds() throws {
        let client = try HTTP2ConnectionStateMachine()
        let server = InMemoryHTTP2Server(maxConcurrentStreams: 200)
        try exchange(client, server)
        let body = [UInt8](repeating: UInt8(ascii: "z"), count: 1_000)
        var ids: [Int32] = []
        for token in 0..<100 { ids.append(try client.submit(devicePush(token: token, body: body))) }
        var bytes: [UInt8] = []
        try client.collectOutput(into: &bytes)
        #expect(server.receive(bytes) >= 0)
        // Every HEADERS went out, but the 65,535-byte window (RFC 9113 §6.9.2) holds 65
        // bodies whole and part of the 66th: the server (nghttp2) has 65 complete requests.
        #expect(server.frames(ofType: NGHTTP2_HEADERS).count == 100)
        let complete = Set(server.completedStreams)
        #expect(complete.count == 65)
        // The client counts as possibly processed exactly the requests the server has whole;
        // the rest, their HEADERS sent and their bodies waiting, are unsent (safe to send again).
        for id in ids {
            #expect(client.isUnsent(id) == !complete.contains(id), "stream \(id)")
        }
    }

    @Test("once waiting bodies fill the server's window and one window more, the connection takes no new request; a WINDOW_UPDATE frees it")
    func noNewStreamWhileTheWindowIsFull() throws {
        let client = try HTTP2ConnectionStateMachine()
        let server = InMemoryHTTP2Server(maxConcurrentStreams: 200)
        try exchange(client, server)
        let body = [UInt8](repeating: UInt8(ascii: "y"), count: 1_000)
        // The connection window starts at 65,535 bytes (RFC 9113 §6.9.2), and one more
        // window's worth may wait: 131,070 bytes. 131 bodies (131,000 bytes) stay under it.
        for token in 0..<131 { _ = try client.submit(devicePush(token: token, body: body)) }
        #expect(client.unsentBodyBytes == 131_000)
        #expect(client.availableStreams == 200 - 131)
        // The 132nd reaches it: no new stream until the server opens the window.
        _ = try client.submit(devicePush(token: 131, body: body))
        #expect(client.availableStreams == 0)
        var bytes: [UInt8] = []
        try client.collectOutput(into: &bytes)
        #expect(server.receive(bytes) >= 0)
        // The window's 65,535 bytes went out; 66,465 wait for a window of 0, which is
        // still at least the allowance (65,535): no new stream.
        #expect(client.unsentBodyBytes == 132_000 - 65_535)
        #expect(client.availableStreams == 0)
        // The server's WINDOW_UPDATEs arrive; the rest goes out and the streams are free again.
        try exchange(client, server)
        #expect(client.unsentBodyBytes == 0)
        #expect(client.availableStreams == 200 - client.openStreams)
    }
}
