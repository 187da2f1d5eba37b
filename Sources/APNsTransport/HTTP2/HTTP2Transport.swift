import CoreMetrics
import APNsCore
import Synchronization

/// The production ``APNsCore/PushTransport``: HTTP/2 over TLS to APNs, on nghttp2 and OpenSSL,
/// with a pool of long-lived connections.
///
/// ```swift
/// let transport = HTTP2Transport(configuration: .init(environment: .production, connectionCount: 2))
/// let client = APNsClient(environment: .production, credentials: credentials, transport: transport)
/// // …
/// await transport.shutdown()
/// ```
///
/// **Connections.** Each connection is an nghttp2 client session driven by one of the
/// process's I/O threads: one event loop per core (epoll on Linux), each multiplexing
/// many connections, shared by every transport, so a thousand idle connections cost
/// descriptors and memory, not threads. Connections are opened (name resolution, TCP,
/// a proxy's CONNECT, TLS) on short-lived worker threads, one per attempt in
/// progress, that end two seconds after the last attempt. The environment variable
/// `APNS_IO_THREADS` (1 to 64) sets another number of loops for the process.
/// Connections open lazily, when requests need them, up to
/// ``Configuration/connectionCount``, and stay open; an idle one is PINGed
/// (RFC 9113 §6.7) and closed if the PING goes unanswered. After a failed attempt the
/// pool waits an exponential, jittered delay before the next one
/// (``Configuration/reconnectBackoffBase`` to ``Configuration/reconnectBackoffMax``);
/// it never connects sooner, since APNs treats rapid reconnects as an attack. While it
/// waits with no connection up, a ``send(_:)`` whose deadline comes before the next
/// attempt fails at once with ``APNsCore/APNsTransportError/Code/connectionFailed`` (never
/// sent); the others wait for that attempt, as a batch's requests do (see
/// ``sendBatch(count:maxConcurrency:makeRequest:onResult:)``), and each failed attempt
/// fails the requests waiting for it.
///
/// **Streams and back-pressure.** Each connection honours the server's
/// SETTINGS_MAX_CONCURRENT_STREAMS (APNs starts at 1 and raises it after the first
/// answered request). A request goes to a connection with a free stream; when none has
/// one, ``send(_:)`` waits in a queue of at most ``Configuration/maxQueuedRequests``;
/// beyond that it fails at once with ``APNsCore/APNsTransportError/Code/queueFull``.
///
/// **Many at once.** ``sendBatch(count:maxConcurrency:makeRequest:onResult:)`` (and
/// ``APNsCore/APNsClient``'s batch sends, which use it) makes, sends and completes requests on
/// the I/O threads, a window at a time, without a task per request: about a third
/// less CPU per notification than ``send(_:)`` from as many tasks.
///
/// **Senders on the I/O thread.** ``taskExecutor`` is the transport's I/O thread as a
/// task executor; with ``Configuration/threadPlacement`` set to
/// ``Configuration/ThreadPlacement/taskExecutorThread`` every connection runs there, and
/// tasks that prefer it (`withTaskExecutorPreference`) send and are resumed without a
/// thread switch: about a fifth less CPU per `send` from 100 tasks, two fifths from a
/// task per notification on two cores (see <doc:SendingAtScale>).
///
/// **Requests the server did not process** (above a GOAWAY's last-stream-id, RFC 9113
/// §6.8; RST_STREAM REFUSED_STREAM, §8.7) are sent again inside the transport, first in
/// line, on another connection when there is one, up to ``Configuration/maxRequeues``
/// times; then they fail with ``APNsCore/APNsTransportError/Code/goAway`` or
/// ``APNsCore/APNsTransportError/Code/streamRefused`` and `mayHaveReachedAPNs == false`. The GOAWAY
/// reason (debug data) is logged at debug level (APNs rotates connections routinely) and
/// included in the error's detail.
///
/// **Other hosts.** A request whose `:authority` differs from the configured environment's
/// (for example channel management on `api-manage-broadcast.push.apple.com:2196`) goes
/// to a separate pool for that authority, created on first use with the same settings
/// and TLS configuration.
///
/// **Many credentials.** APNs pins a connection to the key of the first provider token
/// it carried, and a connection carries one client certificate for its life. So the
/// transport keeps one pool per authority *and* ``Credential`` (a provider token's team
/// and key id; a request's own client certificate, see
/// ``APNsCore/APNsCredentials/clientCertificate(_:)``), created on first use and closed
/// after ``Configuration/credentialIdleTimeout`` without requests: many clients, one per
/// app or team, share one transport, each on connections of its own. All pools share
/// ``Configuration/maxConnections`` fairly: every pool that
/// wants a connection gets one, and a busy pool gets at most its fair share while others
/// wait. ``credentialStatistics`` and ``closeConnections(for:)`` serve a platform that
/// adds and removes tenants at run time. A connection answered with
/// `UnrelatedKeyIdInToken` is never used again. See <doc:ServingManyAppsAndTeams>.
///
/// **Timeouts and cancellation.** ``APNsCore/APNsRequest/timeout`` counts from the call, queueing
/// included; on expiry a sent request's stream is reset (RST_STREAM CANCEL) and the call
/// throws ``APNsCore/APNsTransportError/Code/timeout`` (`mayHaveReachedAPNs` true once sent).
/// Cancelling the calling task does the same with ``APNsCore/APNsTransportError/Code/cancelled``.
///
/// Call ``shutdown()`` before releasing the transport: it closes its connections.
public final class HTTP2Transport: PushTransport {
    /// The configuration the transport was created with.
    public let configuration: Configuration

