import APNsCore
import APNsTransport
import ArgumentParser
import Foundation

/// The payload (from flags, a JSON file or standard input) and the APNs request headers.
struct NotificationOptions: ParsableArguments {
    @Option(name: .customLong("topic"), help: ArgumentHelp("The apns-topic: your bundle ID (the push type's suffix, such as .voip, is added) or a full topic; default: APNS_TOPIC.", valueName: "topic"))
    var topicOption: String?

    /// `--topic`, or `APNS_TOPIC` when the flag is not given (checked by ``check()``).
    var topic: String {
        topicOption ?? APNsSettings.variable("APNS_TOPIC") ?? ""
    }

    @Option(name: .customLong("title"), help: "The alert title.")
    var title: String?

    @Option(name: .customLong("subtitle"), help: "The alert subtitle.")
    var subtitle: String?

    @Option(name: .customLong("body"), help: "The alert body.")
    var body: String?

    @Option(help: "The app icon badge (0 removes it).")
    var badge: Int?

    @Option(help: "A sound file in the app bundle, or 'default'.")
    var sound: String?

    @Option(help: "The notification category (its actions).")
    var category: String?

    @Option(name: .customLong("thread-id"), help: "The thread that groups notifications.")
    var threadID: String?

    @Flag(name: .customLong("mutable-content"), help: "Let the notification service extension modify it.")
    var mutableContent = false

    @Flag(name: .customLong("content-available"), help: "Wake the app in the background (alone: a background push).")
    var contentAvailable = false
    @Flag(name: .customLong("content-changed"), help: "Reload a widget's timeline or a control's state: content-changed: true (alone: a widgets push; add --push-type controls for a control).")
    var contentChanged = false

    @Option(name: .customLong("loc-key"), help: ArgumentHelp("The alert body's key in the app's Localizable.strings (loc-key).", valueName: "key"))
    var locKey: String?

    @Option(name: .customLong("loc-args"), help: ArgumentHelp("An argument for --loc-key's format (repeatable, in order).", valueName: "text"))
    var locArgs: [String] = []

    @Option(name: .customLong("title-loc-key"), help: ArgumentHelp("The alert title's key in the app's Localizable.strings (title-loc-key).", valueName: "key"))
    var titleLocKey: String?

    @Option(name: .customLong("title-loc-args"), help: ArgumentHelp("An argument for --title-loc-key's format (repeatable, in order).", valueName: "text"))
    var titleLocArgs: [String] = []

    @Option(help: ArgumentHelp("A Live Activity event: start, update or end (push type liveactivity).", valueName: "event"))
    var event: String?

    @Option(name: .customLong("content-state"), help: ArgumentHelp("The Live Activity's content-state, a JSON object (needed for start and update).", valueName: "json"))
    var contentState: String?

    @Option(name: .customLong("stale-date"), help: ArgumentHelp("When the Live Activity's content becomes outdated, UNIX seconds.", valueName: "seconds"))
    var staleDate: Int?

    @Option(name: .customLong("dismissal-date"), help: ArgumentHelp("When an ended Live Activity leaves the Lock Screen, UNIX seconds.", valueName: "seconds"))
    var dismissalDate: Int?

    @Option(name: .customLong("attributes-type"), help: ArgumentHelp("The app's ActivityAttributes type, for --event start.", valueName: "name"))
    var attributesType: String?

    @Option(help: ArgumentHelp("The activity's static attributes, a JSON object, for --event start.", valueName: "json"))
    var attributes: String?

    @Option(name: .customLong("custom"), help: ArgumentHelp("A custom key beside aps, with a JSON value (repeatable): --custom 'id=42' --custom 'who=\"Bob\"'.", valueName: "key=json"))
    var custom: [String] = []

    @Option(name: .customLong("payload-file"), help: ArgumentHelp("The whole payload as JSON from a file, or '-' for standard input; excludes the payload flags.", valueName: "path"))
    var payloadFile: String?

    @Option(name: .customLong("push-type"), help: ArgumentHelp("apns-push-type: alert, background, voip, liveactivity, complication, fileprovider, mdm, location, pushtotalk, widgets, controls. Default: alert, or background for --content-available alone.", valueName: "type"))
    var pushType: String?

    @Option(help: ArgumentHelp("apns-priority: 10 (immediately), 5 (power-considerate) or 1 (lowest).", valueName: "n"))
    var priority: Int?

    @Option(help: ArgumentHelp("apns-expiration: UNIX seconds, +SECONDS from now, or 0 (deliver once, do not store).", valueName: "time"))
    var expiration: String?

    @Option(name: .customLong("collapse-id"), help: ArgumentHelp("apns-collapse-id: notifications with the same one replace each other (at most 64 bytes).", valueName: "id"))
    var collapseID: String?

