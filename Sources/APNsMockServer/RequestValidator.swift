/// The rules APNs applies to one request, as a pure function of the request.
///
/// Reasons and statuses follow Apple's table in
/// [Handling notification responses from APNs](https://developer.apple.com/documentation/usernotifications/handling-notification-responses-from-apns)
/// and the header rules in
/// [Sending notification requests to APNs](https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns).
struct RequestValidator: Sendable {
    /// A request as received: headers in order, and the body.
    struct Request {
        var headers: [RecordedRequest.Header]
        var body: [UInt8]

        /// A request with the headers as the server received them.
        init(headers: [RecordedRequest.Header], body: [UInt8]) {
            self.headers = headers
            self.body = body
        }

        /// A request from name and value pairs (for tests).
        init(headers: [(name: String, value: String)], body: [UInt8]) {
            self.init(headers: headers.map { RecordedRequest.Header(name: $0.name, value: $0.value, neverIndexed: false) },
                      body: body)
        }
    }

    /// A refusal: the status and Apple's reason.
    struct Rejection: Equatable, Error {
        var status: Int
        var reason: String
    }

    /// What a valid request asks for.
    struct Accepted: Equatable {
        /// The device token of the path (a slice of it: no copy until one is needed).
        var deviceToken: Substring
        var pushType: String
        var apnsID: String?
    }

    /// The eleven push types Apple documents, with the topic suffix each requires.
    static let topicSuffixes: [String: String] = [
        "alert": "", "background": "", "mdm": "",
        "voip": ".voip",
        "complication": ".complication",
        "fileprovider": ".pushkit.fileprovider",
        "location": ".location-query",
        "liveactivity": ".push-type.liveactivity",
        "pushtotalk": ".voip-ptt",
        "widgets": ".push-type.widgets",
        "controls": ".push-type.controls",
    ]

    /// Push types whose payload need not have an `aps` dictionary (MDM: `{"mdm": …}`; File
    /// Provider: `{"container-identifier": …, "domain": …}`; VoIP: PushKit hands the app the
    /// whole dictionary, whatever its keys; Push to Talk: Apple's own request in "Creating a
    /// Push to Talk app" sends `{"activeSpeaker": …}`, custom keys alone).
    static let typesWithoutAPS: Set<String> = ["mdm", "fileprovider", "voip", "pushtotalk"]

    var bundleIDs: [String]
    var malformedPayloadReason: String
    /// How many hexadecimal digits a device token may have (twice
    /// ``MockAPNsServer/Configuration/deviceTokenLengths``).
    var deviceTokenDigits: ClosedRange<Int> = 64...200

