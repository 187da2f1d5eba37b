import APNsCore
import ArgumentParser
import Foundation
import Logging

/// `apns send`: one notification to one or many device tokens, with an outcome and its
/// meaning per token.
struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Send a notification to one or many device tokens and say what each outcome means.",
        discussion: """
            Tokens come from the arguments, from --tokens-file (one per line; '-' reads standard \
            input), or from standard input when it is not a terminal. Each token gets one line: \
            its outcome and what to do about it; then a summary. The exit status is 1 when any \
            notification was not accepted, 2 for a usage error.

            Examples:
              # an alert with a .p8 key, to the sandbox
              apns send --key-file AuthKey_ABC123DEFG.p8 --key-id ABC123DEFG --team-id DEF123GHIJ \\
                --topic com.example.app --title "Game Request" --body "Bob wants to play poker" <token>

              # a background push to every token in a file, results as JSON lines
              apns send --key-file key.p8 --key-id ABC123DEFG --team-id DEF123GHIJ \\
                --topic com.example.app --content-available --custom 'sync="inbox"' \\
                --tokens-file tokens.txt --json

              # a payload from standard input, with a certificate, to production
              echo '{"aps":{"alert":"Hi"}}' | apns send --cert-file push.p12 --cert-password secret \\
                --production --topic com.example.app --payload-file - <token>

              # against `apns mock-server` (prints its port and CA file)
              apns send --host 127.0.0.1 --port 8443 --ca-file /tmp/apns-mock-ca.pem --no-auth \\
                --topic com.example.app --body Hello <token>
            """
    )

    @OptionGroup(title: "Credentials") var credentials: CredentialOptions
    @OptionGroup(title: "Server") var connection: ConnectionOptions
    @OptionGroup(title: "Notification") var notification: NotificationOptions

    @Option(name: .customLong("tokens-file"), help: ArgumentHelp("Device tokens, one per line (blank lines and # comments skipped); '-' for standard input.", valueName: "path"))
    var tokensFile: String?

    @Flag(help: "One JSON object per line (per token, then a summary) instead of text.")
    var json = false

    @Option(help: "The most notifications in flight at once.")
    var concurrency = 100

    @Flag(name: .shortAndLong, help: "Log the client's and transport's debug messages to standard error (tokens redacted).")
    var verbose = false

    @Argument(help: ArgumentHelp("Device tokens in hexadecimal.", valueName: "device-token"))
    var deviceTokens: [String] = []

    /// Checks the values together; called from `run()` so that a misspelled flag is
    /// reported as such before any of these checks.
    func check() throws {
        if tokensFile == "-" && notification.readsPayloadFromStandardInput {
            throw ValidationError("--tokens-file - and --payload-file - both read standard input: put one of them in a file")
        }
        if concurrency < 1 { throw ValidationError("--concurrency must be at least 1") }
    }

    func run() async throws {
        try credentials.check()
        try connection.check()
        try notification.check()
        try check()
        Terminal.bootstrapLogging(level: verbose ? .debug : .warning)
        let logger = Logger(label: "apns.send")
        let loaded = try credentials.load()
        let push = try notification.notification(standardInput: Terminal.readStandardInput)
        let tokens = try readTokens()
        guard !tokens.isEmpty else {
            throw CLIError.usage("no device tokens: give them as arguments, with --tokens-file, or on standard input")
        }

        let apnsCredentials: APNsCredentials
        var certificate: (path: String, keyPath: String?, password: String?)?
        switch loaded {
        case .providerToken(let cache): apnsCredentials = .providerToken(cache)
        case .certificate(let path, let keyPath, let password):
            apnsCredentials = .certificate
            certificate = (path, keyPath, password)
        case .none: apnsCredentials = .certificate  // no authorization header
        }
        let transport = try TransportFactory.make(
            environment: connection.environment,
            trustedCAPEM: try connection.trustedCAPEM(),
            certificate: certificate,
            connections: connection.connections,
            logger: logger
        )
        let client = APNsClient(
            environment: connection.environment, credentials: apnsCredentials, transport: transport, logger: logger)
        let report = await send(push, to: tokens, with: client)
        await client.shutdown()
        if report.failed > 0 { throw ExitCode(1) }
    }

    /// Tokens from arguments, `--tokens-file`, or standard input when it is not a terminal.
    private func readTokens() throws(CLIError) -> [String] {
        var tokens = deviceTokens
        var text: String?
        if let tokensFile {
            if tokensFile == "-" {
                text = String(decoding: Terminal.readStandardInput(), as: UTF8.self)
            } else {
                guard let data = FileManager.default.contents(atPath: tokensFile) else {
                    throw CLIError("cannot read the tokens file \(tokensFile): check the path and its permissions")
                }
                text = String(decoding: data, as: UTF8.self)
            }
        } else if deviceTokens.isEmpty && !notification.readsPayloadFromStandardInput && !Terminal.standardInputIsTerminal {
            text = String(decoding: Terminal.readStandardInput(), as: UTF8.self)
        }
        if let text {
            for line in text.split(whereSeparator: \.isNewline) {
                let token = line.trimmingCharacters(in: .whitespaces)
                if token.isEmpty || token.hasPrefix("#") { continue }
                tokens.append(token)
            }
        }
        return tokens
    }

    private struct Report {
        var accepted = 0
        var rejected = 0
        var failed = 0
    }

    /// Sends to every token through a sliding window, printing results in input order.
    private func send(_ push: PushNotification, to tokens: [String], with client: APNsClient) async -> Report {
        let progress = ProgressBar(total: tokens.count, enabled: Terminal.standardErrorIsTerminal && tokens.count >= 100)
        var report = Report()
        var pending: [Int: Result<APNsAccepted, APNsError>] = [:]
        var nextToPrint = 0
        var done = 0
        let start = ContinuousClock.now

        func emit(_ index: Int, _ result: Result<APNsAccepted, APNsError>) {
            switch result {
            case .success: report.accepted += 1
            case .failure(.rejected): report.rejected += 1
            case .failure: break
            }
            if json {
                print(OutcomeText.json(token: tokens[index], result: result))
            } else {
                print("\(tokens[index])  \(OutcomeText.line(result))")
            }
        }

        await withTaskGroup(of: (Int, Result<APNsAccepted, APNsError>).self) { group in
            var next = 0
            func start(_ index: Int) {
                let text = tokens[index]
                group.addTask {
                    let token: DeviceToken
                    do throws(APNsRequestError) {
                        token = try DeviceToken(hex: text)
                    } catch {
                        return (index, .failure(.invalid(error)))
                    }
                    do throws(APNsError) {
                        return (index, .success(try await client.send(push, to: token)))
                    } catch {
                        return (index, .failure(error))
                    }
                }
            }
            while next < min(concurrency, tokens.count) {
                start(next)
                next += 1
            }
            while let (index, result) = await group.next() {
                if next < tokens.count {
                    start(next)
                    next += 1
                }
                pending[index] = result
                done += 1
                progress.update(done: done)
                while let ready = pending.removeValue(forKey: nextToPrint) {
                    progress.finish()
                    emit(nextToPrint, ready)
                    nextToPrint += 1
                }
            }
        }
        progress.finish()
        let seconds = Terminal.seconds(since: start)
        report.failed = tokens.count - report.accepted
        let rate = seconds > 0 ? Double(tokens.count) / seconds : 0
        if json {
            print(OutcomeText.jsonLine([
                "summary": [
                    "sent": tokens.count, "accepted": report.accepted, "rejected": report.rejected,
                    "failed": report.failed - report.rejected, "seconds": (seconds * 1000).rounded() / 1000,
                ] as [String: Any]
            ]))
        } else {
            print(String(format: "%d notification%@: %d accepted, %d rejected, %d not sent or failed in %.2f s (%.0f/s)",
                         tokens.count, tokens.count == 1 ? "" : "s", report.accepted, report.rejected,
                         report.failed - report.rejected, seconds, rate))
        }
        return report
    }
}
