import Foundation
import Synchronization
import Testing
@testable import APNsTransport

/// A request's deadline holds while it waits in the queue and the pool's only connection
/// is blocked opening (a TCP connect or TLS handshake that hangs): nobody else is awake
/// to notice, so ``QueueDeadlineWatch`` does.
@Suite("Queued requests time out while the only connection is still connecting")
struct QueueDeadlineTests {
    @Test("a 1 s request fails with timeout (not sent) after about 1 s while the connect hangs for 4 s")
    func queuedRequestExpiresDuringAHangingConnect() async throws {
        let released = DispatchSemaphore(value: 0)
        let transport = makeTransport(connector: { _, _ throws(APNsTransportError) -> any HTTP2ByteStream in
            // A connect that hangs (bounded: the test releases it, or 4 s pass).
            _ = released.wait(timeout: .now() + 4)
            throw .connectionFailed("the test's connect gave up")
        }) { $0.connectTimeout = .seconds(4) }
        let request = try devicePush(token: 1, timeout: .seconds(1))
        // The outcome's time is taken where the transport produces it (the batch's
        // onResult runs on the thread that finishes the request), so a busy cooperative
        // thread pool in a parallel test run cannot delay the measurement.
        let outcome = Mutex<(Result<APNsResponse, APNsTransportError>, Duration)?>(nil)
        let clock = ContinuousClock()
        let start = clock.now
        await transport.sendBatch(count: 1, maxConcurrency: 1, makeRequest: { _ in request }) { _, _, result in
            outcome.withLock { $0 = (result, start.duration(to: clock.now)) }
        }
        released.signal()
        await transport.shutdown()
        guard let (result, elapsed) = outcome.withLock({ $0 }) else {
            Issue.record("no outcome")
            return
        }

        guard case .failure(let error) = result else {
            Issue.record("the request succeeded: \(result)")
            return
        }
        #expect(error.code == .timeout, "\(error.debugDescription)")
        #expect(error.mayHaveReachedAPNs == false)
        #expect(elapsed >= .milliseconds(990), "\(elapsed)")
        // Waiting for the connect takes 4 s; the bound leaves room for a loaded machine
        // (another CPU-bound job beside the suite stretched the 1 s to 2.06 s once).
        #expect(elapsed < .milliseconds(3_500), "\(elapsed): the deadline waited for the connect")
    }
}
