import Synchronization

extension APNsClient {
    /// Sends each notification of `deliveries` to its device as the sequence produces it,
    /// at most `maxConcurrency` at a time, handing each outcome to `onOutcome`: the batch for
    /// work that arrives over time (a queue consumer, a database cursor, a stream of
    /// events), at a batch's cost instead of a task and an `await` per notification.
    ///
    /// The sequence is read on the calling task, a little ahead of the window (at most
    /// `2 × maxConcurrency` notifications read and not yet sent, or waiting to be retried,
    /// so a fast producer is held back, not buffered without bound). Each notification is
    /// checked and encoded when it is read and sent as soon as the window has room: a
    /// notification that arrives while the window has room is sent at once, without waiting
    /// for more. Requests are made, sent and answered on the transport's threads; answers
    /// that the ``retryPolicy`` retries (or an ExpiredProviderToken) go through the same
    /// attempt loop as ``send(_:to:)`` while the stream goes on.
    ///
    /// ```swift
    /// let summary = try await client.send(queue.deliveries) { index, outcome in
    ///     if outcome.error?.rejection?.reason == .unregistered {
    ///         forget(outcome.deviceToken)
    ///     }
    /// }
    /// ```
    ///
    /// `onOutcome` is called exactly once per element read (its `index` is the element's
    /// position in the sequence, from 0), in the order the outcomes become final, from any
    /// thread: keep it quick and thread-safe. The method returns when the sequence has
    /// ended and every outcome has been handed over.
    ///
    /// Once the client or its transport shuts down (or a send fails with
    /// ``APNsTransportError/Code/shutdown``: the transport takes nothing more), the
    /// sequence is no longer read: each element already read still gets its one outcome
    /// (those not sent fail with `shutdown`), and the method returns once they have,
    /// without waiting for the sequence to end. A `next()` still waiting a tenth of a
    /// second after the shutdown is cancelled (the sequence is read in a child task; an
    /// `AsyncStream` then ends, and its producer's later `yield`s return `.terminated`),
    /// so a quiet sequence does not hold the call, and what the sequence has not produced
    /// stays with its producer (a queue consumer's messages are not taken off the queue to
    /// be failed). An element whose `next()` was under way is still read, and fails with
    /// `shutdown`. A sequence that ignores cancellation is waited for, and an error it
    /// throws once cancelled (a `CancellationError`) is not rethrown. A batch started
    /// after the shutdown reads nothing and returns an empty summary (with a transport that
    /// reports ``PushTransport/isShutDown``, as both of this package's do).
    ///
    /// - Parameters:
    ///   - deliveries: Each notification with the device it goes to; `sending`, as it is
    ///     read in a child task (on `isolation`).
    ///   - maxConcurrency: The most requests in flight at once; values below 1 count as 1,
    ///     values above ``RequestFeed/maxWindow`` (65,536) as that.
    ///   - isolation: Where the sequence is read (the caller's actor, by default).
    ///   - onOutcome: Receives each element's position in `deliveries` and its outcome.
    /// - Returns: How many were accepted, rejected and failed.
    /// - Throws: The sequence's error, after every element read before it has its outcome.
    ///   If the task is cancelled, the sequence is no longer read and what was read but not
    ///   sent fails with ``APNsTransportError/Code/cancelled``.
    @discardableResult
    public func send<Deliveries: AsyncSequence>(
        _ deliveries: sending Deliveries,
        maxConcurrency: Int = 100,
        isolation: isolated (any Actor)? = #isolation,
        onOutcome: @escaping @Sendable (_ index: Int, _ outcome: APNsOutcome) -> Void
    ) async throws(Deliveries.Failure) -> APNsBatchSummary
    where Deliveries.Element == (notification: PushNotification, deviceToken: DeviceToken) {
        let logger = logger
        return try await sendStream(deliveries, maxConcurrency: maxConcurrency, isolation: isolation, onOutcome: onOutcome) { element in
            let notification = element.notification
            let prepared: Result<(PushNotification.Prepared, APNsID?), APNsRequestError>
            do throws(APNsRequestError) {
                prepared = .success((try notification.prepared(), notification.apnsID))
            } catch {
                logger.debug(
                    "notification is invalid",
                    metadata: Self.metadata(notification.apnsID, element.deviceToken, ["apns.error": "\(error)"])
                )
                prepared = .failure(error)
            }
            return StreamedDelivery(deviceToken: element.deviceToken, pushType: notification.pushType, notification: prepared)
        }
    }

