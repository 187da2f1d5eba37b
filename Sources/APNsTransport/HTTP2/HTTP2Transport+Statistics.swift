import CoreMetrics
import APNsCore
import Synchronization

extension HTTP2Transport {
    /// Counters a user can read at any time through ``HTTP2Transport/statistics``, for
    /// dashboards and for checking that nothing was lost: every request accepted by
    /// ``HTTP2Transport/send(_:)`` ends up in exactly one of ``responsesByStatus`` or
    /// ``failuresByCode``, or is still counted in ``requestsInFlight``.
    public struct Statistics: Sendable, Hashable {
        /// Requests accepted by `send` and not yet answered or failed.
        public var requestsInFlight = 0
        /// Streams opened (a request re-sent after a GOAWAY or REFUSED_STREAM counts again).
        public var requestsSent = 0
        /// Responses received, by HTTP status.
        public var responsesByStatus: [Int: Int] = [:]
        /// Responses with an error status (anything outside `200..<300`), by the APNs
        /// reason in their body (`BadDeviceToken`, `Unregistered`, `TooManyRequests`, …,
        /// as ``APNsCore/APNsReason/rawValue``), or ``noReason`` when the body carries none.
        ///
        /// Each of these responses is also counted in ``responsesByStatus``, so the values
        /// here add up to the error statuses there. Only error responses are read: a `200`
        /// (or a channel API's `201`/`204`) is never parsed for this count.
        ///
        /// A server decides the reason strings, so the keys are bounded: every reason Apple
        /// documents is its own key; the first ``maxUndocumentedReasons`` others are keys
        /// too, cut to 128 characters; any further one counts under ``otherReasons``.
        public var rejectionsByReason: [String: Int] = [:]
        /// Failed requests, by ``APNsCore/APNsTransportError/Code`` name (`timeout`, `queueFull`, …).
        public var failuresByCode: [String: Int] = [:]
        /// Requests the server did not process (above a GOAWAY's last-stream-id, or reset
        /// with REFUSED_STREAM) that the transport sent again, on another connection when
        /// one is available.
        public var requestsRequeued = 0
        /// TLS connections established.
        public var connectionsOpened = 0
        /// Connections established to replace an earlier one: every connection after the
        /// first of its slot (one slot per ``HTTP2Transport/Configuration-swift.struct/connectionCount``),
        /// whether the earlier connection was lost, closed by a GOAWAY, or closed while
        /// idle. `connectionsOpened - reconnects` is the number of slots ever connected.
        public var reconnects = 0
        /// Connection attempts that failed (TCP, TLS or ALPN).
        public var connectionFailures = 0
        /// Connections that ended with an error or a PING timeout while open.
        public var connectionsLost = 0
        /// Connections closed by the transport while they worked: given back to
        /// ``HTTP2Transport/Configuration-swift.struct/maxConnections`` for a credential that had
        /// none, or answered with `UnrelatedKeyIdInToken` (each drains first).
        public var connectionsRetired = 0
        /// GOAWAY frames received.
        public var goAwaysReceived = 0
        /// HTTP/2 frames written, of every type (SETTINGS, PING and WINDOW_UPDATE included).
        public var framesSent = 0

        /// The key of ``rejectionsByReason`` for an error response whose body has no
        /// `reason` (empty, or not the JSON APNs sends): `(no reason)`.
        public static let noReason = "(no reason)"
        /// The key of ``rejectionsByReason`` for reasons Apple does not document beyond the
        /// first ``maxUndocumentedReasons``: `(other reasons)`.
        public static let otherReasons = "(other reasons)"
        /// How many reasons Apple does not document get keys of their own in
        /// ``rejectionsByReason``: 32.
        public static let maxUndocumentedReasons = 32

        /// Creates zeroed counters.
        public init() {}
    }
}

/// The shared ``HTTP2Transport/Statistics`` of one transport.
///
/// The two counters every request touches (accepted, and answered with status 200) are
/// atomics, so the calling tasks and the I/O threads never contend for a lock
/// on the common path; everything rarer is kept under the lock.
///
/// A pool's box (one per authority and credential) has the transport's box as its
/// `parent`: everything counted in it is counted in the parent too (the metrics once),
/// so the transport's figures are the sum over its pools, including pools since closed.
final class StatisticsBox: Sendable {
    /// The same figures for swift-metrics (see ``TransportMetrics``).
    let metrics: TransportMetrics
    /// The transport's box, for a pool's.
    let parent: StatisticsBox?
    private let value = Mutex(Locked())
    private let accepted = Atomic<Int>(0)
    private let answered200 = Atomic<Int>(0)

