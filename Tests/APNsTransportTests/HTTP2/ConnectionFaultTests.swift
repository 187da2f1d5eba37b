import APNsMockServer
import Synchronization
import Testing
@testable import APNsTransport

/// Every request a mock server processed since ``init(_:)``, as its observer reported them.
private final class ProcessedRequests: Sendable {
    private let seen = Mutex<[MockAPNsServer.ProcessedRequest]>([])

    /// Starts watching `server` (the tests send a bounded number of requests).
    init(_ server: MockAPNsServer) {
        server.observeRequests { request in self.seen.withLock { $0.append(request) } }
    }

    /// The reports so far, oldest first.
    var requests: [MockAPNsServer.ProcessedRequest] { seen.withLock { $0 } }

    /// How many times the server processed each `apns-id` (upper-cased, as
    /// ``APNsResponse/apnsIDHeader``).
    var counts: [String: Int] {
        requests.reduce(into: [:]) { $0[$1.apnsID.uppercased(), default: 0] += 1 }
    }

    /// The `apns-id`s the server processed on connection `number`.
    func ids(onConnection number: Int) -> Set<String> {
        Set(requests.filter { $0.connectionNumber == number }.map { $0.apnsID.uppercased() })
    }
}

/// Connections that end badly, driven from the mock server's side: a server that breaks
/// HTTP/2, and one that stops answering (PINGs included) while TCP stays up. Each test
/// checks what the caller sees (the error and `mayHaveReachedAPNs`) against what the server
/// processed (each `apns-id`, on which connection), so nothing is lost or sent twice.
@Suite("HTTP2Transport against connections that break or go silent (APNsMockServer)")
struct ConnectionFaultTests {
    @Test("the server breaks HTTP/2: the client sends GOAWAY PROTOCOL_ERROR, requests in flight fail with protocolError and mayHaveReachedAPNs, later ones succeed on a new connection")
    func serverBreaksProtocol() async throws {
        try await withMockAPNsServer { server in
            let processed = ProcessedRequests(server)
            let port = server.port
            let transport = try mockTransport(server) { $0.connectionCount = 1 }
            // Opens the connection and learns the server's stream limit (1000), so the five
            // requests below go out on it together.
            let opening = try await transport.send(mockPush(0, port: port))
            #expect(opening.status == 200)

            // Answers held: requests 1-4 stay in flight until the fifth arrives, at which the
            // server writes a DATA frame on stream 0 (RFC 9113 §6.1: a connection error).
            server.setResponseDelay(.seconds(600))
            server.breakProtocol(atRequest: 5)
            let held = try (1...5).map { try mockPush($0, port: port) }
            let outcomes = await sendIndexed(transport, requests: held)
            server.setResponseDelay(.zero)

            // Sent after the break: they need a new connection.
            let later = try (6...8).map { try mockPush($0, port: port) }
            let laterOutcomes = await sendIndexed(transport, requests: later)

            // The client's GOAWAY is written just before it closes: a bounded wait for the
            // server to have read it.
            let sawGoAway = await waitUntil { server.statistics.goAwaysReceived[1] == 1 }
            let goAwaysReceived = server.statistics.goAwaysReceived
            let statistics = transport.statistics
            await transport.shutdown()
            server.observeRequests(nil)

            // The client answered the broken frame as RFC 9113 §5.4.1 asks: GOAWAY with
            // PROTOCOL_ERROR (0x1), and no other GOAWAY before the shutdown.
            #expect(sawGoAway, "GOAWAYs the server received, by error code: \(goAwaysReceived)")
            #expect(goAwaysReceived == [1: 1])
            #expect(server.statistics.goAways == 0)

            // Every request in flight failed with protocolError; each may have reached APNs.
            #expect(outcomes.count == 5)
            for outcome in outcomes {
                guard case .failure(let error) = outcome.result else {
                    Issue.record("request \(outcome.index + 1) was in flight when the server broke HTTP/2, yet got \(outcome.result)")
                    continue
                }
                #expect(error.code == .protocolError, "\(error)")
                #expect(error.mayHaveReachedAPNs)
                #expect(error.detail?.contains("PROTOCOL_ERROR") == true, "\(error)")
            }
            // Later requests succeeded, each with its own answer.
            #expect(laterOutcomes.count == 3)
            for outcome in laterOutcomes {
                let response = try outcome.result.get()
                #expect(response.status == 200)
                #expect(response.apnsIDHeader == later[outcome.index].apnsIDHeader)
            }

            // On the server: the held requests on the broken connection (0), the later ones
            // on a new one (1), each processed once: nothing failed was sent again.
            let heldIDs = Set(held.map(\.apnsIDHeader))
            let laterIDs = Set(later.map(\.apnsIDHeader))
            #expect(processed.requests.count == 9)
            #expect(processed.counts.values.allSatisfy { $0 == 1 })
            #expect(processed.ids(onConnection: 0) == heldIDs.union([try mockPush(0, port: port).apnsIDHeader]))
            #expect(processed.ids(onConnection: 1) == laterIDs)
            #expect(server.statistics.connections == 2)
            #expect(statistics.connectionsOpened == 2)
            #expect(statistics.connectionsLost == 1)
            #expect(statistics.requestsSent == 9)
            #expect(statistics.requestsRequeued == 0)
        }
    }