    private var hasAlertFlags: Bool {
        title != nil || subtitle != nil || body != nil || locKey != nil || titleLocKey != nil
    }

    private var hasPayloadFlags: Bool {
        hasAlertFlags || badge != nil || sound != nil || category != nil
            || threadID != nil || mutableContent || contentAvailable || contentChanged || !custom.isEmpty || event != nil
    }

    /// Checks the values together; called from `run()` so that a misspelled flag is
    /// reported as such before any of these checks.
    func check() throws {
        if payloadFile != nil && hasPayloadFlags {
            throw ValidationError("--payload-file excludes the payload flags (--title, --body, --custom, …): put everything in the file")
        }
        // Before "nothing to send": arguments without their key are what is missing.
        if !locArgs.isEmpty && locKey == nil { throw ValidationError("--loc-args needs --loc-key") }
        if !titleLocArgs.isEmpty && titleLocKey == nil { throw ValidationError("--title-loc-args needs --title-loc-key") }
        if payloadFile == nil && !hasPayloadFlags {
            throw ValidationError("nothing to send: give --title/--body, --content-available, --content-changed, --custom, or --payload-file")
        }
        if let priority, Priority(rawValue: priority) == nil {
            throw ValidationError("--priority \(priority) is not 10, 5 or 1")
        }
        if let pushType, !PushType.documented.contains(PushType(rawValue: pushType)) {
            throw ValidationError("--push-type \(pushType) is not one of \(PushType.documented.map(\.rawValue).joined(separator: ", "))")
        }
        if let expiration { _ = try Self.parseExpiration(expiration) }
        if let badge, badge < 0 { throw ValidationError("--badge is \(badge): it must not be negative") }
        if collapseID?.isEmpty == true { throw ValidationError("--collapse-id is empty: leave it out for no collapse ID") }
        if let collapseID, collapseID.utf8.count > PushNotification.maximumCollapseIDBytes {
            throw ValidationError("--collapse-id is \(collapseID.utf8.count) bytes; APNs allows \(PushNotification.maximumCollapseIDBytes)")
        }
        if topic.isEmpty {
            throw ValidationError(topicOption == nil ? "no topic: give --topic (the app's bundle ID) or set APNS_TOPIC" : "--topic is empty")
        }
        try checkLiveActivity()
        for entry in custom { _ = try Self.parseCustom(entry) }
    }

    /// The Live Activity flags, together.
    private func checkLiveActivity() throws {
        let liveActivityFlags = contentState != nil || staleDate != nil || dismissalDate != nil || attributesType != nil || attributes != nil
        guard let event else {
            if liveActivityFlags { throw ValidationError("--content-state, --stale-date, --dismissal-date, --attributes-type and --attributes need --event") }
            return
        }
        guard ["start", "update", "end"].contains(event) else { throw ValidationError("--event \(event) is not start, update or end") }
        if let pushType, pushType != PushType.liveactivity.rawValue {
            throw ValidationError("--event makes a liveactivity push; --push-type \(pushType) contradicts it")
        }
        if let contentState { _ = try Self.parseObject(contentState, flag: "--content-state") }
        if let attributes { _ = try Self.parseObject(attributes, flag: "--attributes") }
        switch event {
        case "start":
            if attributesType == nil || attributes == nil || contentState == nil {
                throw ValidationError("--event start needs --attributes-type, --attributes and --content-state")
            }
            // Apple requires an alert in the payload that starts a Live Activity.
            if !hasAlertFlags {
                throw ValidationError("--event start needs an alert: add --title or --body (Apple requires one to start a Live Activity)")
            }
        case "update":
            if contentState == nil { throw ValidationError("--event update needs --content-state") }
        default:
            break
        }
        if event != "start" && (attributesType != nil || attributes != nil) {
            throw ValidationError("--attributes-type and --attributes are for --event start")
        }
        if event != "end" && dismissalDate != nil { throw ValidationError("--dismissal-date is for --event end") }
        // A Live Activity's sound belongs to its alert: without one it would be dropped.
        if sound != nil && !hasAlertFlags {
            throw ValidationError("--sound on a Live Activity push needs an alert: add --title or --body (the sound plays with the alert)")
        }
        if let staleDate { try Self.checkSeconds(Int64(staleDate), flag: "--stale-date") }
        if let dismissalDate { try Self.checkSeconds(Int64(dismissalDate), flag: "--dismissal-date") }
    }

    /// A JSON object from a flag's value.
    static func parseObject(_ text: String, flag: String) throws -> JSONObject {
        guard case .object(let object)? = try? JSONValue(jsonBytes: Array(text.utf8)) else {
            throw ValidationError("\(flag) is not a JSON object: \(text)")
        }
        return object
    }

