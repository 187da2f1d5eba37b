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
                // Back to the old token (a request re-queued from before the refresh) is an
                // update too, and too soon.
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

        // A request with no typed token (built by hand) is never held back.
        var updates = ConnectionTokenUpdates()
        #expect(updates.admit(nil, now: 0) == .send)
        #expect(updates.admit(t0, now: 1) == .send)
        #expect(updates.admit(nil, now: 2) == .send)
    }

    /// A clock a test moves: the token cache's and the mock server's.
    final class TestClock: Sendable {
        private let seconds = Mutex<Double>(1_800_000_000)
        func now() -> Date { Date(timeIntervalSince1970: seconds.withLock { $0 }) }
        func advance(minutes: Double) { seconds.withLock { $0 += minutes * 60 } }
    }

    @Test("a connection that reconnected 10 minutes before the token's refresh is not refused TooManyProviderTokenUpdates: the new token goes on a new connection")
    func reconnectBeforeRefresh() async throws {
        let key = try ProviderKey.generate()
        let clock = TestClock()
        var keys = ProviderTokenVerifier()
        keys.register(key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
        let configuration = MockAPNsServer.Configuration(
            bundleIDs: ["com.example.app"], authentication: .providerToken(.signature(keys)), now: { clock.now() })
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
            for _ in 0..<20 where reconnected != "accepted" {
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
