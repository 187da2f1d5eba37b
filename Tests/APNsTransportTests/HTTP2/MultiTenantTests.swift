import APNsMockServer
import Foundation
import Logging
import Synchronization
import Testing
@testable import APNsTransport

/// Many credentials over one ``HTTP2Transport``, against ``APNsMockServer`` on loopback:
/// provider keys of different teams (every token's signature verified by the server with
/// the key registered for its `kid` and team) and client certificates (a second server in
/// certificate mode). What is checked comes from the server's record: which tokens each
/// connection carried (APNs pins a connection to the key of its first token).
@Suite("Many tenants on one transport")
struct MultiTenantTests {
    /// What went wrong for one tenant.
    struct TenantFailure: Error, CustomStringConvertible {
        let description: String
    }

    /// One token tenant: a team with its own key.
    struct Tenant: Sendable {
        let teamID: String
        let keyID: String
        let key: ProviderKey
        var credential: HTTP2Transport.Credential { .providerKey(teamID: teamID, keyID: keyID) }
    }

    static func tenants(_ count: Int) throws -> [Tenant] {
        try (0..<count).map { index in
            // Ten characters each, as Apple's team and key ids are.
            let suffix = String(format: "%04d", index)
            return Tenant(teamID: "TEAM00" + suffix, keyID: "KEY000" + suffix, key: try ProviderKey.generate())
        }
    }

    /// A server in token mode that knows every tenant's key, bound to its team.
    static func tokenServer(_ tenants: [Tenant], maxConcurrentStreams: Int = 100) -> MockAPNsServer.Configuration {
        var keys = ProviderTokenVerifier()
        for tenant in tenants { keys.register(tenant.key, keyID: tenant.keyID, teamID: tenant.teamID) }
        return MockAPNsServer.Configuration(
            bundleIDs: ["com.example.app"],
            authentication: .providerToken(.signature(keys)),
            maxConcurrentStreams: maxConcurrentStreams
        )
    }

    static func device(_ index: Int) throws -> DeviceToken {
        let hex = String(index, radix: 16)
        return try DeviceToken(hex: String(repeating: "0", count: 64 - hex.count) + hex)
    }

    static let alert = PushNotification(payload: .alert(title: "Hello", body: "World"), topic: "com.example.app")

    /// The keys (`iss`/`kid`) each connection of `server` carried, by connection number,
    /// from its recorded requests.
    static func keysByConnection(_ server: MockAPNsServer) -> [Int: Set<String>] {
        var keys: [Int: Set<String>] = [:]
        for record in server.recordedRequests {
            let key = record.providerToken.map { "\($0.teamID)/\($0.keyID)" } ?? "(none)"
            keys[record.connectionNumber, default: []].insert(key)
        }
        return keys
    }

