import APNsCore
import ArgumentParser
import Foundation

/// The payload (from flags, a JSON file or standard input) and the APNs request headers.
struct NotificationOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The apns-topic: your bundle ID (the push type's suffix, such as .voip, is added) or a full topic.", valueName: "topic"))
    var topic: String

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

    private var hasPayloadFlags: Bool {
        title != nil || subtitle != nil || body != nil || badge != nil || sound != nil || category != nil
            || threadID != nil || mutableContent || contentAvailable || !custom.isEmpty
    }

    /// Checks the values together; called from `run()` so that a misspelled flag is
    /// reported as such before any of these checks.
    func check() throws {
        if payloadFile != nil && hasPayloadFlags {
            throw ValidationError("--payload-file excludes the payload flags (--title, --body, --custom, …): put everything in the file")
        }
        if payloadFile == nil && !hasPayloadFlags {
            throw ValidationError("nothing to send: give --title/--body, --content-available, --custom, or --payload-file")
        }
        if let priority, Priority(rawValue: priority) == nil {
            throw ValidationError("--priority \(priority) is not 10, 5 or 1")
        }
        if let pushType, !PushType.documented.contains(PushType(rawValue: pushType)) {
            throw ValidationError("--push-type \(pushType) is not one of \(PushType.documented.map(\.rawValue).joined(separator: ", "))")
        }
        if let expiration { _ = try Self.parseExpiration(expiration) }
        if let collapseID, collapseID.utf8.count > PushNotification.maximumCollapseIDBytes {
            throw ValidationError("--collapse-id is \(collapseID.utf8.count) bytes; APNs allows \(PushNotification.maximumCollapseIDBytes)")
        }
        if topic.isEmpty { throw ValidationError("--topic is empty") }
        for entry in custom { _ = try Self.parseCustom(entry) }
    }

    /// Whether the payload comes from standard input.
    var readsPayloadFromStandardInput: Bool { payloadFile == "-" }

    /// The push type: the flag, else background for `--content-available` without an alert, else alert.
    var resolvedPushType: PushType {
        if let pushType { return PushType(rawValue: pushType) }
        let hasAlert = title != nil || subtitle != nil || body != nil
        if contentAvailable && !hasAlert && badge == nil && sound == nil { return .background }
        return .alert
    }

    /// The notification the flags describe.
    /// - Parameter standardInput: Reads standard input (called only for `--payload-file -`).
    func notification(standardInput: () -> [UInt8]) throws(CLIError) -> PushNotification {
        let pushType = resolvedPushType
        let payload = try makePayload(standardInput: standardInput)
        let suffix = Topic.suffix(for: pushType)
        let topic: Topic = (!suffix.isEmpty && self.topic.hasSuffix(suffix)) || pushType == .mdm
            ? .explicit(self.topic) : .bundleID(self.topic)
        var expirationValue = Expiration.none
        if let expiration {
            do { expirationValue = try Self.parseExpiration(expiration) } catch { throw CLIError.usage("\(error)") }
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
    /// (a VoIP push, say) would have no `aps` key, since `Payload` omits an empty `aps`;
    /// APNs asks for an `aps` dictionary in every payload but MDM and File Provider ones,
    /// so an empty one is added.
    private func body(_ payload: Payload, pushType: PushType) throws(CLIError) -> PushNotification.Body {
        guard payloadFile == nil, payload.aps.isEmpty, !payload.custom.isEmpty,
            pushType != .mdm, pushType != .fileprovider
        else { return .payload(payload) }
        let encoded: [UInt8]
        do {
            encoded = try payload.encoded(for: pushType)
        } catch {
            throw CLIError("the payload cannot be sent: \(error)")
        }
        return .raw(Array(#"{"aps":{},"#.utf8) + encoded.dropFirst())
    }

    private func makePayload(standardInput: () -> [UInt8]) throws(CLIError) -> Payload {
        if let payloadFile {
            let bytes: [UInt8]
            let name: String
            if payloadFile == "-" {
                bytes = standardInput()
                name = "the payload on standard input"
            } else {
                guard let data = FileManager.default.contents(atPath: payloadFile) else {
                    throw CLIError("cannot read the payload file \(payloadFile): check the path and its permissions")
                }
                bytes = Array(data)
                name = payloadFile
            }
            do {
                return try Payload(jsonBytes: bytes)
            } catch {
                throw CLIError("\(name) is not a usable payload: \(error)")
            }
        }
        var alert = Alert()
        alert.title = title
        alert.subtitle = subtitle
        alert.body = body
        var aps = APS()
        if title != nil || subtitle != nil || body != nil { aps.alert = alert }
        aps.badge = badge
        if let sound { aps.sound = .named(sound) }
        aps.category = category
        aps.threadID = threadID
        aps.mutableContent = mutableContent
        aps.contentAvailable = contentAvailable
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

    /// Parses `--expiration`: UNIX seconds, `+SECONDS` from now, or `0`.
    static func parseExpiration(_ text: String) throws -> Expiration {
        if text.hasPrefix("+"), let offset = Int64(text.dropFirst()), offset >= 0 {
            return .unixTime(Int64(Date().timeIntervalSince1970) + offset)
        }
        guard let seconds = Int64(text), seconds >= 0 else {
            throw ValidationError("--expiration \(text) is not UNIX seconds, +SECONDS or 0")
        }
        return seconds == 0 ? .immediately : .unixTime(seconds)
    }
}
