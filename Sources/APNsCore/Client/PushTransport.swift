/// The seam between what to send and how the bytes move: sends one ``APNsRequest`` and
/// returns APNs' HTTP answer.
///
/// ``APNsClient`` uses a transport; `APNsTransport` provides the real one (TLS + HTTP/2
/// over nghttp2 and OpenSSL) and `APNsTesting` (its `MockTransport`) an in-memory one for tests. Conform
/// your own type only to move requests some other way.
///
/// Every implementation must:
/// - **Return every HTTP answer**, whatever its status: a 400 or 503 from APNs is a
///   response, not an error. The client interprets it.
/// - **Throw only ``APNsTransportError``**, and set ``APNsTransportError/mayHaveReachedAPNs``
///   truthfully: `false` only when APNs certainly did not process the request (nothing was
///   written; connect or TLS failed; a GOAWAY's last-stream-id is below the stream, RFC 9113
///   §6.8; RST_STREAM with REFUSED_STREAM, RFC 9113 §8.7; the queue was full), `true` when
///   in doubt (the connection closed or the deadline passed after the request was written).
///   The client retries only failures with `mayHaveReachedAPNs == false`, so a wrong
///   `false` can deliver a notification twice.
/// - **Honour ``APNsRequest/timeout``**, counted from the call, queueing included, and throw
///   ``APNsTransportError/Code/timeout`` when it passes.
/// - **Honour task cancellation**: when the calling task is cancelled, reset the stream
///   (or drop the queued request) and throw ``APNsTransportError/Code/cancelled`` promptly.
/// - **Send the headers in the order given**, pseudo-headers first, without adding,
///   removing or merging fields (the HPACK policy relies on the order).
/// - **Be safe to call from many tasks at once**.
/// - **Shut down cleanly**: after ``shutdown()`` begins, new requests fail at once with
///   ``APNsTransportError/Code/shutdown``; requests in flight finish or fail with an error
///   (never hang, never vanish). ``shutdown()`` returns when nothing is in flight.
public protocol PushTransport: Sendable {
    /// Sends `request` and returns the HTTP answer, whatever its status.
    ///
    /// `nonisolated(nonsending)` (SE-0461): the call runs on its caller's executor, so
    /// ``APNsClient/send(_:to:)`` reaches the transport without a hop to the global
    /// executor and back. A conforming type may declare its `send` plain `async`: the
    /// compiler then adapts it, at the cost of those hops (about 0.4 µs of CPU per
    /// notification with thousands of senders, `Benchmarks/README.md`).
    ///
    /// - Throws: ``APNsTransportError`` when no answer arrived; see the protocol's rules.
    nonisolated(nonsending) func send(_ request: APNsRequest) async throws(APNsTransportError) -> APNsResponse

    /// Sends many requests, at most `maxConcurrency` in flight at once, and returns when
    /// every one has its result.
    ///
    /// This is the many-notifications path: ``APNsClient``'s batch send uses it. The
    /// default implementation calls ``send(_:)`` from a sliding window of child tasks;
    /// `HTTP2Transport` replaces it with one that makes, sends and completes the requests
    /// on its I/O threads, without a task per request.
    ///
    /// The contract, which every implementation keeps:
    /// - `makeRequest(index)` is called exactly once for each index in `0..<count`, in
    ///   index order, one call at a time (from any thread). Returning `nil` skips the index:
    ///   the caller has recorded its outcome itself, and `onResult` is not called for it.
    /// - `onResult(index, request, result)` is called exactly once for each request made,
    ///   with the request `makeRequest` returned for that index, from any thread and
    ///   possibly for several indices at once, with APNs' answer or the
    ///   ``APNsTransportError`` that says whether the request may have reached APNs.
    /// - Requests are sent in index order, as streams free up; a new one starts as soon as
    ///   one finishes. Each request's ``APNsRequest/timeout`` counts from when it starts.
    /// - When the calling task is cancelled, requests in flight fail with
    ///   ``APNsTransportError/Code/cancelled`` (`mayHaveReachedAPNs == true`) and the rest
    ///   are still made and then failed at once without being sent
    ///   (`mayHaveReachedAPNs == false`): every index still gets its one outcome.
    /// - The method returns after the last `onResult` call has returned.
    ///
    /// - Parameters:
    ///   - count: How many requests.
    ///   - maxConcurrency: The most requests in flight at once; values below 1 count as 1.
    ///   - makeRequest: Builds the request for an index, when its turn comes.
    ///   - onResult: Receives each request's result.
    func sendBatch(
        count: Int,
        maxConcurrency: Int,
        makeRequest: @escaping @Sendable (_ index: Int) -> APNsRequest?,
        onResult: @escaping @Sendable (_ index: Int, _ request: APNsRequest, _ result: Result<APNsResponse, APNsTransportError>) -> Void
    ) async

