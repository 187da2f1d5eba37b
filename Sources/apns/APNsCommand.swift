import ArgumentParser
import Foundation

/// The `apns` command-line tool: send notifications, run a mock APNs server, run the demo
/// and the benchmark.
///
/// Exit status: 0 when everything worked, 1 when something failed at run time (a
/// notification was not accepted, a key could not be read), 2 for a usage error (a bad
/// flag or value), with one line on standard error saying what to fix.
@main
struct APNsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apns",
        abstract: "Send and test Apple Push Notification service requests.",
        discussion: """
            Examples:
              apns send --key-file AuthKey_ABC123DEFG.p8 --key-id ABC123DEFG --team-id DEF123GHIJ \\
                --topic com.example.app --title Hello --body World <device-token>
              apns check --key-file AuthKey_ABC123DEFG.p8 --key-id ABC123DEFG --team-id DEF123GHIJ --topic com.example.app
              apns mock-server --unregistered <device-token> --verbose
              apns demo
              apns bench --connections 2 --count 100000
            """,
        version: APNsCommand.version,
        subcommands: [SendCommand.self, CheckCommand.self, ChannelCommand.self, BroadcastCommand.self, MockServerCommand.self, DemoCommand.self, BenchCommand.self]
    )

    /// What `apns --version` prints: the SDK's version as the CHANGELOG names it (the
    /// second wave, not yet tagged).
    static let version = "0.2.0-dev"

    /// `apns` without a subcommand: nothing was asked for, so it is a usage error (status 2)
    /// naming the subcommands, not a success.
    mutating func run() async throws {
        let names = Self.configuration.subcommands.map { $0._commandName }
        throw CLIError.usage("no subcommand given; one of: \(names.joined(separator: ", "))")
    }

    /// ArgumentParser reads `-5` after an option as another option and says "Missing
    /// value for '--count <n>'": when the argument after the option is a negative number,
    /// the line says that instead. `nil` when that is not the case.
    static func negativeValueProblem(_ message: String, arguments: [String]) -> String? {
        guard message.hasPrefix("Missing value for '"),
            let option = message.dropFirst("Missing value for '".count).split(separator: " ").first.map(String.init),
            let index = arguments.firstIndex(of: option), index + 1 < arguments.count,
            case let value = arguments[index + 1], value.count > 1, value.hasPrefix("-"), Double(value) != nil
        else { return nil }
        return "\(option) is \(value): it must not be negative"
    }

    /// What ends the line of a usage error (exit status 2), and only of one.
    static let usageHint = " (run with --help for usage)"

    /// Runs the tool with the exit statuses the tool documents: ArgumentParser's usage
    /// errors become status 2 with a single line ending in a pointer to `--help`,
    /// ``CLIError`` its own status, and any other error status 1 with a single line.
    static func main() async {
        Terminal.ignoreBrokenPipes()
        SignalWaiter.unblockTerminationSignals()
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            Terminal.exit(0)
        } catch let error as CLIError {
            Terminal.standardError("apns: \(OutcomeText.inToolTerms(error.message))\(error.status == 2 ? Self.usageHint : "")")
            Terminal.exit(error.status)
        } catch let code as ExitCode {
            Terminal.exit(code.rawValue)
        } catch {
            let status = exitCode(for: error)
            if status == .success {
                // --help, --version: the full text on standard output.
                print(fullMessage(for: error))
                Terminal.exit(0)
            }
            var message = message(for: error)
                .split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty }.joined(separator: "; ")
            if message.hasPrefix("Error: ") { message.removeFirst("Error: ".count) }
            if let negative = negativeValueProblem(message, arguments: Array(CommandLine.arguments.dropFirst())) {
                message = negative
            }
            // Only a usage error (a bad flag or value) is fixed by reading --help; a run-time
            // failure (a file that cannot be read, a program that cannot start) is not.
            let isUsageError = status == .validationFailure
            Terminal.standardError("apns: \(message)\(isUsageError ? Self.usageHint : "")")
            Terminal.exit(isUsageError ? 2 : status.rawValue)
        }
    }
}
