import CoreMetrics
import Logging
import Synchronization
import Tracing

/// Sends notifications to APNs: the type most providers use.
///
/// ```swift
/// let client = APNsClient(
///     environment: .production,
///     credentials: .providerToken(tokenCache),
///     transport: transport
/// )
/// let accepted = try await client.send(notification, to: deviceToken)
/// ```
///
/// Every notification ends in exactly one outcome: ``APNsAccepted``, or an ``APNsError``
/// that says it was rejected by APNs, failed in transport (with whether it may have reached
/// APNs), or was invalid and never sent. The client retries what is safe to retry, as its
/// ``RetryPolicy`` says, reusing the `apns-id`.
///
/// Logging goes to the `Logger` you pass (none by default): `trace` per attempt, `debug`
/// per outcome and retry, `warning` only for rejections that mean the credentials are
/// wrong. Logs carry the `apns-id` and the redacted device token, never a JWT or a whole
/// device token.
public final class APNsClient: Sendable {
    /// Where requests go.
    public let environment: APNsEnvironment
    /// How the client authenticates.
    public let credentials: APNsCredentials
    /// What is retried.
    public let retryPolicy: RetryPolicy
    /// How long a call may take, every attempt and the waits between them included,
    /// counted from its first attempt: the first attempt's ``APNsRequest/timeout``, and
    /// the deadline of the retries after it. A retry is made only when, after its delay,
    /// as much time is left as the attempt before it took (the outcome is otherwise the
    /// last attempt's, saying so; see ``RetryPolicy``), and each later attempt's
    /// request has only the time left; a timeout itself is not retried (see
    /// ``RetryPolicy``). So a send takes about this long at most, whatever its attempts
    /// met: an endpoint that hangs until the connect timeout, GOAWAYs, 503s. (A renewed
    /// provider token's attempt after `ExpiredProviderToken` counts against it too, and is
    /// made only when as much time is left as the refused attempt took.)
    public let requestTimeout: Duration
    /// The logger the client writes to.
    public let logger: Logger

    /// How often this client retried, as ``statistics`` returns it. Touched only when a
    /// request is sent again, so the success path takes no lock.
    private let retryCounts = Mutex(Statistics())

    /// A snapshot of how often this client sent requests again; see ``Statistics-swift.struct``.
    public var statistics: Statistics {
        retryCounts.withLock { $0 }
    }

    let transport: any PushTransport

    /// The transport's executor for sending tasks (an HTTP/2 transport's I/O thread), or
    /// `nil`: tasks that prefer it (`withTaskExecutorPreference(client.taskExecutor)`)
    /// send and are resumed with fewer thread switches. See ``PushTransport/taskExecutor``.
    public var taskExecutor: (any TaskExecutor)? { transport.taskExecutor }

    /// The provider token source of ``credentials``, if any: read per request without
    /// copying the enum (and the existential in it) out of the client.
    let tokenSource: (any ProviderTokenSource)?
    /// The certificate of ``APNsCredentials/clientCertificate(_:)`` credentials, if any.
    let clientCertificate: APNsClientCertificate?
    /// Whether ``clientCertificate`` is set: tested per request without copying the
    /// optional (two strings and an existential) out of the client.
    let presentsClientCertificate: Bool
    /// Set when the client's environment is not its transport's: every call fails with it.
    let environmentMismatch: APNsRequestError?
    /// Counters of outcomes and retries (see ``ClientMetrics``).
    let metrics: ClientMetrics
    /// Spans per notification and per batch (see ``ClientTracing``).
    let tracing: ClientTracing
    /// Conditions warned about once while they last (refused credentials, no provider token).
    let conditions = ConditionLog()
    private let sleep: @Sendable (Duration) async throws -> Void
    /// The calls waiting out a retry's backoff, which ``shutdown()`` ends.
    let retryWaits = RetryWaits()
    let jitter: @Sendable () -> Double
    /// A test's clock for calls' deadlines, so that a test does not depend on how fast the
    /// machine is; `nil` (the default): ``MonotonicTime/now()``, read inline.
    private let testClock: (@Sendable () -> UInt64)?

    /// Now on the monotonic clock a call's deadline is read from.
    @inline(__always)
    func now() -> UInt64 {
        if let testClock { return testClock() }
        return MonotonicTime.now()
    }

