import Synchronization

/// A notification to send to one or more device tokens: the payload and the headers that
/// go with it.
///
/// ```swift
/// let notification = PushNotification(
///     payload: .alert(title: "Order shipped", body: "Arrives Tuesday"),
///     topic: "com.example.shop"
/// )
/// ```
///
/// Defaults: push type `alert`; priority 10 (5 for `background`); no expiration header;
/// no collapse ID; a fresh random `apns-id` for each device token.
public struct PushNotification: Sendable {
    /// What the notification carries.
    public enum Body: Sendable {
        /// A payload, encoded and size-checked for the push type when the request is built.
        case payload(Payload)
        /// JSON you encoded yourself, sent as is after a size check for the push type.
        case raw([UInt8])
    }

    /// What the notification carries.
    public var body: Body {
        get { values.fields.body }
        set { change { $0.body = newValue } }
    }
    /// The `apns-push-type`; it must match the payload.
    public var pushType: PushType {
        get { values.fields.pushType }
        set { change { $0.pushType = newValue } }
    }
    /// The `apns-topic`: your bundle ID (a suffix is added per push type) or an explicit topic.
    public var topic: Topic {
        get { values.fields.topic }
        set { change { $0.topic = newValue } }
    }
    /// The `apns-priority`; `nil` means 10, or 5 for `background`.
    public var priority: Priority? {
        get { values.fields.priority }
        set { change { $0.priority = newValue } }
    }
    /// The `apns-expiration`.
    public var expiration: Expiration {
        get { values.fields.expiration }
        set { change { $0.expiration = newValue } }
    }
    /// The `apns-collapse-id`: notifications with the same one replace each other on the
    /// device. At most 64 bytes of UTF-8.
    public var collapseID: String? {
        get { values.fields.collapseID }
        set { change { $0.collapseID = newValue } }
    }
    /// The `apns-id`; `nil` means a new random one for each device token.
    public var apnsID: APNsID?

    /// The values above but ``apnsID``, with their checked, encoded form once made: shared
    /// by the notification's copies, and replaced (with an empty cache) when one changes.
    /// The notification is therefore two words and an `apns-id`, not the payload's
    /// hundreds of bytes: cheap to pass to an `async` function and to keep in its frame.
    private var values: Values

    /// The values a change replaces together.
    private struct Fields: Sendable {
        var body: Body
        var pushType: PushType
        var topic: Topic
        var priority: Priority?
        var expiration: Expiration
        var collapseID: String?
    }

    /// One set of ``Fields`` and its ``Prepared`` form, made on the first send.
    private final class Values: Sendable {
        let fields: Fields
        let prepared = Mutex<Prepared?>(nil)

        init(_ fields: Fields) {
            self.fields = fields
        }
    }

    /// Replaces the values with changed ones (and so forgets their prepared form).
    private mutating func change(_ body: (inout Fields) -> Void) {
        var fields = values.fields
        body(&fields)
        values = Values(fields)
    }

    /// A notification with a payload.
    ///
    /// - Parameters:
    ///   - payload: The payload, encoded for the push type when the request is built.
    ///   - pushType: The `apns-push-type`; by default the payload's own
    ///     (``APNsPayload/Payload/pushType``, set by the factory that made it, as
    ///     `Payload.voip(…)` sets ``APNsPayload/PushType/voip``), else ``APNsPayload/PushType/alert``.
    ///   - topic: The `apns-topic`.
    ///   - priority: The `apns-priority`; by default what the push type calls for.
    ///   - expiration: The `apns-expiration`.
    ///   - collapseID: The `apns-collapse-id`.
    ///   - apnsID: The `apns-id`; `nil` gives each device token a new random one.
    public init(
        payload: Payload,
        pushType: PushType? = nil,
        topic: Topic,
        priority: Priority? = nil,
        expiration: Expiration = .none,
        collapseID: String? = nil,
        apnsID: APNsID? = nil
    ) {
        self.init(
            body: .payload(payload),
            pushType: pushType ?? payload.pushType ?? .alert,
            topic: topic,
            priority: priority,
            expiration: expiration,
            collapseID: collapseID,
            apnsID: apnsID
        )
    }

    /// A notification with a body in any form.
    public init(
        body: Body,
        pushType: PushType = .alert,
        topic: Topic,
        priority: Priority? = nil,
        expiration: Expiration = .none,
        collapseID: String? = nil,
        apnsID: APNsID? = nil
    ) {
        self.values = Values(
            Fields(
                body: body,
                pushType: pushType,
                topic: topic,
                priority: priority,
                expiration: expiration,
                collapseID: collapseID
            )
        )
        self.apnsID = apnsID
    }

