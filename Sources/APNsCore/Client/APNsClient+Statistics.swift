extension APNsClient {
    /// How often an ``APNsClient`` sent a request again, read at any time through
    /// ``APNsClient/statistics``: for dashboards, and to see how hard APNs pushes back.
    ///
    /// The counts cover every call of the client since it was created (device
    /// notifications, broadcasts and channel management) and only attempts after the
    /// first: a request accepted on its first attempt changes none of them. Each retry
    /// is counted once, when it is about to be sent (after the ``RetryPolicy``'s delay),
    /// under the error of the attempt before it.
    ///
    /// The transport's own re-sends (after a GOAWAY or REFUSED_STREAM, below the client)
    /// are not counted here; `HTTP2Transport.Statistics` counts those.
    public struct Statistics: Sendable, Hashable {
        /// Retries after a rejection the ``RetryPolicy`` retries, by APNs reason as
        /// ``APNsReason/rawValue``: `TooManyRequests` (429), `InternalServerError` (500),
        /// `ServiceUnavailable` or `Shutdown` (503), `IdleTimeout`; `other` for a reason
        /// Apple does not document; ``noReason`` when the rejection carried none.
        public var retriesByReason: [String: Int] = [:]
        /// Retries after a transport failure, by ``APNsTransportError/Code`` name
        /// (`connectionFailed`, `goAway`, `streamRefused`, `queueFull`, …).
        public var retriesByFailureCode: [String: Int] = [:]
        /// Attempts sent again at once with a new provider token after APNs answered
        /// `ExpiredProviderToken` (at most one per call; not counted in
        /// ``RetryPolicy/maxAttempts``, nor in ``retriesByReason``).
        public var providerTokenRefreshes = 0

        /// Every retry: the values of ``retriesByReason`` and ``retriesByFailureCode``
        /// plus ``providerTokenRefreshes``.
        public var retries: Int {
            retriesByReason.values.reduce(0, +) + retriesByFailureCode.values.reduce(0, +) + providerTokenRefreshes
        }

        /// The key of ``retriesByReason`` for a rejection without a reason: `(no reason)`.
        public static let noReason = "(no reason)"

        /// Creates zeroed counters.
        public init() {}

        /// Counts one retry after `error`.
        mutating func recordRetry(after error: APNsError) {
            switch error {
            case .rejected(let rejection):
                // A reason Apple does not document counts as "other": a broken server's inventions
                // must not grow the table without bound.
                retriesByReason[rejection.reason.map { $0.status == nil ? "other" : $0.rawValue } ?? Self.noReason, default: 0] += 1
            case .failed(let failure):
                retriesByFailureCode[failure.code.description, default: 0] += 1
            case .invalid:
                break  // never retried
            }
        }
    }
}
