/// What a caller should do about a rejection: the action each reason calls for.
///
/// | remedy | reasons | what to do |
/// |---|---|---|
/// | ``removeDeviceToken`` | Unregistered, ExpiredToken (410) | Stop sending to this token: delete it, unless the device registers it again after ``APNsRejection/timestamp``. |
/// | ``retryLater`` | TooManyRequests (429), InternalServerError (500), ServiceUnavailable, Shutdown (503), IdleTimeout; any other 5xx | Send again after a delay; the client does this by itself within its ``RetryPolicy``. |
/// | ``fixCredentials`` | BadCertificate, BadCertificateEnvironment, ExpiredProviderToken, Forbidden, InvalidProviderToken, MissingProviderToken, UnrelatedKeyIdInToken, BadEnvironmentKeyIdInToken, BadEnvironmentKeyInToken (403), TooManyProviderTokenUpdates (429) | Check the key, key ID, team ID, certificate and environment; every request on these credentials will fail the same way. `BadEnvironmentKey…InToken`: the key is not enabled for this environment (use a key of this environment). `UnrelatedKeyIdInToken`: the connection belongs to another key (the transport closes it; a key needs its own connections). |
/// | ``fixRequest`` | every other 4xx: BadDeviceToken, DeviceTokenNotForTopic, TopicDisallowed, BadTopic, BadCollapseId, PayloadTooLarge, … | Do not resend as is. `BadDeviceToken` also means a token of the other environment: check the environment before deleting tokens. `TopicDisallowed`: the topic is outside a topic-specific key's topics (send with that app's key). |
/// | ``fixRequest`` | the broadcast and channel reasons, whatever their status: ChannelNotRegistered, BadChannelId, MissingChannelId, FeatureNotEnabled, CannotCreateChannelConfig, BadRequestParams, BadRequestPayload, MissingPushType, TopicMismatch | A channel is not a device token: `ChannelNotRegistered` means the channel was deleted or belongs to the other environment (create a new one); `CannotCreateChannelConfig` means the app has reached its channel limit (delete unused channels); `FeatureNotEnabled` means broadcast is not enabled for the app. |
///
/// An unknown reason is classified by its status the same way (410 → remove, 429 and 5xx
/// → retry, 403 → credentials, other → request).
public enum APNsRemedy: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The device token is no longer valid for the topic: stop using it.
    case removeDeviceToken
    /// A temporary condition at APNs: the same request may succeed later.
    case retryLater
    /// The provider token or certificate is wrong, expired or for the wrong environment.
    case fixCredentials
    /// Something in this request is wrong; resending it unchanged fails again.
    case fixRequest

    /// The remedy for `reason` (if known) arriving with HTTP status `status`.
    public init(reason: APNsReason?, status: Int) {
        switch reason {
        case .unregistered?, .expiredToken?:
            self = .removeDeviceToken
        case .tooManyRequests?, .internalServerError?, .serviceUnavailable?, .shutdown?, .idleTimeout?:
            self = .retryLater
        case .channelNotRegistered?, .badChannelID?, .missingChannelID?, .featureNotEnabled?,
            .cannotCreateChannelConfig?, .badRequestParams?, .badRequestPayload?, .missingPushType?, .topicMismatch?:
            // Channel reasons never mean "remove a device token" or "retry", whatever status
            // APNs pairs them with.
            self = .fixRequest
        case .tooManyProviderTokenUpdates?, .badCertificate?, .badCertificateEnvironment?, .expiredProviderToken?,
            .forbidden?, .invalidProviderToken?, .missingProviderToken?, .unrelatedKeyIDInToken?,
            .badEnvironmentKeyIDInToken?, .badEnvironmentKeyInToken?:
            self = .fixCredentials
        default:
            switch status {
            case 410: self = .removeDeviceToken
            case 429, 500...599: self = .retryLater
            case 401, 403: self = .fixCredentials
            default: self = .fixRequest
            }
        }
    }

    /// The case name.
    public var description: String { rawValue }
}