    /// The longest `apns-collapse-id`, in bytes of UTF-8.
    public static let maximumCollapseIDBytes = 64

    /// Builds the device push request for `deviceToken`.
    ///
    /// - Parameters:
    ///   - deviceToken: The device to address.
    ///   - environment: Where the request goes; sets `:authority`.
    ///   - authorization: The `authorization` header value (`bearer <JWT>`) for token-based
    ///     connections; `nil` for certificate-based ones.
    ///   - timeout: See ``APNsRequest/timeout``.
    /// - Throws: ``APNsRequestError`` if a value is invalid; see ``APNsRequestError/Code``.
    public func request(
        to deviceToken: DeviceToken,
        environment: APNsEnvironment,
        authorization: String? = nil,
        timeout: Duration = APNsRequest.defaultTimeout
    ) throws(APNsRequestError) -> APNsRequest {
        try prepared().request(
            to: deviceToken,
            apnsID: apnsID ?? .random(),
            environment: environment,
            authorization: authorization,
            timeout: timeout
        )
    }

    /// Checks every value and encodes the payload as a send would, without sending: the
    /// ``APNsRequestError`` a send of this notification would end with, at once (for
    /// example when a notification built from user input is about to be queued for many
    /// devices). The encoded result is kept, so the sends that follow do not encode it again.
    ///
    /// - Throws: ``APNsRequestError`` saying which value is wrong and where.
    public func validate() throws(APNsRequestError) {
        _ = try prepared()
    }

    /// Checks every value and encodes the body once, so that many device tokens and retries
    /// reuse the result.
    ///
    /// The result is kept with the notification (and its copies) until one of its values
    /// changes, so a notification sent many times, one `send` at a time, is encoded and
    /// checked once.
    func prepared() throws(APNsRequestError) -> Prepared {
        let values = self.values
        if let cached = values.prepared.withLock({ $0 }) { return cached }
        let made = try makePrepared()
        values.prepared.withLock { $0 = made }
        return made
    }

    /// ``prepared()`` without the cache.
    private func makePrepared() throws(APNsRequestError) -> Prepared {
        let topicValue = try topic.value(for: pushType)
        let priorityValue = priority ?? .default(for: pushType)
        if pushType == .background && priorityValue != .powerConsiderate {
            throw APNsRequestError(
                .invalidPriority,
                header: "apns-priority",
                "a background push must use priority 5 (powerConsiderate), not \(priorityValue.rawValue)"
            )
        }
        // Apple ("Starting and updating Live Activities with ActivityKit push notifications"):
        // set apns-priority to 5 or 10; 5 does not count against the activity's budget.
        if pushType == .liveactivity && priorityValue == .low {
            throw APNsRequestError(
                .invalidPriority,
                header: "apns-priority",
                "a liveactivity push must use priority 10 (immediate) or 5 (powerConsiderate, outside the update budget), not 1"
            )
        }
        let expirationValue = try expiration.headerValue()
        if let collapseID {
            let bytes = collapseID.utf8.count
            if bytes == 0 {
                throw APNsRequestError(.invalidCollapseID, header: "apns-collapse-id", "apns-collapse-id is empty")
            }
            if bytes > Self.maximumCollapseIDBytes {
                throw APNsRequestError(
                    .invalidCollapseID,
                    header: "apns-collapse-id",
                    "apns-collapse-id is \(bytes) bytes of UTF-8; at most \(Self.maximumCollapseIDBytes) are allowed"
                )
            }
        }
        // "an alert push", "a voip push": the size error reads as a sentence.
        let article = pushType.rawValue.first.map { "aeiou".contains($0) } == true ? "an" : "a"
        let bytes = try body.encoded(for: pushType, limit: PayloadLimit(for: pushType), what: "\(article) \(pushType) push")
        // The headers every request of this notification carries, checked here once.
        var fixed = [
            HeaderField(name: "apns-topic", value: topicValue),
            HeaderField(name: "apns-push-type", value: pushType.rawValue),
            HeaderField(name: "apns-priority", value: priorityValue.description),
        ]
        if let expirationValue { fixed.append(HeaderField(name: "apns-expiration", value: expirationValue)) }
        if let collapseID { fixed.append(HeaderField(name: "apns-collapse-id", value: collapseID)) }
        for field in fixed { try APNsRequest.checkHeader(field) }
        return Prepared(pushType: pushType, fixedHeaders: fixed, body: bytes)
    }