    /// Checks `request`; `authorize` is called with the `authorization` value (or `nil`)
    /// at the point APNs checks it, and returns a rejection or `nil` to go on.
    /// `certificateTopics` are the topics of the client certificate in certificate mode.
    /// `keyTopics` is asked once `authorize` accepted: the topics of a topic-specific
    /// provider key (see ``MockAPNsServer/KeyScope``), `nil` when any topic goes.
    func validate(
        _ request: Request,
        certificateTopics: [String]? = nil,
        keyTopics: () -> Set<String>? = { nil },
        authorize: (String?) -> Rejection?
    ) -> Result<Accepted, Rejection> {
        var method: String?
        var path: String?
        var fields = Fields()
        var duplicate = false
        let headers = request.headers
        for offset in headers.indices {
            let name = headers[offset].name
            if name.utf8.first == UInt8(ascii: ":") {
                if name == ":method" { method = headers[offset].value } else if name == ":path" { path = headers[offset].value }
                continue
            }
            if !fields.set(name, headers[offset].value) {
                // A name the rules do not read (a few per request): look for it among the
                // fields before it, comparing lengths first.
                let length = name.utf8.count
                if !duplicate, headers[..<offset].contains(where: { $0.name.utf8.count == length && $0.name == name }) {
                    duplicate = true
                }
            } else if fields.repeated {
                duplicate = true
            }
        }
        guard method == "POST" else { return .failure(Rejection(status: 405, reason: "MethodNotAllowed")) }
        let prefix = "/3/device/"
        guard let path, path.hasPrefix(prefix) else { return .failure(Rejection(status: 404, reason: "BadPath")) }
        if duplicate { return .failure(Rejection(status: 400, reason: "DuplicateHeaders")) }
        if let rejection = authorize(fields.authorization) { return .failure(rejection) }

        let token = path.utf8.dropFirst(prefix.utf8.count)
        guard !token.isEmpty else { return .failure(Rejection(status: 400, reason: "MissingDeviceToken")) }
        guard token.count % 2 == 0, deviceTokenDigits.contains(token.count), token.allSatisfy(Self.isHexDigit) else {
            return .failure(Rejection(status: 400, reason: "BadDeviceToken"))
        }

        let pushType = fields.pushType ?? "alert"
        guard let suffix = Self.topicSuffixes[pushType] else {
            return .failure(Rejection(status: 400, reason: "InvalidPushType"))
        }
        var topic = fields.topic.flatMap { $0.isEmpty ? nil : $0 }
        if let certificateTopics {
            // APNs uses the certificate's topic when the request names none and the
            // certificate has exactly one; a topic the certificate does not list is refused.
            if topic == nil, certificateTopics.count == 1 { topic = certificateTopics[0] }
            if let named = topic, !certificateTopics.contains(named) {
                return .failure(Rejection(status: 400, reason: "TopicDisallowed"))
            }
        }
        guard let topic else {
            return .failure(Rejection(status: 400, reason: "MissingTopic"))
        }
        if let allowed = keyTopics(), !Self.topic(topic, suffix: suffix, isIn: allowed) {
            // A topic-specific key pushes to its own topics only.
            return .failure(Rejection(status: 400, reason: "TopicDisallowed"))
        }
        if let rejection = checkTopic(topic, suffix: suffix) { return .failure(rejection) }

        if let priority = fields.priority {
            guard priority == "10" || priority == "5" || priority == "1" else {
                return .failure(Rejection(status: 400, reason: "BadPriority"))
            }
        }
        // Without the header APNs sets priority 10, and 10 is an error for a background
        // push (Apple's apns-priority documentation): omitted or sent, the same answer.
        if pushType == "background", (fields.priority ?? "10") == "10" {
            return .failure(Rejection(status: 400, reason: "BadPriority"))
        }
        if let expiration = fields.expiration {
            guard !expiration.isEmpty, expiration.utf8.count <= 18,
                  expiration.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
            else { return .failure(Rejection(status: 400, reason: "BadExpirationDate")) }
        }
        let apnsID = fields.apnsID
        if let apnsID, !Self.isCanonicalUUID(apnsID) {
            return .failure(Rejection(status: 400, reason: "BadMessageId"))
        }
        if let collapseID = fields.collapseID, collapseID.utf8.count > 64 {
            return .failure(Rejection(status: 400, reason: "BadCollapseId"))
        }

        guard !request.body.isEmpty else { return .failure(Rejection(status: 400, reason: "PayloadEmpty")) }
        let limit = pushType == "voip" ? 5120 : 4096
        guard request.body.count <= limit else { return .failure(Rejection(status: 413, reason: "PayloadTooLarge")) }
        guard let hasAPS = JSONObjectScanner.object(request.body, hasTopLevelKey: "aps"),
              hasAPS || Self.typesWithoutAPS.contains(pushType)
        else { return .failure(Rejection(status: 400, reason: malformedPayloadReason)) }

        return .success(Accepted(deviceToken: Substring(token),
                                 pushType: pushType, apnsID: apnsID))
    }

    /// The header fields the rules read (the last value when one is repeated).
    private struct Fields {
        var authorization: String?
        var pushType: String?
        var topic: String?
        var priority: String?
        var expiration: String?
        var apnsID: String?
        var collapseID: String?

        /// Whether a field was set twice.
        var repeated = false

        /// Sets the field `name` if the rules read it; returns whether they do.
        mutating func set(_ name: String, _ value: String) -> Bool {
            func store(_ field: inout String?) {
                if field != nil { repeated = true }
                field = value
            }
            // By length first: most names are then told apart without comparing text.
            switch name.utf8.count {
            case 13:
                if name == "authorization" { store(&authorization) } else if name == "apns-priority" { store(&priority) } else { return false }
            case 14 where name == "apns-push-type": store(&pushType)
            case 10 where name == "apns-topic": store(&topic)
            case 15 where name == "apns-expiration": store(&expiration)
            case 7 where name == "apns-id": store(&apnsID)
            case 16 where name == "apns-collapse-id": store(&collapseID)
            default: return false
            }
            return true
        }
    }

