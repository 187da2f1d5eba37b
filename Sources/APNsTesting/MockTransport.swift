import APNsCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An in-memory ``APNsCore/PushTransport`` for unit tests: it records every request and answers
/// with responses you script, without a network.
///
/// ```swift
/// let mock = MockTransport()
/// mock.respond(to: staleToken, with: .rejected(.unregistered, timestamp: lastSeen))
/// let client = APNsClient(environment: .sandbox, credentials: .certificate, transport: mock)
/// // ... run your code ...
/// #expect(mock.requests.count == 2)
/// ```
///
/// Each request is answered by the first of these that applies:
/// 1. the responses scripted for its device token with `respond(to:with:)`, in turn (the
///    last one answers every later request);
/// 2. the handler given with ``respond(using:)``;
/// 3. the default response (``Response/accepted`` unless set with ``respondByDefault(with:)``).
///
/// Like APNs, accepted and rejected answers echo the request's `apns-id` (and a broadcast's
/// or channel call's `apns-request-id`). ``Response/accepted`` answers a channel management
/// request as APNs does: 201 with a new `apns-channel-id` for a creation, a configuration
/// for a read, an empty list, 204 for a deletion.
///
/// The mock follows the ``APNsCore/PushTransport`` rules: a cancelled task gets
/// ``APNsCore/APNsTransportError/Code/cancelled``; an answer (a scripted delay, or a
/// ``respond(using:)`` handler that waits) that does not come within the request's timeout
/// ends in ``APNsCore/APNsTransportError/Code/timeout``; after ``shutdown(gracePeriod:)`` requests fail
/// with ``APNsCore/APNsTransportError/Code/shutdown`` (such requests are not recorded). A
/// batch's requests are recorded, and take their scripted answers, in index order. It is
/// safe to use from many tasks at once, and its lock is one ThreadSanitizer sees (a
/// `swift test --sanitize=thread` of your tests reports no race inside it).
public final class MockTransport: PushTransport {
    /// A scripted answer: an HTTP response or a transport failure, possibly after a delay.
    public struct Response: Sendable {
        enum Kind: Sendable {
            case accepted(uniqueID: String?)
            case rejected(APNsReason, status: Int, timestamp: Date?)
            case response(APNsResponse)
            case failure(APNsTransportError)
        }
        let kind: Kind
        let delay: Duration?

        private init(_ kind: Kind, delay: Duration? = nil) {
            self.kind = kind
            self.delay = delay
        }

        /// Status 200 with the request's `apns-id`.
        public static let accepted = Response(.accepted(uniqueID: nil))

        /// Status 200 with the request's `apns-id` and an `apns-unique-id`, as the sandbox sends.
        public static func accepted(uniqueID: String) -> Response {
            Response(.accepted(uniqueID: uniqueID))
        }

        /// A rejection with `reason`, as APNs sends it: `{"reason": ...}` (and `timestamp` in
        /// milliseconds) with the status Apple documents for the reason (400 for an unknown
        /// one) unless `status` is given. A 410 without a `timestamp` carries the time of the
        /// answer, as APNs' 410s always carry one; other statuses carry one only if given.
        /// The client reads a `timestamp` outside 2008-2100 as absent (as it does APNs':
        /// such a value from a server is garbage), so a fixture's date must lie within
        /// those years for ``APNsCore/APNsRejection/timestamp`` to carry it.
        public static func rejected(_ reason: APNsReason, status: Int? = nil, timestamp: Date? = nil) -> Response {
            Response(.rejected(reason, status: status ?? reason.status ?? 400, timestamp: timestamp))
        }

        /// Exactly `response`, for answers APNs would not normally give (a body that is not
        /// JSON, a missing `apns-id`).
        public static func response(_ response: APNsResponse) -> Response {
            Response(.response(response))
        }

        /// No answer: the transport throws `error`.
        public static func failure(_ error: APNsTransportError) -> Response {
            Response(.failure(error))
        }