    /// Sends `notification` to each device of `deviceTokens` as the sequence produces it,
    /// at most `maxConcurrency` at a time, handing each outcome to `onOutcome`: one
    /// notification to devices read over time (a database cursor over a million
    /// subscribers), encoded once. Otherwise this is ``send(_:maxConcurrency:isolation:onOutcome:)``:
    /// in particular, `deviceTokens` is no longer read once the task is cancelled or the
    /// client or its transport shuts down (a `next()` under way is cancelled), and each
    /// token read still gets its one outcome.
    ///
    /// ```swift
    /// try await client.send(notification, to: subscribers.deviceTokens) { index, outcome in
    ///     if let error = outcome.error { report(outcome.deviceToken, error) }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - notification: The notification. If it is invalid, every device's outcome is that
    ///     ``APNsError/invalid(_:)`` and nothing is sent.
    ///   - deviceTokens: The devices; duplicates are sent to twice. `sending`, as it is read
    ///     in a child task (on `isolation`).
    ///   - maxConcurrency: The most requests in flight at once; values below 1 count as 1,
    ///     values above ``RequestFeed/maxWindow`` (65,536) as that.
    ///   - isolation: Where the sequence is read (the caller's actor, by default).
    ///   - onOutcome: Receives each token's position in `deviceTokens` and its outcome.
    /// - Returns: How many were accepted, rejected and failed.
    /// - Throws: The sequence's error, after every token read before it has its outcome.
    @discardableResult
    public func send<DeviceTokens: AsyncSequence>(
        _ notification: PushNotification,
        to deviceTokens: sending DeviceTokens,
        maxConcurrency: Int = 100,
        isolation: isolated (any Actor)? = #isolation,
        onOutcome: @escaping @Sendable (_ index: Int, _ outcome: APNsOutcome) -> Void
    ) async throws(DeviceTokens.Failure) -> APNsBatchSummary where DeviceTokens.Element == DeviceToken {
        let pushType = notification.pushType
        let prepared: Result<(PushNotification.Prepared, APNsID?), APNsRequestError>
        do throws(APNsRequestError) {
            prepared = .success((try notification.prepared(), notification.apnsID))
        } catch {
            logger.debug("notification is invalid", metadata: ["apns.error": "\(error)"])
            prepared = .failure(error)
        }
        return try await sendStream(deviceTokens, maxConcurrency: maxConcurrency, isolation: isolation, onOutcome: onOutcome) { deviceToken in
            StreamedDelivery(deviceToken: deviceToken, pushType: pushType, notification: prepared)
        }
    }