    /// The endpoint of ``Configuration/environment``: the one source of truth
    /// ``APNsCore/APNsClient`` reads its environment from.
    public var environment: APNsEnvironment? { configuration.environment }

    /// The I/O thread of this transport as a task executor (SE-0417), for the tasks that
    /// send: `nil` only when the process has no descriptors left for an I/O thread.
    ///
    /// With ``Configuration/threadPlacement`` set to
    /// ``Configuration/ThreadPlacement/taskExecutorThread``, every connection of the
    /// transport runs on this thread. A task that prefers it then queues its request, and
    /// is resumed with the answer, on the thread that writes and reads the connection:
    /// no thread is woken per notification.
    ///
    /// ```swift
    /// await withTaskExecutorPreference(transport.taskExecutor) {
    ///     await withTaskGroup(of: Void.self) { group in
    ///         for worker in 0..<100 {
    ///             group.addTask { /* one `client.send` after another */ }
    ///         }
    ///     }
    /// }
    /// ```
    ///
    /// The thread runs those tasks' nonisolated code between its I/O, so that code must
    /// not block (no synchronous file or database calls, no long computation): while it
    /// runs, the transport's connections on the thread are neither read nor written. With
    /// ``Configuration/ThreadPlacement/spread`` (the default) the thread drives one of the
    /// transport's connections (the first, or one that is up when the executor is first
    /// asked for) and the others go to other threads: a one-connection transport shares
    /// its thread with these tasks either way, while a send that goes to a connection on
    /// another thread costs the same thread switches as any task.
    /// See <doc:SendingAtScale>.
    public var taskExecutor: (any TaskExecutor)? { threads.homeLoop() }

    /// The I/O thread of each new connection, and the home of ``taskExecutor``.
    let threads: ConnectionThreads

    private let statisticsBox: StatisticsBox
    private let connector: HTTP2Connector
    /// The TLS settings of the connector, when it is the TLS one (per-certificate pools
    /// derive theirs from it); `nil` for an injected connector.
    private let tls: TLSConfiguration?
    /// Makes the connector of a TLS configuration (`nil` for an injected connector).
    private let makeConnector: (@Sendable (TLSConfiguration) -> HTTP2Connector)?
    let pools = Mutex<Pools>(Pools())
    let budget: SharedConnectionBudget
    /// The last raw `authorization` value read and its credential (requests built without
    /// a typed token: the JWT is parsed once, not per request).
    private let lastRawToken = Mutex<(value: String, credential: Credential)?>(nil)
    /// Closes idle pools (see ``Configuration/credentialIdleTimeout``).
    private let sweeper = Mutex<Task<Void, Never>?>(nil)
    /// Fired when ``shutdown()`` begins (see ``waitUntilShutdown()``).
    private let shutdownBegan = ShutdownSignal()

    /// A pool's identity: where it connects, and what its connections present.
    struct PoolKey: Hashable, Sendable {
        var authority: String
        var credential: Credential
    }

