// The environment-variable block of Documentation/SwiftAPNs.docc/Authentication.md, so it
// compiles as the article shows it (ArticleBlocksTests checks it). Not run: it reads the
// test process's own environment; APNsSettingsTests run the same calls.
import APNsTransport
import Foundation

func clientFromTheEnvironment() throws -> APNsClient {
    let client = try APNsSettings(environmentVariables: ProcessInfo.processInfo.environment).makeClient()
    return client
}