        /// The same answer, without the delay.
        var withoutDelay: Response { delay == nil ? self : Response(kind) }

        /// The same answer, given after `delay`. A cancelled task stops waiting and gets
        /// ``APNsCore/APNsTransportError/Code/cancelled``; if `delay` exceeds the request's
        /// ``APNsCore/APNsRequest/timeout``, the request fails with ``APNsCore/APNsTransportError/Code/timeout``
        /// once the timeout has passed (both with `mayHaveReachedAPNs` true, as a real
        /// transport reports a request already written).
        public func delayed(by delay: Duration) -> Response {
            Response(kind, delay: delay)
        }
    }

    private struct State {
        var requests: [APNsRequest] = []
        var scripts: [String: [Response]] = [:]
        var handler: (@Sendable (APNsRequest) async -> Response)?
        var defaultResponse: Response = .accepted
        var isShutdown = false
        var inFlight = 0
        var shutdownWaiters: [CheckedContinuation<Void, Never>] = []
        /// The answers being waited for (a scripted delay, a handler), by a running number:
        /// a shutdown whose grace period has passed ends them.
        var waitingAnswers: [Int: AnswerRace] = [:]
        var nextAnswerNumber = 0
        /// Set once a shutdown's grace period has passed: answers still to come fail at once.
        var graceHasPassed = false
        var graceTimers: [Task<Void, Never>] = []
    }

    private let state = MockLock(State())
    /// Fired when ``shutdown(gracePeriod:)`` begins (see ``waitUntilShutdown()``).
    private let shutdownBegan = ShutdownSignal()

    /// A mock that accepts every request until scripted otherwise.
    public init() {}

    /// A mock that answers every request not scripted per device token with `handler`.
    public convenience init(handler: @escaping @Sendable (APNsRequest) async -> Response) {
        self.init()
        respond(using: handler)
    }

    /// Answers every request to `deviceToken` with `response`.
    public func respond(to deviceToken: DeviceToken, with response: Response) {
        respond(to: deviceToken, with: [response])
    }

    /// Answers requests to `deviceToken` with `responses` in turn; the last one answers
    /// every later request. An empty list removes the script.
    public func respond(to deviceToken: DeviceToken, with responses: [Response]) {
        state.withLock { state in
            state.scripts[deviceToken.hexString] = responses.isEmpty ? nil : responses
        }
    }

    /// Answers requests that have no script for their device token by calling `handler`.
    public func respond(using handler: @escaping @Sendable (APNsRequest) async -> Response) {
        state.withLock { $0.handler = handler }
    }

    /// Answers requests that have no script and no handler with `response`.
    public func respondByDefault(with response: Response) {
        state.withLock { $0.defaultResponse = response }
    }

    /// Every request received so far, in the order received, exactly as sent.
    public var requests: [APNsRequest] {
        state.withLock { $0.requests }
    }

    /// Waits until at least `count` requests have been received (a test that cancels or
    /// inspects work its code started in another task), checking every millisecond, for
    /// at most `timeout` of wall time.
    ///
    /// - Returns: Whether `count` requests arrived in time.
    @discardableResult
    public func waitForRequests(_ count: Int, timeout: Duration = .seconds(10)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while state.withLock({ $0.requests.count }) < count {
            guard ContinuousClock.now < deadline, (try? await Task.sleep(for: .milliseconds(1))) != nil else {
                return state.withLock { $0.requests.count } >= count
            }
        }
        return true
    }

    /// The requests received for `deviceToken`, in the order received.
    public func requests(to deviceToken: DeviceToken) -> [APNsRequest] {
        state.withLock { $0.requests.filter { $0.deviceToken == deviceToken } }
    }

