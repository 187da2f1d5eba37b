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
            production), or to --host/--port. Each subcommand prints its result with the \
            apns-request-id APNs echoed (give your own with --request-id), or one JSON object \
            with --json; the exit status is 1 when APNs refuses.

            Examples:
              apns channel create --key-file key.p8 --key-id ABC123DEFG --team-id DEF123GHIJ \\
                --bundle-id com.example.app --storage most-recent
              apns channel list --key-file key.p8 --key-id ABC123DEFG --team-id DEF123GHIJ --bundle-id com.example.app
              apns channel delete ... --bundle-id com.example.app dHN0LTEyMzQ1Njc4OTA=
            """,
        subcommands: [Create.self, List.self, Read.self, Delete.self]
    )

    /// `apns channel` without a subcommand: nothing was asked for, so it is a usage error
    /// (status 2) naming the subcommands, as `apns` alone is.
    func run() async throws {
        let names = Self.configuration.subcommands.map { $0._commandName }
        throw CLIError.usage("channel: no subcommand given; one of: \(names.joined(separator: ", "))")
    }

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

        @Option(name: .customLong("request-id"), help: ArgumentHelp("The apns-request-id to send (a UUID); a random one if not given.", valueName: "uuid"))
        var requestID: String?

        /// `--request-id` parsed, or `nil` when not given.
        func parsedRequestID() throws -> APNsRequestID? {
            guard let requestID else { return nil }
            do {
                return try APNsRequestID(requestID)
            } catch {
                throw ValidationError("--request-id \(requestID) is not a UUID (8-4-4-4-12 hexadecimal digits)")
            }
        }

        /// Runs `body` with a client, then shuts it down; an APNs error becomes exit status 1
        /// with one line saying what it means.
        func withClient(_ body: (APNsClient, APNsRequestID?) async throws(APNsError) -> Void) async throws {
            try credentials.check()
            try connection.check()
            let requestID = try parsedRequestID()
            Terminal.bootstrapLogging(level: verbose ? .debug : .error)
            let setup = try ClientSetup(
                credentials: try credentials.load(), connection: connection, environment: connection.channelManagementEnvironment,
                logger: Logger(label: "apns.channel"))
            do {
                try await body(setup.client, requestID)
                await setup.client.shutdown()
            } catch {
                await setup.client.shutdown()
                if json {
                    var object: [String: Any] = ["outcome": "\(error.rejection == nil ? "failed" : "rejected")",
                                                 "error": OutcomeText.summary(error), "remedy": OutcomeText.remedy(error)]
                    if let id = error.rejection?.requestID { object["apns-request-id"] = id.uuidString }
                    print(OutcomeText.jsonLine(object))
                } else {
                    Terminal.standardError(
                        "apns: \(OutcomeText.line(.failure(error), invalidAdvice: OutcomeText.invalidChannelRequestAdvice))\(OutcomeText.requestIDSuffix(error))")
                }
                throw ExitCode(1)
            }
        }

        /// Prints `object` with `apns-request-id` as JSON, or `text` followed by
        /// `apns-request-id <uuid>`: on the same line, or on a line of its own when
        /// `ownLine` (after a list).
        func report(_ text: String, _ object: [String: Any], requestID: APNsRequestID, ownLine: Bool = false) {
            if json {
                print(OutcomeText.jsonLine(object.merging(["apns-request-id": requestID.uuidString]) { $1 }))
            } else {
                let separator = text.isEmpty ? "" : ownLine ? "\n" : " "
                print("\(text)\(separator)apns-request-id \(requestID.uuidString)")
            }
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
        static let configuration = CommandConfiguration(abstract: "Create a channel; prints its ID and the apns-request-id.")
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
            try await common.withClient { client, requestID throws(APNsError) in
                let created = try await client.createChannel(bundleID: common.bundleID, storagePolicy: policy, requestID: requestID)
                common.report(created.value.rawValue, ["channel": created.value.rawValue, "storage": storage],
                              requestID: created.requestID)
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the app's channels, one ID per line, then the apns-request-id.")
        @OptionGroup var common: Common

        func run() async throws {
            try await common.withClient { client, requestID throws(APNsError) in
                let listed = try await client.channels(bundleID: common.bundleID, requestID: requestID)
                let ids = listed.value.map(\.rawValue)
                // The IDs one per line, then the request ID on a line of its own.
                common.report(ids.joined(separator: "\n"), ["channels": ids], requestID: listed.requestID, ownLine: true)
            }
        }
    }

    struct Read: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print a channel's configuration.")
        @OptionGroup var common: Common
        @Argument(help: "The channel ID.") var channel: String

        func run() async throws {
            let id = try ChannelCommand.channelID(channel)
            try await common.withClient { client, requestID throws(APNsError) in
                let read = try await client.channelConfiguration(id, bundleID: common.bundleID, requestID: requestID)
                let storage = read.value.storagePolicy == .mostRecentMessage ? "most-recent" : "none"
                common.report("\(id.rawValue) storage \(storage) push-type \(read.value.pushType)",
                              ["channel": id.rawValue, "storage": storage, "push-type": read.value.pushType],
                              requestID: read.requestID)
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a channel.")
        @OptionGroup var common: Common
        @Argument(help: "The channel ID.") var channel: String

        func run() async throws {
            let id = try ChannelCommand.channelID(channel)
            try await common.withClient { client, requestID throws(APNsError) in
                let deleted = try await client.deleteChannel(id, bundleID: common.bundleID, requestID: requestID)
                common.report("deleted \(id.rawValue)", ["channel": id.rawValue, "deleted": true], requestID: deleted.requestID)
            }
        }
    }
}
