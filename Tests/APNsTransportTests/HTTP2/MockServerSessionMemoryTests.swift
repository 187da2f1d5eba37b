import Testing
@testable import APNsMockServer
import APNsTransport

/// The mock server's connections create their nghttp2 sessions with the transport's
/// free-list allocator (``HTTP2SessionMemory``), so that a request's blocks (its stream,
/// outbound items, header copies) are the last request's, and give the cache back once a
/// connection has had no request open for `sessionMemoryIdleDelay`. Checked through the
/// server's own count of each connection's cached bytes, read on its thread.
@Suite("The mock server's HTTP/2 sessions allocate from free lists, given back when idle")
struct MockServerSessionMemoryTests {
    /// Runs a server whose connections keep their cache for `idleDelay`, sends it 300
    /// requests 100 at a time through one connection (all answered 200), then `body`.
    private func afterBurst(
        idleDelay: Duration,
        _ body: (MockAPNsServer, HTTP2Transport) async throws -> Void
    ) async throws {
        var configuration = MockAPNsServer.Configuration(maxConcurrentStreams: 100)
        configuration.sessionMemoryIdleDelay = idleDelay
        try await withMockAPNsServer(configuration: configuration) { server in
            let transport = try mockTransport(server)
            let results = try await sendToMock(transport, port: server.port, indices: 0..<300)
            #expect(results.allSatisfy { (try? $0.get())?.status == 200 })
            try await body(server, transport)
            await transport.shutdown()
        }
    }

    @Test("after 300 requests, 100 at a time, the connection keeps their blocks cached, within the bound")
    func blocksStayCachedWhileTheDelayRuns() async throws {
        try await afterBurst(idleDelay: .seconds(600)) { server, _ in
            let cached = await server.sessionCachedBytes()
            // One connection, whose session gave its closed streams' blocks to the free
            // lists (a session on malloc would cache nothing), and no more than the bound.
            #expect(cached.count == 1)
            #expect((cached.first ?? 0) > 0)
            #expect((cached.first ?? 0) <= HTTP2SessionMemory.maxCachedBytes)
        }
    }

    @Test("once the connection has had no request open for the delay, it caches nothing; it still answers")
    func idleConnectionGivesItsCacheBack() async throws {
        try await afterBurst(idleDelay: .milliseconds(100)) { server, transport in
            var cached = await server.sessionCachedBytes()
            for _ in 0..<2_000 where cached != [0] {
                try await Task.sleep(for: .milliseconds(10))
                cached = await server.sessionCachedBytes()
            }
            #expect(cached == [0], "the idle connection still caches \(cached) bytes")
            // The session allocates afresh after the trim.
            let again = try await sendToMock(transport, port: server.port, indices: 300..<400)
            #expect(again.allSatisfy { (try? $0.get())?.status == 200 })
        }
    }

    @Test("a stopped server reports no connection (the question is answered, not left waiting)")
    func stoppedServerAnswers() async throws {
        let server = MockAPNsServer()
        try await server.start()
        await server.stop()
        #expect(await server.sessionCachedBytes() == [])
    }
}
