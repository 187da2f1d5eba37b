import APNsCore
import APNsTransport
import ArgumentParser
import Foundation
import Logging

/// `apns check`: whether APNs can be reached and takes these credentials for a topic,
/// without a device.
///
/// It sends one silent background notification to a device token no device has (32 zero
/// bytes). APNs checks the credentials and the topic before it looks a token up, so its
/// answer says which of them is wrong, if any: `BadDeviceToken` means neither is.
struct CheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check that APNs can be reached and accepts your credentials for a topic, without a device.",
        discussion: """
            Sends one silent background notification (content-available, priority 5) to a \
            device token that no device has: 32 zero bytes. APNs checks the credentials and \
            the topic before it looks the token up, so it answers 400 BadDeviceToken when \
            both are right, and otherwise says what is wrong (InvalidProviderToken, \
            TopicDisallowed, BadCertificateEnvironment...). Nothing reaches any device.

            Exit status 0 when the credentials and the topic are accepted, 1 when they are \
            not or APNs cannot be reached (one line says why and what to check).

            Examples:
              apns check --key-file AuthKey_ABC123DEFG.p8 --key-id ABC123DEFG --team-id DEF123GHIJ --topic com.example.app
              apns check --production --cert-file push.p12 --cert-password secret --topic com.example.app
            """
    )

    @OptionGroup(title: "Credentials") var credentials: CredentialOptions
    @OptionGroup(title: "Server") var connection: ConnectionOptions

    @Option(help: ArgumentHelp("The app's bundle ID; default: APNS_TOPIC.", valueName: "bundle-id"))
    var topic: String?

    @Flag(name: .shortAndLong, help: "Log the client's and transport's debug messages to standard error.")
    var verbose = false

    @Flag(help: "As --verbose, and every HTTP/2 frame sent and received.")
    var trace = false

    @Flag(help: "Print one JSON object instead of text: ok, status, reason, meaning, milliseconds, endpoint, topic.")
    var json = false

    /// The token of the probe: no device has it.
    static let probeToken = String(repeating: "0", count: 64)

    func run() async throws {
        try credentials.check()
        try connection.check()
        if topic?.isEmpty == true { throw CLIError.usage("--topic is empty") }
        guard let topic = topic ?? APNsSettings.variable("APNS_TOPIC") else {
            throw CLIError.usage("no topic: give --topic (the app's bundle ID) or set APNS_TOPIC")
        }
        let probe = PushNotification(payload: .background(), topic: .bundleID(topic))
        do {
            // The probe is fixed but for its topic: a probe that cannot be made is the topic's fault.
            try probe.validate()
        } catch {
            throw CLIError.usage("the topic \(topic) cannot be sent: \(OutcomeText.inToolTerms("\(error)"))")
        }
        Terminal.bootstrapLogging(level: trace ? .trace : verbose ? .debug : .error)
        let loaded = try credentials.load()
        let setup = try ClientSetup(credentials: loaded, connection: connection, logger: Logger(label: "apns.check"))
        let environment = connection.environment
        if !json {
            // The proxy as its URL, the password as *** (ProxyConfiguration's description).
            let via = setup.tls.proxy.map { " via \($0)" } ?? ""
            print("apns check: \(environment.host):\(environment.port)\(via), \(Self.describe(loaded)), topic \(topic)")
        }
        if let identity = setup.tls.clientIdentity, let certificate = setup.certificate, !json {
            // What the certificate itself says, before APNs does: its topics and expiry.
            print("certificate: \(identity.subjectCommonName ?? "(no common name)"), expires \(ISO8601DateFormatter().string(from: identity.notAfter))")
            TLSSetup.warnAbout(identity, topic: topic, path: certificate.path)
        }

        let token = try DeviceToken(hex: Self.probeToken)
        let started = ContinuousClock.now
        let result: Result<APNsAccepted, APNsError>
        do {
            result = .success(try await setup.client.send(probe, to: token))
        } catch {
            result = .failure(error)
        }
        await setup.client.shutdown()
        let elapsed = ContinuousClock.now - started
        let verdict = Self.verdict(result)
        if json {
            var object: [String: Any] = [
                "ok": verdict.ok, "answer": verdict.answer, "meaning": verdict.meaning,
                "milliseconds": Self.milliseconds(elapsed), "endpoint": "\(environment.host):\(environment.port)", "topic": topic,
            ]
            if case .failure(.rejected(let rejection)) = result {
                object["status"] = rejection.status
                object["reason"] = rejection.reason?.rawValue
            } else if case .failure(.failed(let failure)) = result {
                object["error"] = "\(failure.code)"
            } else if case .success = result {
                object["status"] = 200
            }
            print(OutcomeText.jsonLine(object))
        } else {
            print("answer: \(verdict.answer) in \(Self.milliseconds(elapsed)) ms")
            print(verdict.ok ? "ok: \(verdict.meaning)" : "problem: \(verdict.meaning)")
        }
        Terminal.flush()
        if !verdict.ok { throw ExitCode(1) }
    }

    /// The credentials, as the first line names them (never a secret).
    static func describe(_ loaded: CredentialOptions.Loaded) -> String {
        switch loaded {
        case .providerToken(let cache): "provider token (key \(cache.keyID), team \(cache.teamID))"
        case .certificate(let path, _, _): "client certificate \(path)"
        case .none: "no credentials"
        }
    }

    /// What the probe's outcome means: whether the credentials and topic are accepted,
    /// the answer in one phrase, and what it means or what to check.
    static func verdict(_ result: Result<APNsAccepted, APNsError>) -> (ok: Bool, answer: String, meaning: String) {
        switch result {
        case .success:
            return (true, "200 (accepted)", "the server accepted the probe itself, as a test server that takes any token does; APNs would have answered BadDeviceToken")
        case .failure(.rejected(let rejection)):
            let answer = "\(rejection.status) \(rejection.reason?.description ?? "(no reason)")"
            switch rejection.reason {
            case .badDeviceToken?:
                return (true, answer, "the credentials and the topic are accepted (APNs refused only the probe's token, which no device has)")
            case .deviceTokenNotForTopic?:
                return (true, answer, "the credentials are accepted (the token belongs to another topic)")
            default:
                if let meaning = OutcomeText.credentialMeaning(rejection.reason) {
                    return (false, answer, meaning)
                }
                return (false, answer, "\(rejection.remedy): \(rejection)")
            }
        case .failure(.failed(let failure)):
            let hint: String
            switch failure.code {
            case .connectionFailed:
                hint = OutcomeText.proxyHint(failure.detail)
                    ?? "check DNS, that outbound TCP to port 443 (or 2197) is open, and the proxy (--proxy, APNS_PROXY)"
            case .tlsFailure where failure.detail?.contains("does not chain to the system trust store") == true:
                hint = "check the trust store (ca-certificates) and that nothing between here and APNs intercepts TLS"
            case .tlsFailure:
                // The detail says what failed and what to fix (a name, a date, a client
                // certificate, a TLS version): trust-store advice would mislead.
                hint = "the error above says what to fix"
            case .timeout:
                hint = "APNs did not answer in time: check the network and the proxy"
            default:
                hint = "try again; if it persists, --trace shows every frame of the exchange"
            }
            let detail = failure.detail.map(OutcomeText.inToolTerms) ?? "\(failure.code)"
            return (false, "no answer (\(failure.code))", "cannot reach APNs: \(detail); \(hint)")
        case .failure(.invalid(let invalid)):
            return (false, "not sent", "the probe could not be made: \(OutcomeText.inToolTerms("\(invalid)"))")
        }
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
