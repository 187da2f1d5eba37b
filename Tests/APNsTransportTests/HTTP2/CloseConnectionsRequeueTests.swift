import Logging
import Testing
@testable import APNsTransport

/// ``HTTP2Transport/closeConnections(for:)`` while the server declines requests in flight:
/// a request the server did not process goes again, and a pool closed alone (the
/// transport goes on) hands it to its credential's next pool instead of failing it as if
/// the transport had shut down.
@Suite("closeConnections(for:) and requests the server did not process", .timeLimit(.minutes(1)))
struct CloseConnectionsRequeueTests {
    @Test("a GOAWAY during closeConnections(for:): the unprocessed requests go to the credential's new connection, not fail as shutdown")
    func goAwayWhileClosingRedirects() async throws {
        var behaviour = SocketPairHTTP2Server.Behaviour()
        behaviour.holdOnFirstConnection = true
        behaviour.initialStreamLimit = 10
        let server = SocketPairHTTP2Server(behaviour)
        let transport = makeTransport(server) { configuration in
            configuration.credentialIdleTimeout = nil
            configuration.shutdownGracePeriod = .seconds(20)
        }
        // `devicePush` carries a JWT with kid ABC1234DEF and no iss.
        let credential = HTTP2Transport.Credential.providerKey(teamID: "", keyID: "ABC1234DEF")
        let sends = Task { try await sendMany(transport, count: 3, timeout: .seconds(30)) }
        // All three in flight on the first connection, held unanswered.
        #expect(await waitUntil { transport.statistics.requestsSent == 3 })
        let closing = Task { await transport.closeConnections(for: credential) }
        // The pool has left the table: it is closing, its connection draining.
        #expect(await waitUntil { transport.statistics(for: credential) == nil })
        // APNs closes that connection meanwhile, having processed none of them.
        server.goAwayOnFirstConnection()
        let results = try await sends.value
        await closing.value
        await transport.shutdown()
        await server.stop()

        let failures = results.compactMap { result -> String? in
            if case .failure(let error) = result { return String(reflecting: error) }
            return nil
        }
        #expect(failures.isEmpty, "\(failures)")
        #expect(results.allSatisfy { (try? $0.get().status) == 200 })
        // Sent again on a second connection, of the credential's new pool.
        #expect(server.snapshot.connections == 2)
        #expect(server.snapshot.answeredIDs.count == 3)
    }
}