    /// `BadTopic` when no accepted bundle identifier starts the topic; `DeviceTokenNotForTopic`
    /// when one does but the rest is not the suffix the push type requires.
    private func checkTopic(_ topic: String, suffix: String) -> Rejection? {
        if bundleIDs.isEmpty {
            if suffix.isEmpty {
                let suffixed = Self.topicSuffixes.values.contains { !$0.isEmpty && topic.hasSuffix($0) }
                return suffixed ? Rejection(status: 400, reason: "DeviceTokenNotForTopic") : nil
            }
            return topic.hasSuffix(suffix) && topic.utf8.count > suffix.utf8.count
                ? nil : Rejection(status: 400, reason: "DeviceTokenNotForTopic")
        }
        var sawBundle = false
        for bundleID in bundleIDs where topic.hasPrefix(bundleID) {
            sawBundle = true
            if topic.utf8.count == bundleID.utf8.count + suffix.utf8.count, topic.hasSuffix(suffix) {
                return nil
            }
        }
        return Rejection(status: 400, reason: sawBundle ? "DeviceTokenNotForTopic" : "BadTopic")
    }

    /// Whether `topic` is one of `topics`, or one of them followed by the push type's `suffix`.
    static func topic(_ topic: String, suffix: String, isIn topics: Set<String>) -> Bool {
        if topics.contains(topic) { return true }
        guard !suffix.isEmpty, topic.hasSuffix(suffix) else { return false }
        return topics.contains(String(decoding: topic.utf8.dropLast(suffix.utf8.count), as: UTF8.self))
    }

    static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
    }

    /// Whether every byte of `bytes` is a hex digit (``isHexDigit(_:)``), eight at a time
    /// in one 64-bit word: the fast path checks each request's 64-digit device token with it.
    static func areHexDigits(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        let raw = UnsafeRawPointer(base)
        var offset = 0
        while offset + 8 <= bytes.count {
            guard wordIsHexDigits(raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) else { return false }
            offset += 8
        }
        while offset < bytes.count {
            guard isHexDigit(bytes[offset]) else { return false }
            offset += 1
        }
        return true
    }

    /// Whether each of the eight bytes of `word` is a hex digit. For an ASCII byte `b`
    /// (below 0x80), `b + (0x80 − low)` has its top bit set exactly when `b ≥ low`, and
    /// `b + (0x7F − high)` exactly when `b > high`, with no carry into the next byte; `A`–`F`
    /// and `a`–`f` both land in `a`–`f` once the 0x20 bit is set, and nothing else does.
    @inline(__always)
    static func wordIsHexDigits(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let tops = ones &* 0x80
        guard word & tops == 0 else { return false }
        @inline(__always) func within(_ word: UInt64, _ low: UInt64, _ high: UInt64) -> UInt64 {
            (word &+ ones &* (0x80 - low)) & ~(word &+ ones &* (0x7F - high)) & tops
        }
        let digits = within(word, 0x30, 0x39)
        let letters = within(word | ones &* 0x20, 0x61, 0x66)
        return digits | letters == tops
    }

    /// `8-4-4-4-12` hex digits, all lowercase or all uppercase.
    static func isCanonicalUUID(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { isCanonicalUUID(bytes: $0) }
    }

    /// ``isCanonicalUUID(_:)`` of UTF-8 bytes.
    static func isCanonicalUUID(bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard bytes.count == 36 else { return false }
        var sawLower = false
        var sawUpper = false
        for (offset, byte) in bytes.enumerated() {
            if offset == 8 || offset == 13 || offset == 18 || offset == 23 {
                guard byte == UInt8(ascii: "-") else { return false }
                continue
            }
            guard isHexDigit(byte) else { return false }
            if byte >= 0x61 { sawLower = true } else if byte >= 0x41 { sawUpper = true }
        }
        return !(sawLower && sawUpper)
    }
}