    struct Pools: Sendable {
        var pools: [PoolKey: HTTP2ConnectionPool] = [:] {
            didSet {
                recent = nil
                recentToken = nil
                recentTokenPool = nil
            }
        }
        /// The pool found last, with its key: most requests go where the one before went,
        /// and comparing two keys costs less than hashing one (three strings).
        private var recent: (key: PoolKey, pool: HTTP2ConnectionPool)?
        /// The provider token and authority of the pool found last by token: a request
        /// carrying that token to that authority goes to that pool, without making its
        /// key. Requests carry copies of one token, which share their storage, so the
        /// comparison is by reference (the token is held, so that its identity is not
        /// reused), and equal authorities are usually one string, which compares at once.
        /// Three fields, not one object, so that a miss (tenants taking turns) allocates
        /// nothing.
        private var recentToken: ProviderToken?
        private var recentAuthority = ""
        private var recentTokenPool: HTTP2ConnectionPool?
        var shutDown = false
        /// The shutdown under way (the first ``HTTP2Transport/shutdown()`` or the
        /// transport's deinit started it): every later caller waits for the same one.
        var shutdownTask: Task<Void, Never>?

        /// Marks the transport shut down and starts closing every pool, once: the pools
        /// leave the table (new requests fail with `shutdown`) and one task gives their
        /// in-flight requests `gracePeriod`, then closes them. Returns that task.
        mutating func beginShutdown(gracePeriod: Duration) -> Task<Void, Never> {
            if let shutdownTask { return shutdownTask }
            shutDown = true
            let all = Array(pools.values)
            pools.removeAll()
            let task = Task {
                await withTaskGroup(of: Void.self) { group in
                    for pool in all {
                        group.addTask { await pool.shutdown(gracePeriod: gracePeriod) }
                    }
                }
            }
            shutdownTask = task
            return task
        }

        /// The pool for `key`, if there is one.
        mutating func pool(for key: PoolKey) -> HTTP2ConnectionPool? {
            if let recent, recent.key == key { return recent.pool }
            guard let pool = pools[key] else { return nil }
            recent = (key, pool)
            return pool
        }

        /// The pool of the last request looked up by its token, if `request` carries that
        /// token to that authority.
        func recentPool(for request: APNsRequest) -> HTTP2ConnectionPool? {
            guard let recentToken, request.carries(recentToken), recentAuthority == request.authority else { return nil }
            return recentTokenPool
        }

        /// Remembers `pool` as the one for `token` and `authority`, if it is still the pool
        /// found last by key (no pool was added or closed since: either clears that).
        mutating func remember(_ pool: HTTP2ConnectionPool, carrying token: ProviderToken, to authority: String) {
            guard let recent, recent.pool === pool else { return }
            recentToken = token
            recentAuthority = authority
            recentTokenPool = pool
        }
    }

    /// Creates a transport; no connection opens until the first request.
    public convenience init(configuration: Configuration) {
        let tls = configuration.tls
        if tls.trustRoots.verifiesNothing {
            configuration.logger.warning(
                "TLS certificate verification is off (insecureNoVerification_forTestingOnly): for tests against a local server only",
                metadata: ["apns.host": "\(configuration.environment.host)"]
            )
        }
        let resolver = configuration.resolver
        let attempts = ConnectionAttemptCounter()
        let health = AddressHealth()
        // One connector per TLS configuration: the transport's own, and one per client
        // certificate a request asks for.
        let makeConnector: @Sendable (TLSConfiguration) -> HTTP2Connector = { tls in
            { (endpoint, timeout) throws(APNsTransportError) -> any HTTP2ByteStream in
                // Every attempt resolves the host again and starts one address further on.
                let choice = AddressChoice(resolver: resolver, rotation: attempts.next(), health: health)
                return try TLSStream.connect(to: endpoint, configuration: tls, timeout: timeout, addresses: choice)
            }
        }
        self.init(configuration: configuration, tls: tls, makeConnector: makeConnector, connector: makeConnector(tls))
    }

