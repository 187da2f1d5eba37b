import APNsCore
import Synchronization

/// One request on its way: the request, its deadline, and who receives its outcome —
/// the continuation of a caller suspended in ``HTTP2Transport/send(_:)``, or the
/// ``BatchSend`` it belongs to.
///
/// The outcome is delivered exactly once, by whichever comes first: the connection's I/O thread
/// (response or failure), the timer scan (timeout), the cancellation handler, or the pool
/// (queue full, shutdown). ``finish(_:)`` is the one place that decides it, under the
/// lock, so a second outcome is ignored; if the outcome arrives before the continuation is
/// installed, it is kept and ``install(_:)`` resumes at once. A batch's request hands its
/// outcome to the batch instead (no continuation, no task switch per request).
final class PendingRequest: Sendable {
    typealias Outcome = Result<APNsResponse, APNsTransportError>

    /// Where the request is.
    enum Phase {
        /// In the pool's queue, not yet given to a connection.
        case queued
        /// Submitted on `connection` as `streamID`.
        case inFlight(HTTP2Connection, Int32)
        /// Finished: the outcome is decided.
        case finished
    }

    private struct State {
        var phase: Phase = .queued
        /// The calling task was cancelled while the request was in flight: its connection
        /// decides the outcome (whether the request was whole at the server), and it must
        /// not go again if its stream comes back unprocessed. (Beside `phase`, in the
        /// padding after it: the state, one per request, does not grow.)
        var cancelRequested = false
        var continuation: UnsafeContinuation<Outcome, Never>?
        var early: Outcome?
        /// Times the request was put back in the queue (GOAWAY, REFUSED_STREAM).
        var requeues = 0
    }

    let request: APNsRequest
    /// The monotonic time after which the request fails with a timeout.
    let deadline: UInt64
    private let statistics: StatisticsBox
    /// When the request began, for the duration metric (0 when metrics are off).
    private let startedAt: UInt64
    /// The batch that receives the outcome, if the request is part of one.
    private let batch: BatchSend?
    /// The request's index in ``batch``.
    private let batchIndex: Int
    /// The request's place in ``batch``'s window.
    private let batchSlot: Int
    private let state = Mutex(State())

    /// A request whose outcome resumes the continuation given to ``install(_:)``.
    init(request: APNsRequest, deadline: UInt64, statistics: StatisticsBox) {
        self.request = request
        self.deadline = deadline
        self.statistics = statistics
        self.startedAt = statistics.metrics.isEnabled ? MonotonicTime.now() : 0
        self.batch = nil
        self.batchIndex = 0
        self.batchSlot = 0
    }

    /// A request of `batch`, at `index`, in window place `slot`: its outcome goes to
    /// ``BatchSend/complete(_:slot:request:outcome:)``.
    init(request: APNsRequest, deadline: UInt64, statistics: StatisticsBox, batch: BatchSend, index: Int, slot: Int) {
        self.request = request
        self.deadline = deadline
        self.statistics = statistics
        self.startedAt = statistics.metrics.isEnabled ? MonotonicTime.now() : 0
        self.batch = batch
        self.batchIndex = index
        self.batchSlot = slot
    }

    /// Whether the request belongs to a batch, which bounds how many wait (so the pool's
    /// `maxQueuedRequests` does not apply to it).
    var isBatched: Bool { batch != nil }

    /// Installs the caller's continuation; resumes it at once if the outcome is known.
    ///
    /// - Returns: `true` if the request waits for its outcome (queue it), `false` if its
    ///   outcome was known (the caller's task was cancelled first) and the continuation
    ///   has been resumed.
    func install(_ continuation: UnsafeContinuation<Outcome, Never>) -> Bool {
        let early: Outcome? = state.withLock { state in
            if let early = state.early {
                state.early = nil
                return early
            }
            state.continuation = continuation
            return nil
        }
        guard let early else { return true }
        continuation.resume(returning: early)
        return false
    }