    /// The device tokens scripted with `respond(to:with:)` that no request went to: a
    /// test that expects its code to reach every scripted device checks this is empty.
    /// Sorted by their hexadecimal digits.
    public var scriptedDeviceTokensNeverSent: [DeviceToken] {
        state.withLock { state in
            let sent = Set(state.requests.compactMap { $0.deviceToken?.hexString })
            return state.scripts.keys.filter { !sent.contains($0) }.sorted().compactMap { try? DeviceToken(hex: $0) }
        }
    }

    /// Forgets the requests received so far (scripts stay).
    public func removeAllRequests() {
        state.withLock { $0.requests.removeAll() }
    }

    /// Forgets every script: the per-device-token answers, the handler, and the default
    /// (``Response/accepted`` again). The requests received stay.
    public func removeAllScripts() {
        state.withLock { state in
            state.scripts.removeAll()
            state.handler = nil
            state.defaultResponse = .accepted
        }
    }

    /// What answers a received request.
    private enum Next: Sendable {
        case scripted(Response)
        case handler(@Sendable (APNsRequest) async -> Response)
    }

    /// Records `request` and answers it as scripted.
    nonisolated(nonsending) public func send(_ request: APNsRequest) async throws(APNsTransportError) -> APNsResponse {
        if Task.isCancelled {
            throw .cancelled(mayHaveReachedAPNs: false, "cancelled before the mock received the request")
        }
        guard let next = receive(request) else {
            throw .shutdown("the mock transport is shut down")
        }
        defer { finishOne() }
        return try await answer(request, with: next)
    }

    /// A batch through the default sliding window, except that each request is recorded,
    /// and takes its scripted answer, when the batch makes it (in index order), not when
    /// its task happens to run.
    public func sendBatch(
        feed: RequestFeed,
        maxConcurrency: Int,
        makeRequest: @escaping @Sendable (_ index: Int) -> APNsRequest?,
        onResult: @escaping @Sendable (_ index: Int, _ request: APNsRequest, _ result: Result<APNsResponse, APNsTransportError>) -> Void
    ) async {
        await sendBatchWindow(feed: feed, maxConcurrency: maxConcurrency, makeRequest: makeRequest, start: { request in
            guard let next = self.receive(request) else {
                return { .failure(.shutdown("the mock transport is shut down")) }
            }
            return {
                defer { self.finishOne() }
                do throws(APNsTransportError) {
                    return .success(try await self.answer(request, with: next))
                } catch {
                    return .failure(error)
                }
            }
        }, onResult: onResult)
    }

    /// Records `request` and picks what answers it; `nil` once shut down. Every request
    /// received must be finished with ``finishOne()``.
    private func receive(_ request: APNsRequest) -> Next? {
        state.withLock { state in
            if state.isShutdown { return nil }
            state.requests.append(request)
            state.inFlight += 1
            if let token = request.deviceToken?.hexString, var script = state.scripts[token], !script.isEmpty {
                let response = script.count > 1 ? script.removeFirst() : script[0]
                state.scripts[token] = script
                return .scripted(response)
            }
            if let handler = state.handler { return .handler(handler) }
            return .scripted(state.defaultResponse)
        }
    }

    /// The answer `next` gives `request`, within its timeout.
    private func answer(_ request: APNsRequest, with next: Next) async throws(APNsTransportError) -> APNsResponse {
        let response: Response
        switch next {
        case .scripted(let scripted) where scripted.delay == nil:
            response = scripted
        case .scripted(let scripted):
            response = try await race(for: request) {
                try? await Task.sleep(for: scripted.delay ?? .zero)
                return scripted
            }
        case .handler(let handler):
            response = try await race(for: request) {
                let answer = await handler(request)
                if let delay = answer.delay { try? await Task.sleep(for: delay) }
                return answer
            }
        }
        return try Self.answer(response, to: request)
    }