    /// A notification whose values are checked and whose body is encoded.
    struct Prepared: Sendable {
        let pushType: PushType
        /// `apns-topic`, `apns-push-type`, `apns-priority`, then `apns-expiration` and
        /// `apns-collapse-id` when set: checked by ``PushNotification/prepared()``.
        let fixedHeaders: [HeaderField]
        let body: [UInt8]

        /// The one place where device push headers are built, in this order: `:method`,
        /// `:scheme`, `:path`, `:authority`, `authorization` (token auth only), `apns-topic`,
        /// `apns-push-type`, `apns-priority`, `apns-expiration` (if any), `apns-collapse-id`
        /// (if any), `apns-id`. The HPACK header policy relies on this order.
        /// The request keeps these parts, not header strings: the transport writes the
        /// values into its header buffer (``APNsRequest/writeHeaders(into:fields:)``).
        func request(
            to deviceToken: DeviceToken,
            apnsID: APNsID,
            environment: APNsEnvironment,
            providerToken: ProviderToken? = nil,
            authorization explicitAuthorization: String? = nil,
            timeout: Duration,
            startedAt: UInt64 = 0
        ) throws(APNsRequestError) -> APNsRequest {
            // Only what varies per request is checked here: the authority and the
            // authorization value. The path is written from a token validated as
            // hexadecimal, the `apns-id` from its 128 bits; the fixed headers were checked once.
            try APNsRequest.check(HeaderField(name: ":authority", value: environment.authority))
            if let explicitAuthorization {
                try APNsRequest.checkHeader(HeaderField(name: "authorization", value: explicitAuthorization))
            } else if let providerToken, !providerToken.authorizationValueIsValid {
                // A provider token checked its value once; this one failed: say why.
                try APNsRequest.checkHeader(HeaderField(name: "authorization", value: providerToken.authorizationValue))
            }
            return APNsRequest(
                devicePushTo: deviceToken,
                authority: environment.authority,
                fixedHeaders: fixedHeaders,
                body: body,
                apnsID: apnsID,
                explicitAuthorization: explicitAuthorization,
                providerToken: providerToken,
                timeout: timeout,
                startedAt: startedAt
            )
        }
    }
}

extension PushNotification.Body {
    /// The body's bytes: a payload encoded for `pushType` within `limit` (its shape rules
    /// checked), or raw bytes checked against `limit`.
    ///
    /// - Parameter what: How the size error names the request, for example `a voip push`.
    /// - Throws: ``APNsRequestError`` with code ``APNsRequestError/Code/invalidPayload``.
    func encoded(for pushType: PushType, limit: PayloadLimit, what: String) throws(APNsRequestError) -> [UInt8] {
        switch self {
        case .payload(let payload):
            do {
                return try payload.encoded(for: pushType, limit: limit)
            } catch {
                throw APNsRequestError(.invalidPayload, payloadError: error, "payload: \(error.description)")
            }
        case .raw(let raw):
            if raw.isEmpty {
                throw APNsRequestError(.invalidPayload, "payload is empty")
            }
            if raw.count > limit.bytes {
                // The payload error too, as an encoded payload's: the size, the limit and
                // the push type are read from it (`payloadError?.code == .payloadTooLarge`).
                let sizeError = PayloadError(
                    code: .payloadTooLarge, keyPath: "",
                    rule: "the payload is \(raw.count) bytes, over the \(limit.bytes)-byte limit for push type \(pushType)",
                    size: raw.count, limit: limit.bytes, pushType: pushType)
                throw APNsRequestError(
                    .invalidPayload, payloadError: sizeError, "payload is \(raw.count) bytes; \(what) allows at most \(limit.bytes)")
            }
            return raw
        }
    }
}

extension PushNotification.Prepared {
    /// The notification a device push was made from, to send it again (a streamed
    /// batch's retry: the stream keeps no notification): its fixed headers and body,
    /// shared with `request`. `nil` for a request that is not a device push.
    init?(resending request: APNsRequest) {
        guard let push = request.storage.devicePush, let pushType = request.devicePushType else { return nil }
        self.init(pushType: pushType, fixedHeaders: push.fixedHeaders, body: request.body)
    }
}

extension APNsRequest {
    /// The `apns-push-type` of a device push (`nil` for any other request): the second of
    /// its fixed headers, as ``PushNotification/Prepared`` orders them.
    var devicePushType: PushType? {
        guard let fixed = storage.devicePush?.fixedHeaders else { return nil }
        if fixed.count > 1, fixed[1].name == "apns-push-type" { return PushType(rawValue: fixed[1].value) }
        return fixed.first(where: { $0.name == "apns-push-type" }).map { PushType(rawValue: $0.value) }
    }
}
