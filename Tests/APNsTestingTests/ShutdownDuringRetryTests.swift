import APNsCore
import APNsTesting
import Foundation
import Synchronization
import Testing

/// `APNsClient.shutdown()` with sends waiting out a retry's backoff: they end at once with
/// what their last attempt ended in, and the call returns only after they have (found
/// from outside: shutdown returned in 1 ms, and the sends ended 1-2 s later with
/// `shutdown`, after a process that exits on its return had gone).
@Suite("APNsClient.shutdown() while sends wait to retry")
struct ShutdownDuringRetryTests {
    @Test("sends waiting a 60-second backoff after 503s end with their 503 before shutdown returns; a shutdown client's later retry waits do not start")
    func shutdownEndsRetryWaits() async throws {
        let mock = MockTransport()
        mock.respondByDefault(with: .rejected(.serviceUnavailable))
        let client = APNsClient.testing(
            transport: mock, retryPolicy: RetryPolicy(maxAttempts: 5, baseDelay: .seconds(60), maxDelay: .seconds(60)))
        let sends = (1...3).map { index in
            Task { () -> APNsError? in
                do throws(APNsError) {
                    _ = try await client.send(PushNotification(payload: .alert(body: "Hi"), topic: "com.example.app"), to: mockToken(index))
                    return nil
                } catch {
                    return error
                }
            }
        }
        // Each send's first attempt was answered 503; each now waits about a minute.
        // 60 s: a whole parallel run on a loaded machine kept the three tasks from their
        // first request for over 10 s.
        #expect(await mock.waitForRequests(3, timeout: .seconds(60)))
        try await Task.sleep(for: .milliseconds(50))
        let clock = ContinuousClock()
        let started = clock.now
        await client.shutdown()
        #expect(clock.now - started < .seconds(30), "shutdown took \(clock.now - started)")
        for send in sends {
            let error = await send.value
            // The last answer, not `shutdown`: a 503 delivered nothing.
            #expect(error?.rejection?.reason == .serviceUnavailable, "\(String(describing: error))")
            #expect(error?.rejection?.detail?.contains("the client shut down while it waited to retry") == true, "\(String(describing: error))")
        }
        // No second attempt was made.
        #expect(mock.requests.count == 3)
    }

    @Test("the transport shut down on its own (a ServiceGroup stopping it): sends waiting a 10-minute backoff end at once with their 503")
    func transportShutdownEndsRetryWaits() async throws {
        let mock = MockTransport()
        mock.respondByDefault(with: .rejected(.serviceUnavailable))
        // A backoff of 5-10 minutes, far beyond the bound below (a whole parallel run on a
        // loaded machine has kept these tasks from their first request for over 30 s), and
        // a timeout beyond the backoff, so the client does wait it out.
        let client = APNsClient.testing(
            transport: mock, retryPolicy: RetryPolicy(maxAttempts: 5, baseDelay: .seconds(600), maxDelay: .seconds(600)),
            requestTimeout: .seconds(3600))
        let sends = (1...3).map { index in
            Task { () -> (APNsError?, Duration) in
                let clock = ContinuousClock()
                let started = clock.now
                do throws(APNsError) {
                    _ = try await client.send(PushNotification(payload: .alert(body: "Hi"), topic: "com.example.app"), to: mockToken(index))
                    return (nil, clock.now - started)
                } catch {
                    return (error, clock.now - started)
                }
            }
        }
        #expect(await mock.waitForRequests(3, timeout: .seconds(60)))
        try await Task.sleep(for: .milliseconds(50))
        await mock.shutdown()  // the transport only, as a ServiceGroup's graceful shutdown does
        for send in sends {
            let (error, took) = await send.value
            // Not after the 5-10 minute backoff, and with the 503, not `shutdown`.
            #expect(took < .seconds(150), "the send took \(took)")
            #expect(error?.rejection?.reason == .serviceUnavailable, "\(String(describing: error))")
            #expect(error?.rejection?.detail?.contains("the transport shut down while the send waited to retry") == true, "\(String(describing: error))")
        }
        #expect(mock.requests.count == 3)
        await client.shutdown()
    }
}
