import APNsCore
import Foundation

/// What an outcome means, in words and as JSON, for `apns send` and `apns demo`.
enum OutcomeText {
    /// What to do about a notification to a device that could not be made.
    static let invalidNotificationAdvice = "not sent: fix the notification or the device token"

    /// What to do about a broadcast that could not be made (it has no device token).
    static let invalidBroadcastAdvice = "not sent: fix the broadcast's payload (--payload-file or --content-state) or its flags"

    /// What to do about a channel request that could not be made.
    static let invalidChannelRequestAdvice = "not sent: fix the request's flags (--bundle-id, the channel ID)"

    /// One line for a person: `accepted apns-id …` or `rejected 410 Unregistered: <advice>`;
    /// `invalidAdvice` is what to do when the request could not be made.
    static func line(_ result: Result<APNsAccepted, APNsError>, invalidAdvice: String = invalidNotificationAdvice) -> String {
        switch result {
        case .success(let accepted):
            var text = "accepted"
            if let id = accepted.apnsID { text += " apns-id \(id.uuidString)" }
            if let unique = accepted.uniqueID { text += " apns-unique-id \(PrintableText.escaped(unique))" }
            return text
        case .failure(let error):
            return "\(summary(error)) → \(advice(error, invalidAdvice: invalidAdvice))"
        }
    }

    /// `rejected 410 Unregistered`, `failed connectionFailed: …`, `invalid: …`.
    static func summary(_ error: APNsError) -> String {
        switch error {
        case .rejected(let rejection):
            return "rejected \(rejection.status) \(rejection.reason?.description ?? "(no reason)")"
        case .failed(let failure):
            return "failed \(failure.code)" + (failure.detail.map { ": \(inToolTerms($0))" } ?? "")
        case .invalid(let problem):
            return "invalid: \(inToolTerms("\(problem)"))"
        }
    }

    /// The SDK's advice in an error's text, with the API it names replaced by the flag
    /// that does the same in the tool (or, where the tool has none, by what to do
    /// instead). Every SDK error the tool prints goes through it.
    static func inToolTerms(_ detail: String) -> String {
        var text = detail
        for (api, tool) in toolTerms { text = text.replacingOccurrences(of: api, with: tool) }
        return text
    }

    /// The phrases of the SDK's errors that name an API, and what the tool says instead.
    static let toolTerms: [(api: String, tool: String)] = [
        ("pass its CA with TLSConfiguration(trustRoots: .certificates(pem))", "pass its CA with --ca-file (or APNS_CA_FILE)"),
        ("the CA certificates in TrustRoots.certificates(_:)", "the CA certificates of --ca-file"),
        ("the PEM given to TrustRoots.certificates(_:)", "the PEM of --ca-file"),
        ("a longer connectTimeout helps", "a longer --connect-timeout (or APNS_CONNECT_TIMEOUT) helps"),
        ("set TLSConfiguration(clientIdentity:) or use token-based authentication",
         "give --cert-file or use token-based authentication (--key-file, --key-id, --team-id)"),
        ("(set TLSConfiguration(clientIdentity:))", "(give --cert-file)"),
        (": set ProxyConfiguration(username:password:)", ": give them in --proxy or APNS_PROXY (http://user:password@host:port)"),
        // The tool parses every payload, --payload-file's too: it has no way to send bytes as they are.
        ("send such a payload's bytes as they are (PushNotification.Body.raw) or write the number as a string",
         "write the number as a string (the tool parses every payload, so it cannot send such a number as it is)"),
        ("(Payload.contentChanged(for: .widgets))", "(--push-type widgets or --push-type controls)"),
    ]