    /// Whether the outcome is decided.
    var isFinished: Bool {
        state.withLock { if case .finished = $0.phase { return true } else { return false } }
    }

    /// Decides the outcome, if not decided yet, and resumes the caller.
    ///
    /// - Returns: `false` if the request had already finished (nothing happens).
    @discardableResult
    func finish(_ outcome: consuming Outcome) -> Bool {
        // The outcome is copied only in the rare case that it arrives before the caller's
        // continuation (then it waits in `early`); otherwise it is moved to the caller.
        let isBatch = batch != nil
        let taken: (finished: Bool, continuation: UnsafeContinuation<Outcome, Never>?) = state.withLock { state in
            if case .finished = state.phase { return (false, nil) }
            state.phase = .finished
            if let continuation = state.continuation {
                state.continuation = nil
                return (true, continuation)
            }
            if !isBatch { state.early = outcome }
            return (true, nil)
        }
        guard taken.finished else { return false }
        statistics.recordCompletion(outcome, startedAt: startedAt)
        if let batch {
            batch.complete(batchIndex, slot: batchSlot, request: request, outcome: outcome)
        } else {
            taken.continuation?.resume(returning: outcome)
        }
        return true
    }

    /// Decides the outcome from the phase and the times the request went again, under the
    /// lock, and resumes the caller.
    ///
    /// - Returns: The phase the request was in, or `nil` if it had already finished.
    private func finish(_ decide: (Phase, _ requeues: Int) -> Outcome) -> Phase? {
        finish { (state: inout State) -> Outcome? in decide(state.phase, state.requeues) }.previous
    }

    /// Decides under the lock whether and how the request ends: `decide` sees the state
    /// (and may mark it) and returns the outcome, or `nil` to leave the request as it is.
    ///
    /// - Returns: The phase the request was in (`nil` if it had already finished), and
    ///   whether this call finished it.
    private func finish(_ decide: (inout State) -> Outcome?) -> (previous: Phase?, finished: Bool) {
        let decided: (Phase, Outcome?, UnsafeContinuation<Outcome, Never>?)? = state.withLock { state in
            if case .finished = state.phase { return nil }
            let previous = state.phase
            guard let outcome = decide(&state) else { return (previous, nil, nil) }
            state.phase = .finished
            if let continuation = state.continuation {
                state.continuation = nil
                return (previous, outcome, continuation)
            }
            if batch == nil { state.early = outcome }
            return (previous, outcome, nil)
        }
        guard let (previous, decidedOutcome, continuation) = decided else { return (nil, false) }
        guard let outcome = decidedOutcome else { return (previous, false) }
        statistics.recordCompletion(outcome, startedAt: startedAt)
        if let batch {
            batch.complete(batchIndex, slot: batchSlot, request: request, outcome: outcome)
        } else {
            continuation?.resume(returning: outcome)
        }
        return (previous, true)
    }

    /// Runs `submit` while holding the lock, unless the request has finished; the stream
    /// id it returns makes the request in flight on `connection`. Holding the lock makes
    /// cancellation see either "queued" (nothing sent) or "in flight" (reset the stream).
    ///
    /// - Returns: The stream id, or `nil` if the request had finished (cancelled, timed out).
    /// A request of a cancelled batch is not submitted (a stream freed by the batch's
    /// cancellation must not carry the next request of the same batch before that
    /// request's own cancellation runs): it fails as cancelled, never sent.
    func markInFlight(
        on connection: HTTP2Connection,
        _ submit: () throws(APNsTransportError) -> Int32
    ) throws(APNsTransportError) -> Int32? {
        let batchCancelled = batch?.isCancelled ?? false
        let streamID = try state.withLock { (state) throws(APNsTransportError) -> Int32? in
            guard case .queued = state.phase, !batchCancelled else { return nil }
            let streamID = try submit()
            state.phase = .inFlight(connection, streamID)
            return streamID
        }
        if batchCancelled { cancel() }
        return streamID
    }

