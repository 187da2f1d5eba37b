/// Why APNs rejected a request: the `reason` string of its JSON answer.
///
/// Every reason Apple documents is a static member; one Apple adds later arrives as
/// ``init(rawValue:)`` with its string intact, so nothing is lost. ``status`` says which
/// HTTP status Apple documents for a known reason, and ``APNsRejection/remedy`` says what
/// to do about it.
///
/// | status | reasons |
/// |---|---|
/// | 400 | BadCollapseId, BadDeviceToken, BadExpirationDate, BadMessageId, BadPriority, BadTopic, DeviceTokenNotForTopic, DuplicateHeaders, IdleTimeout, InvalidPushType, MissingDeviceToken, MissingTopic, PayloadEmpty, TopicDisallowed |
/// | 403 | BadCertificate, BadCertificateEnvironment, ExpiredProviderToken, Forbidden, InvalidProviderToken, MissingProviderToken, UnrelatedKeyIdInToken, BadEnvironmentKeyIdInToken, BadEnvironmentKeyInToken |
/// | 404 | BadPath |
/// | 405 | MethodNotAllowed |
/// | 410 | ExpiredToken, Unregistered |
/// | 413 | PayloadTooLarge |
/// | 429 | TooManyProviderTokenUpdates, TooManyRequests |
/// | 500 | InternalServerError |
/// | 503 | ServiceUnavailable, Shutdown |
/// | broadcast and channel APIs | 400: FeatureNotEnabled, MissingChannelId, BadChannelId, ChannelNotRegistered, BadRequestParams, BadRequestPayload, MissingPushType, CannotCreateChannelConfig; 403: TopicMismatch |
///
/// See [Handling notification responses from APNs](https://developer.apple.com/documentation/usernotifications/handling-notification-responses-from-apns)
/// and, for the broadcast and channel APIs, [Handling error responses from APNs](https://developer.apple.com/documentation/usernotifications/handling-error-responses-from-apns).
public struct APNsReason: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The reason string, for example `Unregistered`.
    public let rawValue: String

    /// A reason by its string; known strings equal the static members.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// The reason string for people and logs: as it is for every reason APNs sends (short
    /// printable ASCII); a broken server's reason with control or non-ASCII characters
    /// has them escaped (`\u{A}`) and is cut at 128 characters, so it cannot forge a log
    /// line or drive a terminal. ``rawValue`` keeps the string exactly as it came.
    public var description: String { PrintableText.escaped(rawValue) }

    /// `BadCollapseId` (400): The collapse identifier exceeds the maximum allowed size.
    public static let badCollapseID = APNsReason(rawValue: "BadCollapseId")
    /// `BadDeviceToken` (400): The device token is invalid, or belongs to the other environment (sandbox vs production).
    public static let badDeviceToken = APNsReason(rawValue: "BadDeviceToken")
    /// `BadExpirationDate` (400): The `apns-expiration` value is invalid.
    public static let badExpirationDate = APNsReason(rawValue: "BadExpirationDate")
    /// `BadMessageId` (400): The `apns-id` value is invalid.
    public static let badMessageID = APNsReason(rawValue: "BadMessageId")
    /// `BadPriority` (400): The `apns-priority` value is invalid.
    public static let badPriority = APNsReason(rawValue: "BadPriority")
    /// `BadTopic` (400): The `apns-topic` value is invalid.
    public static let badTopic = APNsReason(rawValue: "BadTopic")
    /// `DeviceTokenNotForTopic` (400): The device token does not match the topic.
    public static let deviceTokenNotForTopic = APNsReason(rawValue: "DeviceTokenNotForTopic")
    /// `DuplicateHeaders` (400): One or more headers are repeated.
    public static let duplicateHeaders = APNsReason(rawValue: "DuplicateHeaders")
    /// `IdleTimeout` (400): The connection was idle too long.
    public static let idleTimeout = APNsReason(rawValue: "IdleTimeout")
    /// `InvalidPushType` (400): The `apns-push-type` value is invalid.
    public static let invalidPushType = APNsReason(rawValue: "InvalidPushType")
    /// `MissingDeviceToken` (400): The `:path` has no device token.
    public static let missingDeviceToken = APNsReason(rawValue: "MissingDeviceToken")
    /// `MissingTopic` (400): The `apns-topic` header is required and missing.
    public static let missingTopic = APNsReason(rawValue: "MissingTopic")
    /// `PayloadEmpty` (400): The payload is empty.
    public static let payloadEmpty = APNsReason(rawValue: "PayloadEmpty")
    /// `TopicDisallowed` (400): Pushing to this topic is not allowed: with a topic-specific
    /// key (2025), the topic is not one of the key's topics; use the key for that app.
    public static let topicDisallowed = APNsReason(rawValue: "TopicDisallowed")
    /// `BadCertificate` (403): The certificate is invalid.
    public static let badCertificate = APNsReason(rawValue: "BadCertificate")
    /// `BadCertificateEnvironment` (403): The client certificate is for the wrong environment.
    public static let badCertificateEnvironment = APNsReason(rawValue: "BadCertificateEnvironment")
    /// `ExpiredProviderToken` (403): The provider token is stale (its `iat` is older than an hour); a new one is needed.
    public static let expiredProviderToken = APNsReason(rawValue: "ExpiredProviderToken")
    /// `Forbidden` (403): The specified action is not allowed.
    public static let forbidden = APNsReason(rawValue: "Forbidden")
    /// `InvalidProviderToken` (403): The provider token is invalid, or its signature cannot be verified.
    public static let invalidProviderToken = APNsReason(rawValue: "InvalidProviderToken")
    /// `MissingProviderToken` (403): No certificate and no `authorization` header with a provider token.
    public static let missingProviderToken = APNsReason(rawValue: "MissingProviderToken")
    /// `UnrelatedKeyIdInToken` (403): The key ID in the provider token is unrelated to the
    /// connection: APNs pins a connection to the key of the first provider token it
    /// carried, and a token from an unrelated key needs its own connection.
    /// `HTTP2Transport` keeps connections per key, and never sends on a
    /// connection that drew this answer again.
    public static let unrelatedKeyIDInToken = APNsReason(rawValue: "UnrelatedKeyIdInToken")
    /// `BadEnvironmentKeyIdInToken` (403): The key in the provider token is not enabled for
    /// this environment (an environment-scoped team key, 2025: sandbox or production only).
    public static let badEnvironmentKeyIDInToken = APNsReason(rawValue: "BadEnvironmentKeyIdInToken")
    /// `BadEnvironmentKeyInToken` (403): The spelling some providers see for
    /// ``badEnvironmentKeyIDInToken``: the key is not enabled for this environment.
    public static let badEnvironmentKeyInToken = APNsReason(rawValue: "BadEnvironmentKeyInToken")
    /// `BadPath` (404): The `:path` value is invalid.
    public static let badPath = APNsReason(rawValue: "BadPath")
    /// `MethodNotAllowed` (405): The `:method` is not allowed.
    public static let methodNotAllowed = APNsReason(rawValue: "MethodNotAllowed")
    /// `ExpiredToken` (410): The device token has expired.
    public static let expiredToken = APNsReason(rawValue: "ExpiredToken")
    /// `Unregistered` (410): The device token is inactive for the topic (the app was uninstalled or disabled notifications).
    public static let unregistered = APNsReason(rawValue: "Unregistered")
    /// `PayloadTooLarge` (413): The payload is too large.
    public static let payloadTooLarge = APNsReason(rawValue: "PayloadTooLarge")
    /// `TooManyProviderTokenUpdates` (429): The provider token is being updated too often (more than once every 20 minutes).
    public static let tooManyProviderTokenUpdates = APNsReason(rawValue: "TooManyProviderTokenUpdates")
    /// `TooManyRequests` (429): Too many requests were made consecutively to the same device token.
    public static let tooManyRequests = APNsReason(rawValue: "TooManyRequests")
    /// `InternalServerError` (500): An internal server error occurred.
    public static let internalServerError = APNsReason(rawValue: "InternalServerError")
    /// `ServiceUnavailable` (503): The service is unavailable.
    public static let serviceUnavailable = APNsReason(rawValue: "ServiceUnavailable")
    /// `Shutdown` (503): The APNs server is shutting down.
    public static let shutdown = APNsReason(rawValue: "Shutdown")
    /// `FeatureNotEnabled` (400): Broadcast: the feature is not enabled for this app.
    public static let featureNotEnabled = APNsReason(rawValue: "FeatureNotEnabled")
    /// `MissingChannelId` (400): Broadcast and channel management: the `apns-channel-id` header is missing.
    public static let missingChannelID = APNsReason(rawValue: "MissingChannelId")
    /// `BadChannelId` (400): Broadcast and channel management: the `apns-channel-id` is not properly encoded, or is longer than allowed.
    public static let badChannelID = APNsReason(rawValue: "BadChannelId")
    /// `ChannelNotRegistered` (400): Broadcast and channel management: the channel in `apns-channel-id` does not exist (deleted, or created in the other environment).
    public static let channelNotRegistered = APNsReason(rawValue: "ChannelNotRegistered")
    /// `BadRequestParams` (400): Channel management: the JSON request body has an attribute APNs does not recognize.
    public static let badRequestParams = APNsReason(rawValue: "BadRequestParams")
    /// `BadRequestPayload` (400): Channel management: the JSON request body cannot be parsed.
    public static let badRequestPayload = APNsReason(rawValue: "BadRequestPayload")
    /// `MissingPushType` (400): Broadcast and channel management: a broadcast's `apns-push-type` header, or a
    /// channel creation body's `push-type`, is missing.
    public static let missingPushType = APNsReason(rawValue: "MissingPushType")
    /// `CannotCreateChannelConfig` (400): Channel management: the app has reached its channel limit (10,000 per environment); delete unused channels.
    public static let cannotCreateChannelConfig = APNsReason(rawValue: "CannotCreateChannelConfig")
    /// `TopicMismatch` (403): Broadcast and channel management: the bundle IDs of the provider token's key or of the
    /// certificate do not include the bundle ID in the path (a topic-specific key or a certificate of another app).
    public static let topicMismatch = APNsReason(rawValue: "TopicMismatch")

    /// Every reason Apple documents, with the HTTP status it comes with (`nil` where Apple
    /// documents none).
    public static let documented: [(reason: APNsReason, status: Int?)] = [
        (.badCollapseID, 400),
        (.badDeviceToken, 400),
        (.badExpirationDate, 400),
        (.badMessageID, 400),
        (.badPriority, 400),
        (.badTopic, 400),
        (.deviceTokenNotForTopic, 400),
        (.duplicateHeaders, 400),
        (.idleTimeout, 400),
        (.invalidPushType, 400),
        (.missingDeviceToken, 400),
        (.missingTopic, 400),
        (.payloadEmpty, 400),
        (.topicDisallowed, 400),
        (.badCertificate, 403),
        (.badCertificateEnvironment, 403),
        (.expiredProviderToken, 403),
        (.forbidden, 403),
        (.invalidProviderToken, 403),
        (.missingProviderToken, 403),
        (.unrelatedKeyIDInToken, 403),
        (.badEnvironmentKeyIDInToken, 403),
        (.badEnvironmentKeyInToken, 403),
        (.badPath, 404),
        (.methodNotAllowed, 405),
        (.expiredToken, 410),
        (.unregistered, 410),
        (.payloadTooLarge, 413),
        (.tooManyProviderTokenUpdates, 429),
        (.tooManyRequests, 429),
        (.internalServerError, 500),
        (.serviceUnavailable, 503),
        (.shutdown, 503),
        (.featureNotEnabled, 400),
        (.missingChannelID, 400),
        (.badChannelID, 400),
        (.channelNotRegistered, 400),
        (.badRequestParams, 400),
        (.badRequestPayload, 400),
        (.missingPushType, 400),
        (.cannotCreateChannelConfig, 400),
        (.topicMismatch, 403),
    ]

    /// The HTTP status Apple documents for this reason, or `nil` for an unknown reason.
    public var status: Int? {
        Self.statusByReason[rawValue] ?? nil
    }

    /// Whether Apple documents this reason (``documented``).
    package var isDocumented: Bool { Self.statusByReason[rawValue] != nil }

    private static let statusByReason: [String: Int?] = Dictionary(
        documented.map { ($0.reason.rawValue, $0.status) },
        uniquingKeysWith: { first, _ in first }
    )
}

extension APNsReason {
    /// The reason in an APNs error body, `{"reason": "...", ...}`: the body of an error
    /// response, or the debug data of a GOAWAY frame, which carries the same JSON.
    ///
    /// - Returns: `nil` if `errorBody` is not a JSON object with a string `reason`.
    public init?(errorBody: some Collection<UInt8>) {
        guard let reason = APNsErrorBody(parsing: errorBody)?.reason else { return nil }
        self.init(rawValue: reason)
    }
}