    /// Creates a client.
    ///
    /// State the environment once, on the transport: without `environment`, the client
    /// sends where its transport connects (an `HTTP2Transport`'s configuration; a
    /// transport bound to no endpoint, such as `APNsTesting`'s `MockTransport`, gives
    /// ``APNsEnvironment/production``).
    ///
    /// ```swift
    /// let transport = HTTP2Transport(configuration: .init(environment: .sandbox))
    /// let client = APNsClient(credentials: .providerToken(tokenCache), transport: transport)
    /// ```
    ///
    /// An `environment` given for a transport bound to another endpoint sends nothing:
    /// every call fails with ``APNsError/invalid(_:)`` and
    /// ``APNsRequestError/Code/environmentMismatch``, naming both (a sandbox transport
    /// under a production client would otherwise open a second connection, to the other
    /// host).
    ///
    /// - Parameters:
    ///   - environment: Where requests go; by default the transport's.
    ///   - credentials: A provider token source, or `.certificate` when the transport
    ///     presents a client certificate.
    ///   - transport: What sends the requests, and where.
    ///   - retryPolicy: What is retried; ``RetryPolicy/default`` unless given.
    ///   - requestTimeout: How long a call may take, all its attempts and retry delays
    ///     included, counted from the first attempt; 30 seconds unless given.
    ///   - logger: Where to log; by default nothing is logged.
    ///   - metricsFactory: Where the client's metrics go (see <doc:Observability>); by
    ///     default swift-metrics' global factory, a no-op until the process bootstraps one.
    ///   - tracer: Where the client's spans go (see <doc:Observability>); by default
    ///     swift-distributed-tracing's global tracer, a no-op until the process bootstraps one.
    public convenience init(
        environment: APNsEnvironment? = nil,
        credentials: APNsCredentials,
        transport: any PushTransport,
        retryPolicy: RetryPolicy = .default,
        requestTimeout: Duration = APNsRequest.defaultTimeout,
        logger: Logger = Logger(label: "swift-apns", factory: { _ in SwiftLogNoOpLogHandler() }),
        metricsFactory: (any MetricsFactory)? = nil,
        tracer: (any Tracer)? = nil
    ) {
        self.init(
            environment: environment ?? transport.environment ?? .production,
            credentials: credentials,
            transport: transport,
            retryPolicy: retryPolicy,
            requestTimeout: requestTimeout,
            logger: logger,
            metricsFactory: metricsFactory,
            tracer: tracer,
            sleep: { try await Task.sleep(for: $0) },
            jitter: { Double.random(in: 0...1) }
        )
    }

    /// Creates a client with an injected sleep, jitter source and clock (for tests).
    init(
        environment: APNsEnvironment,
        credentials: APNsCredentials,
        transport: any PushTransport,
        retryPolicy: RetryPolicy,
        requestTimeout: Duration,
        logger: Logger,
        metricsFactory: (any MetricsFactory)? = nil,
        tracer: (any Tracer)? = nil,
        sleep: @escaping @Sendable (Duration) async throws -> Void,
        jitter: @escaping @Sendable () -> Double,
        now: (@Sendable () -> UInt64)? = nil
    ) {
        self.environment = environment
        self.metrics = ClientMetrics(factory: metricsFactory ?? MetricsSystem.factory, environment: environment)
        self.tracing = ClientTracing(tracer: tracer ?? InstrumentationSystem.tracer)
        if let bound = transport.environment, bound != environment {
            environmentMismatch = APNsRequestError(
                .environmentMismatch,
                "the client is set to \(environment) but its transport connects to \(bound); "
                    + "state the environment once, on the transport: APNsClient(credentials:transport:)"
            )
            logger.warning("APNs client and transport disagree on the environment; nothing will be sent", metadata: [
                "apns.environment": "\(environment)", "apns.transport-environment": "\(bound)",
            ])
        } else {
            environmentMismatch = nil
        }
        self.credentials = credentials
        switch credentials {
        case .providerToken(let source):
            tokenSource = source
            clientCertificate = nil
        case .clientCertificate(let certificate):
            tokenSource = nil
            clientCertificate = certificate
        case .certificate:
            tokenSource = nil
            clientCertificate = nil
        }
        presentsClientCertificate = clientCertificate != nil
        self.transport = transport
        self.retryPolicy = retryPolicy
        self.requestTimeout = requestTimeout
        self.logger = logger
        self.sleep = sleep
        self.jitter = jitter
        self.testClock = now
    }