    /// Moves an in-flight request back to `queued` for another attempt.
    ///
    /// - Returns: The number of times it has now been re-queued, or `nil` if it had finished.
    ///
    /// A request whose task was cancelled while it was in flight does not go again: it
    /// fails as cancelled, not processed (the server handed it back), and `nil` is returned.
    func markRequeued() -> Int? {
        var requeues: Int?
        _ = finish { (state: inout State) -> Outcome? in
            if state.cancelRequested {
                return .failure(.cancelled(
                    mayHaveReachedAPNs: false,
                    "the task was cancelled; the server had not processed the request (refused, or above a GOAWAY's last-stream-id)"))
            }
            state.phase = .queued
            state.requeues += 1
            requeues = state.requeues
            return nil
        }
        return requeues
    }

    /// The calling task was cancelled: a queued request fails at once with
    /// `mayHaveReachedAPNs == false`. An in-flight one is handed to its connection, which
    /// resets the stream and decides the outcome on its thread, where it knows whether
    /// the frame ending the request (END_STREAM) went out (``cancelledInFlight(unsent:status:)``);
    /// an answer that arrives first is the outcome instead.
    ///
    /// - Returns: Whether the request was queued (it is still in the pool's queue).
    @discardableResult
    func cancel() -> Bool {
        let (previous, _) = finish { (state: inout State) -> Outcome? in
            if case .queued = state.phase {
                return .failure(.cancelled(mayHaveReachedAPNs: false, "the task was cancelled before the request was sent"))
            }
            state.cancelRequested = true
            return nil
        }
        switch previous {
        case .inFlight(let connection, let streamID):
            connection.requestReset(of: streamID, for: self)
            return false
        case .queued:
            return true
        case .finished, nil:
            return false
        }
    }

    /// Its connection reset the stream of a request whose task was cancelled in flight
    /// (``cancel()``). `unsent`: the frame ending the request (END_STREAM) never went
    /// out, so the server never had the whole request and cannot have processed it (RFC
    /// 9113 §8.1), as for a timeout in the same state. `status`: the answer had begun.
    func cancelledInFlight(unsent: Bool, status: Int?) {
        if unsent {
            finish(.failure(.cancelled(
                mayHaveReachedAPNs: false,
                "the task was cancelled before the request was completely written (the server's flow-control window held "
                    + "its body back); the stream was reset, so the server never had the whole request")))
        } else {
            finish(.failure(APNsTransportError(
                code: .cancelled, mayHaveReachedAPNs: true,
                detail: "the task was cancelled after the request was sent" + (status.map { " (the answer had begun: status \($0))" } ?? ""),
                responseStatus: status)))
        }
    }

    /// The deadline passed: fails with ``APNsCore/APNsTransportError/Code/timeout``,
    /// `mayHaveReachedAPNs` true unless the request was still queued.
    ///
    /// - Returns: The phase the request was in, or `nil` if it had finished.
    /// - Parameter waitingFor: Why the queue did not move, when the pool knows (its
    ///   credential waited for a place in the transport's connection budget), added to
    ///   the error's detail.
    @discardableResult
    func expire(waitingFor: String? = nil) -> Phase? {
        finish { phase, requeues in
            if case .queued = phase {
                guard requeues > 0 else {
                    return .failure(.timeout(
                        mayHaveReachedAPNs: false,
                        "the request timed out in the queue; it was never sent" + (waitingFor.map { " (\($0))" } ?? "")))
                }
                // Sent before, and handed back unprocessed (REFUSED_STREAM, or above a
                // GOAWAY's last-stream-id): "never sent" would not be true.
                return .failure(.timeout(
                    mayHaveReachedAPNs: false,
                    "the request timed out waiting to go again; the server declined to process it \(requeues) "
                        + (requeues == 1 ? "time" : "times") + " (refused, or above a GOAWAY's last-stream-id), so it never reached APNs"))
            }
            return .failure(.timeout(mayHaveReachedAPNs: true, "no response before the request's timeout; the stream was reset"))
        }
    }
}
