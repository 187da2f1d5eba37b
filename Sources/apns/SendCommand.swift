import APNsCore
import ArgumentParser
import Foundation
import Logging
import Synchronization

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

    @Flag(name: .customLong("dry-run"), help: "Print each request (method, URL, headers, payload) instead of sending it; the provider token is never shown.")
    var dryRun = false

    @Option(help: "The most notifications in flight at once.")
    var concurrency = 100

    @Flag(name: .shortAndLong, help: "Log the client's and transport's debug messages to standard error (tokens redacted).")
    var verbose = false

    @Flag(help: "As --verbose, and every HTTP/2 frame sent and received: type, stream, length, flags, SETTINGS values, GOAWAY and reset codes (never a header field or body).")
    var trace = false

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
        Terminal.bootstrapLogging(level: trace ? .trace : verbose ? .debug : .error)
        let logger = Logger(label: "apns.send")
        let loaded = try credentials.load()
        let push = try notification.notification(standardInput: Terminal.readStandardInput)
        do {
            // The same for every token: said once, before anything is sent.
            try push.validate()
        } catch {
            let message = "the notification cannot be sent: \(OutcomeText.inToolTerms("\(error)"))"
            // A header's value (the topic, the priority for the push type, the collapse ID)
            // comes from a flag: a usage error. The payload may come from a file.
            throw error.code == .invalidPayload ? CLIError(message) : CLIError.usage(message)
        }
        let tokens = try readTokens()
        guard !tokens.isEmpty else {
            throw CLIError.usage("no device tokens: give them as arguments, with --tokens-file, or on standard input")
        }
        let short = tokens.filter { $0.count < 64 && $0.count % 2 == 0 && $0.allSatisfy(\.isHexDigit) }
        if let first = short.first {
            // Sent anyway (Apple does not fix a token's length), but a fragment is likelier.
            Terminal.standardError(
                "apns: warning: \(short.count) token\(short.count == 1 ? "" : "s") shorter than 32 bytes (\(first): \(first.count / 2) bytes); "
                    + "device tokens are 32 bytes or more, and one copied from Xcode's console with spaces must be quoted "
                    + "('<00fc13ad ff785122 …>')")
        }

        if dryRun {
            if try printRequests(push, to: tokens, credentials: loaded) < tokens.count { throw ExitCode(1) }
            return
        }

        let setup = try ClientSetup(credentials: loaded, connection: connection, logger: logger)
        if let identity = setup.tls.clientIdentity, let certificate = setup.certificate {
            TLSSetup.warnAbout(identity, topic: (try? push.topic.value(for: push.pushType)) ?? notification.topic, path: certificate.path)
        }
        let client = setup.client
        let report = await send(push, to: tokens, with: client)
        await client.shutdown()
        if let signal = report.interruptedBy {
            Terminal.standardError(
                "apns: interrupted by \(signal == SIGINT ? "SIGINT" : "SIGTERM"): the notifications that were in flight may have "
                    + "reached APNs (their lines say so); the rest were not sent")
            throw ExitCode(128 + signal)
        }
        if report.accepted < tokens.count { throw ExitCode(1) }
    }

    /// Prints the request each token would get (`--dry-run`); returns how many were valid.
    /// The `authorization` value is a description of the token, never a signed JWT.
    private func printRequests(_ push: PushNotification, to tokens: [String], credentials: CredentialOptions.Loaded) throws -> Int {
        var authorization: String?
        if case .providerToken(let cache) = credentials {
            authorization = "bearer <ES256 provider token, kid \(cache.keyID), iss \(cache.teamID): not shown>"
        }
        var valid = 0
        for text in tokens {
            let request: APNsRequest
            do {
                request = try push.request(to: try DeviceToken(hex: text), environment: connection.environment, authorization: authorization)
            } catch {
                let result = Result<APNsAccepted, APNsError>.failure(.invalid(error))
                printOutcome(token: text, result)
                continue
            }
            valid += 1
            let url = "\(request.scheme)://\(request.authority)\(request.path)"
            let body = String(decoding: request.body, as: UTF8.self)
            if json {
                var object: [String: Any] = [
                    "token": text, "method": request.method.rawValue, "url": url,
                    "headers": request.headers.map { [$0.name, $0.value] },
                ]
                // `payload` is the body itself, as JSON in the line (its key order, numbers and
                // strings exactly as sent); `body` is the same bytes as text.
                object["body"] = body
                object["bytes"] = request.body.count
                print(OutcomeText.jsonLine(object, verbatim: ["payload": request.body]))
            } else {
                print("\(request.method) \(url)")
                for header in request.headers { print("\(header.name): \(header.value)") }
                print("")
                print("\(body)  (\(request.body.count) bytes)")
                print("")
            }
        }
        return valid
    }

    /// Tokens from arguments, `--tokens-file`, or standard input when it is not a terminal.
    private func readTokens() throws(CLIError) -> [String] {
        var tokens = Self.joiningXcodeForm(deviceTokens)
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
            let notice = "apns: waiting for device tokens on standard input, one per line, until it ends (no tokens were given as arguments or with --tokens-file)"
            text = String(decoding: Terminal.readStandardInput(noticeAfter: .seconds(3), notice), as: UTF8.self)
        }
        if var text {
            // A byte order mark, as some editors write at the start of a UTF-8 file (as
            // --payload-file skips it): not part of the first token.
            if text.hasPrefix("\u{FEFF}") { text.removeFirst() }
            for line in text.split(whereSeparator: \.isNewline) {
                let token = line.trimmingCharacters(in: .whitespaces)
                if token.isEmpty || token.hasPrefix("#") { continue }
                tokens.append(token)
            }
        }
        return tokens.map(Self.hexOnly)
    }

    /// Arguments with a token as Xcode's console prints a `Data` (`<00fc13ad ff785122 …>`)
    /// pasted without quotes, which the shell split at the spaces, joined back into one.
    static func joiningXcodeForm(_ arguments: [String]) -> [String] {
        var joined: [String] = []
        var open: String?
        for argument in arguments {
            if var pending = open {
                pending += argument
                if argument.hasSuffix(">") {
                    joined.append(pending)
                    open = nil
                } else {
                    open = pending
                }
            } else if argument.hasPrefix("<") && !argument.hasSuffix(">") {
                open = argument
            } else {
                joined.append(argument)
            }
        }
        if let open { joined.append(open) }
        return joined
    }

    /// A token in Xcode's `<00fc13ad ff785122 …>` form as its hex digits alone; any other
    /// text as it is (an invalid one is reported in its place).
    static func hexOnly(_ token: String) -> String {
        guard token.hasPrefix("<") && token.hasSuffix(">") || token.contains(" ") else { return token }
        let stripped = token.filter { $0 != "<" && $0 != ">" && $0 != " " }
        return stripped.allSatisfy(\.isHexDigit) ? stripped : token
    }

    private struct Report {
        var accepted = 0
        var rejected = 0
        /// Sent, and failed (or interrupted) before an answer.
        var failed = 0
        /// Never sent: the token (or the notification for it) could not be made.
        var invalid = 0
        /// The signal (SIGINT, SIGTERM) that stopped the batch, if one did.
        var interruptedBy: Int32?

        mutating func record(_ result: Result<APNsAccepted, APNsError>) {
            switch result {
            case .success: accepted += 1
            case .failure(.rejected): rejected += 1
            case .failure(.invalid): invalid += 1
            case .failure: failed += 1
            }
        }
    }

    private typealias Finished = (position: Int, result: Result<APNsAccepted, APNsError>)

    /// Prints one token's outcome as text or JSON.
    private func printOutcome(token: String, _ result: Result<APNsAccepted, APNsError>) {
        if json {
            print(OutcomeText.json(token: token, result: result))
        } else {
            print("\(token)  \(OutcomeText.line(result))")
        }
    }

    /// Sends to every token with the client's batch (a sliding window of `concurrency`
    /// requests, made and answered on the transport's threads), printing the outcomes in
    /// input order as they become available. A token that is not hexadecimal is reported
    /// as invalid in its place and not sent.
    private func send(_ push: PushNotification, to tokens: [String], with client: APNsClient) async -> Report {
        let progress = ProgressBar(total: tokens.count, enabled: Terminal.standardErrorIsTerminal && tokens.count >= 100)
        let start = ContinuousClock.now
        var devices: [DeviceToken] = []
        var positions: [Int] = []  // the input position of each of `devices`
        var waiting: [Int: Result<APNsAccepted, APNsError>] = [:]
        for (position, text) in tokens.enumerated() {
            do {
                devices.append(try DeviceToken(hex: text))
                positions.append(position)
            } catch {
                waiting[position] = .failure(.invalid(error))
            }
        }
        let (finished, finish) = AsyncStream.makeStream(of: Finished.self)
        // Ctrl-C (or SIGTERM) cancels the batch rather than killing the process: what was
        // in flight ends as "may have reached APNs", the rest as not sent, and every line
        // and the summary are still written. Watched before the batch starts, so that no
        // signal can come between its first request and the watch.
        let interruption = Mutex<(signal: Int32?, batch: Task<Void, Never>?)>((nil, nil))
        let watch = SignalWatch([SIGINT, SIGTERM]) { signal in
            let batch = interruption.withLock { state in
                state.signal = signal
                return state.batch
            }
            batch?.cancel()
        }
        defer { watch.stop() }
        // The outcomes come from the transport's threads: they are handed to this task,
        // which prints, rather than printed there.
        let batch = Task { [devices, positions, concurrency] in
            await client.send(push, to: devices, maxConcurrency: concurrency) { index, outcome in
                finish.yield((positions[index], outcome.result))
            }
            finish.finish()
        }
        let signalledEarly = interruption.withLock { state in
            state.batch = batch
            return state.signal != nil
        }
        if signalledEarly { batch.cancel() }
        let report = await { () async -> Report in
            var report = Report()
            var nextToPrint = 0
            var done = waiting.count
            func printReady() {
                while let ready = waiting.removeValue(forKey: nextToPrint) {
                    progress.finish()
                    report.record(ready)
                    printOutcome(token: tokens[nextToPrint], ready)
                    nextToPrint += 1
                }
            }
            printReady()
            for await (position, result) in finished {
                waiting[position] = result
                done += 1
                progress.update(done: done)
                printReady()
            }
            await batch.value
            report.interruptedBy = interruption.withLock { $0.signal }
            return report
        }()
        progress.finish()
        let seconds = Terminal.seconds(since: start)
        let rate = seconds > 0 ? Double(tokens.count) / seconds : 0
        if json {
            // sent = accepted + rejected + failed; an invalid token was never sent.
            print(OutcomeText.jsonLine([
                "summary": [
                    "sent": tokens.count - report.invalid, "accepted": report.accepted, "rejected": report.rejected,
                    "failed": report.failed, "invalid": report.invalid, "seconds": (seconds * 1000).rounded() / 1000,
                ] as [String: Any]
            ]))
        } else {
            print(String(format: "%d notification%@: %d accepted, %d rejected, %d not sent or failed in %.2f s (%.0f/s)",
                         tokens.count, tokens.count == 1 ? "" : "s", report.accepted, report.rejected,
                         report.failed + report.invalid, seconds, rate))
        }
        return report
    }
}
