import APNsCore
import ArgumentParser
import Foundation
import Logging

/// `apns channel create|list|read|delete`: the broadcast channel management API (iOS 18).
struct ChannelCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "channel",
        abstract: "Create, list, read and delete broadcast channels for Live Activities.",
        discussion: """
            Channel management goes to APNs' channel hosts (port 2195 in the sandbox, 2196 in \
            production), or to --host/--port. Each subcommand prints one line per result, or \
            one JSON object with --json; the exit status is 1 when APNs refuses.

            Examples:
              apns channel create --key-file key.p8 --key-id ABC123DEFG --team-id DEF123GHIJ \\
                --bundle-id com.example.app --storage most-recent
              apns channel list --key-file key.p8 --key-id ABC123DEFG --team-id DEF123GHIJ --bundle-id com.example.app
              apns channel delete ... --bundle-id com.example.app dHN0LTEyMzQ1Njc4OTA=
            """,
        subcommands: [Create.self, List.self, Read.self, Delete.self]
    )

    /// The flags every channel subcommand shares.
    struct Common: ParsableArguments {
        @OptionGroup(title: "Credentials") var credentials: CredentialOptions
        @OptionGroup(title: "Server") var connection: ConnectionOptions

        @Option(name: .customLong("bundle-id"), help: "The app's bundle ID.")
        var bundleID: String

        @Flag(help: "One JSON object instead of text.")
        var json = false

        @Flag(name: .shortAndLong, help: "Log the client's and transport's debug messages to standard error.")
        var verbose = false

        /// Runs `body` with a client, then shuts it down; an APNs error becomes exit status 1
        /// with one line saying what it means.
        func withClient(_ body: (APNsClient) async throws(APNsError) -> Void) async throws {
            try credentials.check()
            try connection.check()
            Terminal.bootstrapLogging(level: verbose ? .debug : .warning)
            let setup = try ClientSetup(credentials: try credentials.load(), connection: connection, logger: Logger(label: "apns.channel"))
            do {
                try await body(setup.client)
                await setup.client.shutdown()
            } catch {
                await setup.client.shutdown()
                if json {
                    print(OutcomeText.jsonLine(["outcome": "\(error.rejection == nil ? "failed" : "rejected")",
                                                "error": OutcomeText.summary(error), "remedy": OutcomeText.remedy(error)]))
                } else {
                    FileHandle.standardError.write(Data("apns: \(OutcomeText.line(.failure(error)))\n".utf8))
                }
                throw ExitCode(1)
            }
        }

        /// Prints `object` as JSON, or `text`.
        func report(_ text: String, _ object: [String: Any]) {
            print(json ? OutcomeText.jsonLine(object) : text)
        }
    }

    /// Parses a channel ID argument.
    static func channelID(_ text: String) throws -> ChannelID {
        do {
            return try ChannelID(text)
        } catch {
            throw ValidationError("\(text) is not a channel ID (base64, as `apns channel create` prints it): \(error)")
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a channel; prints its ID.")
        @OptionGroup var common: Common
        @Option(help: "What APNs keeps for devices that join late: none or most-recent.")
        var storage: String = "none"

        func run() async throws {
            let policy: MessageStoragePolicy
            switch storage {
            case "none": policy = .noStorage
            case "most-recent": policy = .mostRecentMessage
            default: throw ValidationError("--storage must be none or most-recent, not \(storage)")
            }
            try await common.withClient { client throws(APNsError) in
                let channel = try await client.createChannel(bundleID: common.bundleID, storagePolicy: policy)
                common.report(channel.rawValue, ["channel": channel.rawValue, "storage": storage])
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the app's channels, one ID per line.")
        @OptionGroup var common: Common

        func run() async throws {
            try await common.withClient { client throws(APNsError) in
                let channels = try await client.channels(bundleID: common.bundleID)
                common.report(channels.map(\.rawValue).joined(separator: "\n"), ["channels": channels.map(\.rawValue)])
            }
        }
    }

    struct Read: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print a channel's configuration.")
        @OptionGroup var common: Common
        @Argument(help: "The channel ID.") var channel: String

        func run() async throws {
            let id = try ChannelCommand.channelID(channel)
            try await common.withClient { client throws(APNsError) in
                let configuration = try await client.channelConfiguration(id, bundleID: common.bundleID)
                let storage = configuration.storagePolicy == .mostRecentMessage ? "most-recent" : "none"
                common.report("\(id.rawValue) storage \(storage) push-type \(configuration.pushType)",
                              ["channel": id.rawValue, "storage": storage, "push-type": configuration.pushType])
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a channel.")
        @OptionGroup var common: Common
        @Argument(help: "The channel ID.") var channel: String

        func run() async throws {
            let id = try ChannelCommand.channelID(channel)
            try await common.withClient { client throws(APNsError) in
                try await client.deleteChannel(id, bundleID: common.bundleID)
                common.report("deleted \(id.rawValue)", ["channel": id.rawValue, "deleted": true])
            }
        }
    }
}
