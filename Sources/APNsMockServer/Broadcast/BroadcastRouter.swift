import Foundation

/// The rules APNs applies to broadcast pushes (`POST /4/broadcasts/apps/<bundle ID>`) and
/// channel management requests (`/1/apps/<bundle ID>/channels` and `/all-channels`), and
/// what the mock server answers when they pass.
///
/// Routing happens in two steps so that scripted faults apply: ``route(_:certificateTopics:authorize:)``
/// checks a request against the current channels and returns the ``Operation`` it asks
/// for; ``commit(_:)`` carries it out (creates or deletes the channel) only if no scripted
/// failure answers the request instead.
///
/// Sources: [Sending broadcast push notification requests to APNs](https://developer.apple.com/documentation/usernotifications/sending-broadcast-push-notification-requests-to-apns),
/// [Sending channel management requests to APNs](https://developer.apple.com/documentation/usernotifications/sending-channel-management-requests-to-apns),
/// [Handling error responses from APNs](https://developer.apple.com/documentation/usernotifications/handling-error-responses-from-apns).
/// Every reason is answered with the status Apple's table gives it (`TopicMismatch` 403,
/// the others of these APIs 400).
struct BroadcastRouter {
    /// What a valid request asks for.
    enum Operation: Equatable {
        case broadcast(MockChannel)
        case create(bundleID: String, storagePolicy: Int)
        case read(MockChannel)
        case list(bundleID: String)
        case delete(MockChannel)

        /// The channel of a broadcast, for per-channel scripted answers; `nil` otherwise.
        var broadcastChannelID: String? {
            if case .broadcast(let channel) = self { return channel.id }
            return nil
        }

        /// The status of a successful answer: 201 for create, 204 for delete, 200 otherwise.
        var successStatus: Int {
            switch self {
            case .create: 201
            case .delete: 204
            default: 200
            }
        }
    }

    /// A routed request: its `apns-request-id` (the client's, or a new one) and the verdict.
    struct Routed {
        var requestID: String
        var result: Result<Operation, RequestValidator.Rejection>
    }

    /// A successful answer: status, headers beyond `apns-request-id`, body.
    struct Answer {
        var status: Int
        var headers: [(String, String)]
        var body: [UInt8]
    }

    /// The broadcast payload limit: 5120 bytes.
    static let payloadLimit = 5120

    var bundleIDs: [String]
    var malformedPayloadReason: String
    let channels: ChannelRegistry
    /// Apps whose broadcast capability is off: their channel and broadcast requests are
    /// 400 FeatureNotEnabled, as APNs answers until broadcast is enabled for the app.
    var broadcastDisabledBundleIDs: Set<String> = []

    /// Whether `path` belongs to the broadcast or channel management API.
    static func handles(path: String) -> Bool {
        path.hasPrefix("/4/broadcasts/") || path.hasPrefix("/1/apps/")
    }

