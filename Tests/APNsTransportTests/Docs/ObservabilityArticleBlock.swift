// The code block of Documentation/SwiftAPNs.docc/Observability.md, line for line from the
// next line on (ArticleBlocksTests checks it), so it compiles as the article shows it.
import APNsTransport
import Logging
import ServiceLifecycle

func runProvider(transport: HTTP2Transport, server: some Service, logger: Logger) async throws {
    // Services shut down in reverse order: the server stops sending before the
    // transport drains.
    let group = ServiceGroup(services: [transport, server], gracefulShutdownSignals: [.sigterm], logger: logger)
    try await group.run()
}