    /// Sends `notification` to one device.
    ///
    /// The call is `nonisolated(nonsending)` (SE-0461): it runs on the caller's executor
    /// (the global one from a plain task, the actor's from an actor), as do the
    /// transport's `send` and the few microseconds of work around the await, so a send
    /// costs no hop to another executor and back. With thousands of tasks each awaiting
    /// its send, those hops were about 0.4 µs of CPU per notification.
    ///
    /// - Returns: The acceptance, with the `apns-id` (and `apns-unique-id` in the sandbox).
    /// - Throws: ``APNsError``: ``APNsError/rejected(_:)``, ``APNsError/failed(_:)`` or
    ///   ``APNsError/invalid(_:)``. If the task is cancelled while the client waits to
    ///   retry, the last attempt's error (APNs' answer, or its transport failure), not
    ///   ``APNsTransportError/Code/cancelled``; see ``RetryPolicy``.
    nonisolated(nonsending) public func send(
        _ notification: PushNotification,
        to deviceToken: DeviceToken
    ) async throws(APNsError) -> APNsAccepted {
        // The first attempt is made here, as both batch forms make theirs (the request
        // from `firstAttemptRequest`, the answer read by `firstAnswer`); the attempt loop
        // (`deliver`) takes over only when the answer is not final (a retry, a new
        // provider token), which few sends meet. The work before and after the await is
        // synchronous and kept out of this async frame (the task allocates it per send),
        // which holds the send's record, the request and the answer.
        let (record, first) = start(notification, to: deviceToken)
        let request: APNsRequest
        switch first {
        case .success(let made):
            request = made
        case .failure(let error):
            finish(record, .failure(error))
            throw error
        }
        let answer: Result<APNsResponse, APNsTransportError>
        do throws(APNsTransportError) {
            answer = .success(try await transport.send(request))
        } catch {
            answer = .failure(error)
        }
        switch firstOutcome(record, request, answer, to: deviceToken) {
        case .final(let outcome):
            return try outcome.get()
        case .goesOn(let resumption):
            return try await goOn(record, request, resumption, to: deviceToken)
        }
    }

    /// A send under way: what its end reports (the push type for metrics, the span and
    /// the attempt counter for tracing) and its `apns-id`.
    struct SendRecord {
        let pushType: PushType
        let apnsID: APNsID
        let span: (any Span)?
        let attempts: AttemptCounter?
    }

    /// Counts the send, opens its span, prepares the notification and makes the first
    /// attempt's request, or the error that ends the send before anything is sent.
    @inline(never)
    private func start(_ notification: PushNotification, to deviceToken: DeviceToken) -> (SendRecord, Result<APNsRequest, APNsError>) {
        metrics.sent(notification.pushType)
        let apnsID = notification.apnsID ?? .random()
        let span = tracing.startNotification(notification.pushType, apnsID: apnsID)
        let record = SendRecord(
            pushType: notification.pushType,
            apnsID: apnsID,
            span: span,
            attempts: span == nil ? nil : AttemptCounter()
        )
        do throws(APNsError) {
            let prepared: PushNotification.Prepared
            do {
                prepared = try notification.prepared()
            } catch {
                logger.debug("notification is invalid", metadata: ["apns.error": "\(error)"])
                throw .invalid(error)
            }
            if let environmentMismatch { throw .invalid(environmentMismatch) }
            if Task.isCancelled {
                throw Delivery(retryPolicy: retryPolicy).cancelled("cancelled before attempt 1")
            }
            let request = try firstAttemptRequest(prepared, apnsID: apnsID, to: deviceToken)
            record.attempts?.value += 1
            return (record, .success(request))
        } catch {
            return (record, .failure(error))
        }
    }

    /// What a send's first answer led to.
    enum FirstOutcome {
        /// The send's outcome, already reported (metrics, span).
        case final(Result<APNsAccepted, APNsError>)
        /// The attempt loop goes on from this decision (``goOn(_:_:_:to:)``).
        case goesOn(Resumption)
    }

    /// Reads the send's first answer: its outcome (reported here), or the decision the
    /// attempt loop goes on from.
    @inline(never)
    private func firstOutcome(
        _ record: SendRecord,
        _ request: APNsRequest,
        _ answer: Result<APNsResponse, APNsTransportError>,
        to deviceToken: DeviceToken
    ) -> FirstOutcome {
        let outcome: Result<APNsAccepted, APNsError>
        switch firstAnswer(request, answer, deviceToken: deviceToken) {
        case .accepted(let accepted): outcome = .success(accepted)
        case .ended(let error): outcome = .failure(error)
        case .goesOn(let resumption): return .goesOn(resumption)
        }
        finish(record, outcome)
        return .final(outcome)
    }

