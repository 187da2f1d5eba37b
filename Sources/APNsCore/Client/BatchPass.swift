import Synchronization
import Tracing

/// The bookkeeping of one ``APNsClient`` batch send, written from the transport's threads:
/// the outcome of each index (kept, or handed to the caller's `onOutcome` at once), the
/// counts, and the deliveries that go on to the attempt loop.
final class BatchPass: @unchecked Sendable {
    // Safe: each slot of `outcomes` is written by one call only — `finish` for an index is
    // called once (by `makeRequest` when the request cannot be made, by `onResult` on
    // acceptance or a final answer, or by the second pass), as the batch contract calls
    // `makeRequest` and `onResult` once per index — and read by `takeOutcomes()` after
    // every writer returned (the batch and the second pass's task group have completed).
    // The rest is under locks or atomic.
    private let outcomes: UnsafeMutableBufferPointer<Result<APNsAccepted, APNsError>?>
    /// Receives each outcome as it is final instead of `outcomes` (the streaming sends).
    private let onOutcome: (@Sendable (Int, APNsOutcome) -> Void)?
    private let deviceTokens: [DeviceToken]
    private let accepted = Atomic<Int>(0)
    private let rejected = Atomic<Int>(0)
    private let failed = Atomic<Int>(0)
    /// Whether ``takeOutcomes()`` moved the outcomes out (the buffer is uninitialized).
    private var movedOut = false
    private let continuations = Mutex<[(Int, APNsClient.Resumption, APNsID?)]>([])
    /// Set when the batch's task is cancelled: the requests not made yet never will be sent.
    private let cancelled = Atomic<Bool>(false)

    /// Counts each outcome (``ClientMetrics``), with the push type of its index.
    private let metrics: ClientMetrics
    let pushType: @Sendable (Int) -> PushType
    /// The spans of the notifications in flight, by index, when tracing is on.
    private let tracing: ClientTracing?
    /// Whether ``tracing`` is set: tested per notification without copying the optional
    /// (an existential and a flag) out of the pass.
    private let isTracing: Bool
    private let spans = Mutex<[Int: any Span]>([:])
    /// The batch's span, the parent of its notifications' spans.
    let batchSpan: (any Span)?

    /// A pass over `deviceTokens`; with `onOutcome`, outcomes are handed over as they are
    /// final and not kept. `pushType` gives an index's push type, for the metrics.
    init(
        deviceTokens: [DeviceToken],
        metrics: ClientMetrics,
        tracing: ClientTracing,
        pushType: @escaping @Sendable (Int) -> PushType,
        onOutcome: (@Sendable (Int, APNsOutcome) -> Void)? = nil
    ) {
        self.deviceTokens = deviceTokens
        self.metrics = metrics
        self.tracing = tracing.isEnabled ? tracing : nil
        self.isTracing = tracing.isEnabled
        self.batchSpan = deviceTokens.isEmpty ? nil : tracing.startBatch(count: deviceTokens.count)
        self.pushType = pushType
        self.onOutcome = onOutcome
        outcomes = .allocate(capacity: onOutcome == nil ? deviceTokens.count : 0)
        outcomes.initialize(repeating: nil)
    }

    /// A pass over a stream of deliveries, whose count is not known: each outcome goes to
    /// `onOutcome`, and each call names its device token and push type (see
    /// ``finish(_:_:deviceToken:pushType:)``).
    init(streamingWith metrics: ClientMetrics, tracing: ClientTracing, onOutcome: @escaping @Sendable (Int, APNsOutcome) -> Void) {
        self.deviceTokens = []
        self.metrics = metrics
        self.tracing = tracing.isEnabled ? tracing : nil
        self.isTracing = tracing.isEnabled
        self.batchSpan = tracing.startBatch(count: nil)
        self.pushType = { _ in .alert }  // unused: every call names its push type
        self.onOutcome = onOutcome
        outcomes = .allocate(capacity: 0)
    }

    /// How many outcomes were acceptances, rejections and failures (every other error).
    var summary: APNsBatchSummary {
        APNsBatchSummary(
            accepted: accepted.load(ordering: .relaxed),
            rejected: rejected.load(ordering: .relaxed),
            failed: failed.load(ordering: .relaxed)
        )
    }

