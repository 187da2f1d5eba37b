import CoreMetrics
import Synchronization

/// The client's metrics, made through one `MetricsFactory` (swift-metrics; a no-op until
/// the process bootstraps a backend, as swift-metrics intends) and kept, so a
/// notification costs a dictionary lookup per metric, not a new metric object.
///
/// | metric | kind | dimensions |
/// |---|---|---|
/// | `apns_notifications_sent_total` | counter | `push_type`, `environment` |
/// | `apns_notifications_accepted_total` | counter | `push_type`, `environment` |
/// | `apns_notifications_rejected_total` | counter | `push_type`, `environment`, `reason` |
/// | `apns_notifications_failed_total` | counter | `push_type`, `environment`, `code`, `may_have_reached_apns` |
/// | `apns_notifications_invalid_total` | counter | `push_type`, `environment`, `code` |
/// | `apns_retries_total` | counter | `cause` (`retry_later`, `transport`, `provider_token`), `environment` |
/// | `apns_channel_calls_total` | counter | `operation` (`broadcast`, `create`, `read`, `list`, `delete`), `environment`, `result` |
///
/// Dimensions stay low cardinality: a `reason` Apple does not document is `other`, and
/// no device token, topic or `apns-id` is ever a dimension.
final class ClientMetrics: Sendable {
    private struct Key: Hashable {
        var metric: UInt8
        var pushType: String
        var first: String
        var second: String
    }

    private let factory: any MetricsFactory
    /// Whether a backend is in place: with swift-metrics' no-op factory every call
    /// returns at once (no lock, no lookup).
    private let isEnabled: Bool
    private let environment: String
    private let counters = Mutex<[Key: Counter]>([:])

    init(factory: any MetricsFactory, environment: APNsEnvironment) {
        self.factory = factory
        self.isEnabled = !(factory is NOOPMetricsHandler)
        switch environment {
        case .production: self.environment = "production"
        case .sandbox: self.environment = "sandbox"
        default: self.environment = "custom"
        }
    }

    /// `count` notifications of `pushType` handed to the client.
    func sent(_ pushType: PushType, count: Int = 1) {
        guard isEnabled else { return }
        counter(0, "apns_notifications_sent_total", pushType.rawValue).increment(by: Int64(count))
    }

    /// A notification's final outcome.
    func finished(_ pushType: PushType, _ outcome: Result<APNsAccepted, APNsError>) {
        guard isEnabled else { return }
        switch outcome {
        case .success:
            counter(1, "apns_notifications_accepted_total", pushType.rawValue).increment()
        case .failure(.rejected(let rejection)):
            let reason = rejection.reason.map { $0.status == nil ? "other" : $0.rawValue } ?? "none"
            counter(2, "apns_notifications_rejected_total", pushType.rawValue, ("reason", reason)).increment()
        case .failure(.failed(let failure)):
            counter(
                3,
                "apns_notifications_failed_total",
                pushType.rawValue,
                ("code", failure.code.description),
                ("may_have_reached_apns", failure.mayHaveReachedAPNs ? "true" : "false")
            ).increment()
        case .failure(.invalid(let problem)):
            counter(4, "apns_notifications_invalid_total", pushType.rawValue, ("code", problem.code.description)).increment()
        }
    }

    /// An attempt is made again because of `error` (`nil`: a new provider token).
    func retried(after error: APNsError?) {
        guard isEnabled else { return }
        let cause: String
        switch error {
        case nil: cause = "provider_token"
        case .rejected?: cause = "retry_later"
        default: cause = "transport"
        }
        counter(5, "apns_retries_total", nil, ("cause", cause)).increment()
    }

    /// A broadcast or channel management call's final outcome (`nil`: it succeeded).
    func channelCall(_ operation: String, _ error: APNsError?) {
        guard isEnabled else { return }
        let result: String
        switch error {
        case nil: result = "accepted"
        case .rejected?: result = "rejected"
        case .failed?: result = "failed"
        case .invalid?: result = "invalid"
        }
        counter(6, "apns_channel_calls_total", nil, ("operation", operation), ("result", result)).increment()
    }

    private func counter(
        _ metric: UInt8,
        _ label: String,
        _ pushType: String?,
        _ first: (String, String)? = nil,
        _ second: (String, String)? = nil
    ) -> Counter {
        let key = Key(metric: metric, pushType: pushType ?? "", first: first?.1 ?? "", second: second?.1 ?? "")
        if let counter = counters.withLock({ $0[key] }) { return counter }
        var dimensions: [(String, String)] = []
        if let pushType { dimensions.append(("push_type", pushType)) }
        dimensions.append(("environment", environment))
        if let first { dimensions.append(first) }
        if let second { dimensions.append(second) }
        let made = Counter(label: label, dimensions: dimensions, factory: factory)
        return counters.withLock { counters in
            if let existing = counters[key] { return existing }
            counters[key] = made
            return made
        }
    }
}