    /// The attempt loop, from the decision the first answer (to `request`) led to: what
    /// few sends meet, in an async frame of its own. The notification is taken back from
    /// the request (its fixed headers and body, shared), as a streamed batch's retry does.
    @inline(never)
    private func goOn(
        _ record: SendRecord,
        _ request: APNsRequest,
        _ resumption: Resumption,
        to deviceToken: DeviceToken
    ) async throws(APNsError) -> APNsAccepted {
        guard let prepared = PushNotification.Prepared(resending: request) else {
            preconditionFailure("a device push that cannot be sent again")
        }
        let result: Result<APNsAccepted, APNsError>
        do throws(APNsError) {
            result = .success(
                try await deliver(prepared, apnsID: record.apnsID, to: deviceToken, resuming: resumption, attempts: record.attempts)
            )
        } catch {
            result = .failure(error)
        }
        finish(record, result)
        return try result.get()
    }

    /// Counts the send's result and ends its span.
    @inline(never)
    private func finish(_ record: SendRecord, _ result: Result<APNsAccepted, APNsError>) {
        metrics.finished(record.pushType, result)
        tracing.end(record.span, result, attempts: record.attempts?.value)
    }

    /// Shuts the transport down: new sends fail with ``APNsTransportError/Code/shutdown``;
    /// sends in flight finish or fail. Sends waiting out a retry's backoff end at once with
    /// what their last attempt ended in (a 503 stays that rejection: nothing was
    /// delivered), as when their task is cancelled, and the call returns only after they
    /// have: a process that exits once it returns loses no outcome.
    ///
    /// The transport's, so every client that shares it stops too. With one transport for
    /// many clients (one per tenant), drop a client to remove it and shut the transport
    /// down once, when the last is done (see <doc:ServingManyAppsAndTeams>).
    public func shutdown() async {
        await retryWaits.shutdown()
        await transport.shutdown()
    }

    /// A notification's log metadata (as ``deliver(_:apnsID:to:resuming:attempts:)`` attaches it) and `extra`.
    static func metadata(_ apnsID: APNsID?, _ deviceToken: DeviceToken, _ extra: Logger.Metadata) -> Logger.Metadata {
        extra.merging(["apns.id": "\(apnsID?.uuidString ?? "none")", "apns.device-token": "\(deviceToken.redacted)"]) { $1 }
    }

    /// Sends one prepared notification, retrying as the policy allows.
    func deliver(
        _ prepared: PushNotification.Prepared,
        apnsID: APNsID,
        to deviceToken: DeviceToken,
        resuming resumption: Resumption? = nil,
        attempts: AttemptCounter? = nil
    ) async throws(APNsError) -> APNsAccepted {
        // The metadata is built only when a message is logged: formatting the id and
        // the redacted token for every notification costs more than the rest of the
        // client's per-notification work when nothing is logged.
        return try await perform(
            "notification",
            logger: logger,
            metadata: { Self.metadata(apnsID, deviceToken, [:]) },
            request: { (providerToken: ProviderToken?, timeout: Duration) throws(APNsRequestError) -> APNsRequest in
                try prepared.request(
                    to: deviceToken,
                    apnsID: apnsID,
                    environment: self.environment,
                    providerToken: providerToken,
                    timeout: timeout
                )
            },
            interpret: { response, request in
                if let accepted = APNsAccepted(response: response, request: request) { return .success(accepted) }
                return .failure(Self.notAccepted(response, to: request, apnsID: apnsID, deviceToken: deviceToken))
            },
            resuming: resumption,
            attempts: attempts
        )
    }

    /// The name a refusal's reason has as a logged condition: Apple's reasons their own,
    /// every other one `other` (a server inventing a reason per answer would otherwise
    /// make each answer a new condition, a warning and an entry kept per notification).
    static func conditionName(of reason: APNsReason?) -> String {
        guard let reason else { return "none" }
        return reason.isDocumented ? reason.rawValue : "other"
    }

    /// Logs `error`, which ends a call after `attempt`, as every call does: a warning the
    /// first time the credentials are refused (once per reason until something is
    /// accepted again, and at most once a minute, see ``ConditionLog``), debug otherwise;
    /// `metadata` is built only
    /// when logged.
    func logEnding(
        _ error: APNsError,
        of what: String,
        attempt: Int,
        providerToken: ProviderToken?,
        logger: Logger,
        metadata: () -> Logger.Metadata
    ) {
        var level: Logger.Level = .debug
        if error.rejection?.remedy == .fixCredentials,
            conditions.begins("credentials:" + Self.conditionName(of: error.rejection?.reason))
        {
            level = .warning
        }
        guard logger.logLevel <= level else { return }
        var decorated = logger
        for (key, value) in metadata() { decorated[metadataKey: key] = value }
        if level == .warning {
            // Which credentials to fix: a transport may serve many teams and keys.
            decorated.warning(
                "\(what) rejected: check the credentials (logged once while it lasts, and at most once a minute)",
                metadata: ["apns.error": "\(error)", "apns.credential": "\(credentialDescription(providerToken))"]
            )
        } else {
            decorated.debug("\(what) not accepted", metadata: ["apns.error": "\(error)", "apns.attempt": "\(attempt)"])
        }
    }

