import APNsCore
import APNsMockServer
import Testing
@testable import APNsTransport

/// A request whose deadline is nearer than any answer its connection has given is not
/// written: it would time out in flight as "may have reached APNs". Not written, it fails
/// as never sent, which the caller can safely send again.
@Suite("A request with less time left than the connection's fastest answer is not written")
struct FastestAnswerTests {
    private static let ms: UInt64 = 1_000_000

    @Test("the fastest answer is the smallest sample, one request timed at a time; other requests' answers give none")
    func sampling() {
        var fastest = FastestAnswer()
        #expect(fastest.fastest == nil)
        fastest.submitted(streamID: 1, now: 0)
        fastest.submitted(streamID: 3, now: 1 * Self.ms)  // not timed: stream 1 is
        fastest.answered(streamID: 3, now: 2 * Self.ms)
        #expect(fastest.fastest == nil)
        fastest.answered(streamID: 1, now: 40 * Self.ms)
        #expect(fastest.fastest == 40 * Self.ms)
        fastest.submitted(streamID: 5, now: 100 * Self.ms)
        fastest.answered(streamID: 5, now: 190 * Self.ms)  // slower: the bound stays
        #expect(fastest.fastest == 40 * Self.ms)
        fastest.submitted(streamID: 7, now: 200 * Self.ms)
        fastest.answered(streamID: 7, now: 225 * Self.ms)  // faster: the bound falls
        #expect(fastest.fastest == 25 * Self.ms)
    }

    @Test("a timed request that ends without an answer is let go, and the next one is timed")
    func droppedSample() {
        var fastest = FastestAnswer()
        fastest.submitted(streamID: 1, now: 0)
        fastest.dropSample { $0 == 1 }  // still in flight: kept
        #expect(fastest.sampledStream == 1)
        fastest.dropSample { _ in false }  // reset, refused or timed out
        #expect(fastest.sampledStream == 0)
        fastest.answered(streamID: 1, now: 5 * Self.ms)  // too late to count
        #expect(fastest.fastest == nil)
        fastest.submitted(streamID: 3, now: 10 * Self.ms)
        fastest.answered(streamID: 3, now: 30 * Self.ms)
        #expect(fastest.fastest == 20 * Self.ms)
    }

    @Test("too late: a deadline passed, or nearer than the fastest answer; before any answer only a passed one")
    func tooLate() {
        var fastest = FastestAnswer()
        #expect(fastest.isTooLate(deadline: 100, now: 100))
        #expect(!fastest.isTooLate(deadline: 101, now: 100))
        fastest.submitted(streamID: 1, now: 0)
        fastest.answered(streamID: 1, now: 30 * Self.ms)
        #expect(fastest.isTooLate(deadline: 129 * Self.ms, now: 100 * Self.ms))
        #expect(!fastest.isTooLate(deadline: 130 * Self.ms, now: 100 * Self.ms))
        #expect(fastest.isTooLate(deadline: 90 * Self.ms, now: 100 * Self.ms))
    }

    @Test("over a real connection, the request left with less time than an answer takes fails as never sent, and the server never sees it",
          .timeLimit(.minutes(2)))
    func notWrittenWhenAnAnswerCannotArriveInTime() async throws {
        // One stream at a time and answers held 2 s: of three requests with 5 s each, the
        // first is answered at about 2 s, the second at about 4 s, and the third would be
        // written with about a second left, to time out in flight. (It was 1 s and 2.5 s:
        // a margin of half a second either way, which a loaded machine starting a child
        // task or an answer late could cross; now a second.)
        try await withMockAPNsServer(configuration: .init(maxConcurrentStreams: 1)) { server in
            server.setResponseDelay(.seconds(2))
            let transport = try mockTransport(server)
            let results = await withTaskGroup(of: Result<APNsResponse, APNsTransportError>.self) { group in
                for index in 0..<3 {
                    group.addTask {
                        do throws(APNsTransportError) {
                            return .success(try await transport.send(try! mockPush(index, port: server.port, timeout: .seconds(5))))
                        } catch {
                            return .failure(error)
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            await transport.shutdown()
            let failures = results.compactMap { result -> APNsTransportError? in
                if case .failure(let error) = result { return error }
                return nil
            }
            // A loaded machine may slow the second answer past its deadline too; the one
            // that went unwritten is never "may have reached APNs".
            #expect(!failures.isEmpty, "\(results)")
            let unwritten = failures.filter { !$0.mayHaveReachedAPNs }
            #expect(unwritten.count == 1, "\(failures)")
            #expect(unwritten.allSatisfy { $0.code == .timeout && "\($0)".contains("fastest answer") }, "\(unwritten)")
            #expect(server.statistics.requests == 3 - unwritten.count, "\(server.statistics)")
        }
    }
}