    /// What to do about `error`: the remedy APNs' reason calls for, or what a transport
    /// failure means for retrying; `invalidAdvice` for a request that could not be made.
    static func advice(_ error: APNsError, invalidAdvice: String = invalidNotificationAdvice) -> String {
        switch error {
        case .rejected(let rejection):
            switch rejection.remedy {
            case .removeDeviceToken:
                var text = "remove this device token: it is no longer valid for the topic"
                if let timestamp = rejection.timestamp {
                    text += " (unless the device registered it again after \(ISO8601DateFormatter().string(from: timestamp)))"
                }
                return text
            case .retryLater:
                return "temporary condition at APNs: send again later (already retried within the retry policy)"
            case .fixCredentials:
                if let meaning = credentialMeaning(rejection.reason) { return meaning }
                return "fix the credentials: check the key, key ID, team ID, certificate and environment (--sandbox/--production)"
            case .fixRequest:
                if let meaning = credentialMeaning(rejection.reason) { return meaning }
                if rejection.reason == .badDeviceToken {
                    return "fix the request: the token is malformed or belongs to the other environment (try --sandbox/--production) before deleting it"
                }
                return "fix the request: resending it unchanged fails again"
            }
        case .failed(let failure):
            var text = failure.mayHaveReachedAPNs
                ? "may have reached APNs: a retry could deliver it twice"
                : failure.isPermanent
                    ? "never reached APNs, and sending again fails the same way"
                    : "never reached APNs: safe to retry"
            switch failure.code {
            case .connectionFailed where proxyHint(failure.detail) != nil: text += "; " + (proxyHint(failure.detail) ?? "")
            case .connectionFailed: text += "; check --host/--port and the network"
            case .tlsFailure: text += "; check --ca-file and the certificate"
            default: break
            }
            return text
        case .invalid:
            return invalidAdvice
        }
    }

    /// What a rejection of the credentials or the topic means and what to change, for the
    /// reasons whose cause APNs names; `nil` for the others. `apns check` and the advice of
    /// `apns send` say the same.
    /// What to check when a connection failure's `detail` is about the proxy, or `nil`
    /// when it is not: the credentials for a refusal of them, the address for a proxy
    /// that cannot be reached, otherwise the proxy itself (its answer is in the detail).
    static func proxyHint(_ detail: String?) -> String? {
        guard let detail, detail.contains(" proxy ") else { return nil }
        if detail.contains("refused the credentials") || detail.contains("requires authentication") || detail.contains("configuration has") {
            return "check the proxy's user name and password (--proxy, APNS_PROXY)"
        }
        if detail.hasPrefix("cannot reach the proxy") {
            return "check the proxy's address (--proxy, APNS_PROXY) and that it runs"
        }
        return "check the proxy (--proxy, APNS_PROXY): the error says what it answered"
    }

    static func credentialMeaning(_ reason: APNsReason?) -> String? {
        switch reason {
        case .invalidProviderToken?:
            "the provider token was refused: check the key ID and the team ID, and that the .p8 is the key Apple issued for them and not revoked"
        case .expiredProviderToken?:
            "the provider token's issue time is too old or in the future: check this machine's clock"
        case .missingProviderToken?:
            "no credentials reached APNs: give --key-file, --key-id and --team-id, or --cert-file"
        case .badEnvironmentKeyInToken?, .badEnvironmentKeyIDInToken?:
            "the key is not enabled for this environment: use a key of this environment, or switch between --sandbox and --production"
        case .unrelatedKeyIDInToken?:
            "the connection belongs to another key: send each key's notifications on connections of their own"
        case .badCertificate?:
            "the client certificate was refused: check that it is the APNs certificate of this app and has not expired or been revoked"
        case .badCertificateEnvironment?:
            "the certificate is for the other environment: switch between --sandbox and --production"
        case .topicDisallowed?:
            "the topic is not allowed with these credentials: it is outside a topic-specific key's topics or the certificate's"
        case .topicMismatch?:
            "the bundle ID is not one these credentials cover: check --bundle-id, or use a key or certificate of that app (a topic-specific key covers only its own bundle IDs)"
        case .badTopic?, .missingTopic?:
            "the topic is refused: give the app's bundle ID, as the key's team or the certificate has it"
        case .tooManyProviderTokenUpdates?:
            "the provider token changed too often: wait a few minutes"
        default:
            nil
        }
    }

    /// ` (apns-request-id <uuid>)` for a channel or broadcast request APNs refused, which
    /// Apple asks for when you report a problem; empty when APNs did not answer.
    static func requestIDSuffix(_ error: APNsError) -> String {
        error.rejection?.requestID.map { " (apns-request-id \($0.uuidString))" } ?? ""
    }