    /// The credentials an attempt carried, for a log line, as the transport names a
    /// connection's (`team <team ID> key <key ID>`; never the JWT), or the client
    /// certificate's description.
    func credentialDescription(_ providerToken: ProviderToken?) -> String {
        if let providerToken {
            return "team \(providerToken.teamID ?? "unknown") key \(providerToken.keyID ?? "unknown")"
        }
        if let clientCertificate { return "client certificate \(clientCertificate.description)" }
        return tokenSource == nil ? "the transport's client certificate" : "no provider token"
    }

    /// APNs' refusal of `request` (to `deviceToken`, `apnsID`), read from `response`; a
    /// response with no readable reason still becomes a rejection with its status.
    static func rejection(of response: APNsResponse, to request: APNsRequest, apnsID: APNsID?, deviceToken: DeviceToken) -> APNsRejection {
        APNsRejection(response: response, request: request)
            ?? APNsRejection(status: response.status, reason: nil, apnsID: apnsID, deviceToken: deviceToken)
    }

    /// What a device push's response other than `200` means: APNs' refusal for a 4xx or
    /// 5xx (see ``rejection(of:to:apnsID:deviceToken:)``); any other status is one APNs
    /// never answers a push with (a 2xx other than 200, a 3xx, a number past 599), so the
    /// server is not APNs or is broken: a failure that may have reached APNs, never a
    /// rejection to act on.
    static func notAccepted(_ response: APNsResponse, to request: APNsRequest, apnsID: APNsID?, deviceToken: DeviceToken) -> APNsError {
        guard (400...599).contains(response.status) else {
            return .failed(.protocolError(
                "the server answered with status \(response.status), which APNs never answers a notification with; "
                    + "it may have been delivered"))
        }
        return .rejected(rejection(of: response, to: request, apnsID: apnsID, deviceToken: deviceToken))
    }

    /// Counts the requests a call sent (its attempts, a new provider token's included),
    /// for the notification's span. Used by one task at a time.
    final class AttemptCounter: @unchecked Sendable {
        var value = 0
    }

    /// A delivery begun outside ``perform(_:logger:metadata:request:interpret:resuming:attempts:)``
    /// (a batch's first pass): its state after the first attempt, and the decision that
    /// attempt led to, which the attempt loop carries out (a new provider token, or a retry
    /// after a delay). An object, so that the optional parameter that carries it is one
    /// word in the async frames of every send, not a 273-byte value.
    final class Resumption: Sendable {
        let delivery: Delivery
        let decision: Delivery.Decision
        /// Whether the caller already gave the expired provider token of a
        /// ``Delivery/Decision/refreshProviderToken(_:)`` decision back to the source (a
        /// batch does at once, so that the requests it makes next carry a new one): the
        /// loop then only asks for the new token, and the source hears of each expired
        /// answer once.
        let expiredTokenInvalidated: Bool

        init(delivery: Delivery, decision: Delivery.Decision, expiredTokenInvalidated: Bool = false) {
            self.delivery = delivery
            self.decision = decision
            self.expiredTokenInvalidated = expiredTokenInvalidated
        }
    }

    /// `request`, asking the transport for this client's certificate when the credentials
    /// are ``APNsCredentials/clientCertificate(_:)``.
    func presentingClientCertificate(_ request: APNsRequest) -> APNsRequest {
        guard presentsClientCertificate, let certificate = clientCertificate else { return request }
        return request.presenting(certificate)
    }

    /// The provider token for the next request (`nil` with certificate credentials).
    ///
    /// - Throws: ``APNsError/invalid(_:)`` with ``APNsRequestError/Code/providerTokenUnavailable``
    ///   when the source fails, logged first: a warning once while it lasts (at most once
    ///   a minute), debug for every other notification, with `metadata`.
    func currentProviderToken(logger: Logger, metadata: () -> Logger.Metadata = { [:] }) throws(APNsError) -> ProviderToken? {
        guard let tokenSource else { return nil }
        do {
            return try tokenSource.token()
        } catch {
            let failure = APNsRequestError(
                .providerTokenUnavailable,
                header: "authorization",
                "the provider token source failed: \(error)"
            )
            let level: Logger.Level = conditions.begins("provider-token") ? .warning : .debug
            log(level, "no provider token (a warning once while it lasts, at most once a minute)", logger: logger, metadata: metadata,
                extra: ["apns.error": "\(failure)"])
            throw .invalid(failure)
        }
    }