    /// Whether the payload comes from standard input.
    var readsPayloadFromStandardInput: Bool { payloadFile == "-" }

    /// The push type: the flag, else background for `--content-available` without an alert,
    /// widgets for `--content-changed` without an alert, else alert.
    var resolvedPushType: PushType {
        if let pushType { return PushType(rawValue: pushType) }
        if event != nil { return .liveactivity }
        let hasAlert = hasAlertFlags
        if contentAvailable && !hasAlert && badge == nil && sound == nil { return .background }
        if contentChanged && !hasAlert && badge == nil && sound == nil { return .widgets }
        return .alert
    }

    /// The push type whose topic suffix `topic` ends in, if any (the longest that fits).
    static func pushTypeSuffix(of topic: String) -> (suffix: String, pushType: PushType)? {
        PushType.documented
            .map { (suffix: Topic.suffix(for: $0), pushType: $0) }
            .filter { !$0.suffix.isEmpty && topic.hasSuffix($0.suffix) && topic.count > $0.suffix.count }
            .max { $0.suffix.count < $1.suffix.count }
    }

    /// The notification the flags describe.
    /// - Parameter standardInput: Reads standard input (called only for `--payload-file -`).
    func notification(standardInput: () -> [UInt8]) throws(CLIError) -> PushNotification {
        let pushType = resolvedPushType
        let payload = try makePayload(standardInput: standardInput)
        let suffix = Topic.suffix(for: pushType)
        // A topic that already ends in a push type's suffix is a full topic: used as given,
        // never stacked (com.example.app.voip.voip), with a warning when the suffix is
        // another push type's, which APNs answers with DeviceTokenNotForTopic.
        let ownSuffix = Self.pushTypeSuffix(of: self.topic)
        let topic: Topic = ownSuffix != nil || pushType == .mdm ? .explicit(self.topic) : .bundleID(self.topic)
        if let ownSuffix, ownSuffix.suffix != suffix, pushType != .mdm {
            Terminal.standardError(
                "apns: warning: the topic \(self.topic) ends in \(ownSuffix.suffix), the suffix of \(ownSuffix.pushType) pushes, "
                    + "but this is a\(pushType == .alert ? "n" : "") \(pushType) push"
                    + (suffix.isEmpty ? " (no suffix)" : " (suffix \(suffix))") + ": APNs will answer DeviceTokenNotForTopic")
        }
        var expirationValue = Expiration.none
        if let expiration {
            do { expirationValue = try Self.parseExpiration(expiration, warn: true) } catch { throw CLIError.usage("\(error)") }
        }
        return PushNotification(
            body: try body(payload, pushType: pushType),
            pushType: pushType,
            topic: topic,
            priority: priority.flatMap(Priority.init(rawValue:)),
            expiration: expirationValue,
            collapseID: collapseID
        )
    }

    /// The payload as the request body. A payload built from flags with custom keys only
    /// (a VoIP push, say) gets an empty `aps` from `Payload` itself for every push type but
    /// MDM and File Provider, as APNs asks; such a payload is encoded here once, so that an
    /// alert push of custom keys alone is refused with a hint before anything is sent.
    private func body(_ payload: Payload, pushType: PushType) throws(CLIError) -> PushNotification.Body {
        guard payloadFile == nil, payload.aps.isEmpty, !payload.custom.isEmpty,
            pushType != .mdm, pushType != .fileprovider
        else { return .payload(payload) }
        do {
            _ = try payload.encoded(for: pushType)
        } catch {
            throw CLIError("the payload cannot be sent: \(OutcomeText.inToolTerms("\(error)"))"
                + (pushType == .alert ? " (custom keys alone make a VoIP or background push: add --push-type voip or --content-available)" : ""))
        }
        return .payload(payload)
    }

