import CoreMetrics

/// The transport's metrics, made once through one `MetricsFactory` (swift-metrics).
///
/// | metric | kind | dimensions |
/// |---|---|---|
/// | `apns_requests_in_flight` | meter | |
/// | `apns_requests_waiting` | meter: requests waiting for a stream (what counts against `maxQueuedRequests`), over every credential's pool | |
/// | `apns_request_duration_seconds` | timer: from `send` to the answer or failure | `result` (`accepted`: a 200; `rejected`: another status; `failed`: no answer) |
/// | `apns_connections_open` | meter | |
/// | `apns_connection_attempts_total` | counter: one per attempt, `success` when the server's HTTP/2 SETTINGS arrived, `failure` otherwise (TCP, TLS, ALPN, a TLS session refused after the handshake, no SETTINGS) | `result` (`success`, `failure`) |
/// | `apns_goaways_total` | counter | |
///
/// With swift-metrics' no-op factory (nothing bootstrapped) ``isEnabled`` is `false` and
/// the send path skips every metric, its clock reads included.
final class TransportMetrics: Sendable {
    /// Whether a backend is in place (the factory is not swift-metrics' no-op one).
    let isEnabled: Bool
    let inFlight: Meter
    let waiting: Meter
    /// Request durations by result: a 200, another status, no answer.
    let acceptedDuration: Timer
    let rejectedDuration: Timer
    let failedDuration: Timer
    let openConnections: Meter
    let connectionsSucceeded: Counter
    let connectionsFailed: Counter
    let goAways: Counter

    init(factory: any MetricsFactory) {
        isEnabled = !(factory is NOOPMetricsHandler)
        inFlight = Meter(label: "apns_requests_in_flight", factory: factory)
        waiting = Meter(label: "apns_requests_waiting", factory: factory)
        acceptedDuration = Timer(label: "apns_request_duration_seconds", dimensions: [("result", "accepted")], factory: factory)
        rejectedDuration = Timer(label: "apns_request_duration_seconds", dimensions: [("result", "rejected")], factory: factory)
        failedDuration = Timer(label: "apns_request_duration_seconds", dimensions: [("result", "failed")], factory: factory)
        openConnections = Meter(label: "apns_connections_open", factory: factory)
        connectionsSucceeded = Counter(label: "apns_connection_attempts_total", dimensions: [("result", "success")], factory: factory)
        connectionsFailed = Counter(label: "apns_connection_attempts_total", dimensions: [("result", "failure")], factory: factory)
        goAways = Counter(label: "apns_goaways_total", factory: factory)
    }
}