    /// The one attempt loop behind every call to APNs (device pushes, broadcasts and
    /// channel management): fetch a provider token, build the request, send it, read the
    /// answer, and do what the ``Delivery`` state machine decides: deliver, refresh the
    /// provider token and send again at once (not counted as an attempt), retry after a
    /// backoff, or fail. The request is rebuilt for each attempt, so it carries the current
    /// token; whatever identifies it (`apns-id`, `apns-request-id`) is fixed by the caller
    /// and therefore the same on every attempt.
    ///
    /// - Parameters:
    ///   - what: What is being sent, for log messages (`notification`, `broadcast`, …).
    ///   - logger: The logger, with the call's metadata already attached.
    ///   - metadata: More metadata for every message of the call, built only when a
    ///     message is logged.
    ///   - request: Builds the request with the provider token (`nil` with certificate
    ///     credentials). An error it throws ends the call as ``APNsError/invalid(_:)``.
    ///   - interpret: Turns APNs' answer into the result, or into the
    ///     ``APNsError/rejected(_:)`` (retried as the policy says) or
    ///     ``APNsError/failed(_:)`` it means.
    ///   - resumption: A delivery the caller began (a batch's first pass): the loop goes on
    ///     from its decision.
    func perform<Success: Sendable>(
        _ what: String,
        logger: Logger,
        metadata: () -> Logger.Metadata = { [:] },
        request build: (_ providerToken: ProviderToken?, _ timeout: Duration) throws(APNsRequestError) -> APNsRequest,
        interpret: (_ response: APNsResponse, _ request: APNsRequest) -> Result<Success, APNsError>,
        resuming resumption: Resumption? = nil,
        attempts: AttemptCounter? = nil
    ) async throws(APNsError) -> Success {
        // Only this loop is asynchronous. Deciding, logging and building happen in the
        // synchronous steps below, whose temporaries live on the thread's stack, and the
        // loop's state is one object, so the async frame holds little more than a
        // reference and the request in flight. Written as one async function, the loop's
        // frame (allocated per call from the task's allocator, and by malloc past its
        // first slab of 984 bytes) was 16.7 KB, and making and freeing it cost a third of
        // the CPU of a send from a task of its own. The state object is made only once a
        // first attempt is not accepted (or when a batch resumes a delivery): most calls
        // end with their first answer and never need it.
        var loop = try startLoop(resuming: resumption)
        while true {
            switch try nextStep(loop, what, logger: logger, metadata: metadata, request: build, attempts: attempts) {
            case .wait(let delay):
                // Only a decision of the loop's state waits: `loop` exists.
                let ending: RetryWaits.Ending
                do {
                    ending = try await retryWaits.wait(delay, sleep: sleep, transportShutdown: { [transport] in await transport.waitUntilShutdown() })
                } catch {
                    throw cancelledWhileWaiting(loop)
                }
                guard ending == .waited else { throw shutDownWhileWaiting(loop, ending) }
                retried(loop)
            case .send(let request, let providerToken):
                let answer: Result<APNsResponse, APNsTransportError>
                do throws(APNsTransportError) {
                    answer = .success(try await transport.send(request))
                } catch {
                    answer = .failure(error)
                }
                switch attemptEnded(loop, answer, request: request, sentToken: providerToken, what, logger: logger, metadata: metadata, interpret: interpret) {
                case .accepted(let success):
                    return success
                case .next(let state):
                    loop = state
                }
            }
        }
    }

    /// How an attempt ended: the call's result, or the loop's state with the decision
    /// the answer led to.
    enum AttemptEnd<Success> {
        case accepted(Success)
        case next(AttemptLoop)
    }

    /// The state of one call's attempt loop, made when its first attempt is not accepted
    /// (or when a batch resumes a delivery): one object, so that the loop's async frame
    /// stays small (see ``perform(_:logger:metadata:request:interpret:resuming:attempts:)``).
    final class AttemptLoop {
        var delivery: Delivery
        /// What the last attempt (or the caller's resumption) led to, not yet carried out.
        var decision: Delivery.Decision?
        /// The token the source gave after an ExpiredProviderToken, for the next attempt.
        var replacementToken: ProviderToken?
        /// The error whose retry the loop waits for.
        var retrying: APNsError?
        /// The pending decision's expired token was already given back to the source (see
        /// ``Resumption/expiredTokenInvalidated``).
        var expiredTokenInvalidated: Bool
        /// The provider token the last attempt carried, for the log line that ends the call.
        var lastToken: ProviderToken?