    /// The streamed batch behind both public forms: reads `source` on the caller's task
    /// into a ``StreamWindow``, supplies each element to an open-ended transport batch
    /// (``PushTransport/sendBatch(feed:maxConcurrency:makeRequest:onResult:)``) and runs
    /// what goes on after a first attempt through the attempt loop, in child tasks, while
    /// the stream goes on.
    private func sendStream<Source: AsyncSequence>(
        _ source: sending Source,
        maxConcurrency: Int,
        isolation: isolated (any Actor)?,
        onOutcome: @escaping @Sendable (_ index: Int, _ outcome: APNsOutcome) -> Void,
        delivery: @escaping @Sendable (Source.Element) -> StreamedDelivery
    ) async throws(Source.Failure) -> APNsBatchSummary {
        let width = max(1, min(maxConcurrency, RequestFeed.maxWindow))
        let window = StreamWindow(capacity: 2 * width)
        let pass = BatchPass(streamingWith: metrics, tracing: tracing) { index, outcome in
            // The transport takes nothing more: reading on would only fail what is read.
            if outcome.error?.transportError?.code == .shutdown { window.stopReading() }
            onOutcome(index, outcome)
        }
        let feed = RequestFeed()
        // Not an AsyncStream: its iteration ends when the task is cancelled, and the
        // retries still queued in it (each read, sent and answered 503, say) would then
        // get no outcome at all. This queue is drained to the end, cancelled or not.
        let retries = RetryQueue()
        let retryInput = retries
        var reading = StreamReading<Source.Failure>()
        // `source` came `sending` and is used once, by the child task that reads it: the
        // task group's closure would otherwise tie it to the caller's isolation.
        let transferred = Handoff(source)
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await self.transport.sendBatch(
                    feed: feed,
                    maxConcurrency: width,
                    makeRequest: { index in
                        let delivery = window.take(index)
                        return self.firstRequest(index, to: delivery.deviceToken, pushType: delivery.pushType, notification: delivery.notification, pass: pass)
                    },
                    onResult: { index, request, result in
                        // The request carries its token, push type and (for a retry)
                        // notification: the stream keeps none of them. It is the device push
                        // `makeRequest` made for this index, as the batch contract says.
                        guard let deviceToken = request.deviceToken, let pushType = request.devicePushType else {
                            preconditionFailure("the transport's onResult for index \(index) did not pass the request makeRequest made")
                        }
                        let resumption = self.firstResult(index, request, result, deviceToken: deviceToken, pushType: pushType, pass: pass)
                        if let resumption {
                            // A device push with a push type always gives its notification back.
                            guard let resent = PushNotification.Prepared(resending: request) else {
                                preconditionFailure("a device push that cannot be sent again")
                            }
                            window.retryStarted()
                            retryInput.yield(
                                StreamedRetry(index: index, request: request, deviceToken: deviceToken, prepared: resent, resumption: resumption)
                            )
                        }
                    }
                )
                // Every first attempt has ended: no retry comes after this.
                retryInput.finish()
            }
            group.addTask {
                await self.runRetries(retries, width: width, pass: pass, window: window)
            }
            reading = await readUntilShutdown(transferred, window: window, feed: feed, pass: pass, isolation: isolation, delivery: delivery)
            feed.close()
            await group.waitForAll()
        }
        let read = reading.count
        pass.endBatchSpan()
        let summary = pass.summary
        if logger.logLevel <= .debug {
            logger.debug(
                "streamed batch finished",
                metadata: [
                    "apns.batch.count": "\(read)", "apns.batch.accepted": "\(summary.accepted)",
                    "apns.batch.rejected": "\(summary.rejected)", "apns.batch.failed": "\(summary.failed)",
                ]
            )
        }
        if let failure = reading.failure { throw failure }
        return summary
    }

    /// How long a streamed batch's reader may still be in a `next()` after a shutdown
    /// before it is cancelled.
    static let readerPatience: Duration = .milliseconds(100)

    /// Reads `source` in a child task (on `isolation`), beside one that waits for the
    /// client or its transport to shut down: then reading stops, and a `next()` still
    /// under way after ``readerPatience`` is cancelled, so that a quiet sequence does not
    /// hold the batch (an `AsyncStream` ends at once).
    private func readUntilShutdown<Source: AsyncSequence>(
        _ source: Handoff<Source>,
        window: StreamWindow,
        feed: RequestFeed,
        pass: BatchPass,
        isolation: (any Actor)?,
        delivery: @escaping @Sendable (Source.Element) -> StreamedDelivery
    ) async -> StreamReading<Source.Failure> {
        let metrics = metrics
        let transport = transport
        let retryWaits = retryWaits
        if transport.isShutDown || retryWaits.isClientShutDown {
            // Shut down before the batch began: read nothing (the sequence's elements stay
            // with its producer) rather than an element or two only to fail them.
            window.stopReading()
        }
        // The reading, handed to the one child task that runs it (a closure made here, so
        // that the child's own closure captures no generic metatype).
        let reading = Handoff {
            await Self.read(source, window: window, feed: feed, pass: pass, metrics: metrics, isolation: isolation, delivery: delivery)
        }
        return await withTaskGroup(of: StreamReading<Source.Failure>?.self) { group in
            group.addTask { await reading.value() }
            group.addTask {
                // Whichever comes first; the other is cancelled with this task.
                await withTaskGroup(of: Void.self) { shutdown in
                    shutdown.addTask { await transport.waitUntilShutdown() }
                    shutdown.addTask { await retryWaits.waitForClientShutdown() }
                    await shutdown.next()
                    shutdown.cancelAll()
                }
                return nil
            }
            var reading = StreamReading<Source.Failure>()
            var readerEnded = false
            var shutDown = false
            while let next = await group.next() {
                if let next {
                    // The sequence has ended (or reading stopped): the watch is no longer needed.
                    reading = next
                    readerEnded = true
                    group.cancelAll()
                } else if readerEnded {
                    // The watch, cancelled once the reader had ended.
                    continue
                } else if shutDown {
                    // Still reading a moment after the shutdown: a `next()` waits for the
                    // sequence. Cancel it.
                    group.cancelAll()
                } else if !Task.isCancelled {
                    // Shut down: read no more. A `next()` that has an element returns at
                    // once (and the reader stops); one that waits is cancelled after a
                    // moment, which ends an `AsyncStream` (what it has buffered is not
                    // dropped by a cancellation that is not needed).
                    shutDown = true
                    window.stopReading()
                    group.addTask {
                        try? await Task.sleep(for: Self.readerPatience)
                        return nil
                    }
                }
            }
            if window.readingStopped, let failure = reading.failure, failure is CancellationError {
                // The cancellation was ours (the shutdown's), not the caller's: nothing to rethrow.
                reading.failure = nil
            }
            return reading
        }
    }

    /// The reading loop of a streamed batch: each element of `source` into `window` and
    /// `feed`, until the sequence ends, reading stops or the task is cancelled.
    private static func read<Source: AsyncSequence>(
        _ source: Handoff<Source>,
        window: StreamWindow,
        feed: RequestFeed,
        pass: BatchPass,
        metrics: ClientMetrics,
        isolation: isolated (any Actor)?,
        delivery: @Sendable (Source.Element) -> StreamedDelivery
    ) async -> StreamReading<Source.Failure> {
        var reading = StreamReading<Source.Failure>()
        var iterator = source.value.makeAsyncIterator()
        do throws(Source.Failure) {
            while !Task.isCancelled, !window.readingStopped, let element = try await iterator.next(isolation: isolation) {
                let next = delivery(element)
                metrics.sent(next.pushType)
                window.put(reading.count, next)
                reading.count += 1
                guard feed.supply(upTo: reading.count) else {
                    // The batch ended early (cancelled): this one is not made; its
                    // outcome is given here.
                    let unsent = window.take(reading.count - 1)
                    pass.finish(
                        reading.count - 1,
                        .failure(.failed(.cancelled(mayHaveReachedAPNs: false, "the batch was cancelled before the request was sent"))),
                        deviceToken: unsent.deviceToken,
                        pushType: unsent.pushType
                    )
                    break
                }
                await window.waitForRoom()
            }
        } catch {
            reading.failure = error
        }
        return reading
    }

    /// Runs each retry of a streamed batch through the attempt loop, at most `width` at
    /// once, until the batch's first attempts are over and every retry has ended.
    private func runRetries(_ retries: RetryQueue, width: Int, pass: BatchPass, window: StreamWindow) async {
        await withTaskGroup(of: Void.self) { group in
            var running = 0
            // Every retry queued gets its outcome, also once the task is cancelled: the
            // attempt loop then ends it at once with the answer it last got.
            while let retry = await retries.next() {
                if running == width {
                    await group.next()
                    running -= 1
                }
                group.addTask {
                    let deviceToken = retry.deviceToken
                    let result: Result<APNsAccepted, APNsError>
                    do throws(APNsError) {
                        result = .success(
                            try await self.deliver(
                                retry.prepared,
                                apnsID: retry.request.apnsID ?? .random(),
                                to: deviceToken,
                                resuming: retry.resumption
                            )
                        )
                    } catch {
                        result = .failure(error)
                    }
                    pass.finish(retry.index, result, deviceToken: deviceToken, pushType: retry.prepared.pushType)
                    window.retryEnded()
                }
                running += 1
            }
        }
    }
}