    /// Creates a transport whose connections come from `connector` (tests use plain
    /// sockets with an in-process HTTP/2 server).
    init(
        configuration: Configuration,
        tls: TLSConfiguration? = nil,
        makeConnector: (@Sendable (TLSConfiguration) -> HTTP2Connector)? = nil,
        connector: @escaping HTTP2Connector
    ) {
        self.configuration = configuration
        self.connector = connector
        self.tls = tls
        self.makeConnector = makeConnector
        self.statisticsBox = StatisticsBox(metrics: TransportMetrics(factory: configuration.metricsFactory ?? MetricsSystem.factory))
        self.budget = SharedConnectionBudget(limit: max(1, configuration.maxConnections))
        self.threads = ConnectionThreads(placement: configuration.threadPlacement)
    }

    /// The counters so far: requests in flight, sent, responses by status, rejections by
    /// reason, failures by code, re-queued requests, connections opened and lost,
    /// reconnects, GOAWAYs, frames.
    public var statistics: Statistics { statisticsBox.snapshot }

    /// Requests that count as waiting for a stream against
    /// ``Configuration/maxQueuedRequests``, over every pool (for tests and diagnostics).
    var waitingRequests: Int {
        pools.withLock { Array($0.pools.values) }.reduce(0) { $0 + $1.waitingRequests }
    }

