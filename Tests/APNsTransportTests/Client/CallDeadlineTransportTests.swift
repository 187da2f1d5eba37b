import Logging
import Testing
@testable import APNsTransport

/// A send through ``APNsClient`` to an endpoint that never finishes TLS: each attempt's
/// connection waits for the connect timeout, and without a deadline shared by the
/// attempts a call took one connect timeout per attempt (found from outside: 3 × 3 s with
/// a 5 s request timeout, and a second call about twice the first). The call now ends
/// about one request timeout after it began, with an error that says what went wrong.
@Suite("APNsClient over HTTP2Transport: a call's attempts end by its request timeout")
struct CallDeadlineTransportTests {
    @Test("a send to an endpoint that never finishes TLS ends by the request timeout, not one connect timeout per attempt", .timeLimit(.minutes(2)))
    func hangingEndpoint() async throws {
        // The kernel completes each TCP handshake into the backlog; nobody accepts, so no
        // ClientHello is ever answered.
        let silent = try LoopbackListener(address: "127.0.0.1", port: 0)
        defer { silent.close() }
        var configuration = silent.silentEndpointConfiguration()
        configuration.connectTimeout = .seconds(2)
        configuration.reconnectBackoffBase = .milliseconds(100)
        let transport = HTTP2Transport(configuration: configuration)
        let client = APNsClient(
            credentials: .certificate,
            transport: transport,
            retryPolicy: RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(100), maxDelay: .milliseconds(100)),
            requestTimeout: .milliseconds(2_500)
        )
        let token = try DeviceToken(hex: String(repeating: "ab", count: 32))
        let clock = ContinuousClock()
        let start = clock.now
        var failure: APNsError?
        do throws(APNsError) {
            _ = try await client.send(PushNotification(payload: .alert(body: "Hi"), topic: "com.example.app"), to: token)
        } catch {
            failure = error
        }
        let took = clock.now - start
        let shutdownStart = clock.now
        await client.shutdown()
        let shutdownTook = clock.now - shutdownStart
        guard let error = failure?.transportError else {
            Issue.record("not a transport failure: \(String(describing: failure))")
            return
        }
        // One attempt's connect timeout (2 s), then what is left of the 2.5 s: at most one
        // retry (the second attempt had 0.4 s, less than a connect timeout, and its timeout
        // is not retried). Each attempt waiting its own connect timeout made two retries
        // and took over 6 s. Counted, not timed: on a loaded machine the whole suite
        // stretches every wait.
        #expect(client.statistics.retries <= 1, "\(client.statistics) in \(took)")
        #expect(took < .seconds(60), "the call took \(took)")
        // Alone, the shutdown takes under a millisecond; a whole parallel run on a busy
        // 2-core machine has delayed it by 21 s (the call itself by as much): the bound
        // only catches a hang.
        #expect(shutdownTook < .seconds(60), "shutdown took \(shutdownTook)")
        // Nothing was ever sent; the error says what attempt 1 ended in.
        #expect(error.mayHaveReachedAPNs == false, "\(error)")
        let text = "\(error)"
        #expect(text.contains("the attempt before it ended in") || text.contains("not sent again"), "\(text)")
    }
}
