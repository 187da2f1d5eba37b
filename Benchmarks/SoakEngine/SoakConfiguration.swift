import APNsCore

/// The settings of one soak run (see ``Soak/run(_:)``).
package struct SoakConfiguration: Sendable {
    /// How many notifications to send.
    package var notifications: Int
    /// The seed of the fault sequence; print it to repeat a run.
    package var seed: UInt64
    /// `HTTP2Transport` connections.
    package var connections: Int
    /// Notifications in flight at once (sending tasks, or the batch window).
    package var concurrency: Int
    /// Send with `APNsClient`'s batch send, this many device tokens per call (one call
    /// after another, window ``concurrency``), instead of one `send` per notification
    /// from ``concurrency`` tasks; `nil` for the latter.
    package var batchSize: Int?
    /// Send everything with one streamed batch (`APNsClient`'s send from an
    /// `AsyncSequence` of device tokens, window ``concurrency``); overrides ``batchSize``.
    package var streamed: Bool
    /// The mean number of completed notifications between two faults.
    package var meanFaultGap: Int
    /// `APNsClient`'s timeout for each attempt.
    package var requestTimeout: Duration
    /// Whether to inject stalls longer than ``requestTimeout`` (each costs that long).
    package var stalls: Bool
    /// The run fails, printing what is outstanding, if no notification completes for this long.
    package var watchdog: Duration
    /// The run fails if resident memory at the end exceeds the middle value by more than this.
    package var rssGrowthLimitBytes: Int
    /// Every `rejectEvery`-th device token is answered `410 Unregistered` by a per-token rule.
    package var rejectEvery: Int
    /// The client's retry policy (the default policy with shorter delays, so that a run
    /// of a million takes minutes; it reuses the `apns-id` like any policy).
    package var retryPolicy: RetryPolicy
    /// The mock server's delay on everything it sends (`MockAPNsServer.setLinkEmulation(_:)`):
    /// every answer, SETTINGS and PING acknowledgement arrives this much later. What the
    /// client sends is not delayed, so this is the round trip a request sees; `nil` for
    /// loopback speed.
    package var oneWayDelay: Duration?
    /// Where progress lines go (every 10%, and the faults' seed).
    package var log: @Sendable (String) -> Void

    /// A configuration; the fault gap defaults to about 400 faults per run (at least one
    /// every 2,500 notifications, and no more than one every 50).
    package init(
        notifications: Int = 1_000_000,
        seed: UInt64 = UInt64.random(in: 0...UInt64.max),
        connections: Int = 4,
        concurrency: Int = 200,
        meanFaultGap: Int? = nil,
        requestTimeout: Duration = .seconds(5),
        stalls: Bool = true,
        watchdog: Duration = .seconds(30),
        rssGrowthLimitBytes: Int = 32 << 20,
        rejectEvery: Int = 1_000,
        retryPolicy: RetryPolicy = RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(20), maxDelay: .milliseconds(500)),
        batchSize: Int? = nil,
        streamed: Bool = false,
        oneWayDelay: Duration? = nil,
        log: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.batchSize = batchSize.map { max(1, $0) }
        self.streamed = streamed
        self.notifications = max(1, notifications)
        self.seed = seed
        self.connections = max(1, connections)
        self.concurrency = max(1, concurrency)
        self.meanFaultGap = max(1, meanFaultGap ?? min(2_500, max(50, notifications / 400)))
        self.requestTimeout = requestTimeout
        self.stalls = stalls
        self.watchdog = watchdog
        self.rssGrowthLimitBytes = rssGrowthLimitBytes
        self.rejectEvery = max(2, rejectEvery)
        self.retryPolicy = retryPolicy
        self.oneWayDelay = oneWayDelay.flatMap { $0 > .zero ? $0 : nil }
        self.log = log
    }
}
