import APNsMockServer
import Testing
@testable import APNsTransport

/// Waits until `condition` holds, polling every 5 ms, at most `iterations` times (a bound
/// on a wait, never an assertion about time). Returns whether it held.
func waitUntil(iterations: Int = 4_000, _ condition: () -> Bool) async -> Bool {
    for _ in 0..<iterations {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}

/// `maxQueuedRequests` bounds the requests *waiting* for a stream, not the requests a
/// connection with free streams is about to take.
@Suite("HTTP2Transport maxQueuedRequests: only requests waiting for a stream count")
struct QueueLimitTests {
    @Test("a burst larger than maxQueuedRequests is sent when the connection has free streams for it", arguments: [0, 5])
    func burstWithFreeStreams(limit: Int) async throws {
        var behaviour = SocketPairHTTP2Server.Behaviour()
        behaviour.initialStreamLimit = 100
        behaviour.raisedStreamLimit = 100
        let server = SocketPairHTTP2Server(behaviour)
        let transport = makeTransport(server) { $0.maxQueuedRequests = limit }
        // Opens the connection: from its answer on, the pool knows of 100 free streams.
        let first = try await transport.send(devicePush(token: 1_000))
        let results = try await sendMany(transport, count: 50)
        await transport.shutdown()
        await server.stop()

        #expect(first.status == 200)
        #expect(results.compactMap(\.failure).isEmpty, "\(results.compactMap(\.failure))")
        #expect(results.allSatisfy { (try? $0.get().status) == 200 })
        let answered = server.snapshot.answeredIDs
        #expect(answered.count == 51)
        #expect(answered.values.allSatisfy { $0 == 1 })
        #expect(transport.statistics.failuresByCode.isEmpty)
    }

    @Test("maxQueuedRequests = 0: every send goes out when a stream is free, even with the stream limit at 1")
    func zeroLimitSendsOnFreeStream() async throws {
        var behaviour = SocketPairHTTP2Server.Behaviour()
        behaviour.initialStreamLimit = 1
        behaviour.raisedStreamLimit = 1
        let server = SocketPairHTTP2Server(behaviour)
        let transport = makeTransport(server) { $0.maxQueuedRequests = 0 }
        // One after the other: each finds the one stream free (the first, the connection
        // the pool opens for it; the others, the stream the previous answer freed).
        var failures: [APNsTransportError] = []
        for token in 0..<20 {
            let request = try devicePush(token: token)
            do throws(APNsTransportError) {
                _ = try await transport.send(request)
            } catch {
                failures.append(error)
            }
        }
        await transport.shutdown()
        await server.stop()

        #expect(failures.isEmpty, "\(failures)")
        #expect(server.snapshot.answeredIDs.count == 20)
        #expect(transport.statistics.responsesByStatus == [200: 20])
    }

    @Test(
        "with every stream busy, the (maxQueuedRequests+1)-th waiting request fails at once with queueFull; the others wait and succeed",
        arguments: [0, 3]
    )
    func limitWithStreamsBusy(limit: Int) async throws {
        try await withMockAPNsServer(configuration: .init(maxConcurrentStreams: 2)) { server in
            let transport = try mockTransport(server) { $0.maxQueuedRequests = limit }
            let port = server.port
            // The connection is up with its 2 streams free.
            let first = try await transport.send(mockPush(0, port: port))
            server.setResponseDelay(.seconds(600))  // released below
            let holders = Task { try await sendToMock(transport, port: port, indices: 1..<3) }
            let holding = await waitUntil { server.statistics.requests == 3 }
            #expect(holding, "the two holding requests did not reach the server")
            let waiters = Task { try await sendToMock(transport, port: port, indices: 3..<(3 + limit)) }
            let waiting = await waitUntil { transport.waitingRequests == limit }
            #expect(waiting, "\(transport.waitingRequests) requests waiting, expected \(limit)")

            var rejected: APNsTransportError?
            let extra = try mockPush(100, port: port)
            do throws(APNsTransportError) {
                _ = try await transport.send(extra)
            } catch {
                rejected = error
            }
            // The waiting requests were not sent while both streams were busy.
            let requestsWhileHeld = server.statistics.requests
            server.setResponseDelay(.zero)
            let held = try await holders.value
            let waited = try await waiters.value
            await transport.shutdown()

            #expect(first.status == 200)
            #expect(rejected?.code == .queueFull)
            #expect(rejected?.mayHaveReachedAPNs == false)
            #expect(requestsWhileHeld == 3)
            #expect(held.count == 2 && held.allSatisfy { (try? $0.get().status) == 200 })
            #expect(waited.count == limit && waited.allSatisfy { (try? $0.get().status) == 200 })
            // Every request but the rejected one reached the server exactly once.
            let answered = answeredIDs(server)
            let expected = try Set((0..<(3 + limit)).map { try mockPush($0, port: port).apnsIDHeader })
            #expect(Set(answered.keys) == expected)
            #expect(answered.values.allSatisfy { $0 == 1 })
            #expect(transport.statistics.failuresByCode == ["queueFull": 1])
        }
    }
}

extension APNsRequest {
    /// The request's `apns-id` header, upper-cased as ``answeredIDs(_:)`` keys it.
    var apnsIDHeader: String {
        headers.first { $0.name == "apns-id" }?.value.uppercased() ?? ""
    }
}
