/// A Live Activity update to send once to every device subscribed to a channel: the
/// payload and the headers of a broadcast push (iOS 18).
///
/// ```swift
/// let update = BroadcastNotification(
///     payload: .liveActivityUpdate(timestamp: now, contentState: ["score": "2 – 1"])
/// )
/// let accepted = try await client.broadcast(update, to: channel, bundleID: "com.example.scores")
/// ```
///
/// A broadcast is `POST /4/broadcasts/apps/<bundle ID>` on the usual push hosts, with
/// `apns-channel-id`, `apns-push-type: liveactivity`, `apns-priority` and
/// `apns-expiration` (all required; no `apns-topic`) and an optional `apns-request-id`.
/// The payload is a Live Activity payload of at most 5120 bytes.
///
/// Defaults: priority 10; expiration 0 (deliver now, store nothing), which a channel with
/// ``MessageStoragePolicy/noStorage`` requires; a fresh random `apns-request-id`.
///
/// See [Sending broadcast push notification requests to APNs](https://developer.apple.com/documentation/usernotifications/sending-broadcast-push-notification-requests-to-apns).
public struct BroadcastNotification: Sendable {
    /// What the broadcast carries.
    public var body: PushNotification.Body
    /// The `apns-priority`: 10, 5 or 1.
    public var priority: Priority
    /// The `apns-expiration`; it must be ``Expiration/immediately`` (0) on a channel whose
    /// policy is ``MessageStoragePolicy/noStorage``. ``Expiration/none`` is refused: the
    /// header is required.
    public var expiration: Expiration
    /// The `apns-request-id`; `nil` means a new random one for each call.
    public var requestID: APNsRequestID?

    /// The largest broadcast payload, in bytes: 5120 (`PayloadLimit.broadcast`).
    public static let maximumPayloadBytes = PayloadLimit.broadcast.bytes

    /// A broadcast of a Live Activity payload.
    public init(
        payload: Payload,
        priority: Priority = .immediate,
        expiration: Expiration = .immediately,
        requestID: APNsRequestID? = nil
    ) {
        self.init(body: .payload(payload), priority: priority, expiration: expiration, requestID: requestID)
    }

    /// A broadcast with a body in any form (``PushNotification/Body/raw(_:)`` is sent as is
    /// after a size check).
    public init(
        body: PushNotification.Body,
        priority: Priority = .immediate,
        expiration: Expiration = .immediately,
        requestID: APNsRequestID? = nil
    ) {
        self.body = body
        self.priority = priority
        self.expiration = expiration
        self.requestID = requestID
    }

    /// Builds the broadcast request.
    ///
    /// Headers, in this order: `:method POST`, `:scheme`, `:path /4/broadcasts/apps/<bundle ID>`,
    /// `:authority`, `authorization` (token auth only), `apns-channel-id`,
    /// `apns-push-type: liveactivity`, `apns-priority`, `apns-expiration`, `apns-request-id`.
    ///
    /// - Parameters:
    ///   - channel: The channel to broadcast on.
    ///   - bundleID: Your app's bundle ID (no suffix).
    ///   - environment: The push environment (``APNsEnvironment/production`` or
    ///     ``APNsEnvironment/sandbox``, not a channel management one).
    ///   - authorization: The `authorization` value (`bearer <JWT>`), or `nil` with a certificate.
    ///   - requestID: The `apns-request-id`; ``requestID`` or a new random one if `nil`.
    ///   - timeout: See ``APNsRequest/timeout``.
    /// - Throws: ``APNsRequestError`` if the bundle ID, expiration or payload is invalid.
    public func request(
        to channel: ChannelID,
        bundleID: String,
        environment: APNsEnvironment,
        authorization: String? = nil,
        requestID: APNsRequestID? = nil,
        timeout: Duration = APNsRequest.defaultTimeout
    ) throws(APNsRequestError) -> APNsRequest {
        try prepared().request(
            to: channel,
            bundleID: bundleID,
            environment: environment,
            authorization: authorization,
            requestID: requestID ?? self.requestID ?? .random(),
            timeout: timeout
        )
    }

    /// Checks every value and encodes the body once, so that retries reuse it.
    func prepared() throws(APNsRequestError) -> Prepared {
        guard let expirationValue = try expiration.headerValue() else {
            throw APNsRequestError(
                .invalidExpiration,
                header: "apns-expiration",
                "a broadcast needs apns-expiration: use .immediately (0) or a date, not .none"
            )
        }
        // Apple: channels and broadcasts update or end Live Activities; one is started on
        // a device by a push-to-start token, whose payload's input-push-channel subscribes
        // it to the channel.
        if case .payload(let payload) = body, payload.aps.event == .start {
            throw APNsRequestError(
                .invalidPayload,
                "a broadcast updates or ends the Live Activities of a channel (event update or end), it cannot start one: "
                    + "start each with its device's push-to-start token, with input-push-channel naming the channel"
            )
        }
        let bytes = try body.encoded(for: .liveactivity, limit: .broadcast, what: "a broadcast")
        return Prepared(priority: priority, expiration: expirationValue, body: bytes)
    }

    /// A broadcast whose values are checked and whose body is encoded.
    struct Prepared: Sendable {
        let priority: Priority
        let expiration: String
        let body: [UInt8]

        /// The one place where broadcast headers are built.
        func request(
            to channel: ChannelID,
            bundleID: String,
            environment: APNsEnvironment,
            authorization: String?,
            requestID: APNsRequestID,
            timeout: Duration
        ) throws(APNsRequestError) -> APNsRequest {
            let path = try ChannelRequest.path("/4/broadcasts/apps/", bundleID: bundleID)
            var headers = [HeaderField]()
            headers.reserveCapacity(6)
            if let authorization {
                headers.append(HeaderField(name: "authorization", value: authorization))
            }
            headers.append(HeaderField(name: "apns-channel-id", value: channel.rawValue))
            headers.append(HeaderField(name: "apns-push-type", value: PushType.liveactivity.rawValue))
            headers.append(HeaderField(name: "apns-priority", value: priority.description))
            headers.append(HeaderField(name: "apns-expiration", value: expiration))
            headers.append(HeaderField(name: "apns-request-id", value: requestID.uuidString))
            return try APNsRequest(
                method: .post,
                authority: environment.authority,
                path: path,
                headers: headers,
                body: body,
                timeout: timeout
            )
        }
    }
}
