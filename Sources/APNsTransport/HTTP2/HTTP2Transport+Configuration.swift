import CoreMetrics
import APNsCore
import Logging

extension HTTP2Transport {
    /// How an ``HTTP2Transport`` connects, how many connections it keeps, how much it
    /// queues, and its timers.
    ///
    /// **Sizing the pool.** One HTTP/2 connection to APNs carries as many concurrent
    /// streams as APNs allows in SETTINGS_MAX_CONCURRENT_STREAMS: 1 until the first
    /// request with a valid provider token is answered, then typically 500–1,000. One
    /// connection therefore sustains thousands of notifications per second; 1–4
    /// connections is typical, more only when one connection's round trip × stream limit
    /// is the bottleneck. Apple asks providers to keep connections open rather than
    /// opening one per notification.
    public struct Configuration: Sendable {
        /// Where requests go: host and port for TCP, TLS SNI and `:authority`.
        public var environment: APNsEnvironment
        /// Trust, client identity and proxy settings for every connection.
        public var tls: TLSConfiguration
        /// The most connections per endpoint and credential, opened lazily as load needs
        /// them (1–4 is typical).
        public var connectionCount: Int
        /// The most connections the transport holds in all, over every authority and
        /// credential (each provider key, each client certificate has connections of its
        /// own). Shared fairly: every credential with requests to send is guaranteed one
        /// connection (when the budget is spent, the busiest credential gives one back, or,
        /// when each holds only one, an idle one, else in turns),
        /// and beyond that a credential gets at most `maxConnections / active credentials`
        /// while others wait. Default 256. A connection costs no thread of its own (the
        /// process's I/O threads drive them all), only a socket and its TLS and HTTP/2
        /// state: see <doc:ServingManyAppsAndTeams> for figures.
        public var maxConnections: Int = 256
        /// How long a credential's pool may go without a request before its connections
        /// are closed (a removed tenant, a rotated key); `nil` keeps them open for the
        /// transport's life. Default 15 minutes; a pool in use is never closed, nor the
        /// last one open: when every pool is idle, the one used last stays (one
        /// credential keeps its connections open, as Apple asks, also after a key
        /// rotation). Close one at once with ``HTTP2Transport/closeConnections(for:)``.
        public var credentialIdleTimeout: Duration? = .seconds(15 * 60)
        /// The most requests waiting for a free stream (back-pressure).
        ///
        /// A request *waits* when no stream is free for it. Requests are matched against
        /// the free streams the open connections have reported, plus one stream for each
        /// of the `connectionCount` connections not open yet (it opens on demand; APNs
        /// allows every connection at least one stream); only the requests beyond those
        /// count. A waiting request's `send` suspends until a stream frees up. A `send`
        /// that would make more than `maxQueuedRequests` requests wait fails at once with
        /// ``APNsCore/APNsTransportError/Code/queueFull`` (never sent, so safe to retry).
        ///
        /// So a burst larger than this limit is accepted while the connections have free
        /// streams for it, and `0` means never wait: `send` succeeds when a stream is free
        /// (or a connection can still be opened) and fails with `queueFull` otherwise. A
        /// connection reports streams freed by answers before it hands the answers over.
        /// Requests the server did not process and that are sent again are not limited.
        public var maxQueuedRequests: Int
        /// The cap on concurrent streams per connection, whatever the server allows.
        public var maxConcurrentStreamsPerConnection: Int
        /// How long one TCP connect plus TLS handshake may take.
        public var connectTimeout: Duration
        /// A connection that has received nothing for this long is sent a PING
        /// (RFC 9113 §6.7).
        public var pingInterval: Duration
        /// A PING not answered within this time closes the connection; the requests in
        /// flight on it fail with `mayHaveReachedAPNs == true`.
        public var pingTimeout: Duration
        /// The first delay before reconnecting after a failed connection attempt.
        public var reconnectBackoffBase: Duration
        /// The largest delay between connection attempts.
        public var reconnectBackoffMax: Duration
        /// How long ``HTTP2Transport/shutdown()`` lets requests in flight finish before it
        /// fails them and closes the connections.
        public var shutdownGracePeriod: Duration
        /// How many times a request the server did not process (GOAWAY, REFUSED_STREAM)
        /// is sent again inside the transport before it fails with `mayHaveReachedAPNs == false`.
        public var maxRequeues: Int
        /// The largest response header list accepted, in RFC 9113 §6.5.2 octets (each
        /// field's name and value plus 32). Advertised to the server as
        /// SETTINGS_MAX_HEADER_LIST_SIZE and enforced while the headers are decoded, so a
        /// server cannot expand a few bytes of HPACK into megabytes of headers. APNs answers
        /// with a few hundred octets; past the limit the stream is reset and the request fails
        /// with ``APNsCore/APNsTransportError/Code/responseTooLarge``. At least 1,024.
        public var maxResponseHeaderListSize: Int
        /// The largest response body accepted for a push (`/3/device/…`, `/4/broadcasts/…`).
        /// APNs's error bodies are well under 1 KB and a 200 has none; past the limit the
        /// stream is reset and the request fails with
        /// ``APNsCore/APNsTransportError/Code/responseTooLarge`` (its
        /// ``APNsCore/APNsTransportError/responseStatus`` says what APNs answered).
        public var maxResponseBodySize: Int
        /// The largest response body accepted for a channel management request
        /// (`/1/apps/…`): a list of all of an app's channels (up to 10,000) runs to a few
        /// hundred kilobytes.
        public var maxChannelResponseBodySize: Int
        /// Where the transport's metrics go (see <doc:Observability>); `nil`: swift-metrics'
        /// global factory, a no-op (and free on the send path) until the process
        /// bootstraps a backend.
        public var metricsFactory: (any MetricsFactory)?
        /// Where the transport logs: debug for routine events (a GOAWAY among them), warning
        /// for a lost connection and failed connects, once per condition. Nothing at info or above when all is well.
        public var logger: Logger
        /// How the host becomes addresses: asked afresh for every new connection, each
        /// connection starting at the next address so that a pool spreads over them, as
        /// Apple advises providers that open many connections (see ``HostResolver``).
        /// The system resolver by default. Not used through a ``TLSConfiguration/proxy``,
        /// which resolves the host itself.
        public var resolver: HostResolver = .system
        /// The least time between opening two connections of one pool once
        /// ``unstaggeredConnections`` are up or opening: Apple asks providers that open many
        /// connections to stagger them rather than open them all at once. The first
        /// connections (and a reconnect when none is up) never wait; `.zero` opens them all
        /// at once. 250 ms by default, so a pool of 16 has all its connections open within
        /// three seconds.
        public var connectionStagger: Duration = .milliseconds(250)
        /// How many of a pool's connections may open at the same moment before
        /// ``connectionStagger`` spaces out the rest (at least 1). 4 by default: a pool of 4
        /// connections opens them together as soon as its work needs them, so a short burst
        /// is not held to one connection's rate for the first second; a pool of 64 opens 4,
        /// then one every stagger.
        public var unstaggeredConnections: Int = 4
        /// Which of the process's I/O threads drive the transport's connections:
        /// ``ThreadPlacement/spread`` (the default) or, for senders that run on
        /// ``HTTP2Transport/taskExecutor``, ``ThreadPlacement/taskExecutorThread``.
        public var threadPlacement: ThreadPlacement = .spread

