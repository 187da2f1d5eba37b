// The configuration block of Documentation/SwiftAPNs.docc/Observability.md, line for line
// from the next line on (ArticleBlocksTests checks it); ProviderServerTests runs it.
import APNsConfiguration
import APNsTransport
import Configuration
import Logging
import ServiceLifecycle

/// A provider server's main: APNs settings from the environment (`APNS_ENVIRONMENT`,
/// `APNS_KEY_FILE`, `APNS_KEY_ID`, `APNS_TEAM_ID`…) or any other configuration provider,
/// and the transport in a ServiceGroup that drains it on SIGTERM.
func runProvider<Server: Service>(
    config: ConfigReader = ConfigReader(provider: EnvironmentVariablesProvider()),
    logger: Logger,
    makeServer: (APNsClient) -> Server
) async throws {
    let settings = try APNsSettings(config: config.scoped(to: "apns"))
    let transport = settings.makeTransport(logger: logger)
    let client = try settings.makeClient(transport: transport, logger: logger)
    // Services shut down in reverse order: the server stops sending before the
    // transport drains.
    let group = ServiceGroup(services: [transport, makeServer(client)], gracefulShutdownSignals: [.sigterm], logger: logger)
    try await group.run()
}