    /// An open-ended batch: the contract of
    /// ``sendBatch(count:maxConcurrency:makeRequest:onResult:)`` for the indices `feed`
    /// supplies while the batch runs (see ``RequestFeed``):
    /// - `makeRequest` is called once per supplied index, in order, one call at a time,
    ///   when the window has room;
    /// - the method returns once the feed is closed and the last `onResult` call for a
    ///   supplied index has returned;
    /// - if the task is cancelled, the batch seals the feed (``RequestFeed/seal()``), and
    ///   every index supplied until then still gets its one result (`cancelled` if it was
    ///   not sent); an index supplied later is never made.
    ///
    /// The window is `maxConcurrency`, at least 1 and at most ``RequestFeed/maxWindow``.
    /// The default implementation runs a child task per request.
    func sendBatch(
        feed: RequestFeed,
        maxConcurrency: Int,
        makeRequest: @escaping @Sendable (_ index: Int) -> APNsRequest?,
        onResult: @escaping @Sendable (_ index: Int, _ request: APNsRequest, _ result: Result<APNsResponse, APNsTransportError>) -> Void
    ) async

    /// Stops accepting requests, lets the ones in flight finish or fail, and releases
    /// connections. Calling it again has no further effect.
    func shutdown() async
    /// Returns once ``shutdown()`` has begun (at once if it has), or as soon as the
    /// calling task is cancelled.
    ///
    /// ``APNsClient`` waits for it beside a retry's backoff: when the transport is shut
    /// down on its own (a `ServiceGroup` stopping it), a send waiting to try again ends at
    /// once with its last answer instead of waking later to fail with `shutdown`. The
    /// default returns only when the task is cancelled (such waits then last their whole
    /// backoff).
    func waitUntilShutdown() async

    /// Whether ``shutdown()`` has begun: the transport takes nothing more.
    ///
    /// ``APNsClient`` reads it before it reads a streamed batch's sequence: a batch started
    /// once the transport is shut down reads no element (what the sequence holds stays
    /// with its producer) and returns an empty summary. The default is `false` (the
    /// batch then learns of the shutdown from its first send, having read an element or two).
    var isShutDown: Bool { get }

    /// The APNs endpoint this transport connects to, when it is bound to one (an HTTP/2
    /// transport is); `nil` for a transport that sends anywhere (the mock transport).
    /// ``APNsClient`` takes its environment from here, so it is stated once.
    var environment: APNsEnvironment? { get }

    /// An executor for the tasks that send through this transport, on which a send costs
    /// the fewest thread switches (an HTTP/2 transport's I/O thread); `nil` when the
    /// transport has none. Pass it to `withTaskExecutorPreference`, which accepts `nil`.
    var taskExecutor: (any TaskExecutor)? { get }
}

extension PushTransport {
    /// Not bound to an endpoint: `nil`.
    public var environment: APNsEnvironment? { nil }

    /// No executor of its own: `nil` (tasks run where they would anyway).
    public var taskExecutor: (any TaskExecutor)? { nil }
    /// Never tells: `false`.
    public var isShutDown: Bool { false }

