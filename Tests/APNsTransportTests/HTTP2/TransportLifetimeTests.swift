import APNsMockServer
import Logging
import Synchronization
import Testing
@testable import APNsTransport

/// What a transport owes its callers at the end of its life: every `shutdown()` caller
/// returns only when the connections have closed, and a transport dropped without one
/// closes its connections itself.
@Suite("HTTP2Transport: the end of its life")
struct TransportLifetimeTests {
    @Test("a second shutdown() while the first drains waits for the same end, not returning with a request in flight")
    func concurrentShutdownWaits() async throws {
        try await withMockAPNsServer { server in
            let transport = try mockTransport(server) { $0.shutdownGracePeriod = .seconds(30) }
            // Warm the connection, then hold the answers so one request stays in flight.
            _ = try await sendToMock(transport, port: server.port, indices: 0..<1)
            server.setResponseDelay(.milliseconds(800))
            let answered = Mutex(false)
            let request = try mockPush(1, port: server.port)
            let send = Task {
                let result: Result<APNsResponse, APNsTransportError>
                do throws(APNsTransportError) {
                    result = .success(try await transport.send(request))
                } catch {
                    result = .failure(error)
                }
                answered.withLock { $0 = true }
                return result
            }
            // Bounded wait until the server has the request.
            for _ in 0..<2_000 where server.statistics.requests < 2 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(server.statistics.requests == 2)

            let first = Task { await transport.shutdown() }
            try await Task.sleep(for: .milliseconds(50))
            await transport.shutdown()
            // The second caller returned: the in-flight request has its outcome, and the
            // connection is closed.
            #expect(answered.withLock { $0 })
            #expect(transport.statistics.requestsInFlight == 0)
            await first.value
            #expect(try await send.value.get().status == 200)
            // A call after the end returns at once.
            await transport.shutdown()
        }
    }

    @Test("shutdown() gives up a connection attempt still under way instead of waiting for the connect timeout")
    func shutdownAbandonsConnectAttempt() async throws {
        // The kernel completes the TCP handshake into the backlog; nobody accepts, so the
        // ClientHello goes unanswered and the attempt would wait the whole connect timeout.
        let silent = try LoopbackListener(address: "127.0.0.1", port: 0)
        defer { silent.close() }
        var configuration = silent.silentEndpointConfiguration()
        configuration.connectTimeout = .seconds(120)
        configuration.shutdownGracePeriod = .seconds(1)
        let transport = HTTP2Transport(configuration: configuration)
        let request = try mockPush(0, port: silent.port, timeout: .seconds(300))
        let send = sendingTask(transport, request)
        try await Task.sleep(for: .milliseconds(500))
        let clock = ContinuousClock()
        let start = clock.now
        await transport.shutdown()
        let took = clock.now - start
        // Wide: the whole suite at once on a loaded machine delays tasks by 10-20 s;
        // without giving the attempt up it is the 120 s connect timeout.
        #expect(took < .seconds(60), "shutdown took \(took)")
        let error = await send.value
        #expect(error?.code == .shutdown, "\(String(describing: error))")
        #expect(error?.mayHaveReachedAPNs == false)
    }

    @Test("a transport dropped without shutdown() closes its connections")
    func droppedTransportCloses() async throws {
        try await withMockAPNsServer { server in
            do {
                let transport = try mockTransport(server)
                _ = try await sendToMock(transport, port: server.port, indices: 0..<3)
                #expect(server.statistics.openConnections == 1)
            }
            // Nothing holds the transport now. Bounded wait (the server counts a connection
            // as closed when it reads the end of the stream).
            for _ in 0..<1_000 where server.statistics.openConnections > 0 {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(server.statistics.openConnections == 0)
            // It said goodbye: a GOAWAY NO_ERROR, not a dropped socket.
            #expect(server.statistics.goAwaysReceived[0] == 1)
            #expect(server.statistics.requests == 3)
        }
    }
}
