import APNsTransport
import DeviceNotifications
import Foundation
import Hummingbird
import Logging
import Metrics
import Prometheus
import ServiceLifecycle

// An APNs provider server: registers device tokens per user, sends a user's devices a
// notification through swift-apns, forgets the tokens APNs reports dead, exports metrics,
// and stops cleanly on SIGTERM. Configured from the environment: see README.md.

/// Builds everything from the environment and runs it until SIGTERM or SIGINT.
func runServer(environment variables: [String: String]) async throws {
    let settings = try ServerSettings(environmentVariables: variables)
    LoggingSystem.bootstrap { label in
        var handler = StreamLogHandler.standardError(label: label)
        handler.logLevel = settings.logLevel
        return handler
    }
    let logger = Logger(label: "example.server")

    // Every metric (the SDK's, Hummingbird's, ours) into one Prometheus registry.
    let metrics = PrometheusCollectorRegistry()
    MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: metrics))

    // APNs: where, and with which credentials, from the SDK's APNS_* variables.
    let apns = try APNsSettings(environmentVariables: variables)
    guard let topic = apns.topic else {
        throw SettingsError(variable: "APNS_TOPIC", "is not set: set it to the app's bundle ID")
    }
    // The transport is a Service of its own: made apart from the client, so that the
    // ServiceGroup below runs it and drains it at shutdown.
    let transport = apns.makeTransport(logger: Logger(label: "swift-apns.transport"))
    let client = try apns.makeClient(transport: transport, logger: Logger(label: "swift-apns"))
    let notifier = UserNotifier(client: client, registry: DeviceRegistry(), topic: topic, logger: logger)

    let portFile = settings.portFile
    let app = Application(
        router: makeRouter(notifier: notifier, metrics: metrics),
        configuration: .init(address: .hostname(settings.host, port: settings.port), serverName: "apns-example"),
        onServerRunning: { channel in
            guard let portFile, let port = channel.localAddress?.port else { return }
            do {
                try Data("\(port)\n".utf8).write(to: URL(fileURLWithPath: portFile), options: .atomic)
            } catch {
                logger.error("cannot write the port file", metadata: ["path": "\(portFile)", "error": "\(error)"])
            }
        },
        logger: logger
    )

    // A group shuts its services down in reverse order: first the HTTP server stops
    // taking requests and finishes the ones it has, then the transport drains whatever
    // is still in flight (within its shutdownGracePeriod) and closes its connections.
    let group = ServiceGroup(
        configuration: .init(
            services: [.init(service: transport), .init(service: app)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )
    )
    logger.info("sending to APNs", metadata: ["apns.environment": "\(apns.environment)", "apns.topic": "\(topic)"])
    try await group.run()
    logger.info("stopped")
}

do {
    try await runServer(environment: ProcessInfo.processInfo.environment)
} catch {
    FileHandle.standardError.write(Data("apns-example: \(error)\n".utf8))
    exit(1)
}