    private struct Locked {
        var statistics = HTTP2Transport.Statistics()
        /// Requests finished any other way than with a 200 (counted in the dictionaries).
        var otherOutcomes = 0
        /// Keys of ``HTTP2Transport/Statistics/rejectionsByReason`` for reasons Apple does
        /// not document.
        var undocumentedReasons = 0
    }

    var snapshot: HTTP2Transport.Statistics {
        // The finished counts are read before the accepted count: a request is accepted
        // before it can finish, so the in-flight figure is never negative.
        var (statistics, others) = value.withLock { ($0.statistics, $0.otherOutcomes) }
        let ok = answered200.load(ordering: .sequentiallyConsistent)
        let total = accepted.load(ordering: .sequentiallyConsistent)
        if ok > 0 { statistics.responsesByStatus[200, default: 0] += ok }
        statistics.requestsInFlight = total - ok - others
        return statistics
    }

    func update(_ body: (inout HTTP2Transport.Statistics) -> Void) {
        value.withLock { body(&$0.statistics) }
        parent?.update(body)
    }

    init(metrics: TransportMetrics = TransportMetrics(factory: NOOPMetricsHandler.instance)) {
        self.metrics = metrics
        self.parent = nil
    }

    /// A pool's box, counting into `parent` too (with the parent's metrics).
    init(parent: StatisticsBox) {
        self.metrics = parent.metrics
        self.parent = parent
    }

    func recordAccepted() {
        accepted.wrappingAdd(1, ordering: .sequentiallyConsistent)
        parent?.accepted.wrappingAdd(1, ordering: .sequentiallyConsistent)
        if metrics.isEnabled { metrics.inFlight.increment() }
    }

    /// A request that began at `startedAt` (``MonotonicTime``; 0 when metrics are off) ended.
    func recordCompletion(_ outcome: PendingRequest.Outcome, startedAt: UInt64) {
        if metrics.isEnabled {
            metrics.inFlight.decrement()
            let nanoseconds = Int64(clamping: MonotonicTime.now() &- startedAt)
            switch outcome {
            case .success(let response) where response.status == 200: metrics.acceptedDuration.recordNanoseconds(nanoseconds)
            case .success: metrics.rejectedDuration.recordNanoseconds(nanoseconds)
            case .failure: metrics.failedDuration.recordNanoseconds(nanoseconds)
            }
        }
        recordCompletion(outcome)
    }

    func recordCompletion(_ outcome: PendingRequest.Outcome) {
        if case .success(let response) = outcome, response.status == 200 {
            answered200.wrappingAdd(1, ordering: .sequentiallyConsistent)
            parent?.answered200.wrappingAdd(1, ordering: .sequentiallyConsistent)
            return
        }
        // The error body was parsed once, as the response arrived; the client's rejection
        // reads the same parse.
        var reason: String?
        if case .success(let response) = outcome, !(200..<300).contains(response.status) {
            reason = response.errorBody?.reason ?? HTTP2Transport.Statistics.noReason
        }
        record(outcome, reason: reason)
        parent?.record(outcome, reason: reason)
    }

    /// Counts a rejection's `reason`, keeping the keys bounded (see
    /// ``HTTP2Transport/Statistics/rejectionsByReason``).
    private static func count(_ reason: String, in locked: inout Locked) {
        if locked.statistics.rejectionsByReason[reason] != nil {
            locked.statistics.rejectionsByReason[reason]! += 1
            return
        }
        var key = reason
        if reason != HTTP2Transport.Statistics.noReason, !APNsReason(rawValue: reason).isDocumented {
            key = String(reason.prefix(128))
            if locked.statistics.rejectionsByReason[key] == nil {
                if locked.undocumentedReasons >= HTTP2Transport.Statistics.maxUndocumentedReasons {
                    key = HTTP2Transport.Statistics.otherReasons
                } else {
                    locked.undocumentedReasons += 1
                }
            }
        }
        locked.statistics.rejectionsByReason[key, default: 0] += 1
    }

    private func record(_ outcome: PendingRequest.Outcome, reason: String?) {
        value.withLock { locked in
            locked.otherOutcomes += 1
            switch outcome {
            case .success(let response):
                locked.statistics.responsesByStatus[response.status, default: 0] += 1
                if let reason { Self.count(reason, in: &locked) }
            case .failure(let error):
                locked.statistics.failuresByCode[error.code.description, default: 0] += 1
            }
        }
    }
}
