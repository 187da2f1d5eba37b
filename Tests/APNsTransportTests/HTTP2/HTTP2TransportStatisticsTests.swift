import APNsMockServer
import Testing
@testable import APNsTransport

/// The device token `mockPush(index, port:)` sends to.
private func mockTokenHex(_ index: Int) -> String {
    let hex = String(index, radix: 16)
    return String(repeating: "0", count: 64 - hex.count) + hex
}

/// `rejectionsByReason` and `reconnects` checked against what the mock server was
/// scripted to do and what it recorded.
@Suite("HTTP2Transport statistics against APNsMockServer")
struct HTTP2TransportStatisticsTests {
    @Test("rejectionsByReason counts exactly the reasons the server was scripted to answer")
    func rejectionsByReason() async throws {
        try await withMockAPNsServer { server in
            let transport = try mockTransport(server)
            // The next 3 requests: 503, and 2 more: 429 (whatever their tokens).
            server.failNextRequests(3, with: .serviceUnavailable)
            server.failNextRequests(2, with: .tooManyRequests)
            let first = try await sendToMock(transport, port: server.port, indices: 0..<5)
            // Then per-token rules: tokens 6 and 7 are Unregistered, token 8 a BadDeviceToken.
            server.respond(toDeviceToken: mockTokenHex(6), with: .unregistered())
            server.respond(toDeviceToken: mockTokenHex(7), with: .unregistered())
            server.respond(toDeviceToken: mockTokenHex(8), with: ScriptedResponse(status: 400, reason: "BadDeviceToken"))
            let rest = try await sendToMock(transport, port: server.port, indices: 5..<40)
            await transport.shutdown()

            let results = first + rest
            #expect(results.allSatisfy { (try? $0.get()) != nil })
            let statistics = transport.statistics
            #expect(statistics.rejectionsByReason == [
                "Unregistered": 2, "BadDeviceToken": 1, "ServiceUnavailable": 3, "TooManyRequests": 2,
            ])
            // The same counts from the server's own record of what it answered.
            var recorded: [String: Int] = [:]
            for record in server.recordedRequests where record.status != 200 {
                recorded[record.reason ?? HTTP2Transport.Statistics.noReason, default: 0] += 1
            }
            #expect(statistics.rejectionsByReason == recorded)
            #expect(statistics.rejectionsByReason.values.reduce(0, +) == server.statistics.rejected)
            #expect(statistics.responsesByStatus == [200: 32, 400: 1, 410: 2, 429: 2, 503: 3])
            #expect(statistics.responsesByStatus[200] == server.statistics.accepted)
            #expect(statistics.requestsInFlight == 0)
        }
    }

    @Test("no rejection is counted when every request is accepted")
    func noRejections() async throws {
        try await withMockAPNsServer { server in
            let transport = try mockTransport(server)
            _ = try await sendToMock(transport, port: server.port, indices: 0..<20)
            await transport.shutdown()
            #expect(server.statistics.accepted == 20)
            #expect(transport.statistics.rejectionsByReason.isEmpty)
            #expect(transport.statistics.responsesByStatus == [200: 20])
        }
    }

    @Test("an error response without a reason is counted under noReason")
    func errorWithoutReason() {
        let box = StatisticsBox()
        for body in [[], Array("not json".utf8), Array(#"{"other":1}"#.utf8)] as [[UInt8]] {
            box.recordAccepted()
            box.recordCompletion(.success(APNsResponse(status: 500, body: body)))
        }
        box.recordAccepted()
        box.recordCompletion(.success(APNsResponse(status: 201)))  // a channel created: not a rejection
        box.recordAccepted()
        box.recordCompletion(.success(APNsResponse(status: 200)))
        let statistics = box.snapshot
        #expect(statistics.rejectionsByReason == [HTTP2Transport.Statistics.noReason: 3])
        #expect(statistics.responsesByStatus == [200: 1, 201: 1, 500: 3])
        #expect(statistics.requestsInFlight == 0)
    }

    @Test("a server inventing reasons cannot grow rejectionsByReason: Apple's reasons keep their keys, 32 others theirs (cut to 128 characters), the rest one key")
    func undocumentedReasonsAreBounded() {
        let box = StatisticsBox()
        func reject(_ reason: String, status: Int = 400) {
            box.recordAccepted()
            box.recordCompletion(.success(APNsResponse(status: status, body: Array("{\"reason\":\"\(reason)\"}".utf8))))
        }
        // 1,000 distinct reasons of 2,000 characters each (a hostile server's).
        for index in 0..<1_000 { reject("Reason\(index)" + String(repeating: "x", count: 2_000)) }
        // Every reason Apple documents keeps its own key, however many others came first.
        for (reason, status) in APNsReason.documented { reject(reason.rawValue, status: status ?? 400) }
        reject("Unregistered", status: 410)
        let statistics = box.snapshot
        let undocumented = statistics.rejectionsByReason.keys.filter { !APNsReason(rawValue: $0).isDocumented && $0 != HTTP2Transport.Statistics.otherReasons }
        #expect(undocumented.count == HTTP2Transport.Statistics.maxUndocumentedReasons)
        #expect(undocumented.allSatisfy { $0.count == 128 && $0.hasPrefix("Reason") })
        #expect(statistics.rejectionsByReason[HTTP2Transport.Statistics.otherReasons] == 1_000 - 32)
        #expect(statistics.rejectionsByReason["Unregistered"] == 2)
        for (reason, _) in APNsReason.documented where reason != .unregistered {
            #expect(statistics.rejectionsByReason[reason.rawValue] == 1, "\(reason)")
        }
        // Every rejection is still counted once.
        #expect(statistics.rejectionsByReason.values.reduce(0, +) == 1_000 + APNsReason.documented.count + 1)
    }

    @Test("reconnects: a GOAWAY closes the connection, the next request opens one more on the same slot")
    func reconnectAfterGoAway() async throws {
        try await withMockAPNsServer { server in
            let transport = try mockTransport(server) { $0.connectionCount = 1 }
            server.sendGoAway(afterRequests: 3, reason: "Shutdown")
            for index in 0..<3 {
                #expect(try await transport.send(mockPush(index, port: server.port)).status == 200)
            }
            #expect(transport.statistics.reconnects == 0)
            // Sent after the GOAWAY: the transport needs a new connection.
            for index in 3..<6 {
                #expect(try await transport.send(mockPush(index, port: server.port)).status == 200)
            }
            await transport.shutdown()
            let statistics = transport.statistics
            #expect(server.statistics.goAways == 1)
            #expect(server.statistics.connections == 2)
            #expect(statistics.connectionsOpened == server.statistics.connections)
            #expect(statistics.reconnects == server.statistics.connections - 1)
        }
    }

    @Test("reconnects: a dropped connection is replaced, and counted once")
    func reconnectAfterDrop() async throws {
        try await withMockAPNsServer { server in
            let transport = try mockTransport(server) { $0.connectionCount = 1 }
            server.dropConnection(atRequest: 2)
            #expect(try await transport.send(mockPush(0, port: server.port)).status == 200)
            await #expect(throws: APNsTransportError.self) {
                _ = try await transport.send(mockPush(1, port: server.port))
            }
            #expect(try await transport.send(mockPush(2, port: server.port)).status == 200)
            await transport.shutdown()
            let statistics = transport.statistics
            #expect(server.statistics.connections == 2)
            #expect(statistics.connectionsLost == 1)
            #expect(statistics.connectionsOpened == server.statistics.connections)
            #expect(statistics.reconnects == 1)
            #expect(statistics.failuresByCode == ["connectionClosed": 1])
        }
    }

    @Test("reconnects stays 0 when several connections each open once", arguments: [2, 4])
    func firstConnectionsAreNotReconnects(connections: Int) async throws {
        try await withMockAPNsServer { server in
            let transport = try mockTransport(server) { $0.connectionCount = connections }
            _ = try await sendToMock(transport, port: server.port, indices: 0..<2_000)
            await transport.shutdown()
            let statistics = transport.statistics
            #expect(statistics.connectionsOpened == server.statistics.connections)
            #expect(statistics.connectionsOpened <= connections)
            #expect(statistics.reconnects == 0)
        }
    }
}