    /// Never tells: returns only when the calling task is cancelled.
    public func waitUntilShutdown() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(86_400))
        }
    }

    /// The default batch: the default open-ended batch
    /// (``sendBatch(feed:maxConcurrency:makeRequest:onResult:)``, a sliding window of at
    /// most `maxConcurrency` child tasks, each calling ``send(_:)``) over a feed that holds
    /// `count` indices from the start; see the requirement for the contract it keeps.
    public func sendBatch(
        count: Int,
        maxConcurrency: Int,
        makeRequest: @escaping @Sendable (_ index: Int) -> APNsRequest?,
        onResult: @escaping @Sendable (_ index: Int, _ request: APNsRequest, _ result: Result<APNsResponse, APNsTransportError>) -> Void
    ) async {
        guard count > 0 else { return }
        let feed = RequestFeed()
        feed.supply(upTo: count)
        feed.close()
        await sendBatch(feed: feed, maxConcurrency: maxConcurrency, makeRequest: makeRequest, onResult: onResult)
    }

    /// The default open-ended batch: a sliding window of at most `maxConcurrency` child
    /// tasks, each calling ``send(_:)``, started as `feed` supplies indices; see the
    /// requirement for the contract it keeps.
    public func sendBatch(
        feed: RequestFeed,
        maxConcurrency: Int,
        makeRequest: @escaping @Sendable (_ index: Int) -> APNsRequest?,
        onResult: @escaping @Sendable (_ index: Int, _ request: APNsRequest, _ result: Result<APNsResponse, APNsTransportError>) -> Void
    ) async {
        await sendBatchWindow(feed: feed, maxConcurrency: maxConcurrency, makeRequest: makeRequest, start: { request in
            {
                do throws(APNsTransportError) {
                    return .success(try await self.send(request))
                } catch {
                    return .failure(error)
                }
            }
        }, onResult: onResult)
    }

    /// The sliding window behind the default open-ended batch: for each index `feed`
    /// supplies, in index order and one at a time, `makeRequest` then `start` (which may
    /// act on the request at once, in that order: the mock transport records it and picks
    /// its answer there), then a child task runs what `start` returned and hands its
    /// result to `onResult`; at most `maxConcurrency` run at once. When the task is
    /// cancelled, what was supplied and not started gets `cancelled` without being sent.
    package func sendBatchWindow(
        feed: RequestFeed,
        maxConcurrency: Int,
        makeRequest: @escaping @Sendable (_ index: Int) -> APNsRequest?,
        start: (APNsRequest) -> @Sendable () async -> Result<APNsResponse, APNsTransportError>,
        onResult: @escaping @Sendable (_ index: Int, _ request: APNsRequest, _ result: Result<APNsResponse, APNsTransportError>) -> Void
    ) async {
        let width = max(1, min(maxConcurrency, RequestFeed.maxWindow))
        let signal = FeedSignal()
        feed.attach(wake: { signal.raise() })
        await withTaskGroup(of: Void.self) { group in
            var next = 0
            var running = 0
            while !Task.isCancelled {
                let supplied = feed.snapshot()
                if next < supplied.available {
                    if running == width {
                        await group.next()
                        running -= 1
                        continue
                    }
                    let index = next
                    next += 1
                    guard let request = makeRequest(index) else { continue }
                    let operation = start(request)
                    group.addTask {
                        onResult(index, request, await operation())
                    }
                    running += 1
                } else if supplied.closed {
                    break
                } else if feed.waitForSupply(after: supplied) {
                    await signal.wait()
                }
            }
            // Cancelled: what was supplied and not made gets its result without being sent.
            // (After a normal end the feed is closed and everything was made.)
            let end = feed.seal()
            while next < end {
                let index = next
                next += 1
                guard let request = makeRequest(index) else { continue }
                onResult(index, request, .failure(.cancelled(mayHaveReachedAPNs: false, "the batch was cancelled before the request was sent")))
            }
            await group.waitForAll()
        }
    }

    /// Sends `requests`, at most `maxConcurrency` in flight at once, through
    /// ``sendBatch(count:maxConcurrency:makeRequest:onResult:)``.
    ///
    /// - Returns: One result per request, in the order of `requests`: APNs' answer, or the
    ///   ``APNsTransportError`` that says whether the request may have reached APNs.
    public func send(
        _ requests: [APNsRequest],
        maxConcurrency: Int
    ) async -> [Result<APNsResponse, APNsTransportError>] {
        let results = BatchResults(count: requests.count)
        await sendBatch(
            count: requests.count,
            maxConcurrency: maxConcurrency,
            makeRequest: { requests[$0] },
            onResult: { index, _, result in results.store(result, at: index) }
        )
        return results.collect()
    }
}

/// One slot per index, each written once by ``PushTransport/sendBatch(count:maxConcurrency:makeRequest:onResult:)``'s
/// `onResult` (from any thread) and read after the batch returned.
final class BatchResults: @unchecked Sendable {
    // Safe: the batch contract calls `onResult` once per index, so each slot has one
    // writer, and `collect` runs after the batch returned (every write happened before).
    private let slots: UnsafeMutableBufferPointer<Result<APNsResponse, APNsTransportError>?>

    init(count: Int) {
        slots = .allocate(capacity: count)
        slots.initialize(repeating: nil)
    }

    deinit {
        slots.deinitialize()
        slots.deallocate()
    }

    func store(_ result: Result<APNsResponse, APNsTransportError>, at index: Int) {
        slots[index] = result
    }

    /// The results; an index without one (a broken implementation) reads as a failure.
    func collect() -> [Result<APNsResponse, APNsTransportError>] {
        slots.map { $0 ?? .failure(APNsTransportError(code: .protocolError, mayHaveReachedAPNs: true, detail: "the transport gave no result")) }
    }
}