    /// The remedy name for JSON output, as ``advice(_:)`` says it: APNs' remedy for a
    /// rejection; for a transport failure `retryMayDuplicate` (it may have reached APNs),
    /// `fixSetup` (a permanent failure, such as a server certificate that is not trusted:
    /// sending again fails the same way until the setup changes) or `retry`; `fixRequest`
    /// for a notification that could not be made.
    static func remedy(_ error: APNsError) -> String {
        switch error {
        case .rejected(let rejection): rejection.remedy.rawValue
        case .failed(let failure): failure.mayHaveReachedAPNs ? "retryMayDuplicate" : failure.isPermanent ? "fixSetup" : "retry"
        case .invalid: "fixRequest"
        }
    }

    /// One JSON object for `--json`: `token`, `outcome` (accepted, rejected, failed,
    /// invalid) and the details of each.
    static func json(token: String, result: Result<APNsAccepted, APNsError>) -> String {
        var object: [String: Any] = ["token": token]
        switch result {
        case .success(let accepted):
            object["outcome"] = "accepted"
            object["status"] = 200
            if let id = accepted.apnsID { object["apnsID"] = id.uuidString }
            if let unique = accepted.uniqueID { object["uniqueID"] = unique }
        case .failure(let error):
            object["remedy"] = remedy(error)
            object["advice"] = advice(error)
            switch error {
            case .rejected(let rejection):
                object["outcome"] = "rejected"
                object["status"] = rejection.status
                if let reason = rejection.reason { object["reason"] = reason.rawValue }
                if let id = rejection.apnsID { object["apnsID"] = id.uuidString }
                if let timestamp = rejection.timestamp { object["timestamp"] = Int64(timestamp.timeIntervalSince1970 * 1000) }
            case .failed(let failure):
                object["outcome"] = "failed"
                object["code"] = "\(failure.code)"
                object["mayHaveReachedAPNs"] = failure.mayHaveReachedAPNs
                if let detail = failure.detail { object["detail"] = inToolTerms(detail) }
            case .invalid(let problem):
                object["outcome"] = "invalid"
                object["detail"] = inToolTerms("\(problem)")
            }
        }
        return jsonLine(object)
    }

    /// A compact, key-sorted JSON object on one line.
    static func jsonLine(_ object: [String: Any]) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else {
            return "{}"
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// ``jsonLine(_:)`` with members whose values are JSON texts written as they are, in
    /// their place among the sorted keys: a payload as the SDK wrote it. Read back and
    /// written again by JSONSerialization, `1.0` came out as `1`, `-0.0` as `0` and a
    /// string's leading U+FEFF was dropped. A text that is not one line of valid JSON (the
    /// SDK's strict parser decides) is left out, as JSONSerialization left it out before.
    static func jsonLine(_ object: [String: Any], verbatim: [String: [UInt8]]) -> String {
        let options: JSONSerialization.WritingOptions = [.sortedKeys, .withoutEscapingSlashes, .fragmentsAllowed]
        var members: [(key: String, text: [UInt8])] = []
        for (key, value) in object {
            guard let data = try? JSONSerialization.data(withJSONObject: value, options: options) else { return "{}" }
            members.append((key, Array(data)))
        }
        for (key, text) in verbatim where !text.contains(0x0A) && !text.contains(0x0D) {
            guard (try? JSONValue(jsonBytes: text)) != nil else { continue }
            members.append((key, text))
        }
        // The order JSONSerialization's .sortedKeys gives: by the keys' UTF-8 bytes.
        members.sort { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        var line: [UInt8] = [UInt8(ascii: "{")]
        for (index, member) in members.enumerated() {
            if index > 0 { line.append(UInt8(ascii: ",")) }
            guard let key = try? JSONSerialization.data(withJSONObject: member.key, options: options) else { return "{}" }
            line += Array(key)
            line.append(UInt8(ascii: ":"))
            line += member.text
        }
        line.append(UInt8(ascii: "}"))
        return String(decoding: line, as: UTF8.self)
    }
}
