import Foundation
import Synchronization
import Testing
@testable import APNsTransport

/// A request's deadline holds while it waits in the queue and the pool's only connection
/// is blocked opening (a TCP connect or TLS handshake that hangs): nobody else is awake
/// to notice, so ``QueueDeadlineWatch`` does.
@Suite("Queued requests time out while the only connection is still connecting")
struct QueueDeadlineTests {
    @Test("a 1 s request fails with timeout (not sent) while the connect still hangs")
    func queuedRequestExpiresDuringAHangingConnect() async throws {
        let released = DispatchSemaphore(value: 0)
        let connectReturned = Mutex(false)
        let transport = makeTransport(connector: { _, _ throws(APNsTransportError) -> any HTTP2ByteStream in
            // A connect that hangs until the test has the request's outcome (bounded: 30 s).
            _ = released.wait(timeout: .now() + 30)
            connectReturned.withLock { $0 = true }
            throw .connectionFailed("the test's connect gave up")
        }) { $0.connectTimeout = .seconds(60) }
        let request = try devicePush(token: 1, timeout: .seconds(1))
        // The check is an order of events, not a time: the outcome must come while the
        // connect still hangs. Had the deadline waited for the connect, the outcome would
        // come only after the connect's 30 s, when it gives up. (It was a time, under
        // 3.5 s against a 4 s connect, which a loaded machine could stretch past.) The
        // outcome and the connect's state are read where the transport produces the
        // outcome (the batch's onResult runs on the thread that finishes the request).
        let outcome = Mutex<(Result<APNsResponse, APNsTransportError>, Duration, connectReturned: Bool)?>(nil)
        let clock = ContinuousClock()
        let start = clock.now
        let batch = Task {
            await transport.sendBatch(count: 1, maxConcurrency: 1, makeRequest: { _ in request }) { _, _, result in
                let returned = connectReturned.withLock { $0 }
                outcome.withLock { $0 = (result, start.duration(to: clock.now), returned) }
            }
        }
        for _ in 0..<4_000 where outcome.withLock({ $0 == nil }) { try await Task.sleep(for: .milliseconds(10)) }
        released.signal()
        await batch.value
        await transport.shutdown()
        guard let (result, elapsed, returned) = outcome.withLock({ $0 }) else {
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
        #expect(!returned, "\(elapsed): the deadline waited for the connect")
    }
}