    /// The answer `answering` gives (a scripted delay, a ``respond(using:)`` handler and
    /// any delay it returns), unless the request's timeout passes first
    /// (``APNsCore/APNsTransportError/Code/timeout``), the calling task is cancelled
    /// (``APNsCore/APNsTransportError/Code/cancelled``), or a shutdown's grace period
    /// passes (``APNsCore/APNsTransportError/Code/shutdown``), all with
    /// `mayHaveReachedAPNs` true, as a real transport reports a request already written. A
    /// handler that waits on (say) a test's gate then ends as a real request would; it runs
    /// on in a task of its own, cancelled, and its late answer is dropped.
    private func race(
        for request: APNsRequest,
        answering: @escaping @Sendable () async -> Response
    ) async throws(APNsTransportError) -> Response {
        let race = AnswerRace()
        let number = state.withLock { state -> Int? in
            if state.graceHasPassed { return nil }
            defer { state.nextAnswerNumber += 1 }
            state.waitingAnswers[state.nextAnswerNumber] = race
            return state.nextAnswerNumber
        }
        guard let number else { throw Self.shutDownBeforeAnswering }
        let answeringTask = Task { race.finish(.success(await answering())) }
        let timer = Task {
            try? await Task.sleep(for: request.timeout)
            if !Task.isCancelled {
                race.finish(.failure(.timeout(mayHaveReachedAPNs: true, "the mock did not answer within the request's timeout")))
            }
        }
        let result = await withTaskCancellationHandler {
            await race.result()
        } onCancel: {
            race.finish(.failure(.cancelled(mayHaveReachedAPNs: true, "cancelled while the mock was answering")))
        }
        state.withLock { _ = $0.waitingAnswers.removeValue(forKey: number) }
        timer.cancel()
        answeringTask.cancel()
        return try result.get().withoutDelay
    }

    /// What a request still waiting for its answer when a shutdown's grace period passes
    /// fails with: it was received, so it may have reached APNs.
    private static let shutDownBeforeAnswering = APNsTransportError(
        code: .shutdown, mayHaveReachedAPNs: true,
        detail: "the mock transport shut down (its grace period passed) before answering the request")

    /// Returns once ``shutdown()`` has begun (at once if it has), or as soon as the
    /// calling task is cancelled: a client's send waiting out a retry's backoff then ends
    /// with its last answer, as with the HTTP/2 transport.
    public func waitUntilShutdown() async {
        await shutdownBegan.wait()
    }

    /// Whether ``shutdown()`` has begun: a request sent now fails with
    /// ``APNsCore/APNsTransportError/Code/shutdown`` and is not recorded.
    public var isShutDown: Bool { shutdownBegan.isFired }

    /// Refuses new requests from now on (they fail with
    /// ``APNsCore/APNsTransportError/Code/shutdown``, not recorded) and returns when the
    /// requests in flight have been answered. As ``APNsTransport/HTTP2Transport`` does with its
    /// `shutdownGracePeriod`, it gives them 10 seconds (the transport's default) to finish:
    /// those still waiting for a scripted delay or a ``respond(using:)`` handler then fail
    /// with `shutdown` and `mayHaveReachedAPNs == true`.
    public func shutdown() async {
        await shutdown(gracePeriod: .seconds(10))
    }

