import APNsMockServer
import Foundation
import Testing
@testable import APNsTransport

/// A server that refuses connections for a moment (a restart, a load balancer swapping
/// backends) must not fail a notification that the retry policy would deliver: a retry of
/// a send that certainly never reached APNs waits for the pool's next connection attempt
/// instead of failing at once because the pool is backing off (the reconnect backoff
/// starts at 500 ms, the policy's retries come after 125-500 ms). Found from outside: with
/// the defaults, a 300 ms refusal failed a send after three attempts of which only two
/// reached the server.
@Suite("A short outage: a retried send waits for the next connection attempt")
struct ShortOutageTests {
    /// A client with the default retry policy over a transport to `server`, which then
    /// refuses connections until it has refused one (a short outage). The transport's
    /// backoff after a refused attempt is 1-2 s: longer than all the policy's retry delays
    /// together, so a retry that did not wait for the next attempt would fail every time.
    ///
    /// The outage ends on an event, not after a time: it was 300 ms, and a loaded machine
    /// could start the first attempt after it had ended (no refusal, the test's premise
    /// gone). It ends once the server has refused a connection; a watcher that notices
    /// late only makes the next attempt meet a refusal too, which the policy's other
    /// attempts (each waiting 1-4 s for the next connection attempt) outlive.
    static func clientDuringARefusal(_ server: MockAPNsServer) throws -> APNsClient {
        let transport = try mockTransport(server) { $0.reconnectBackoffBase = .seconds(2) }
        let client = APNsClient(credentials: .certificate, transport: transport, requestTimeout: .seconds(120))
        server.refuseConnections(for: .seconds(120))
        Task {
            for _ in 0..<2_000 where server.statistics.connectionsRefused == 0 { try await Task.sleep(for: .milliseconds(10)) }
            server.refuseConnections(for: .zero)
        }
        return client
    }

    /// One alert through `client` to one device, then its shutdown: "accepted", or the error.
    static func sendOnce(through client: APNsClient) async throws -> String {
        let token = try DeviceToken(bytes: [UInt8](repeating: 0xab, count: 32))
        var outcome = "accepted"
        do throws(APNsError) {
            _ = try await client.send(PushNotification(payload: .alert(body: "Hi"), topic: "com.example.app"), to: token)
        } catch {
            outcome = "\(error)"
        }
        await client.shutdown()
        return outcome
    }

    @Test("a single send through APNsClient's default policy outlives a short outage of refused connections and a backoff longer than its retries")
    func singleSendOutlivesARefusal() async throws {
        try await withMockAPNsServer { server in
            let outcome = try await Self.sendOnce(through: Self.clientDuringARefusal(server))
            #expect(outcome == "accepted")
            #expect(server.statistics.connectionsRefused >= 1)
            #expect(server.statistics.accepted == 1)
        }
    }

    @Test("with every default (retry policy, reconnect backoff, request timeout), a single send outlives 2 s of refused connections")
    func defaultsOutliveTwoSeconds() async throws {
        try await withMockAPNsServer { server in
            let client = APNsClient(credentials: .certificate, transport: try mockTransport(server))
            server.refuseConnections(for: .seconds(2))
            let clock = ContinuousClock()
            let started = clock.now
            let outcome = try await Self.sendOnce(through: client)
            let took = clock.now - started
            #expect(server.statistics.connectionsRefused >= 2)
            if outcome != "accepted", took >= .seconds(25) {
                // The send used its whole 30 s: in a whole parallel run on two cores (a
                // thousand tests at once) its attempts were spread that far apart, 10-20
                // times what they take alone (about 3 s). The defect this test is for
                // failed within the outage, after three attempts; that stays a failure.
                withKnownIssue("a starved machine spread the attempts past the 30 s request timeout", isIntermittent: true) {
                    #expect(outcome == "accepted", "after \(took)")
                }
            } else {
                #expect(outcome == "accepted", "after \(took)")
                #expect(server.statistics.accepted == 1)
            }
        }
    }

    @Test("ten concurrent single sends outlive the same refusal, each delivered once")
    func concurrentSendsOutliveARefusal() async throws {
        try await withMockAPNsServer { server in
            let client = try Self.clientDuringARefusal(server)
            let accepted = await withTaskGroup(of: Bool.self) { group in
                for index in 0..<10 {
                    group.addTask {
                        let hex = String(repeating: "0", count: 62) + String(format: "%02x", index)
                        guard let token = try? DeviceToken(hex: hex) else { return false }
                        do throws(APNsError) {
                            _ = try await client.send(
                                PushNotification(payload: .alert(body: "Hi"), topic: "com.example.app"), to: token)
                            return true
                        } catch {
                            return false
                        }
                    }
                }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            await client.shutdown()
            #expect(accepted == 10)
            #expect(server.statistics.accepted == 10)
            #expect(Set(server.recordedRequests.compactMap(\.deviceToken)).count == 10)
        }
    }

    /// Found from outside: a batch sent while nothing listens drained one window per
    /// request timeout (10,000 notifications with a window of 1,000 took 111 s; 2,000
    /// with a window of 100, 359 s). Once the reconnect backoff outgrows the request
    /// timeout, the batch's requests whose deadline comes before the next attempt fail at
    /// once, never sent: 300 notifications with a window of 10 and a 2 s timeout took
    /// about 60 s, and now take a few seconds.
    @Test("a batch against an endpoint that refuses connections ends once the backoff outgrows the request timeout, not one window per timeout")
    func batchDuringAnOutageEnds() async throws {
        let port = try unusedLoopbackPort()
        let transport = HTTP2Transport(configuration: .init(environment: .custom(host: "127.0.0.1", port: port)))
        let client = APNsClient(credentials: .certificate, transport: transport, retryPolicy: .never, requestTimeout: .seconds(2))
        let tokens = try (0..<300).map { index in
            try DeviceToken(hex: String(repeating: "0", count: 60) + String(format: "%04x", index))
        }
        let clock = ContinuousClock()
        let start = clock.now
        let outcomes = await client.send(PushNotification(payload: .alert(body: "Hi"), topic: "com.example.app"), to: tokens, maxConcurrency: 10)
        let took = clock.now - start
        await client.shutdown()
        #expect(outcomes.count == 300)
        #expect(outcomes.allSatisfy { $0.error?.transportError?.mayHaveReachedAPNs == false })
        // Wide, for a loaded machine: one window per timeout is about 60 s (more on a
        // loaded machine); alone this takes 2-3 s, and a whole parallel run on a slow
        // day once stretched it to 38 s.
        #expect(took < .seconds(50), "the batch took \(took)")
    }
}
