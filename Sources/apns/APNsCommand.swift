import ArgumentParser

/// The `apns` command-line tool.
@main
struct APNsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apns",
        abstract: "Send and test Apple Push Notification service requests.",
        subcommands: [DemoCommand.self]
    )
}