        init(delivery: Delivery, decision: Delivery.Decision?, expiredTokenInvalidated: Bool = false) {
            self.delivery = delivery
            self.decision = decision
            self.expiredTokenInvalidated = expiredTokenInvalidated
        }
    }

    /// What the attempt loop does next.
    enum AttemptStep {
        /// Wait `delay` (a retry's backoff; the error is in ``AttemptLoop/retrying``),
        /// then make the next attempt.
        case wait(Duration)
        /// Send `request`, which carries `providerToken` (`nil` with certificates).
        case send(APNsRequest, providerToken: ProviderToken?)
    }

    /// The loop's state for the `resumption` of a delivery a batch began; `nil` for a new
    /// call, whose first attempt needs none. Its temporaries (a `Delivery` is about 200
    /// bytes) stay out of the async frame.
    /// - Throws: ``APNsError/invalid(_:)`` when the credentials' environment and the
    ///   client's disagree.
    @inline(never)
    private func startLoop(resuming resumption: Resumption?) throws(APNsError) -> AttemptLoop? {
        if let environmentMismatch { throw .invalid(environmentMismatch) }
        return resumption.map {
            let loop = AttemptLoop(delivery: $0.delivery, decision: $0.decision, expiredTokenInvalidated: $0.expiredTokenInvalidated)
            if case .refreshProviderToken(let expired) = $0.decision { loop.lastToken = expired }
            // The time the caller held the delivery (an array batch's first pass) does not
            // count against its deadline.
            loop.delivery.resumed(at: now())
            return loop
        }
    }

    /// The error of a call cancelled during a retry's wait.
    @inline(never)
    private func cancelledWhileWaiting(_ loop: AttemptLoop?) -> APNsError {
        (loop?.delivery ?? Delivery(retryPolicy: retryPolicy)).cancelled("cancelled while waiting to retry")
    }

    /// The error of a call whose client shut down during a retry's wait: what its last
    /// attempt ended in, as for a cancelled wait.
    @inline(never)
    private func shutDownWhileWaiting(_ loop: AttemptLoop?, _ ending: RetryWaits.Ending) -> APNsError {
        (loop?.delivery ?? Delivery(retryPolicy: retryPolicy)).cancelled(
            ending == .transportShutdown
                ? "the transport shut down while the send waited to retry" : "the client shut down while it waited to retry")
    }

    /// Counts the retry the loop waited for.
    @inline(never)
    private func retried(_ loop: AttemptLoop?) {
        guard let loop, let error = loop.retrying else { return }
        loop.retrying = nil
        retryCounts.withLock { $0.recordRetry(after: error) }
        metrics.retried(after: error)
    }

    /// Logs through `logger` with `metadata` attached, building both only at an enabled level.
    private func log(
        _ level: Logger.Level,
        _ message: @autoclosure () -> Logger.Message,
        logger: Logger,
        metadata: () -> Logger.Metadata,
        extra: @autoclosure () -> Logger.Metadata? = nil,
        file: String = #fileID,
        function: String = #function,
        line: UInt = #line
    ) {
        guard logger.logLevel <= level else { return }
        var decorated = logger
        for (key, value) in metadata() { decorated[metadataKey: key] = value }
        decorated.log(level: level, message(), metadata: extra(), file: file, function: function, line: line)
    }

