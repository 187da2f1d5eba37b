import APNsCore
import Logging
import Metrics

/// Sends a notification to every device of a user and forgets the tokens APNs says are
/// dead: the core job of a provider server, free of HTTP so that it is tested on the SDK's
/// `MockTransport`.
///
/// Which answers remove a token:
/// - 410 `Unregistered` and `ExpiredToken` (``APNsCore/APNsRemedy/removeDeviceToken``):
///   the app was removed or the token expired. (Apple also gives the time APNs found the
///   token invalid, `rejection.timestamp`: a store that records when each token was last
///   registered can keep a token registered again since; this in-memory one forgets.)
/// - 400 `BadDeviceToken`: not a token of the environment this server sends to (a
///   development build's token sent to production, or a malformed one). This server sends
///   to one environment only, so it can never reach that device: forget the token.
///
/// Metrics (swift-metrics, so whichever backend the process bootstraps):
/// `example_device_tokens_forgotten_total{reason}` and the gauge
/// `example_device_tokens_registered`.
public struct UserNotifier: Sendable {
    /// The client that sends; its transport decides where.
    public let client: APNsClient
    /// The token store.
    public let registry: DeviceRegistry
    /// The app's bundle ID, the `apns-topic` of every notification.
    public let topic: String
    /// Where to log.
    public let logger: Logger

    private let registered: Gauge
    private let metricsFactory: any MetricsFactory

    /// A notifier over `client` and `registry`.
    ///
    /// - Parameters:
    ///   - metricsFactory: Where the notifier's own metrics go; swift-metrics' global
    ///     factory unless given (tests pass a `TestMetrics`).
    public init(
        client: APNsClient,
        registry: DeviceRegistry,
        topic: String,
        logger: Logger = Logger(label: "example.notifier", factory: { _ in SwiftLogNoOpLogHandler() }),
        metricsFactory: (any MetricsFactory)? = nil
    ) {
        self.client = client
        self.registry = registry
        self.topic = topic
        self.logger = logger
        self.metricsFactory = metricsFactory ?? MetricsSystem.factory
        self.registered = Gauge(label: "example_device_tokens_registered", factory: self.metricsFactory)
    }

    /// Registers `deviceToken` for `user` (see ``DeviceRegistry/register(_:for:at:)``).
    ///
    /// - Returns: `true` when the token is new for `user`.
    @discardableResult
    public func register(_ deviceToken: DeviceToken, for user: String) async -> Bool {
        let isNew = await registry.register(deviceToken, for: user)
        registered.record(await registry.count)
        return isNew
    }

    /// Sends an alert with `title` and `body` to every device of `user`, then forgets the
    /// tokens APNs reported dead.
    ///
    /// - Returns: What became of each device's notification; a user without devices
    ///   gets an empty report (nothing is sent).
    public func notify(user: String, title: String?, body: String) async -> DeliveryReport {
        let registrations = await registry.registrations(for: user)
        var report = DeliveryReport(user: user, devices: registrations.count)
        if registrations.isEmpty { return report }

        let notification = PushNotification(payload: .alert(title: title, body: body), topic: .bundleID(topic))
        let outcomes = await client.send(notification, to: registrations.map(\.deviceToken))
        for outcome in outcomes {
            var device = DeliveryReport.Device(deviceToken: outcome.deviceToken.redacted, result: "", forgotten: false)
            switch outcome.result {
            case .success(let accepted):
                report.accepted += 1
                device.result = "accepted"
                device.apnsID = accepted.apnsID?.uuidString
            case .failure(.rejected(let rejection)):
                device.reason = rejection.reason?.rawValue ?? "status \(rejection.status)"
                if rejection.remedy == .removeDeviceToken || rejection.reason == .badDeviceToken {
                    report.unregistered += 1
                    device.result = "unregistered"
                    device.forgotten = await registry.forget(outcome.deviceToken)
                    if device.forgotten {
                        report.forgotten += 1
                        Counter(
                            label: "example_device_tokens_forgotten_total",
                            dimensions: [("reason", rejection.reason?.rawValue ?? "\(rejection.status)")],
                            factory: metricsFactory
                        ).increment()
                        logger.debug("forgot a device token", metadata: [
                            "apns.device-token": "\(outcome.deviceToken.redacted)", "apns.reason": "\(device.reason ?? "")",
                        ])
                    }
                } else {
                    report.rejected += 1
                    device.result = "rejected"
                }
            case .failure(.failed(let failure)):
                report.failed += 1
                device.result = "failed"
                device.reason = failure.code.description
            case .failure(.invalid(let problem)):
                report.invalid += 1
                device.result = "invalid"
                device.reason = problem.code.description
            }
            report.results.append(device)
        }
        registered.record(await registry.count)
        return report
    }
}