/// A value moved to exactly one other task, which alone uses it from then on (a `sending`
/// value that region checking cannot follow through a task group's closure).
struct Handoff<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// How the reading of a streamed batch's sequence ended: how many elements were read, and
/// the sequence's error if it threw one.
struct StreamReading<Failure: Error>: Sendable {
    var count = 0
    var failure: Failure?
}

/// One element of a streamed batch, read and not yet sent: its device, its push type and
/// its notification checked and encoded (or why it is invalid) with the `apns-id` it names.
struct StreamedDelivery: Sendable {
    let deviceToken: DeviceToken
    let pushType: PushType
    let notification: Result<(PushNotification.Prepared, APNsID?), APNsRequestError>
}

/// The retries of a streamed batch, from the transport's threads to the task that runs
/// them: a queue whose one reader is not stopped by cancellation. It returns every retry
/// put in it, then `nil` once ``finish()`` was called and nothing is left (the transport's
/// batch has returned, so no first attempt can end in a retry any more).
final class RetryQueue: Sendable {
    private struct State {
        var items: [StreamedRetry] = []
        var head = 0
        var finished = false
        var waiter: CheckedContinuation<StreamedRetry?, Never>?
    }
    private let state = Mutex(State())

    /// Queues `retry` (or hands it to the waiting reader).
    func yield(_ retry: StreamedRetry) {
        let waiter = state.withLock { state -> CheckedContinuation<StreamedRetry?, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.items.append(retry)
            return nil
        }
        waiter?.resume(returning: retry)
    }