    /// Sends `request` on a pooled connection and returns APNs' answer, whatever its status.
    ///
    /// Runs on the caller's executor (`nonisolated(nonsending)`, as the protocol's
    /// requirement): the request is queued from the calling task's thread, and the caller
    /// resumes on its own executor when the I/O thread has the answer.
    ///
    /// - Throws: ``APNsCore/APNsTransportError`` when no answer arrived: `queueFull`, `shutdown`,
    ///   `connectionFailed`/`tlsFailure` (not sent), `goAway`/`streamRefused` (not
    ///   processed, after the transport's own re-sends), `timeout`, `cancelled`,
    ///   `connectionClosed`, `streamReset`, `protocolError`; see
    ///   ``APNsCore/APNsTransportError/mayHaveReachedAPNs`` for whether a retry could duplicate.
    nonisolated(nonsending) public func send(_ request: APNsRequest) async throws(APNsTransportError) -> APNsResponse {
        let pool = try pool(for: request)
        let now = MonotonicTime.now()
        let pending = PendingRequest(
            request: request,
            deadline: MonotonicTime.deadline(after: request.timeout, from: now),
            statistics: pool.statistics
        )
        pool.statistics.recordAccepted()
        let outcome = await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<PendingRequest.Outcome, Never>) in
                if pending.install(continuation) { pool.enqueue(pending, now: now) }
            }
        } onCancel: {
            // A task cancelled already runs this first: the request fails before it is
            // queued, with `mayHaveReachedAPNs` false.
            if pending.cancel() { self.queuedRequestCancelled() }
        }
        return try outcome.get()
    }

    /// A request was cancelled while queued: every pool's next scan looks for it (the
    /// request may have been handed to another pool of its credential, see
    /// ``HTTP2ConnectionPool/redirect``). Cancellation is rare; pools are few.
    private func queuedRequestCancelled() {
        for pool in pools.withLock({ Array($0.pools.values) }) { pool.queuedRequestFinished() }
    }

    /// Sends many requests from the I/O threads: each finished request hands its
    /// result to `onResult` and makes the next one on the thread that finished it, so the
    /// batch costs no task and no task switch per request (see ``APNsCore/PushTransport``
    /// for the contract: every index made once, in order; one result per request made).
    ///
    /// The window (`maxConcurrency`) is the batch's back-pressure: its requests wait in
    /// the pool's queue like those of ``send(_:)`` (first come, first served) but are not
    /// counted against ``Configuration/maxQueuedRequests``, which bounds what many
    /// independent callers may pile up. While the pool backs off after a failed connection
    /// attempt they wait for the next attempt (each failed attempt fails the requests
    /// waiting for it), unless their deadline comes before it: then they fail at once,
    /// never sent. Timeouts count from when each request is made.
    /// A window wider than the streams the pool can open (``Configuration/connectionCount``
    /// × the streams per connection) only makes requests wait longer.
    public func sendBatch(
        count: Int,
        maxConcurrency: Int,
        makeRequest: @escaping @Sendable (_ index: Int) -> APNsRequest?,
        onResult: @escaping @Sendable (_ index: Int, _ request: APNsRequest, _ result: Result<APNsResponse, APNsTransportError>) -> Void
    ) async {
        guard count > 0 else { return }
        await run(makeBatch(count: count, feed: nil, maxConcurrency: maxConcurrency, makeRequest: makeRequest, onResult: onResult))
    }

    /// An open-ended batch: like ``sendBatch(count:maxConcurrency:makeRequest:onResult:)``,
    /// for the indices `feed` supplies while it runs (see ``APNsCore/RequestFeed``). Each
    /// supplied index is made when the window has room, on the thread that freed the room
    /// or, when the batch was waiting for work, on the producer's thread in
    /// ``APNsCore/RequestFeed/supply(upTo:)``. Returns once the feed is closed and every
    /// supplied index has its result; if the task is cancelled, the feed is sealed and the
    /// indices supplied but not made are made and failed with `cancelled` here.
    public func sendBatch(
        feed: RequestFeed,
        maxConcurrency: Int,
        makeRequest: @escaping @Sendable (_ index: Int) -> APNsRequest?,
        onResult: @escaping @Sendable (_ index: Int, _ request: APNsRequest, _ result: Result<APNsResponse, APNsTransportError>) -> Void
    ) async {
        await run(makeBatch(count: 0, feed: feed, maxConcurrency: maxConcurrency, makeRequest: makeRequest, onResult: onResult))
    }

    /// The batch of a ``sendBatch(count:maxConcurrency:makeRequest:onResult:)`` or
    /// ``sendBatch(feed:maxConcurrency:makeRequest:onResult:)`` call.
    private func makeBatch(
        count: Int,
        feed: RequestFeed?,
        maxConcurrency: Int,
        makeRequest: @escaping @Sendable (_ index: Int) -> APNsRequest?,
        onResult: @escaping @Sendable (_ index: Int, _ request: APNsRequest, _ result: Result<APNsResponse, APNsTransportError>) -> Void
    ) -> BatchSend {
        BatchSend(
            count: count,
            feed: feed,
            window: maxConcurrency,
            route: { request in
                do throws(APNsTransportError) {
                    return .success(try self.pool(for: request))
                } catch {
                    return .failure(error)
                }
            },
            fallbackStatistics: statisticsBox,
            makeRequest: makeRequest,
            onResult: onResult
        )
    }

    /// Runs `batch` until it is over; if the task is cancelled, the requests never made
    /// are made and failed afterwards, on the caller's task.
    private func run(_ batch: BatchSend) async {
        await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                batch.start(continuation)
            }
        } onCancel: {
            batch.cancel()
        }
        batch.failUnmade()
    }

    /// Stops taking requests (new ones fail with ``APNsCore/APNsTransportError/Code/shutdown``),
    /// fails queued ones, gives in-flight ones up to ``Configuration/shutdownGracePeriod``
    /// to finish (then fails them with `shutdown` and `mayHaveReachedAPNs == true`),
    /// closes every connection with GOAWAY, and returns when every connection has closed.
    /// A connection attempt still under way carries nothing and is given up at once, not
    /// waited for.
    ///
    /// Every caller returns only then: a second call while the first is under way waits
    /// for the same shutdown (as does a `ServiceGroup` racing an explicit call); a call
    /// after it has finished returns at once.
    public func shutdown() async {
        let grace = configuration.shutdownGracePeriod
        let task = pools.withLock { $0.beginShutdown(gracePeriod: grace) }
        shutdownBegan.fire()
        sweeper.withLock { $0?.cancel() }
        await task.value
    }

    /// Returns once ``shutdown()`` has begun (at once if it has; a `ServiceGroup`'s
    /// graceful shutdown calls it), or as soon as the calling task is cancelled.
    public func waitUntilShutdown() async {
        await shutdownBegan.wait()
    }

    /// Whether ``shutdown()`` has begun: a request sent now fails with ``APNsCore/APNsTransportError/Code/shutdown``.
    public var isShutDown: Bool { shutdownBegan.isFired }

    /// A transport dropped without ``shutdown()`` closes its connections itself: its
    /// in-flight requests get ``Configuration/shutdownGracePeriod``, as with `shutdown()`,
    /// and nothing stays open (a dropped transport's connections, kept alive by PINGs, held
    /// a socket and about 140 KiB each for the life of the process).
    deinit {
        let grace = configuration.shutdownGracePeriod
        let started = pools.withLock { state -> Bool in
            let open = state.shutdownTask == nil && !state.pools.isEmpty
            _ = state.beginShutdown(gracePeriod: grace)
            return open
        }
        sweeper.withLock { $0?.cancel() }
        if started {
            configuration.logger.debug("HTTP2Transport released without shutdown(): closing its connections")
        }
    }

    // MARK: Pools by authority and credential

    /// The credential whose connections carry `request` (see ``Credential``).
    func credential(of request: APNsRequest) -> Credential {
        if let token = request.providerToken { return Credential(token) }
        if let certificate = request.clientCertificate { return .certificate(certificate) }
        // A request built by hand may still carry a token: read its JWT (once per value).
        guard let value = request.authorization else { return .configured }
        if let last = lastRawToken.withLock({ $0 }), last.value == value { return last.credential }
        let jwt = value.hasPrefix("bearer ") ? String(value.dropFirst(7)) : value
        let credential = Credential.providerKey(
            teamID: ProviderToken.stringMember("iss", ofPart: 1, of: jwt) ?? "",
            keyID: ProviderToken.stringMember("kid", ofPart: 0, of: jwt) ?? ""
        )
        lastRawToken.withLock { $0 = (value, credential) }
        return credential
    }

    /// The pool of `request`'s authority and credential, created on first use.
    func pool(for request: APNsRequest) throws(APNsTransportError) -> HTTP2ConnectionPool {
        // Most requests carry the token the one before carried, to the same place.
        if let pool = pools.withLock({ $0.shutDown ? nil : $0.recentPool(for: request) }) { return pool }
        let pool = try lookUpPool(for: request)
        if let token = request.providerToken {
            pools.withLock { $0.remember(pool, carrying: token, to: request.authority) }
        }
        return pool
    }

    /// The pool of `request`'s authority and credential, by its key; created on first use.
    private func lookUpPool(for request: APNsRequest) throws(APNsTransportError) -> HTTP2ConnectionPool {
        let key = PoolKey(authority: request.authority, credential: credential(of: request))
        if let pool = pools.withLock({ $0.shutDown ? nil : $0.pool(for: key) }) { return pool }
        guard let endpoint = Self.endpoint(authority: key.authority) else {
            throw .connectionFailed("cannot connect to the :authority '\(key.authority)': expected host or host:port")
        }
        let connector = try connector(presenting: request.clientCertificate)
        let result: HTTP2ConnectionPool? = pools.withLock { state in
            if state.shutDown { return nil }
            if let pool = state.pools[key] { return pool }
            var settings = Self.poolSettings(configuration, endpoint: endpoint)
            settings.threads = threads
            settings.logger[metadataKey: "apns.credential"] = "\(key.credential)"
            let pool = HTTP2ConnectionPool(
                settings: settings,
                connector: connector,
                statistics: StatisticsBox(parent: statisticsBox),
                credential: key.credential,
                budget: budget,
                redirect: { [weak self] pending in
                    guard let self else {
                        pending.finish(.failure(.shutdown("the transport is shut down")))
                        return
                    }
                    do throws(APNsTransportError) {
                        try self.pool(for: pending.request).enqueue(pending)
                    } catch {
                        pending.finish(.failure(error))
                    }
                }
            )
            state.pools[key] = pool
            return pool
        }
        guard let result else { throw .shutdown("the transport is shut down") }
        startSweeperIfNeeded()
        return result
    }

    /// The connector for connections that present `certificate` (the transport's own
    /// when `nil`).
    private func connector(presenting certificate: APNsClientCertificate?) throws(APNsTransportError) -> HTTP2Connector {
        guard let certificate, let tls, let makeConnector else { return connector }
        guard let identity = certificate.value as? ClientIdentity else {
            throw .tlsFailure(
                "the request's client certificate (\(certificate)) is not an APNsTransport ClientIdentity: "
                    + "make it with ClientIdentity.clientCertificate"
            )
        }
        var presenting = tls
        presenting.clientIdentity = identity
        return makeConnector(presenting)
    }

    /// Starts the task that closes idle pools, once.
    private func startSweeperIfNeeded() {
        guard let idle = configuration.credentialIdleTimeout else { return }
        sweeper.withLock { task in
            guard task == nil else { return }
            let interval = max(Duration.milliseconds(50), min(idle / 4, .seconds(30)))
            task = Task.detached { [weak self] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: interval)
                    guard let self, !Task.isCancelled else { return }
                    await self.closeIdlePools(idleFor: idle)
                }
            }
        }
    }

    /// Closes the pools with nothing queued or in flight and no request for `idle`,
    /// but never the last one open: when every pool is idle, the one used last stays (a
    /// single-tenant transport keeps its connections open, as Apple asks, also after a
    /// key rotation or beside a channel management pool).
    func closeIdlePools(idleFor idle: Duration, now: UInt64 = MonotonicTime.now()) async {
        let limit = MonotonicTime.nanoseconds(idle)
        let idlePools: [HTTP2ConnectionPool] = pools.withLock { state in
            if state.shutDown || state.pools.count < 2 { return [] }
            var idleKeys: [(key: PoolKey, lastUsed: UInt64)] = []
            for (key, pool) in state.pools {
                let activity = pool.activity
                guard activity.queued == 0, now &- activity.lastUsed >= limit,
                    pool.statistics.snapshot.requestsInFlight == 0
                else { continue }
                idleKeys.append((key, activity.lastUsed))
            }
            if idleKeys.count == state.pools.count, let kept = idleKeys.indices.max(by: { idleKeys[$0].lastUsed < idleKeys[$1].lastUsed }) {
                idleKeys.remove(at: kept)
            }
            return idleKeys.compactMap { state.pools.removeValue(forKey: $0.key) }
        }
        for pool in idlePools {
            configuration.logger.debug("closing an idle pool", metadata: ["apns.credential": "\(pool.credential)"])
            await pool.close(gracePeriod: configuration.shutdownGracePeriod)
        }
    }

    /// Parses `host`, `host:port` or `[v6]:port` (RFC 3986 §3.2.2); the port defaults to 443.
    static func endpoint(authority: String) -> TLSEndpoint? {
        var host = Substring(authority)
        var port = 443
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return nil }
            let rest = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            if !rest.isEmpty {
                guard rest.hasPrefix(":"), let parsed = Int(rest.dropFirst()) else { return nil }
                port = parsed
            }
        } else if let colon = host.lastIndex(of: ":") {
            guard let parsed = Int(host[host.index(after: colon)...]) else { return nil }
            port = parsed
            host = host[..<colon]
        }
        guard !host.isEmpty, (1...65535).contains(port) else { return nil }
        return TLSEndpoint(host: String(host), port: port)
    }

    private static func poolSettings(_ configuration: Configuration, endpoint: TLSEndpoint) -> HTTP2ConnectionPool.Settings {
        var machine = HTTP2ConnectionStateMachine.Configuration()
        machine.maxStreamLimit = max(1, configuration.maxConcurrentStreamsPerConnection)
        machine.maxHeaderListSize = max(1024, configuration.maxResponseHeaderListSize)
        machine.maxBodySize = max(0, configuration.maxResponseBodySize)
        machine.maxChannelBodySize = max(0, configuration.maxChannelResponseBodySize)
        return HTTP2ConnectionPool.Settings(
            endpoint: endpoint,
            connectionCount: max(1, configuration.connectionCount),
            maxQueuedRequests: max(0, configuration.maxQueuedRequests),
            connectTimeout: configuration.connectTimeout,
            pingInterval: max(1_000_000, MonotonicTime.nanoseconds(configuration.pingInterval)),
            pingTimeout: max(1_000_000, MonotonicTime.nanoseconds(configuration.pingTimeout)),
            backoff: ReconnectBackoff(base: configuration.reconnectBackoffBase, maximum: configuration.reconnectBackoffMax),
            maxRequeues: max(0, configuration.maxRequeues),
            machine: machine,
            logger: configuration.logger,
            retireGracePeriod: configuration.shutdownGracePeriod,
            connectStagger: max(.zero, configuration.connectionStagger),
            unstaggeredConnections: max(1, configuration.unstaggeredConnections)
        )
    }
}

/// Numbers a transport's connection attempts, so that consecutive ones start at
/// different addresses of the host.
private final class ConnectionAttemptCounter: Sendable {
    private let count = Atomic<Int>(0)

    /// The next attempt's number: 0, 1, 2, …
    func next() -> Int {
        count.wrappingAdd(1, ordering: .relaxed).oldValue
    }
}