    private func makePayload(standardInput: () -> [UInt8]) throws(CLIError) -> Payload {
        if let payloadFile {
            let json = try PayloadFile.jsonBytes(at: payloadFile, standardInput: standardInput)
            let name = payloadFile == "-" ? "the payload on standard input" : payloadFile
            do {
                return try Payload(jsonBytes: json)
            } catch {
                throw CLIError("\(name) is not a usable payload: \(OutcomeText.inToolTerms("\(error)"))")
            }
        }
        var alert = Alert()
        alert.title = title
        alert.subtitle = subtitle
        alert.body = body
        alert.locKey = locKey
        alert.locArgs = locArgs.isEmpty ? nil : locArgs
        alert.titleLocKey = titleLocKey
        alert.titleLocArgs = titleLocArgs.isEmpty ? nil : titleLocArgs
        var aps = APS()
        if hasAlertFlags, event == nil { aps.alert = alert }
        if let event {
            // A Live Activity's alert has its own shape: title and body, each plain or localized.
            if hasAlertFlags {
                let title: LocalizableText? = titleLocKey.map { .localized(key: $0, arguments: titleLocArgs.isEmpty ? nil : titleLocArgs) }
                    ?? self.title.map { .plain($0) }
                let body: LocalizableText? = locKey.map { .localized(key: $0, arguments: locArgs.isEmpty ? nil : locArgs) }
                    ?? self.body.map { .plain($0) }
                aps.liveActivityAlert = LiveActivityAlert(title: title, body: body, sound: sound.map { .named($0) })
            }
            aps.event = LiveActivityEvent(rawValue: event)
            aps.timestamp = Int(Date().timeIntervalSince1970)
            do {
                aps.contentState = try contentState.map { try Self.parseObject($0, flag: "--content-state") }
                aps.attributes = try attributes.map { try Self.parseObject($0, flag: "--attributes") }
            } catch {
                throw CLIError.usage("\(error)")
            }
            aps.attributesType = attributesType
            aps.staleDate = staleDate
            aps.dismissalDate = dismissalDate
        }
        aps.badge = badge
        if let sound, event == nil { aps.sound = .named(sound) }
        aps.category = category
        aps.threadID = threadID
        aps.mutableContent = mutableContent
        aps.contentAvailable = contentAvailable
        aps.contentChanged = contentChanged
        var payload = Payload(aps: aps)
        for entry in custom {
            do {
                let (key, value) = try Self.parseCustom(entry)
                guard key != "aps" else { throw ValidationError("--custom cannot set aps: use the payload flags or --payload-file") }
                payload = payload.adding(key, value)
            } catch {
                throw CLIError.usage("\(error)")
            }
        }
        return payload
    }

    /// Splits `key=json` and parses the JSON value.
    static func parseCustom(_ entry: String) throws -> (String, JSONValue) {
        guard let equals = entry.firstIndex(of: "="), equals != entry.startIndex else {
            throw ValidationError("--custom \(entry) is not key=json (for example --custom 'id=42' or --custom 'who=\"Bob\"')")
        }
        let key = String(entry[..<equals])
        let json = String(entry[entry.index(after: equals)...])
        do {
            return (key, try JSONValue(jsonBytes: Array(json.utf8)))
        } catch {
            throw ValidationError("--custom \(key): \(json) is not JSON (quote strings: \(key)='\"\(json)\"')")
        }
    }

    /// Parses `--expiration`: UNIX seconds, `+SECONDS` from now, or `0`. A time from now
    /// is checked as a time given in seconds is: one past the year 2286 (or past what a
    /// 64-bit number holds) is refused, not wrapped around.
    static func parseExpiration(_ text: String, warn: Bool = false) throws -> Expiration {
        if text.hasPrefix("+"), let offset = Int64(text.dropFirst()), offset >= 0 {
            let now = Int64(Date().timeIntervalSince1970)
            let (time, overflow) = now.addingReportingOverflow(offset)
            if overflow || time > maxSeconds {
                let hint = offset / 1000 <= maxSeconds - now
                    ? "it looks like milliseconds; give seconds from now (+\(offset / 1000))"
                    : "give at most +\(maxSeconds - now) seconds from now"
                throw ValidationError("--expiration \(text) is after the year 2286: \(hint)")
            }
            return .unixTime(time)
        }
        guard let seconds = Int64(text), seconds >= 0 else {
            throw ValidationError("--expiration \(text) is not UNIX seconds, +SECONDS or 0")
        }
        try checkSeconds(seconds, flag: "--expiration")
        if warn, seconds != 0, seconds < Int64(Date().timeIntervalSince1970) {
            Terminal.standardError("apns: warning: --expiration \(text) is in the past: APNs will try to deliver once and not store it, as with 0")
        }
        return seconds == 0 ? .immediately : .unixTime(seconds)
    }

    /// The largest UNIX time in seconds the tool takes (the year 2286): a larger value is
    /// almost certainly milliseconds, as JavaScript's `Date.now()` gives.
    static let maxSeconds: Int64 = 9_999_999_999

    /// Refuses a negative time, and a time in milliseconds where seconds are meant.
    static func checkSeconds(_ value: Int64, flag: String) throws {
        if value < 0 { throw ValidationError("\(flag) is \(value): it must not be negative") }
        if value > maxSeconds {
            throw ValidationError("\(flag) \(value) is after the year 2286: it looks like milliseconds; give UNIX seconds (\(value / 1000))")
        }
    }
}