    /// Carries out the pending decision (a new provider token at once, a failure, or a
    /// retry's wait) and, unless the loop must wait, prepares the next attempt's request.
    /// Without a state (`loop` is `nil`: the first attempt of a new call) there is no
    /// decision to carry out, and the attempt is prepared from a fresh ``Delivery``.
    @inline(never)  // its temporaries stay on the thread's stack, out of the async frame
    private func nextStep(
        _ loop: AttemptLoop?,
        _ what: String,
        logger: Logger,
        metadata: () -> Logger.Metadata,
        request build: (_ providerToken: ProviderToken?, _ timeout: Duration) throws(APNsRequestError) -> APNsRequest,
        attempts: AttemptCounter?
    ) throws(APNsError) -> AttemptStep {
        let delivery: Delivery
        var replacementToken: ProviderToken?
        if let loop {
            while let pending = loop.decision {
                loop.decision = nil
                switch pending {
                case .deliver, .sendAgain:
                    break  // .deliver is returned where it is decided; .sendAgain sends below.
                case .refreshProviderToken(let expired):
                    var next: ProviderToken?
                    var refreshError: (any Error)?
                    if let tokenSource {
                        if !loop.expiredTokenInvalidated { tokenSource.invalidate(expired) }
                        do { next = try tokenSource.token() } catch { refreshError = error }
                    }
                    loop.expiredTokenInvalidated = false
                    if let refreshError {
                        log(.debug, "provider token expired and the source could not make a new one; not retrying", logger: logger, metadata: metadata,
                            extra: ["apns.error": "\(refreshError)"])
                        loop.decision = loop.delivery.providerTokenRefreshFailed(refreshError, jitter: jitter(), now: now())
                        continue
                    }
                    let changed = next.map { $0 != expired } ?? false
                    if changed {
                        loop.replacementToken = next
                        retryCounts.withLock { $0.providerTokenRefreshes += 1 }
                        metrics.retried(after: nil)
                        log(.debug, "provider token expired; retrying once with a new one", logger: logger, metadata: metadata)
                    } else {
                        log(.debug, "provider token expired and the source kept it; not retrying", logger: logger, metadata: metadata)
                    }
                    loop.decision = loop.delivery.providerTokenRefreshed(changed: changed, jitter: jitter(), now: now())
                    continue
                case .retry(let delay, let error):
                    log(
                        .debug,
                        "retrying \(what)",
                        logger: logger,
                        metadata: metadata,
                        extra: ["apns.error": "\(error)", "apns.attempt": "\(loop.delivery.attempt - 1)", "apns.delay": "\(delay)"]
                    )
                    loop.retrying = error
                    return .wait(delay)
                case .fail(let error):
                    logEnding(error, of: what, attempt: loop.delivery.attempt, providerToken: loop.lastToken, logger: logger, metadata: metadata)
                    throw error
                }
                break
            }
            replacementToken = loop.replacementToken
            loop.replacementToken = nil
            delivery = loop.delivery
        } else {
            delivery = Delivery(retryPolicy: retryPolicy)
        }

        // One attempt.
        if Task.isCancelled {
            throw delivery.cancelled("cancelled before attempt \(delivery.attempt)")
        }
        let providerToken: ProviderToken?
        if let replacementToken {
            providerToken = replacementToken
        } else {
            providerToken = try currentProviderToken(logger: logger, metadata: metadata)
        }
        // The first attempt has the whole request timeout and records when it started;
        // a later one has what is left of it (the delivery's deadline).
        let now = self.now()
        var timeout = requestTimeout
        if let remaining = delivery.remainingTime(at: now) {
            guard remaining > .zero else {
                let error = delivery.deadlinePassed()
                logEnding(error, of: what, attempt: delivery.attempt, providerToken: loop?.lastToken, logger: logger, metadata: metadata)
                throw error
            }
            timeout = remaining
        }
        loop?.delivery.attemptStarting(at: now)
        var request: APNsRequest
        do {
            request = presentingClientCertificate(try build(providerToken, timeout))
        } catch {
            log(.debug, "request is invalid", logger: logger, metadata: metadata, extra: ["apns.error": "\(error)"])
            throw .invalid(error)
        }
        if loop == nil { request = request.started(at: now) }
        log(.trace, "sending \(what)", logger: logger, metadata: metadata, extra: ["apns.attempt": "\(delivery.attempt)"])
        attempts?.value += 1
        return .send(request, providerToken: providerToken)
    }

    /// Reads one attempt's answer (to `request`, which carried `sentToken`): the call's
    /// result when it is accepted, else the loop's state (made now for a first attempt)
    /// with the decision the answer leads to.
    @inline(never)  // its temporaries stay on the thread's stack, out of the async frame
    private func attemptEnded<Success: Sendable>(
        _ loop: AttemptLoop?,
        _ answer: Result<APNsResponse, APNsTransportError>,
        request: APNsRequest,
        sentToken: ProviderToken?,
        _ what: String,
        logger: Logger,
        metadata: () -> Logger.Metadata,
        interpret: (_ response: APNsResponse, _ request: APNsRequest) -> Result<Success, APNsError>
    ) -> AttemptEnd<Success> {
        let ended: APNsError
        switch answer {
        case .success(let response):
            switch interpret(response, request) {
            case .success(let success):
                conditions.endAll()
                log(.debug, "\(what) accepted", logger: logger, metadata: metadata, extra: ["apns.attempt": "\(loop?.delivery.attempt ?? 1)"])
                return .accepted(success)
            case .failure(let failure):
                ended = failure
            }
        case .failure(let error):
            ended = .failed(error)
        }
        let state = loop ?? AttemptLoop(delivery: Delivery(retryPolicy: retryPolicy, startedAt: request.startedAt, timeout: request.timeout), decision: nil)
        state.lastToken = sentToken
        state.decision = state.delivery.attemptEnded(with: ended, providerToken: sentToken, jitter: jitter(), now: now())
        return .next(state)
    }
}