    /// Refuses new requests from now on and returns when the requests in flight have been
    /// answered or `gracePeriod` has passed, whichever comes first: those still waiting for
    /// a scripted delay or a ``respond(using:)`` handler then fail with
    /// ``APNsCore/APNsTransportError/Code/shutdown`` and `mayHaveReachedAPNs == true`.
    /// `.zero` ends them at once.
    public func shutdown(gracePeriod: Duration) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state in
                state.isShutdown = true
                if state.inFlight == 0 { return true }
                state.shutdownWaiters.append(continuation)
                return false
            }
            shutdownBegan.fire()
            if resumeNow {
                continuation.resume()
            } else if gracePeriod <= .zero {
                endWaitingAnswers()
            } else {
                let timer = Task { [weak self] in
                    guard (try? await Task.sleep(for: gracePeriod)) != nil else { return }
                    self?.endWaitingAnswers()
                }
                state.withLock { $0.graceTimers.append(timer) }
            }
        }
    }

    /// Ends every answer still being waited for with `shutdown`, and any answer yet to
    /// start waiting.
    private func endWaitingAnswers() {
        let races = state.withLock { state -> [AnswerRace] in
            state.graceHasPassed = true
            defer { state.waitingAnswers.removeAll() }
            return Array(state.waitingAnswers.values)
        }
        for race in races { race.finish(.failure(Self.shutDownBeforeAnswering)) }
    }

    private func finishOne() {
        let (waiters, timers) = state.withLock { state -> ([CheckedContinuation<Void, Never>], [Task<Void, Never>]) in
            state.inFlight -= 1
            guard state.inFlight == 0, state.isShutdown else { return ([], []) }
            defer {
                state.shutdownWaiters.removeAll()
                state.graceTimers.removeAll()
            }
            return (state.shutdownWaiters, state.graceTimers)
        }
        for timer in timers { timer.cancel() }
        for waiter in waiters { waiter.resume() }
    }

    private static func answer(_ response: Response, to request: APNsRequest) throws(APNsTransportError) -> APNsResponse
    {
        var headers: [HeaderField] = []
        if let apnsID = request.header("apns-id") {
            headers.append(HeaderField(name: "apns-id", value: apnsID))
        }
        switch response.kind {
        case .failure(let error):
            throw error
        case .response(let response):
            return response
        case .accepted(let uniqueID):
            if let requestID = request.header("apns-request-id") {
                headers.append(HeaderField(name: "apns-request-id", value: requestID))
            }
            if let channelAnswer = channelManagementAnswer(to: request, headers: headers) { return channelAnswer }
            if let uniqueID { headers.append(HeaderField(name: "apns-unique-id", value: uniqueID)) }
            return APNsResponse(status: 200, headers: headers)
        case .rejected(let reason, let status, let timestamp):
            if let requestID = request.header("apns-request-id") {
                headers.append(HeaderField(name: "apns-request-id", value: requestID))
            }
            headers.append(HeaderField(name: "content-type", value: "application/json"))
            var json = "{\"reason\":\"" + jsonEscaped(reason.rawValue) + "\""
            if let timestamp = timestamp ?? (status == 410 ? Date() : nil) {
                let milliseconds = (timestamp.timeIntervalSince1970 * 1000).rounded(.down)
                json += ",\"timestamp\":" + String(Int64(exactly: milliseconds) ?? 0)
            }
            json += "}"
            return APNsResponse(status: status, headers: headers, body: Array(json.utf8))
        }
    }

    /// APNs' success answer to a channel management request (`/1/apps/<bundle ID>/channels`
    /// or `/all-channels`): 201 with a new channel ID for a creation, a configuration for a
    /// read, an empty list, 204 for a deletion; `nil` for any other request.
    private static func channelManagementAnswer(to request: APNsRequest, headers: [HeaderField]) -> APNsResponse? {
        guard request.path.hasPrefix("/1/apps/") else { return nil }
        var headers = headers.filter { $0.name != "apns-id" }
        if request.path.hasSuffix("/all-channels") {
            return APNsResponse(status: 200, headers: headers, body: Array(#"{"channels":[]}"#.utf8))
        }
        switch request.method {
        case .post:
            var id = [UInt8](repeating: 0, count: 16)
            for index in id.indices { id[index] = UInt8.random(in: 0...255) }
            headers.append(HeaderField(name: "apns-channel-id", value: Data(id).base64EncodedString()))
            return APNsResponse(status: 201, headers: headers)
        case .get:
            return APNsResponse(status: 200, headers: headers, body: Array(#"{"message-storage-policy":0,"push-type":"LiveActivity"}"#.utf8))
        default:
            return APNsResponse(status: 204, headers: headers)
        }
    }

    private static func jsonEscaped(_ string: String) -> String {
        var out = ""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\u{00}"..."\u{1F}":
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