        /// Which of the process's I/O threads (one per core) drive a transport's connections.
        public enum ThreadPlacement: Sendable, Hashable {
            /// Each new connection on the least loaded I/O thread, so that a transport's
            /// connections use every core; one of them (the first) on the thread of
            /// ``HTTP2Transport/taskExecutor``. The default.
            case spread
            /// Every connection of the transport on one I/O thread: the one
            /// ``HTTP2Transport/taskExecutor`` runs tasks on. A task that prefers that
            /// executor (`withTaskExecutorPreference`) queues its request, and is resumed
            /// with the answer, on the thread that writes and reads the connection: no other
            /// thread is woken per notification. One thread then does the transport's I/O
            /// and those tasks' work; see <doc:SendingAtScale>.
            case taskExecutorThread
        }

        /// Creates a configuration.
        ///
        /// - Parameters:
        ///   - environment: The APNs endpoint, for example ``APNsCore/APNsEnvironment/production``.
        ///   - tls: TLS settings; the default verifies APNs against the system trust store.
        ///   - connectionCount: Connections per endpoint (at least 1).
        ///   - maxQueuedRequests: Requests that may wait for a stream (at least 0).
        ///   - maxConcurrentStreamsPerConnection: Cap on streams per connection (at least 1).
        ///   - connectTimeout: Limit for TCP connect plus TLS handshake.
        ///   - pingInterval: Idle time before a PING.
        ///   - pingTimeout: Time a PING may go unanswered.
        ///   - reconnectBackoffBase: First reconnect delay.
        ///   - reconnectBackoffMax: Largest reconnect delay.
        ///   - shutdownGracePeriod: Time in-flight requests get at shutdown.
        ///   - maxRequeues: Re-sends of a request the server did not process.
        ///   - maxResponseHeaderListSize: The largest response header list (RFC 9113 §6.5.2 octets).
        ///   - maxResponseBodySize: The largest response body for a push.
        ///   - maxChannelResponseBodySize: The largest response body for a channel management request.
        ///   - metricsFactory: Where the metrics go; swift-metrics' global factory by default.
        ///   - logger: Where the transport logs; nothing by default. It logs at debug and
        ///     trace, and warns only when something is wrong (a lost connection, a failed connect).
        public init(
            environment: APNsEnvironment,
            tls: TLSConfiguration = .default,
            connectionCount: Int = 1,
            maxQueuedRequests: Int = 10_000,
            maxConcurrentStreamsPerConnection: Int = 1_000,
            connectTimeout: Duration = .seconds(10),
            pingInterval: Duration = .seconds(60),
            pingTimeout: Duration = .seconds(10),
            reconnectBackoffBase: Duration = .milliseconds(500),
            reconnectBackoffMax: Duration = .seconds(60),
            shutdownGracePeriod: Duration = .seconds(10),
            maxRequeues: Int = 3,
            maxResponseHeaderListSize: Int = 16_384,
            maxResponseBodySize: Int = 16_384,
            maxChannelResponseBodySize: Int = 4 << 20,
            logger: Logger = Logger(label: "swift-apns.transport", factory: { _ in SwiftLogNoOpLogHandler() }),
            metricsFactory: (any MetricsFactory)? = nil
        ) {
            self.metricsFactory = metricsFactory
            self.environment = environment
            self.tls = tls
            self.connectionCount = connectionCount
            self.maxQueuedRequests = maxQueuedRequests
            self.maxConcurrentStreamsPerConnection = maxConcurrentStreamsPerConnection
            self.connectTimeout = connectTimeout
            self.pingInterval = pingInterval
            self.pingTimeout = pingTimeout
            self.reconnectBackoffBase = reconnectBackoffBase
            self.reconnectBackoffMax = reconnectBackoffMax
            self.shutdownGracePeriod = shutdownGracePeriod
            self.maxRequeues = maxRequeues
            self.maxResponseHeaderListSize = maxResponseHeaderListSize
            self.maxResponseBodySize = maxResponseBodySize
            self.maxChannelResponseBodySize = maxChannelResponseBodySize
            self.logger = logger
        }
    }
}