    /// No more retries come: the reader gets `nil` once the queue is empty.
    func finish() {
        let waiter = state.withLock { state -> CheckedContinuation<StreamedRetry?, Never>? in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// The next retry, waiting for one; `nil` once finished and empty. Cancellation does
    /// not end it (see ``RetryQueue``).
    func next() async -> StreamedRetry? {
        await withCheckedContinuation { (continuation: CheckedContinuation<StreamedRetry?, Never>) in
            let now = state.withLock { state -> StreamedRetry?? in
                if state.head < state.items.count {
                    let item = state.items[state.head]
                    state.head += 1
                    if state.head == state.items.count {
                        state.items.removeAll(keepingCapacity: true)
                        state.head = 0
                    } else if state.head >= 1024, state.head * 2 >= state.items.count {
                        state.items.removeFirst(state.head)
                        state.head = 0
                    }
                    return .some(item)
                }
                if state.finished { return .some(nil) }
                state.waiter = continuation
                return .none
            }
            if let now { continuation.resume(returning: now) }
        }
    }
}

/// A delivery of a streamed batch that goes on after its first attempt.
struct StreamedRetry: Sendable {
    let index: Int
    /// The first attempt's request: its token, `apns-id`, headers and body.
    let request: APNsRequest
    let deviceToken: DeviceToken
    let prepared: PushNotification.Prepared
    let resumption: APNsClient.Resumption
}

/// Between the task that reads a streamed batch's sequence and the transport's threads
/// that send it: the elements read and not yet made into requests (by index, in a ring),
/// and the back-pressure on the reader. The reader waits once `capacity` elements are
/// read and not made, or waiting to be retried, and goes on when half of that room is
/// free again, so it is woken once per `capacity / 2` elements, not once per element.
final class StreamWindow: Sendable {
    private struct State {
        var ring: [StreamedDelivery?]
        /// Elements put and not taken.
        var buffered = 0
        /// Deliveries between their first attempt and their outcome in the attempt loop.
        var retrying = 0
        /// The reader waits for room.
        var readerWaits = false
    }

    private let capacity: Int
    private let state: Mutex<State>
    private let room = FeedSignal()
    /// The reader reads no more (the transport is shut down): an atomic, read once per
    /// element without the lock.
    private let stopped = Atomic<Bool>(false)

    init(capacity: Int) {
        self.capacity = max(2, capacity)
        state = Mutex(State(ring: Array(repeating: nil, count: max(2, capacity))))
    }

    /// Keeps the element of `index` until ``take(_:)``. The reader waits for room
    /// (``waitForRoom()``) after each, so the ring never holds more than it can.
    func put(_ index: Int, _ delivery: StreamedDelivery) {
        state.withLock { state in
            precondition(state.buffered < capacity, "a streamed batch read past its window")
            state.ring[index % capacity] = delivery
            state.buffered += 1
        }
    }

    /// Moves the element of `index` out (indices are taken in the order they were put).
    func take(_ index: Int) -> StreamedDelivery {
        let (delivery, wake) = state.withLock { state -> (StreamedDelivery?, Bool) in
            let delivery = state.ring[index % capacity].take()
            state.buffered -= 1
            return (delivery, releaseRoom(&state))
        }
        if wake { room.raise() }
        return delivery!
    }

    /// A delivery went on to the attempt loop: it holds its place until ``retryEnded()``.
    func retryStarted() {
        state.withLock { $0.retrying += 1 }
    }

    /// A delivery's attempt loop ended.
    func retryEnded() {
        let wake = state.withLock { state -> Bool in
            state.retrying -= 1
            return releaseRoom(&state)
        }
        if wake { room.raise() }
    }

    /// Tells the reader to read no more (a send failed with `shutdown`: the transport takes
    /// nothing more), waking it if it waits for room.
    func stopReading() {
        // Set before the reader is woken; the reader checks it under the lock before it waits.
        let (first, _) = stopped.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing)
        if first { room.raise() }
    }

    /// Whether ``stopReading()`` was called.
    var readingStopped: Bool {
        stopped.load(ordering: .acquiring)
    }

    /// Returns at once while there is room for another element; otherwise when half the
    /// room is free again, when reading stopped, or when the task is cancelled.
    ///
    /// `nonisolated(nonsending)`: it runs on the reader's executor, so a batch read on an
    /// actor (the main actor, a service's) does not hop off it and back for every element
    /// (an outside audit counted one executor job, a heap allocation, per notification).
    nonisolated(nonsending) func waitForRoom() async {
        while true {
            let full = state.withLock { state -> Bool in
                guard !stopped.load(ordering: .acquiring), state.buffered + state.retrying >= capacity else { return false }
                state.readerWaits = true
                return true
            }
            guard full, !Task.isCancelled else { return }
            await room.wait()
        }
    }

    /// Whether the waiting reader is to be woken: half the room is free. Under the lock.
    private func releaseRoom(_ state: inout State) -> Bool {
        guard state.readerWaits, state.buffered + state.retrying <= capacity / 2 else { return false }
        state.readerWaits = false
        return true
    }
}
