import APNsMockServer
import Foundation
import Synchronization
import Testing
@testable import APNsTransport

/// A connection's provider token against APNs' rule: a new token less than 20 minutes
/// after the connection began carrying the one before is refused (429
/// TooManyProviderTokenUpdates), counted from when that one first arrived on the
/// connection (Pushy issue 931, apns2 issue 44), not from its `iat`.
@Suite("A connection's provider token updates, as APNs counts them")
struct ConnectionTokenUpdatesTests {
    static let minute: UInt64 = 60_000_000_000

    static func token(issuedAt minute: Int) -> ProviderToken {
        ProviderToken(jwt: "header.claims\(minute).signature", issuedAt: Date(timeIntervalSince1970: Double(minute * 60)), keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
    }

    @Test("the first token, the same token again, a new one after 20 minutes: sent; a new one sooner: retire the connection")
    func table() {
        let t0 = Self.token(issuedAt: 0)
        let t50 = Self.token(issuedAt: 50)
        // (connection opened at, token switch at, verdict for the new token)
        let cases: [(opened: UInt64, switchAt: UInt64, expected: ConnectionTokenUpdates.Verdict)] = [
            (0, 50, .send),    // carried the old token from its start: 50 minutes
            (25, 50, .send),   // 25 minutes
            (30, 50, .send),   // exactly 20 minutes and a few seconds later below
            (31, 50, .retire), // 19 minutes: APNs would refuse the new token
            (40, 50, .retire), // reconnected 10 minutes before the refresh
            (49, 50, .retire),
        ]
        for (opened, switchAt, expected) in cases {
            var updates = ConnectionTokenUpdates()
            let start = opened * Self.minute
            #expect(updates.admit(t0, now: start) == .send)
            #expect(updates.admit(t0, now: start + Self.minute) == .send)  // the same token: always
            let at = switchAt * Self.minute + (switchAt - opened == 20 ? 2_000_000_000 : 0)
            #expect(updates.admit(t50, now: at) == expected, "opened at \(opened), switch at \(switchAt)")
            if expected == .retire {
                // Nothing changed: the connection still carries the old token.
                #expect(updates.current == t0)
                #expect(updates.admit(t0, now: at) == .send)
            } else {
                #expect(updates.current == t50)
                // Back to the old token (a request re-queued from before the refresh) would
                // be an update too, and too soon: a request whose header the transport
                // writes carries the connection's newer token of the same key instead...
                #expect(updates.admit(t0, now: at + Self.minute, replaceable: true) == .sendCarrying(t50))
                #expect(updates.current == t50)
                // ...one built by hand cannot, and retires the connection.
                #expect(updates.admit(t0, now: at + Self.minute) == .retire)
            }
        }
        // A slot retires for this at most once per 20 minutes: a source signing a token per
        // request would otherwise open a connection per request (APNs takes rapid
        // reconnects for abuse); past that the tokens are sent, and APNs' 429 says so.
        var churn = ConnectionTokenUpdates()
        #expect(churn.admit(Self.token(issuedAt: 0), now: 0) == .send)
        #expect(churn.admit(Self.token(issuedAt: 1), now: Self.minute) == .retire)
        churn.newSession()
        #expect(churn.admit(Self.token(issuedAt: 1), now: 2 * Self.minute) == .send)  // the next connection's first
        #expect(churn.admit(Self.token(issuedAt: 2), now: 3 * Self.minute) == .send)  // too soon to retire again
        #expect(churn.admit(Self.token(issuedAt: 3), now: 4 * Self.minute) == .send)
        churn.newSession()
        #expect(churn.admit(Self.token(issuedAt: 30), now: 30 * Self.minute) == .send)
        #expect(churn.admit(Self.token(issuedAt: 31), now: 31 * Self.minute) == .retire)  // 29 minutes after the last retirement

        // Only an older token of the same key and team is replaced: a newer one is an
        // update, and another key's token never goes on this key's connection.
        var replacing = ConnectionTokenUpdates()
        #expect(replacing.admit(Self.token(issuedAt: 10), now: 0) == .send)
        #expect(replacing.admit(Self.token(issuedAt: 11), now: Self.minute, replaceable: true) == .retire)
        let otherKey = ProviderToken(jwt: "h.c.s", issuedAt: Date(timeIntervalSince1970: 0), keyID: "ZZZ123DEFG", teamID: "DEF123GHIJ")
        #expect(replacing.admit(otherKey, now: 2 * Self.minute, replaceable: true) == .send)  // retired a minute ago: sent, APNs says

        // Retired for this less than 20 minutes ago, a newer token of the connection's key
        // (a tenant's client made again with a new cache) carries the connection's token
        // while that one is under 55 minutes old, instead of an update APNs refuses; past
        // that age it is sent.
        var remade = ConnectionTokenUpdates()
        func wall(_ minute: Int) -> () -> Date { { Date(timeIntervalSince1970: Double(minute * 60)) } }
        #expect(remade.admit(Self.token(issuedAt: 0), now: 0) == .send)
        #expect(remade.admit(Self.token(issuedAt: 1), now: Self.minute, replaceable: true, wallClock: wall(1)) == .retire)
        remade.newSession()
        #expect(remade.admit(Self.token(issuedAt: 1), now: 2 * Self.minute) == .send)
        #expect(remade.admit(Self.token(issuedAt: 2), now: 3 * Self.minute, replaceable: true, wallClock: wall(3)) == .sendCarrying(Self.token(issuedAt: 1)))
        #expect(remade.admit(Self.token(issuedAt: 2), now: 3 * Self.minute, wallClock: wall(3)) == .send)  // built by hand: sent
        var remadeLate = ConnectionTokenUpdates()
        #expect(remadeLate.admit(Self.token(issuedAt: 0), now: 0) == .send)
        #expect(remadeLate.admit(Self.token(issuedAt: 1), now: Self.minute, replaceable: true, wallClock: wall(1)) == .retire)
        remadeLate.newSession()
        #expect(remadeLate.admit(Self.token(issuedAt: 1), now: 2 * Self.minute) == .send)
        #expect(remadeLate.admit(Self.token(issuedAt: 2), now: 3 * Self.minute, replaceable: true, wallClock: wall(56)) == .send)

        // A token of the same key, team and second (another cache of the same key) is no
        // newer than the connection's: it carries the connection's, no update.
        var sameSecond = ConnectionTokenUpdates()
        let signedOnce = Self.token(issuedAt: 10)
        let signedTwice = ProviderToken(jwt: "header.claims10.other-signature", issuedAt: signedOnce.issuedAt, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
        #expect(sameSecond.admit(signedOnce, now: 0) == .send)
        #expect(sameSecond.admit(signedTwice, now: Self.minute, replaceable: true) == .sendCarrying(signedOnce))
        #expect(sameSecond.admit(signedTwice, now: Self.minute) == .retire)  // built by hand: judged as a new token

        // A request with no typed token (built by hand) is never held back.
        var updates = ConnectionTokenUpdates()
        #expect(updates.admit(nil, now: 0) == .send)
        #expect(updates.admit(t0, now: 1) == .send)
        #expect(updates.admit(nil, now: 2) == .send)
    }

    /// A token source that hands out the tokens it was given, in turn (then the last).
    final class ScriptedTokens: ProviderTokenSource {
        private let tokens: Mutex<[ProviderToken]>
        init(_ tokens: [ProviderToken]) { self.tokens = Mutex(tokens) }
        func token() throws -> ProviderToken {
            tokens.withLock { $0.count > 1 ? $0.removeFirst() : $0[0] }
        }
        func invalidate(_ token: ProviderToken) {}
    }

    @Test("a request carrying an older token of the connection's key goes with the connection's newer token, on the same connection")
    func olderTokenCarriesNewer() async throws {
        let (key, clock, configuration) = try Self.signedTokenServer()
        // Two real tokens of one key, signed 30 minutes apart (both within APNs' hour).
        let older = try ProviderTokenCache(key: key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ", clock: ProviderTokenClock { clock.now() }).token()
        clock.advance(minutes: 30)
        let newer = try ProviderTokenCache(key: key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ", clock: ProviderTokenClock { clock.now() }).token()
        #expect(older.issuedAt < newer.issuedAt)
        try await withMockAPNsServer(configuration: configuration) { server in
            let transport = try mockTransport(server) { $0.connectionCount = 1 }
            // The newer token first (the connection carries it), then a send whose token
            // predates it, as a request built before a refresh and sent after it is.
            let client = APNsClient(
                environment: .custom(host: "127.0.0.1", port: server.port),
                credentials: .providerToken(ScriptedTokens([newer, older, newer])), transport: transport)
            let notification = PushNotification(payload: .alert(body: "Hi"), topic: "com.example.app")
            for device in UInt8(1)...3 {
                _ = try await client.send(notification, to: DeviceToken(bytes: [UInt8](repeating: device, count: 32)))
            }
            await client.shutdown()
            // One connection, one token on it: no update for APNs to count, no retirement.
            #expect(transport.statistics.connectionsOpened == 1, "\(transport.statistics)")
            let recorded = server.recordedRequests
            #expect(recorded.count == 3)
            #expect(Set(recorded.map(\.connectionNumber)).count == 1)
            #expect(recorded.allSatisfy { $0.value(of: "authorization") == newer.authorizationValue }, "\(recorded.map { $0.value(of: "authorization")?.suffix(8) })")
            #expect(server.statistics.rejected == 0, "\(server.statistics)")
        }
    }

    @Test("two token caches of one key (two tenants of one team) signing in the same second share a connection without a token update")
    func twoCachesOfOneKeySameSecond() async throws {
        let (key, clock, configuration) = try Self.signedTokenServer()
        try await withMockAPNsServer(configuration: configuration) { server in
            let transport = try mockTransport(server) { $0.connectionCount = 1 }
            // Each tenant configured with its own cache of the team's one key: both sign
            // their first token in the same second, so neither token is older.
            let first = try ProviderTokenCache(key: key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ", clock: ProviderTokenClock { clock.now() })
            let second = try ProviderTokenCache(key: key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ", clock: ProviderTokenClock { clock.now() })
            #expect(try first.token().issuedAt == second.token().issuedAt)
            #expect(try first.token().jwt != second.token().jwt)
            let environment = APNsEnvironment.custom(host: "127.0.0.1", port: server.port)
            let clients = [
                APNsClient(environment: environment, credentials: .providerToken(first), transport: transport),
                APNsClient(environment: environment, credentials: .providerToken(second), transport: transport),
            ]
            let notification = PushNotification(payload: .alert(body: "Hi"), topic: "com.example.app")
            var outcomes: [String] = []
            for device in UInt8(1)...6 {
                do {
                    _ = try await clients[Int(device) % 2].send(notification, to: DeviceToken(bytes: [UInt8](repeating: device, count: 32)))
                    outcomes.append("accepted")
                } catch {
                    outcomes.append("\(error)")
                }
            }
            for client in clients { await client.shutdown() }
            // Alternating the two JWTs on one connection is an update each time, which
            // APNs refuses (429 TooManyProviderTokenUpdates) within 20 minutes.
            #expect(outcomes.allSatisfy { $0 == "accepted" }, "\(outcomes)")
            #expect(server.statistics.rejected == 0, "\(server.statistics)")
            #expect(Set(server.recordedRequests.compactMap { $0.value(of: "authorization") }).count == 1)
        }
    }

    @Test("a tenant's client made again twice within 20 minutes (a new token cache of the same key each time) keeps its notifications accepted, not refused TooManyProviderTokenUpdates")
    func clientMadeAgainTwice() async throws {
        // The system clock throughout (the transport reads it to judge a token's age).
        let key = try ProviderKey.generate()
        var keys = ProviderTokenVerifier()
        keys.register(key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
        let configuration = MockAPNsServer.Configuration(bundleIDs: ["com.example.app"], authentication: .providerToken(.signature(keys)))
        try await withMockAPNsServer(configuration: configuration) { server in
            let transport = try mockTransport(server) { $0.connectionCount = 1 }
            let environment = APNsEnvironment.custom(host: "127.0.0.1", port: server.port)
            let notification = PushNotification(payload: .alert(body: "Hi"), topic: "com.example.app")
            var outcomes: [String] = []
            var issued: [Date] = []
            // Three clients of one key, one after the other, each with its own cache made in
            // a later second than the last (so each signs a newer token), as a service that
            // makes a tenant's client again when the tenant is re-added or reconfigured.
            for round in UInt8(0)..<3 {
                if round > 0 { try await Task.sleep(for: .milliseconds(1_100)) }
                let cache = try ProviderTokenCache(key: key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
                issued.append(try cache.token().issuedAt)
                let client = APNsClient(environment: environment, credentials: .providerToken(cache), transport: transport)
                for device in UInt8(1)...3 {
                    do {
                        _ = try await client.send(notification, to: DeviceToken(bytes: [UInt8](repeating: round * 10 + device, count: 32)))
                        outcomes.append("accepted")
                    } catch {
                        outcomes.append("\(error)")
                    }
                }
            }
            await transport.shutdown()
            #expect(issued[0] < issued[1] && issued[1] < issued[2])
            // The second client's token retires the first connection (its first update);
            // the third's, less than 20 minutes later, would be an update APNs refuses on
            // the second: it goes with the second's token, which has nearly an hour to live.
            #expect(outcomes.allSatisfy { $0 == "accepted" }, "\(outcomes)")
            #expect(server.statistics.rejected == 0, "\(server.statistics)")
        }
    }

    /// A key, a clock the test moves, and a mock server configuration that checks the
    /// key's signatures and counts token updates on that clock.
    static func signedTokenServer() throws -> (ProviderKey, TestClock, MockAPNsServer.Configuration) {
        let key = try ProviderKey.generate()
        let clock = TestClock()
        var keys = ProviderTokenVerifier()
        keys.register(key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
        let configuration = MockAPNsServer.Configuration(
            bundleIDs: ["com.example.app"], authentication: .providerToken(.signature(keys)), now: { clock.now() })
        return (key, clock, configuration)
    }

    /// A clock a test moves: the token cache's and the mock server's.
    final class TestClock: Sendable {
        private let seconds = Mutex<Double>(1_800_000_000)
        func now() -> Date { Date(timeIntervalSince1970: seconds.withLock { $0 }) }
        func advance(minutes: Double) { seconds.withLock { $0 += minutes * 60 } }
    }

    @Test("a connection that reconnected 10 minutes before the token's refresh is not refused TooManyProviderTokenUpdates: the new token goes on a new connection")
    func reconnectBeforeRefresh() async throws {
        let (key, clock, configuration) = try Self.signedTokenServer()
        try await withMockAPNsServer(configuration: configuration) { server in
            let transport = try mockTransport(server) { $0.connectionCount = 1 }
            let tokens = try ProviderTokenCache(key: key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ", clock: ProviderTokenClock { clock.now() })
            let client = APNsClient(
                environment: .custom(host: "127.0.0.1", port: server.port), credentials: .providerToken(tokens), transport: transport)
            let notification = PushNotification(payload: .alert(body: "Hi"), topic: "com.example.app")
            func send(_ device: UInt8) async -> String {
                do {
                    _ = try await client.send(notification, to: DeviceToken(bytes: [UInt8](repeating: device, count: 32)))
                    return "accepted"
                } catch {
                    return "\(error)"
                }
            }
            #expect(await send(1) == "accepted")  // minute 0: the first token, on the first connection
            clock.advance(minutes: 40)
            server.dropAllConnections()  // a network blip: the next send reconnects
            // Minute 40, the same token, on a new connection (a send that met the dropped
            // connection before the client noticed fails, may have reached APNs: again).
            var reconnected = await send(2)
            for _ in 0..<200 where reconnected != "accepted" {  // 20 s at least: only a hang ends it
                try await Task.sleep(for: .milliseconds(100))
                reconnected = await send(2)
            }
            #expect(reconnected == "accepted")
            #expect(transport.statistics.connectionsOpened == 2, "\(transport.statistics)")
            clock.advance(minutes: 10)
            // Minute 50: the cache signs the next token; the connection began carrying the
            // first only 10 minutes ago, so APNs (and the mock) would refuse it there.
            #expect(await send(3) == "accepted")
            #expect(await send(4) == "accepted")
            await client.shutdown()
            #expect(server.statistics.rejected == 0, "\(server.statistics)")
            #expect(transport.statistics.connectionsOpened >= 3, "\(transport.statistics)")
        }
    }
}