    deinit {
        if !movedOut { outcomes.deinitialize() }
        outcomes.deallocate()
    }

    /// Records the final outcome of `index`, or hands it to `onOutcome`.
    func finish(_ index: Int, _ outcome: consuming Result<APNsAccepted, APNsError>) {
        finish(index, outcome, deviceToken: deviceTokens[index], pushType: pushType(index))
    }

    /// Records the final outcome of `index`, whose device token and push type are given
    /// (a streamed pass keeps neither), or hands it to `onOutcome`.
    func finish(_ index: Int, _ outcome: consuming Result<APNsAccepted, APNsError>, deviceToken: DeviceToken, pushType: PushType) {
        metrics.finished(pushType, outcome)
        if isTracing, let tracing {
            let span = spans.withLock { $0.removeValue(forKey: index) }
                ?? tracing.startNotification(pushType, apnsID: nil, parent: batchSpan?.context)
            tracing.end(span, outcome, attempts: nil)
        }
        switch outcome {
        case .success: accepted.add(1, ordering: .relaxed)
        case .failure(.rejected): rejected.add(1, ordering: .relaxed)
        case .failure: failed.add(1, ordering: .relaxed)
        }
        if let onOutcome {
            onOutcome(index, APNsOutcome(deviceToken: deviceToken, result: outcome))
        } else {
            outcomes[index] = outcome
        }
    }

    /// Marks the batch cancelled (from its task's cancellation handler): see ``isCancelled``.
    func cancel() {
        cancelled.store(true, ordering: .releasing)
    }

    /// Whether the batch's task was cancelled: a request not made yet would only be failed
    /// unsent, so it is not made (``finishUnsent(_:)``).
    var isCancelled: Bool {
        cancelled.load(ordering: .acquiring)
    }

    /// Records that `index` was never sent because the batch was cancelled: `cancelled`,
    /// `mayHaveReachedAPNs == false`, without its request made or its notification encoded.
    func finishUnsent(_ index: Int) {
        finish(index, .failure(.failed(.cancelled(mayHaveReachedAPNs: false, "the batch was cancelled before the request was sent"))))
    }

    /// Starts the span of `index`'s notification, of `pushType` (tracing on), under the
    /// batch's span.
    func started(_ index: Int, apnsID: APNsID?, pushType: PushType) {
        guard isTracing, let tracing else { return }
        if let span = tracing.startNotification(pushType, apnsID: apnsID, parent: batchSpan?.context) {
            spans.withLock { $0[index] = span }
        }
    }

    /// Ends the batch's span with the counts.
    func endBatchSpan() {
        tracing?.end(batchSpan, summary)
    }

    /// Hands a delivery that goes on (a retry, a new provider token) to the second pass,
    /// with the `apns-id` its requests carry.
    func continueLater(_ index: Int, _ resumption: APNsClient.Resumption, apnsID: APNsID?) {
        continuations.withLock { $0.append((index, resumption, apnsID)) }
    }

    /// The deliveries for the second pass, in index order.
    func takeContinuations() -> [(Int, APNsClient.Resumption, APNsID?)] {
        continuations.withLock { list in
            defer { list.removeAll() }
            return list.sorted { $0.0 < $1.0 }
        }
    }

    /// The outcome of each device token, in order, moved out of the pass (no copy: a batch
    /// of a million spends nothing on retain/release here). Call once, after every writer.
    /// An index without an outcome (a transport that broke the batch contract) reads as
    /// cancelled before it was sent.
    func takeOutcomes() -> [APNsOutcome] {
        precondition(!movedOut && onOutcome == nil)
        movedOut = true
        return [APNsOutcome](unsafeUninitializedCapacity: deviceTokens.count) { buffer, initialized in
            for index in deviceTokens.indices {
                let result = (outcomes.baseAddress! + index).move()
                (buffer.baseAddress! + index).initialize(
                    to: APNsOutcome(
                        deviceToken: deviceTokens[index],
                        result: result ?? .failure(.failed(.cancelled(mayHaveReachedAPNs: false)))
                    )
                )
            }
            initialized = deviceTokens.count
        }
    }
}