    @Test("an unanswered PING closes the connection: requests written to it fail with mayHaveReachedAPNs, queued ones succeed on a new connection, none sent twice")
    func unansweredPingMovesQueuedWork() async throws {
        // Five streams per connection: of ten requests, five are written and five queue.
        try await withMockAPNsServer(configuration: .init(maxConcurrentStreams: 5)) { server in
            let processed = ProcessedRequests(server)
            let port = server.port
            let transport = try mockTransport(server) {
                $0.connectionCount = 1
                $0.pingInterval = .milliseconds(100)
                // Long enough that a healthy but busy server thread, and the client's I/O
                // threads shared with every other test of a parallel run, answer in time.
                $0.pingTimeout = .seconds(2)
            }
            let opening = try await transport.send(mockPush(0, port: port))
            #expect(opening.status == 200)

            // Answers held, so requests 1-5 fill the five streams; the fifth to arrive turns
            // the connection into a black hole (no answers, no PING ACK, TCP up). Requests
            // 6-10 wait in the pool's queue: the only connection has no free stream.
            server.setResponseDelay(.seconds(600))
            server.blackHoleConnection(atRequest: 5)
            let requests = try (1...10).map { try mockPush($0, port: port) }
            async let sending = sendIndexed(transport, requests: requests)
            // Once the black hole is in place, answers on any other connection flow again.
            let blackHoled = await waitUntil { server.statistics.requests >= 6 }
            server.setResponseDelay(.zero)
            let outcomes = await sending
            // The client closed the dead connection, and the server saw it close (a bounded wait).
            let deadClosed = await waitUntil { server.statistics.openConnections == 1 }
            let statistics = transport.statistics
            await transport.shutdown()
            server.observeRequests(nil)
            #expect(blackHoled)
            #expect(deadClosed, "\(server.statistics)")

            // Each caller saw exactly one outcome: nothing silently lost.
            #expect(outcomes.count == 10)
            #expect(Set(outcomes.map(\.index)) == Set(0..<10))
            let dead = processed.ids(onConnection: 0).subtracting([try mockPush(0, port: port).apnsIDHeader])
            let fresh = processed.ids(onConnection: 1)
            // The five requests written to the dead connection, and only those, reached it;
            // the five that were queued reached the new connection.
            #expect(dead.count == 5)
            #expect(fresh.count == 5)
            #expect(dead.isDisjoint(with: fresh))
            for outcome in outcomes {
                let id = requests[outcome.index].apnsIDHeader
                switch outcome.result {
                case .failure(let error):
                    // Written, then the connection died: it may have reached APNs.
                    #expect(dead.contains(id), "request \(outcome.index + 1) failed but was not written to the dead connection: \(error)")
                    #expect(error.code == .connectionClosed, "\(error)")
                    #expect(error.mayHaveReachedAPNs)
                    #expect(error.detail?.contains("PING") == true, "\(error)")
                case .success(let response):
                    // Queued, then sent on the new connection and answered there.
                    #expect(fresh.contains(id), "request \(outcome.index + 1) succeeded but was not carried by the new connection")
                    #expect(response.status == 200)
                    #expect(response.apnsIDHeader == id)
                }
            }
            #expect(outcomes.compactMap(\.result.failure).count == 5)
            // Never sent twice: each apns-id reached the server once.
            #expect(processed.requests.count == 11)
            #expect(processed.counts.values.allSatisfy { $0 == 1 })
            #expect(server.statistics.connections == 2)
            #expect(statistics.connectionsOpened == 2)
            #expect(statistics.connectionsLost == 1)
            #expect(statistics.requestsSent == 11)
            #expect(statistics.requestsRequeued == 0)
        }
    }
}