    /// Checks `request`, whose `:path` ``handles(path:)``; `keyTopics` and `authorize` work
    /// as in ``RequestValidator/validate(_:certificateTopics:keyTopics:authorize:)``.
    func route(
        _ request: RequestValidator.Request,
        certificateTopics: [String]? = nil,
        keyTopics: () -> Set<String>? = { nil },
        authorize: (String?) -> RequestValidator.Rejection?
    ) -> Routed {
        var method = ""
        var path = ""
        var fields: [String: String] = [:]
        var duplicate = false
        for header in request.headers {
            let name = header.name
            let value = header.value
            switch name {
            case ":method": method = value
            case ":path": path = value
            default:
                if !name.hasPrefix(":"), fields.updateValue(value, forKey: name) != nil { duplicate = true }
            }
        }
        // APNs echoes the client's apns-request-id, or makes one.
        let sentID = fields["apns-request-id"]
        let requestID = sentID.flatMap { RequestValidator.isCanonicalUUID($0) ? $0 : nil }
            ?? UUID().uuidString.lowercased()
        func reject(_ status: Int, _ reason: String) -> Routed {
            Routed(requestID: requestID, result: .failure(RequestValidator.Rejection(status: status, reason: reason)))
        }

        // Path and method.
        enum Endpoint { case broadcast, channels, allChannels }
        let endpoint: Endpoint
        let bundleID: String
        if let rest = Self.component(after: "/4/broadcasts/apps/", in: path) {
            endpoint = .broadcast
            bundleID = rest
        } else if path.hasPrefix("/1/apps/"), path.hasSuffix("/channels"),
            let bundle = Self.component(after: "/1/apps/", in: String(path.dropLast("/channels".count)))
        {
            endpoint = .channels
            bundleID = bundle
        } else if path.hasPrefix("/1/apps/"), path.hasSuffix("/all-channels"),
            let bundle = Self.component(after: "/1/apps/", in: String(path.dropLast("/all-channels".count)))
        {
            endpoint = .allChannels
            bundleID = bundle
        } else {
            return reject(404, "BadPath")
        }
        switch (endpoint, method) {
        case (.broadcast, "POST"), (.channels, "POST"), (.channels, "GET"), (.channels, "DELETE"), (.allChannels, "GET"):
            break
        default:
            return reject(405, "MethodNotAllowed")
        }
        if duplicate { return reject(400, "DuplicateHeaders") }
        if let rejection = authorize(fields["authorization"]) {
            return Routed(requestID: requestID, result: .failure(rejection))
        }
        if let sentID, !RequestValidator.isCanonicalUUID(sentID) { return reject(400, "BadRequestParams") }
        // Apple: 400 TopicDisallowed, "Ensure that no push type suffix is added to the bundle
        // ID"; 403 TopicMismatch, "The bundle IDs parsed from your token or certificate don't
        // include the topic present in the path" (Handling error responses from APNs).
        let allowedByKey = keyTopics()
        if Self.hasPushTypeSuffix(bundleID, served: bundleIDs, certificateTopics: certificateTopics,
                                  keyTopics: allowedByKey) {
            return reject(400, "TopicDisallowed")
        }
        // The bundle ID must be one the server serves, and one of the certificate's topics
        // or of a topic-specific key's.
        if !bundleIDs.isEmpty, !bundleIDs.contains(bundleID) { return reject(403, "TopicMismatch") }
        if let certificateTopics, !certificateTopics.contains(bundleID) { return reject(403, "TopicMismatch") }
        if let allowedByKey, !allowedByKey.contains(bundleID) { return reject(403, "TopicMismatch") }
        if broadcastDisabledBundleIDs.contains(bundleID) { return reject(400, "FeatureNotEnabled") }

        switch (endpoint, method) {
        case (.allChannels, _):
            return Routed(requestID: requestID, result: .success(.list(bundleID: bundleID)))
        case (.channels, "POST"):
            return Routed(requestID: requestID, result: createRequest(fields: fields, body: request.body, bundleID: bundleID))
        case (.channels, _):
            switch existingChannel(fields: fields, bundleID: bundleID) {
            case .failure(let rejection): return Routed(requestID: requestID, result: .failure(rejection))
            case .success(let channel):
                return Routed(requestID: requestID, result: .success(method == "GET" ? .read(channel) : .delete(channel)))
            }
        default:
            return Routed(requestID: requestID, result: broadcastRequest(fields: fields, body: request.body, bundleID: bundleID))
        }
    }

