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
        /// Failed requests, by ``APNsCore/APNsTransportError/Code`` name (`timeout`, `queueFull`, …).
        public var failuresByCode: [String: Int] = [:]
        /// Requests the server did not process (above a GOAWAY's last-stream-id, or reset
        /// with REFUSED_STREAM) that the transport sent again, on another connection when
        /// one is available.
        public var requestsRequeued = 0
        /// TLS connections established.
        public var connectionsOpened = 0
        /// Connection attempts that failed (TCP, TLS or ALPN).
        public var connectionFailures = 0
        /// Connections that ended with an error or a PING timeout while open.
        public var connectionsLost = 0
        /// GOAWAY frames received.
        public var goAwaysReceived = 0
        /// HTTP/2 frames written, of every type (SETTINGS, PING and WINDOW_UPDATE included).
        public var framesSent = 0

        /// Creates zeroed counters.
        public init() {}
    }
}

/// The shared, lock-protected ``HTTP2Transport/Statistics`` of one transport.
final class StatisticsBox: Sendable {
    private let value = Mutex(HTTP2Transport.Statistics())

    var snapshot: HTTP2Transport.Statistics { value.withLock { $0 } }

    func update(_ body: (inout HTTP2Transport.Statistics) -> Void) {
        value.withLock { body(&$0) }
    }

    func recordAccepted() {
        value.withLock { $0.requestsInFlight += 1 }
    }

    func recordCompletion(_ outcome: PendingRequest.Outcome) {
        value.withLock { statistics in
            statistics.requestsInFlight -= 1
            switch outcome {
            case .success(let response):
                statistics.responsesByStatus[response.status, default: 0] += 1
            case .failure(let error):
                statistics.failuresByCode[error.code.description, default: 0] += 1
            }
        }
    }
}
