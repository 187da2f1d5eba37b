import APNsCore
import ArgumentParser
import Foundation
import Logging

/// `apns broadcast`: one Live Activity update to every device subscribed to a channel.
struct BroadcastCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "broadcast",
        abstract: "Send a Live Activity update to a broadcast channel.",
        discussion: """
            The payload comes from --payload-file (a JSON file, '-' for standard input), or is \
            built from --content-state (JSON) with --event update or end and the current time \
            as timestamp. A channel without message storage needs --expiration 0 (the default). \
            Prints the apns-request-id APNs echoed (give your own with --request-id) and, when \
            APNs sends one (in the sandbox), the apns-unique-id to look up in the Push \
            Notifications Console's delivery log.

            Examples:
              apns broadcast --key-file key.p8 --key-id ABC123DEFG --team-id DEF123GHIJ \\
                --bundle-id com.example.app --channel dHN0LTEyMzQ1Njc4OTA= \\
                --content-state '{"score":"2-1"}' --alert-title Goal --alert-body "2-1 in the 89th"
              apns broadcast ... --bundle-id com.example.app --channel <id> --payload-file update.json
            """
    )

    @OptionGroup(title: "Credentials") var credentials: CredentialOptions
    @OptionGroup(title: "Server") var connection: ConnectionOptions

    @Option(name: .customLong("bundle-id"), help: "The app's bundle ID.")
    var bundleID: String

    @Option(help: "The channel ID (base64, as `apns channel create` prints it).")
    var channel: String

    @Option(name: .customLong("payload-file"), help: ArgumentHelp("The payload as a JSON file; '-' for standard input.", valueName: "path"))
    var payloadFile: String?

    @Option(name: .customLong("content-state"), help: ArgumentHelp("The Live Activity's ContentState as JSON.", valueName: "json"))
    var contentState: String?

    @Option(help: "update or end.")
    var event: String = "update"

    @Option(name: .customLong("alert-title"), help: "An alert title that lights the screen with the update.")
    var alertTitle: String?

    @Option(name: .customLong("alert-body"), help: "The alert's body.")
    var alertBody: String?

    @Option(help: "apns-priority: 10, 5 or 1.")
    var priority: Int = 10

    @Option(help: "apns-expiration in UNIX seconds; 0 (the default) delivers only to devices online now.")
    var expiration: Int64 = 0

    @Option(name: .customLong("request-id"), help: ArgumentHelp("The apns-request-id to send (a UUID); a random one if not given.", valueName: "uuid"))
    var requestID: String?

    @Flag(help: "One JSON object instead of text.")
    var json = false

    @Flag(name: .shortAndLong, help: "Log the client's and transport's debug messages to standard error.")
    var verbose = false

    func run() async throws {
        try credentials.check()
        try connection.check()
        try connection.checkBroadcastPort()
        guard (payloadFile == nil) != (contentState == nil) else {
            throw ValidationError("give exactly one of --payload-file and --content-state")
        }
        // The same checks as `apns send`'s: not negative, and seconds, not milliseconds.
        try NotificationOptions.checkSeconds(expiration, flag: "--expiration")
        guard let priority = Priority(rawValue: priority) else {
            throw ValidationError("--priority must be 10, 5 or 1, not \(self.priority)")
        }
        let channelID = try ChannelCommand.channelID(channel)
        var chosenRequestID: APNsRequestID?
        if let requestID {
            do {
                chosenRequestID = try APNsRequestID(requestID)
            } catch {
                throw ValidationError("--request-id \(requestID) is not a UUID (8-4-4-4-12 hexadecimal digits)")
            }
        }
        let payload = try makePayload()
        Terminal.bootstrapLogging(level: verbose ? .debug : .error)
        let setup = try ClientSetup(credentials: try credentials.load(), connection: connection, logger: Logger(label: "apns.broadcast"))
        let result: Result<BroadcastAccepted, APNsError>
        do {
            let notification = BroadcastNotification(
                payload: payload, priority: priority,
                expiration: expiration == 0 ? .immediately : .unixTime(expiration), requestID: chosenRequestID)
            result = .success(try await setup.client.broadcast(notification, to: channelID, bundleID: bundleID))
        } catch {
            result = .failure(error)
        }
        await setup.client.shutdown()
        switch result {
        case .success(let accepted):
            let requestID = accepted.requestID?.uuidString ?? "-"
            if json {
                var object: [String: Any] = ["outcome": "accepted", "channel": channelID.rawValue, "apns-request-id": requestID]
                if let uniqueID = accepted.uniqueID { object["apns-unique-id"] = uniqueID }
                print(OutcomeText.jsonLine(object))
            } else {
                print("accepted apns-request-id \(requestID)" + (accepted.uniqueID.map { " apns-unique-id \($0)" } ?? ""))
            }
        case .failure(let error):
            if json {
                var object: [String: Any] = ["outcome": error.rejection == nil ? "failed" : "rejected",
                                             "error": OutcomeText.summary(error), "remedy": OutcomeText.remedy(error)]
                if let id = error.rejection?.requestID { object["apns-request-id"] = id.uuidString }
                print(OutcomeText.jsonLine(object))
            } else {
                // An error is one line on standard error, as for every other command.
                Terminal.standardError(
                    "apns: \(OutcomeText.line(.failure(error), invalidAdvice: OutcomeText.invalidBroadcastAdvice))\(OutcomeText.requestIDSuffix(error))")
            }
            throw ExitCode(1)
        }
    }

    private func makePayload() throws -> Payload {
        if let payloadFile {
            let json = try PayloadFile.jsonBytes(at: payloadFile) { Terminal.readStandardInput() }
            do {
                return try Payload(jsonBytes: json)
            } catch {
                throw CLIError("the payload file is not a valid payload: \(OutcomeText.inToolTerms("\(error)"))")
            }
        }
        let state: JSONObject
        do {
            guard case .object(let object) = try JSONValue(jsonBytes: Array((contentState ?? "").utf8)) else {
                throw ValidationError("--content-state must be a JSON object")
            }
            state = object
        } catch let error as ValidationError {
            throw error
        } catch {
            throw ValidationError("--content-state is not JSON: \(error)")
        }
        var alert: LiveActivityAlert?
        if alertTitle != nil || alertBody != nil {
            alert = LiveActivityAlert(title: alertTitle.map { .plain($0) }, body: alertBody.map { .plain($0) })
        }
        let now = Int(Date().timeIntervalSince1970)
        switch event {
        case "update": return .liveActivityUpdate(timestamp: now, contentState: state, alert: alert)
        case "end": return .liveActivityEnd(timestamp: now, contentState: state, alert: alert)
        default: throw ValidationError("--event must be update or end, not \(event)")
        }
    }
}