    /// Carries out `operation` and returns the answer.
    func commit(_ operation: Operation) -> Answer {
        switch operation {
        case .broadcast:
            return Answer(status: 200, headers: [("apns-unique-id", UUID().uuidString.lowercased())], body: [])
        case .create(let bundleID, let storagePolicy):
            guard let channel = channels.create(bundleID: bundleID, storagePolicy: storagePolicy) else {
                return Self.rejection(400, "CannotCreateChannelConfig")
            }
            return Answer(status: 201, headers: [("apns-channel-id", channel.id)], body: [])
        case .read(let channel):
            let json = #"{"message-storage-policy":\#(channel.storagePolicy),"push-type":"#
                + ScriptedResponse.quoted(channel.pushType) + "}"
            return Answer(status: 200, headers: [], body: Array(json.utf8))
        case .list(let bundleID):
            let ids = channels.channels(bundleID: bundleID).map { ScriptedResponse.quoted($0.id) }
            let json = #"{"channels":["# + ids.joined(separator: ",") + "]}"
            return Answer(status: 200, headers: [], body: Array(json.utf8))
        case .delete(let channel):
            guard channels.delete(channel.id, bundleID: channel.bundleID) else {
                return Self.rejection(400, "ChannelNotRegistered")
            }
            return Answer(status: 204, headers: [], body: [])
        }
    }

    // MARK: Rules

    /// `POST /1/apps/<bundle ID>/channels`: the body is `{"message-storage-policy": 0|1,
    /// "push-type": "LiveActivity"}` and nothing else (another member is `BadRequestParams`);
    /// the app may have at most ``ChannelRegistry/limit`` channels.
    private func createRequest(fields: [String: String], body: [UInt8], bundleID: String)
        -> Result<Operation, RequestValidator.Rejection>
    {
        func reject(_ reason: String) -> Result<Operation, RequestValidator.Rejection> {
            .failure(RequestValidator.Rejection(status: 400, reason: reason))
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            return reject("BadRequestPayload")
        }
        // Apple: "BadRequestParams: The JSON Request payload contained an unrecognizable attribute."
        if object.keys.contains(where: { $0 != "message-storage-policy" && $0 != "push-type" }) {
            return reject("BadRequestParams")
        }
        guard let policy = Self.jsonInteger(object["message-storage-policy"]), policy == 0 || policy == 1
        else { return reject("BadRequestPayload") }
        guard let pushType = object["push-type"] as? String else { return reject("MissingPushType") }
        guard pushType == "LiveActivity" else { return reject("InvalidPushType") }
        guard channels.channels(bundleID: bundleID).count < channels.limit else {
            return reject("CannotCreateChannelConfig")
        }
        return .success(.create(bundleID: bundleID, storagePolicy: policy))
    }

    /// `value` as a JSON integer, or `nil` for anything else: Foundation reads `true` and
    /// `1.0` as numbers that bridge to `Int` too, and APNs takes neither as a policy.
    static func jsonInteger(_ value: Any?) -> Int? {
        guard let number = value as? NSNumber else { return nil }
        let type = String(cString: number.objCType)
        // "c": a Boolean (also signed char, which JSON never gives); "f", "d": a fraction.
        guard type != "c", type != "f", type != "d" else { return nil }
        return number.intValue
    }

    /// The channel named by `apns-channel-id`: `MissingChannelId`, `BadChannelId` (not
    /// base64) or `ChannelNotRegistered` (not a channel of this bundle ID) otherwise.
    private func existingChannel(fields: [String: String], bundleID: String)
        -> Result<MockChannel, RequestValidator.Rejection>
    {
        guard let id = fields["apns-channel-id"], !id.isEmpty else {
            return .failure(RequestValidator.Rejection(status: 400, reason: "MissingChannelId"))
        }
        guard Self.isBase64(id) else {
            return .failure(RequestValidator.Rejection(status: 400, reason: "BadChannelId"))
        }
        guard let channel = channels.channel(id, bundleID: bundleID) else {
            return .failure(RequestValidator.Rejection(status: 400, reason: "ChannelNotRegistered"))
        }
        return .success(channel)
    }