    /// Checks, with the server's own binding record (every token it read, accepted or
    /// not) and its recorded requests, that no connection carried two keys.
    static func expectOneKeyPerConnection(_ server: MockAPNsServer, keys expected: Int? = nil) {
        let bound = server.keyIDsByConnection
        #expect(!bound.isEmpty)
        #expect(bound.values.allSatisfy { $0.count == 1 }, "\(bound.filter { $0.value.count > 1 })")
        if let expected { #expect(Set(bound.values.flatMap { $0 }).count == expected) }
        let recorded = keysByConnection(server)
        #expect(recorded.values.allSatisfy { $0.count == 1 }, "\(recorded.filter { $0.value.count > 1 })")
        // And the server never had to refuse a token for another key.
        #expect(!server.recordedRequests.contains { $0.reason == "UnrelatedKeyIdInToken" })
    }

    static func transport(_ server: MockAPNsServer, _ configure: (inout HTTP2Transport.Configuration) -> Void) throws -> HTTP2Transport {
        try mockTransport(server) { configuration in
            configuration.credentialIdleTimeout = nil
            configure(&configuration)
        }
    }

    @Test("50 tenants (48 keys of different teams, 2 certificates) on one transport: one floods, the others' single alerts stay fast, no connection carries two keys")
    func fiftyTenantsOneFlooding() async throws {
        let tenants = try Self.tenants(48)
        let pki = try TestPKI.get()
        let certificateConfiguration = MockAPNsServer.Configuration(authentication: .certificate(trustedCAPEM: try pki.text("ca.pem")))
        let identities = [
            try ClientIdentity(certificatePEM: pki.text("client.pem"), privateKeyPEM: pki.text("client.key")),
            try ClientIdentity(certificatePEM: pki.text("chainclient-with-intermediate.pem"), privateKeyPEM: pki.text("chainclient.key")),
        ]
        let floodCount = 20_000
        try await withMockAPNsServer(configuration: Self.tokenServer(tenants)) { server in
            try await withMockAPNsServer(configuration: certificateConfiguration) { certificateServer in
                // 16 connections per credential at most, 56 in all: the flood alone may
                // take 16; the 49 others need 49; so the flooder must give some back.
                let bothCAs = try #require(server.certificateAuthorityPEM) + "\n" + (try #require(certificateServer.certificateAuthorityPEM))
                let transport = try Self.transport(server) { configuration in
                    configuration.connectionCount = 16
                    configuration.maxConnections = 56
                    // The flooder must reach the budget while the flood lasts: its 16
                    // connections open at once here, not a stagger apart.
                    configuration.connectionStagger = .zero
                    configuration.tls.trustRoots = .certificates(bothCAs)
                }
                let clients = try tenants.map { tenant in
                    APNsClient(
                        credentials: .providerToken(try ProviderTokenCache(key: tenant.key, keyID: tenant.keyID, teamID: tenant.teamID)),
                        transport: transport
                    )
                }
                let devices = try (0..<floodCount).map(Self.device)
                // Tenant 0 floods: 20,000 notifications, 2,000 at a time.
                let flood = Task { await clients[0].send(Self.alert, to: devices, maxConcurrency: 2_000) }
                #expect(await waitUntil { server.statistics.requests >= 2_000 })

                // Meanwhile every other tenant sends one alert, all at once.
                // Each task returns its tenant and its latency, or what went wrong.
                let results = await withTaskGroup(of: (String, Result<Duration, TenantFailure>).self) { group in
                    for (index, client) in clients.enumerated().dropFirst() {
                        let name = tenants[index].teamID
                        group.addTask {
                            let start = ContinuousClock.now
                            do {
                                _ = try await client.send(Self.alert, to: try Self.device(index))
                                return (name, .success(ContinuousClock.now - start))
                            } catch {
                                return (name, .failure(TenantFailure(description: "\(error)")))
                            }
                        }
                    }
                    for (index, identity) in identities.enumerated() {
                        let name = "certificate \(index)"
                        let handle = identity.clientCertificate
                        group.addTask {
                            let start = ContinuousClock.now
                            do {
                                let request = try mockPush(90_000 + index, port: certificateServer.port).presenting(handle)
                                let response = try await transport.send(request)
                                guard response.status == 200 else {
                                    return (name, .failure(TenantFailure(description: "status \(response.status)")))
                                }
                                return (name, .success(ContinuousClock.now - start))
                            } catch {
                                return (name, .failure(TenantFailure(description: "\(error)")))
                            }
                        }
                    }
                    var results: [(String, Result<Duration, TenantFailure>)] = []
                    for await result in group { results.append(result) }
                    return results
                }
                let floodWasRunning = server.statistics.requests < floodCount + 47
                let outcomes = await flood.value
                let budget = transport.connectionBudget
                let perCredential = transport.credentialStatistics
                let retired = transport.statistics.connectionsRetired
                await transport.shutdown()

                let failures = results.compactMap { name, result in
                    if case .failure(let failure) = result { "\(name): \(failure)" } else { nil }
                }
                #expect(failures.isEmpty, "\(failures)")
                var measured: [String: Duration] = [:]
                for (name, result) in results { if case .success(let latency) = result { measured[name] = latency } }
                #expect(measured.count == 49)
                // The bound, loosely: each single alert is answered within 10 s while another
                // tenant's 20,000 notifications are queued (on an idle 2-core machine they
                // take a few hundred milliseconds; the bound leaves room for a loaded one).
                let slowest = measured.values.max() ?? .zero
                #expect(slowest < .seconds(10), "slowest single alert: \(slowest)")
                print("multi-tenant: connections at peak \(budget.peak) of \(budget.limit), server peak \(server.statistics.peakOpenConnections), retired \(retired); slowest single alert \(slowest), median \(measured.values.sorted()[measured.count / 2]), flood still running when the alerts were answered: \(floodWasRunning)")

                #expect(outcomes.count == floodCount)
                #expect(outcomes.allSatisfy { (try? $0.result.get()) != nil })
                // The server's record: no connection ever carried two keys.
                Self.expectOneKeyPerConnection(server, keys: 48)
                // The budget never let more than 56 be open or opening at once; the server
                // may count a closing connection for a moment after the client let go of it.
                #expect(budget.limit == 56)
                #expect(budget.peak <= 56)
                #expect(server.statistics.peakOpenConnections + certificateServer.statistics.peakOpenConnections <= 56 + retired)
                // The flooder gave back connections for the tenants beyond the budget.
                #expect(retired >= 1)
                // Per credential: the flooder's pool counted its 20,000, each tenant its one.
                let flooder = perCredential.first { $0.credential == tenants[0].credential }
                #expect(flooder?.statistics.responsesByStatus[200] == floodCount)
                for tenant in tenants.dropFirst() {
                    let entry = perCredential.first { $0.credential == tenant.credential }
                    #expect(entry?.statistics.responsesByStatus[200] == 1, "\(tenant.teamID)")
                    #expect(entry?.openConnections == 1, "\(tenant.teamID)")
                }
                let certificates = perCredential.filter {
                    if case .certificate = $0.credential.kind { return true } else { return false }
                }
                #expect(certificates.count == 2)
                #expect(certificateServer.recordedRequests.count == 2)
            }
        }
    }

    @Test("a tenant removed mid-flight: its requests all end, another tenant's connection is untouched; a rotated key gets a new pool and the old one idles out")
    func removeAndRotate() async throws {
        let tenants = try Self.tenants(3)  // A, B, and B's rotated key (same team)
        let rotated = Tenant(teamID: tenants[1].teamID, keyID: tenants[2].keyID, key: tenants[2].key)
        try await withMockAPNsServer(configuration: Self.tokenServer([tenants[0], tenants[1], rotated])) { server in
            let transport = try Self.transport(server) { configuration in
                configuration.connectionCount = 2
                // Long enough that B's pool outlives A's batch on a loaded machine, short
                // enough that the old key's pool closes within the wait below. A sanitized
                // suite on 2 cores stretches A's batch past 3 s.
                configuration.credentialIdleTimeout = Sanitizer.name == nil ? .seconds(3) : .seconds(8)
                configuration.shutdownGracePeriod = .seconds(5)
            }
            func client(_ tenant: Tenant) throws -> APNsClient {
                APNsClient(
                    credentials: .providerToken(try ProviderTokenCache(key: tenant.key, keyID: tenant.keyID, teamID: tenant.teamID)),
                    transport: transport,
                    retryPolicy: .never
                )
            }
            let a = try client(tenants[0])
            let b = try client(tenants[1])
            _ = try await b.send(Self.alert, to: try Self.device(1))
            let bConnections = transport.statistics(for: tenants[1].credential)?.statistics.connectionsOpened

            // A's batch is under way when A is removed.
            server.setResponseDelay(.milliseconds(2))
            // A fifth under ThreadSanitizer: 3,000 at 2 ms each behind a starved server
            // outlast the 30 s request timeout there.
            let count = Sanitizer.scaled(3_000)
            let devices = try (0..<count).map(Self.device)
            let batch = Task { await a.send(Self.alert, to: devices, maxConcurrency: 500) }
            #expect(await waitUntil { server.statistics.requests >= count / 5 })
            await transport.closeConnections(for: tenants[0].credential)
            let outcomes = await batch.value
            server.setResponseDelay(.zero)
            // Every notification has exactly one outcome, and each is accepted: the ones in
            // flight finished within the grace period, the queued ones (never sent) went to
            // new connections of the credential, as the batch's later ones did.
            #expect(outcomes.count == count)
            let failures = outcomes.compactMap { outcome -> String? in
                if case .failure(let error) = outcome.result { return "\(error)" }
                return nil
            }
            #expect(failures.isEmpty, "\(failures.count) failed, first: \(failures.first ?? "")")
            #expect(Set(server.recordedRequests.filter { $0.status == 200 }.compactMap(\.deviceToken)).count >= count)
            // B kept its connection and still sends on it.
            _ = try await b.send(Self.alert, to: try Self.device(2))
            #expect(transport.statistics(for: tenants[1].credential)?.statistics.connectionsOpened == bConnections)

            // B's key is rotated: a new client with the new key gets its own connection…
            let bRotated = try client(rotated)
            _ = try await bRotated.send(Self.alert, to: try Self.device(3))
            #expect(transport.statistics(for: rotated.credential)?.openConnections == 1)
            // …and the old key's pool closes once idle (bounded wait).
            #expect(await waitUntil(iterations: Sanitizer.name == nil ? 3_000 : 8_000) { transport.statistics(for: tenants[1].credential) == nil })
            // A, removed, may come back: a new pool.
            _ = try await a.send(Self.alert, to: try Self.device(4))
            await transport.shutdown()

            Self.expectOneKeyPerConnection(server, keys: 3)
        }
    }

    /// Found from outside: requests still in flight when a tenant's connections were
    /// closed (or one was given back to the budget) and their drain period ran out failed
    /// with `shutdown`, "the transport shut down", while the transport went on.
    @Test("closeConnections(for:) past its grace period: what was in flight fails as connectionClosed, not shutdown; the other tenant goes on")
    func closedConnectionsAreNotAShutdown() async throws {
        let tenants = try Self.tenants(2)
        try await withMockAPNsServer(configuration: Self.tokenServer(tenants)) { server in
            let transport = try Self.transport(server) { $0.shutdownGracePeriod = .milliseconds(200) }
            let clients = try tenants.map { tenant in
                APNsClient(
                    credentials: .providerToken(try ProviderTokenCache(key: tenant.key, keyID: tenant.keyID, teamID: tenant.teamID)),
                    transport: transport, retryPolicy: .never, requestTimeout: .seconds(60))
            }
            _ = try await clients[1].send(Self.alert, to: try Self.device(1))
            server.setResponseDelay(.seconds(600))  // released below
            let device = try Self.device(2)
            let held = Task { () -> APNsError? in
                do throws(APNsError) {
                    _ = try await clients[0].send(Self.alert, to: device)
                    return nil
                } catch {
                    return error
                }
            }
            #expect(await waitUntil { server.statistics.requests >= 2 })
            await transport.closeConnections(for: tenants[0].credential)
            let error = await held.value
            server.setResponseDelay(.zero)
            _ = try await clients[1].send(Self.alert, to: try Self.device(3))
            await transport.shutdown()
            let failure = try #require(error?.transportError, "\(String(describing: error))")
            #expect(failure.code == .connectionClosed, "\(String(reflecting: failure))")
            #expect(failure.mayHaveReachedAPNs)
            #expect((failure.detail ?? "").contains("closeConnections(for:)"), "\(String(reflecting: failure))")
        }
    }

    @Test("a connection answered with UnrelatedKeyIdInToken is never used again: the next request opens a fresh one")
    func unrelatedKeyRetiresTheConnection() async throws {
        let tenants = try Self.tenants(1)
        try await withMockAPNsServer(configuration: Self.tokenServer(tenants)) { server in
            let transport = try Self.transport(server) { $0.connectionCount = 1 }
            let client = APNsClient(
                credentials: .providerToken(try ProviderTokenCache(key: tenants[0].key, keyID: tenants[0].keyID, teamID: tenants[0].teamID)),
                transport: transport,
                retryPolicy: .never
            )
            _ = try await client.send(Self.alert, to: try Self.device(1))
            // APNs' answer when the connection is pinned to another key.
            server.respond(toDeviceToken: try Self.device(2).hexString, with: ScriptedResponse(status: 403, reason: "UnrelatedKeyIdInToken"))
            let misbound = try Self.device(2)
            do throws(APNsError) {
                _ = try await client.send(Self.alert, to: misbound)
                Issue.record("accepted")
            } catch {
                #expect(error.rejection?.reason == .unrelatedKeyIDInToken)
                #expect(error.rejection?.remedy == .fixCredentials)
            }
            _ = try await client.send(Self.alert, to: try Self.device(3))
            await transport.shutdown()
            let records = server.recordedRequests
            #expect(records.count == 3)
            // The third request went on a new connection.
            #expect(records.count == 3 && records[2].connectionNumber != records[1].connectionNumber)
            #expect(records.count == 3 && records[0].connectionNumber == records[1].connectionNumber)
            #expect(transport.statistics.connectionsOpened == 2)
        }
    }

    @Test("the 2025 key rules from the server surface with their remedies: a sandbox-only key in production, a topic-specific key off its topics")
    func keyRules() async throws {
        let tenants = try Self.tenants(3)
        var configuration = Self.tokenServer(tenants)
        configuration.bundleIDs = []
        configuration.environment = .production
        configuration.keyScopes = [
            tenants[0].keyID: .sandboxOnly,
            tenants[1].keyID: MockAPNsServer.KeyScope(topics: ["com.example.other"]),
        ]
        try await withMockAPNsServer(configuration: configuration) { server in
            let transport = try Self.transport(server) { _ in }
            func send(_ tenant: Tenant) async throws -> APNsRejection? {
                let client = APNsClient(
                    credentials: .providerToken(try ProviderTokenCache(key: tenant.key, keyID: tenant.keyID, teamID: tenant.teamID)),
                    transport: transport,
                    retryPolicy: .never
                )
                let device = try Self.device(7)
                do throws(APNsError) {
                    _ = try await client.send(Self.alert, to: device)
                    return nil
                } catch {
                    return error.rejection
                }
            }
            let environment = try await send(tenants[0])
            #expect(environment?.reason == .badEnvironmentKeyIDInToken)
            #expect(environment?.remedy == .fixCredentials)
            let topic = try await send(tenants[1])
            #expect(topic?.reason == .topicDisallowed)
            #expect(topic?.remedy == .fixRequest)
            #expect(try await send(tenants[2]) == nil)
            await transport.shutdown()
            Self.expectOneKeyPerConnection(server, keys: 3)
        }
    }

    @Test("a budget of one connection: a second tenant waits while the first is busy (its timeout holds, never sent), and gets the connection once the first tenant's closes")
    func budgetOfOne() async throws {
        let tenants = try Self.tenants(2)
        // One stream per connection, so that a tenant with two sends has one queued: busy.
        try await withMockAPNsServer(configuration: Self.tokenServer(tenants, maxConcurrentStreams: 1)) { server in
            let transport = try Self.transport(server) { $0.maxConnections = 1 }
            func client(_ tenant: Tenant, timeout: Duration) throws -> APNsClient {
                APNsClient(
                    credentials: .providerToken(try ProviderTokenCache(key: tenant.key, keyID: tenant.keyID, teamID: tenant.teamID)),
                    transport: transport,
                    retryPolicy: .never,
                    requestTimeout: timeout
                )
            }
            let a = try client(tenants[0], timeout: .seconds(20))
            let b = try client(tenants[1], timeout: .milliseconds(300))
            _ = try await a.send(Self.alert, to: try Self.device(1))
            // A holds the only connection, its guaranteed one, with an answer outstanding
            // (the server holds each a second) and another request queued behind it: A is
            // busy, so B waits, and times out in the queue (never sent).
            server.setResponseDelay(.seconds(1))
            let slow = Task { await a.send(Self.alert, to: [try Self.device(4), try Self.device(5)], maxConcurrency: 2) }
            #expect(await waitUntil { (transport.statistics(for: tenants[0].credential)?.queuedRequests ?? 0) >= 1 })
            let device = try Self.device(2)
            do throws(APNsError) {
                _ = try await b.send(Self.alert, to: device)
                Issue.record("B was sent while A held the only connection")
            } catch {
                #expect(error.transportError?.code == .timeout, "\(error)")
                #expect(error.transportError?.mayHaveReachedAPNs == false)
                // The detail says why the queue did not move.
                #expect(error.transportError?.detail?.contains("connection budget (maxConnections 1)") == true, "\(error)")
            }
            // At most A's one (given back and drained by now on a slow machine, since A
            // queued nothing more): B never had a second.
            #expect(transport.connectionBudget.held <= 1)
            #expect(try await slow.value.allSatisfy { (try? $0.result.get()) != nil })
            server.setResponseDelay(.zero)
            // A leaves: its connection's place is offered to B.
            await transport.closeConnections(for: tenants[0].credential)
            let bAgain = try client(tenants[1], timeout: .seconds(20))
            _ = try await bAgain.send(Self.alert, to: try Self.device(3))
            #expect(transport.connectionBudget.peak == 1)
            await transport.shutdown()
            #expect(server.statistics.peakOpenConnections <= 2)
            Self.expectOneKeyPerConnection(server, keys: 2)
        }
    }

    @Test("more tenants than connections (4 on a budget of 2, idle pools never closed): each tenant's send gets a connection in turn, from an idle tenant, long before any idle timeout")
    func moreTenantsThanConnections() async throws {
        let tenants = try Self.tenants(4)
        try await withMockAPNsServer(configuration: Self.tokenServer(tenants)) { server in
            let transport = try Self.transport(server) { $0.maxConnections = 2 }
            let clients = try tenants.map { tenant in
                APNsClient(
                    credentials: .providerToken(try ProviderTokenCache(key: tenant.key, keyID: tenant.keyID, teamID: tenant.teamID)),
                    transport: transport,
                    retryPolicy: .never,
                    requestTimeout: .seconds(60)
                )
            }
            let clock = ContinuousClock()
            // One after the other: the third and fourth find the budget spent by two idle
            // tenants (before, they waited for the 15-minute idle timeout, or forever).
            for (index, client) in clients.enumerated() {
                let start = clock.now
                _ = try await client.send(Self.alert, to: try Self.device(index))
                // Alone: 0.3 s at most (a quarter of a second of idleness, then a handshake);
                // the bound is for a loaded machine, where the full suite stretches timers.
                #expect(clock.now - start < .seconds(45), "tenant \(index) waited \(clock.now - start)")
            }
            // All at once, twice: every tenant is served, in turns.
            for round in 0..<2 {
                let accepted = await withTaskGroup(of: Bool.self) { group in
                    for (index, client) in clients.enumerated() {
                        group.addTask {
                            guard let device = try? Self.device(100 * (round + 1) + index) else { return false }
                            do throws(APNsError) {
                                _ = try await client.send(Self.alert, to: device)
                                return true
                            } catch {
                                return false
                            }
                        }
                    }
                    return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
                }
                #expect(accepted == 4, "round \(round)")
            }
            #expect(transport.connectionBudget.peak <= 2)
            #expect(server.statistics.accepted == 12)
            await transport.shutdown()
            Self.expectOneKeyPerConnection(server, keys: 4)
        }
    }

    /// Three token tenants whose keys the server verifies, a server configuration that also
    /// takes client certificates issued by the test PKI's `trustedCA`, and the test PKI's
    /// client identity (issued by "ca").
    static func tokenAndCertificateServer(trustedCA: String) throws -> ([Tenant], MockAPNsServer.Configuration, ClientIdentity) {
        let tenants = try Self.tenants(3)
        let pki = try TestPKI.get()
        var keys = ProviderTokenVerifier()
        for tenant in tenants { keys.register(tenant.key, keyID: tenant.keyID, teamID: tenant.teamID) }
        let configuration = MockAPNsServer.Configuration(
            bundleIDs: ["com.example.app"],
            authentication: .providerTokenOrCertificate(.signature(keys), trustedCAPEM: try pki.text(trustedCA)))
        let identity = try ClientIdentity(certificatePEM: pki.text("client.pem"), privateKeyPEM: pki.text("client.key"))
        return (tenants, configuration, identity)
    }

    @Test("one mock server taking tokens and certificates, as APNs' hosts do: token and certificate tenants on one transport and one host, each connection one credential")
    func tokenAndCertificateTenantsOnOneHost() async throws {
        let (tenants, configuration, identity) = try Self.tokenAndCertificateServer(trustedCA: "ca.pem")
        try await withMockAPNsServer(configuration: configuration) { server in
            let transport = try Self.transport(server) { _ in }
            let tokenClients = try tenants.map { tenant in
                APNsClient(
                    credentials: .providerToken(try ProviderTokenCache(key: tenant.key, keyID: tenant.keyID, teamID: tenant.teamID)),
                    transport: transport, retryPolicy: .never)
            }
            let certificateClient = APNsClient(credentials: .clientCertificate(identity.clientCertificate), transport: transport, retryPolicy: .never)
            for round in 0..<2 {
                for (index, client) in tokenClients.enumerated() {
                    _ = try await client.send(Self.alert, to: try Self.device(10 * round + index))
                }
                _ = try await certificateClient.send(Self.alert, to: try Self.device(100 + round))
            }
            // A connection without a certificate and without a token is refused as APNs
            // refuses it: the token rules apply to it.
            let bare = try mockTransport(server) { _ in }
            let refused = try await bare.send(try mockPush(7, port: server.port))
            #expect(refused.status == 403)
            await bare.shutdown()
            await transport.shutdown()

            #expect(server.statistics.accepted == 8)
            // Four connections of the shared transport (three keys, one certificate) and
            // the bare one; each token connection carried one key, the certificate
            // connection none.
            Self.expectOneKeyPerConnection(server, keys: 3)
            let tokenless = Set(server.recordedRequests.filter { $0.providerToken == nil && $0.status == 200 }.map(\.connectionNumber))
            #expect(tokenless.count == 1, "\(tokenless)")
            #expect(server.recordedRequests.filter { tokenless.contains($0.connectionNumber) }.count == 2)
        }
    }

    @Test("a tenant whose client certificate the server refuses does not make busy tenants give their connections back at each of its attempts")
    func refusedCertificateDoesNotChurnOthers() async throws {
        // The server trusts only "otherca": the rogue tenant's certificate (issued by "ca")
        // is refused in every handshake.
        let (tenants, configuration, rogueIdentity) = try Self.tokenAndCertificateServer(trustedCA: "otherca.pem")
        try await withMockAPNsServer(configuration: configuration) { server in
            // Three tenants hold the whole budget, one connection each.
            let transport = try Self.transport(server) { configuration in
                configuration.maxConnections = 3
                configuration.connectionCount = 1
            }
            let clients = try tenants.map { tenant in
                APNsClient(
                    credentials: .providerToken(try ProviderTokenCache(key: tenant.key, keyID: tenant.keyID, teamID: tenant.teamID)),
                    transport: transport, retryPolicy: .never, requestTimeout: .seconds(20))
            }
            for (index, client) in clients.enumerated() { _ = try await client.send(Self.alert, to: try Self.device(index)) }
            let rogue = APNsClient(
                credentials: .clientCertificate(rogueIdentity.clientCertificate),
                transport: transport, retryPolicy: .never, requestTimeout: .seconds(3))
            // For six seconds the three stay busy (one alert after another) while the rogue
            // tenant sends every 50 ms: its attempts fail, backing off from half a second.
            let end = ContinuousClock.now + .seconds(6)
            let failed = await withTaskGroup(of: Int.self) { group in
                for (index, client) in clients.enumerated() {
                    group.addTask {
                        var failed = 0
                        var next = 100
                        while ContinuousClock.now < end {
                            next += 1
                            guard let device = try? Self.device(1_000 * (index + 1) + next) else { return failed + 1 }
                            do throws(APNsError) { _ = try await client.send(Self.alert, to: device) } catch { failed += 1 }
                        }
                        return failed
                    }
                }
                group.addTask {
                    while ContinuousClock.now < end {
                        if let device = try? Self.device(99), (try? await rogue.send(Self.alert, to: device)) != nil { return 1 }
                        try? await Task.sleep(for: .milliseconds(50))
                    }
                    return 0
                }
                return await group.reduce(0, +)
            }
            let opened = tenants.map { transport.statistics(for: $0.credential)?.statistics.connectionsOpened ?? 0 }
            let rogueFailures = transport.statistics(for: .certificate(rogueIdentity.clientCertificate))?.statistics.connectionFailures ?? 0
            await transport.shutdown()
            #expect(failed == 0)
            // The rogue tenant tried, and was refused.
            #expect(rogueFailures >= 1)
            // Its first attempt may take a busy tenant's place (it was owed one, and its
            // certificate was not known to be refused yet); later ones wait for a free or
            // idle place instead of costing a busy tenant a reconnect each time (before: 10
            // to 16 connections in these six seconds; one more allowed for a loaded machine).
            #expect(opened.reduce(0, +) <= 5, "connections opened by the three busy tenants: \(opened)")
        }
    }

    @Test("every pool idle (a single tenant after a key rotation): the idle sweep closes the old key's pool and keeps the one used last")
    func idleSweepKeepsTheLastPool() async throws {
        let tenants = try Self.tenants(2)
        // One team: its first key, then the key it rotated to.
        let rotated = Tenant(teamID: tenants[0].teamID, keyID: tenants[1].keyID, key: tenants[1].key)
        try await withMockAPNsServer(configuration: Self.tokenServer([tenants[0], rotated])) { server in
            let transport = try Self.transport(server) { _ in }
            for (index, tenant) in [tenants[0], rotated].enumerated() {
                let client = APNsClient(
                    credentials: .providerToken(try ProviderTokenCache(key: tenant.key, keyID: tenant.keyID, teamID: tenant.teamID)),
                    transport: transport, retryPolicy: .never)
                _ = try await client.send(Self.alert, to: try Self.device(index))
            }
            #expect(transport.credentialStatistics.count == 2)
            // An hour later, both idle.
            await transport.closeIdlePools(idleFor: .seconds(900), now: MonotonicTime.now() &+ 3_600_000_000_000)
            let left = transport.credentialStatistics.map(\.credential)
            await transport.shutdown()
            #expect(left == [rotated.credential], "\(left)")
        }
    }

    @Test("a request's client certificate that is not a ClientIdentity fails as tlsFailure, never sent")
    func foreignCertificateHandle() async throws {
        try await withMockAPNsServer { server in
            let transport = try Self.transport(server) { _ in }
            let handle = APNsClientCertificate(id: "foreign", value: "not an identity", description: "foreign")
            let request = try mockPush(1, port: server.port).presenting(handle)
            do throws(APNsTransportError) {
                _ = try await transport.send(request)
                Issue.record("sent")
            } catch {
                #expect(error.code == .tlsFailure)
                #expect(!error.mayHaveReachedAPNs)
                #expect(error.detail?.contains("ClientIdentity.clientCertificate") == true)
            }
            await transport.shutdown()
            #expect(server.recordedRequests.isEmpty)
        }
    }
}

