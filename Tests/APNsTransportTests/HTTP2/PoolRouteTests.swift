import Foundation
import Testing
@testable import APNsCore
@testable import APNsTransport

/// How the transport finds a request's pool: by its authority and credential (a provider
/// token's team and key), remembering the route of the last request so that the next one
/// carrying the same token skips making the key. No connection is opened: pools are made
/// on first use and connect only when a request is queued.
@Suite("Pool routes: each credential its own pool, the remembered route never outlives its pool")
struct PoolRouteTests {
    static let authority = APNsEnvironment.production.authority

    static func token(_ suffix: String, key: String, team: String) -> ProviderToken {
        ProviderToken(jwt: "eyJhbGciOiJFUzI1NiJ9.e30.\(suffix)", issuedAt: Date(), keyID: key, teamID: team)
    }

    static func request(_ token: ProviderToken) throws -> APNsRequest {
        let notification = PushNotification(payload: .alert(body: "Hello"), topic: "com.example.app")
        return try notification.prepared().request(
            to: DeviceToken(bytes: [UInt8](repeating: 7, count: 32)),
            apnsID: .random(),
            environment: .production,
            providerToken: token,
            timeout: .seconds(5)
        )
    }

    @Test("alternating and repeated tokens each reach their own key's pool; a new JWT of the same key, the same pool")
    func routesByCredential() async throws {
        let transport = makeTransport(connector: { _, _ throws(APNsTransportError) in throw .connectionFailed("not used") })
        let a = Self.token("a", key: "KEYAAAAAAA", team: "TEAMAAAAAA")
        let b = Self.token("b", key: "KEYBBBBBBB", team: "TEAMBBBBBB")
        let poolA = try transport.pool(for: Self.request(a))
        let poolB = try transport.pool(for: Self.request(b))
        #expect(poolA !== poolB)
        for _ in 0..<3 {
            #expect(try transport.pool(for: Self.request(a)) === poolA)
            #expect(try transport.pool(for: Self.request(a)) === poolA)
            #expect(try transport.pool(for: Self.request(b)) === poolB)
            #expect(try transport.pool(for: Self.request(b)) === poolB)
        }
        // APNs pins a connection to a key, not to one JWT: a refreshed token of key A
        // (another signature) still goes to A's pool.
        let refreshed = Self.token("a2", key: "KEYAAAAAAA", team: "TEAMAAAAAA")
        #expect(try transport.pool(for: Self.request(refreshed)) === poolA)
        // The same key id under another team is another credential.
        let otherTeam = Self.token("c", key: "KEYAAAAAAA", team: "TEAMCCCCCC")
        let poolC = try transport.pool(for: Self.request(otherTeam))
        #expect(poolC !== poolA && poolC !== poolB)
        #expect(try transport.pool(for: Self.request(a)) === poolA)
        await transport.shutdown()
    }

    @Test("a pool closed between its look-up and remembering its route is not remembered")
    func closedPoolIsNotRemembered() async throws {
        let transport = makeTransport(connector: { _, _ throws(APNsTransportError) in throw .connectionFailed("not used") })
        let a = Self.token("a", key: "KEYAAAAAAA", team: "TEAMAAAAAA")
        let request = try Self.request(a)
        let pool = try transport.pool(for: request)
        #expect(try transport.pool(for: request) === pool)
        let key = HTTP2Transport.PoolKey(authority: Self.authority, credential: HTTP2Transport.Credential(a))
        transport.pools.withLock { state in
            #expect(state.recentPool(for: request) === pool)
            // Closing the pool forgets its route.
            state.pools[key] = nil
            #expect(state.recentPool(for: request) == nil)
            // A look-up that found the pool just before it closed does not bring it back.
            state.pools[key] = pool
            _ = state.pool(for: key)
            state.pools[key] = nil
            state.remember(pool, carrying: a, to: Self.authority)
            #expect(state.recentPool(for: request) == nil)
        }
        // The next request makes a new pool for the credential.
        let next = try transport.pool(for: request)
        #expect(next !== pool)
        #expect(try transport.pool(for: request) === next)
        await transport.shutdown()
    }
}