    /// `POST /4/broadcasts/apps/<bundle ID>`: `apns-channel-id`, `apns-push-type:
    /// liveactivity`, `apns-priority` (10, 5 or 1) and `apns-expiration` are required; a
    /// channel that stores nothing takes only `apns-expiration: 0`; the payload is a JSON
    /// object with `aps`, at most 5120 bytes.
    private func broadcastRequest(fields: [String: String], body: [UInt8], bundleID: String)
        -> Result<Operation, RequestValidator.Rejection>
    {
        func reject(_ reason: String, _ status: Int = 400) -> Result<Operation, RequestValidator.Rejection> {
            .failure(RequestValidator.Rejection(status: status, reason: reason))
        }
        let channel: MockChannel
        switch existingChannel(fields: fields, bundleID: bundleID) {
        case .failure(let rejection): return .failure(rejection)
        case .success(let found): channel = found
        }
        guard let pushType = fields["apns-push-type"], !pushType.isEmpty else { return reject("MissingPushType") }
        guard pushType == "liveactivity" else { return reject("InvalidPushType") }
        guard let priority = fields["apns-priority"], priority == "10" || priority == "5" || priority == "1" else {
            return reject("BadPriority")
        }
        guard let expiration = fields["apns-expiration"], !expiration.isEmpty, expiration.utf8.count <= 18,
            expiration.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
        else { return reject("BadExpirationDate") }
        if channel.storagePolicy == 0, expiration.utf8.contains(where: { $0 != 0x30 }) {
            // A channel with no message storage delivers now or never.
            return reject("BadExpirationDate")
        }
        guard !body.isEmpty else { return reject("PayloadEmpty") }
        guard body.count <= Self.payloadLimit else { return reject("PayloadTooLarge", 413) }
        guard let keys = JSONObjectScanner.topLevelKeys(of: body), keys.contains("aps") else {
            return reject(malformedPayloadReason)
        }
        return .success(.broadcast(channel))
    }

    // MARK: Helpers

    /// Whether `bundleID` is a bundle ID with a push type's topic suffix added (for example
    /// `com.example.app.push-type.liveactivity`), which broadcast and channel paths refuse
    /// with `TopicDisallowed`: it ends with a suffix of ``RequestValidator/topicSuffixes``
    /// that is a `.push-type.` one, or that leaves a bundle ID the server, the certificate
    /// or the key knows; a bundle ID the server serves as it is never counts.
    static func hasPushTypeSuffix(
        _ bundleID: String, served: [String], certificateTopics: [String]?, keyTopics: Set<String>?
    ) -> Bool {
        if served.contains(bundleID) { return false }
        for suffix in RequestValidator.topicSuffixes.values where !suffix.isEmpty && bundleID.hasSuffix(suffix) {
            let bare = String(bundleID.dropLast(suffix.count))
            if bare.isEmpty { continue }
            if suffix.hasPrefix(".push-type.") || served.contains(bare)
                || certificateTopics?.contains(bare) == true || keyTopics?.contains(bare) == true
            {
                return true
            }
        }
        return false
    }

    /// The rest of `path` after `prefix`, if it is one non-empty path segment.
    private static func component(after prefix: String, in path: String) -> String? {
        guard path.hasPrefix(prefix) else { return nil }
        let rest = path.dropFirst(prefix.count)
        guard !rest.isEmpty, !rest.contains("/"), !rest.contains("?") else { return nil }
        return String(rest)
    }

    /// Padded standard base64 (RFC 4648 §4).
    static func isBase64(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.count % 4 == 0 else { return false }
        var padding = 0
        for byte in bytes {
            if byte == UInt8(ascii: "=") {
                padding += 1
                continue
            }
            guard padding == 0 else { return false }
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"):
                continue
            default:
                return false
            }
        }
        return padding <= 2
    }

    private static func rejection(_ status: Int, _ reason: String) -> Answer {
        Answer(
            status: status,
            headers: [],
            body: Array(ScriptedResponse(status: status, reason: reason).jsonBody.utf8)
        )
    }
}
