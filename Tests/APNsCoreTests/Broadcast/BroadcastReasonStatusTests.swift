import Testing

@testable import APNsCore

/// The status of every reason in Apple's table for the broadcast and channel management
/// APIs ("Handling error responses from Apple Push Notification service"), row by row as
/// Apple prints it, against ``APNsReason/status``.
@Suite struct BroadcastReasonStatusTests {
    /// Apple's table (its `Service Unavailable` row is the `ServiceUnavailable` reason).
    static let appleTable: [(String, Int)] = [
        ("FeatureNotEnabled", 400), ("MissingChannelId", 400), ("BadChannelId", 400), ("ChannelNotRegistered", 400),
        ("BadRequestParams", 400), ("BadRequestPayload", 400), ("PayloadEmpty", 400), ("BadMessageId", 400),
        ("MissingPushType", 400), ("InvalidPushType", 400), ("CannotCreateChannelConfig", 400),
        ("BadExpirationDate", 400), ("TopicDisallowed", 400), ("BadPriority", 400),
        ("BadCertificate", 403), ("BadCertificateEnvironment", 403), ("TopicMismatch", 403),
        ("MissingProviderToken", 403), ("ExpiredProviderToken", 403), ("InvalidProviderToken", 403),
        ("BadPath", 404), ("MethodNotAllowed", 405), ("PayloadTooLarge", 413),
        ("TooManyRequests", 429), ("TooManyProviderTokenUpdates", 429), ("InternalServerError", 500),
        ("ServiceUnavailable", 503), ("Shutdown", 503),
    ]

    @Test("each reason of Apple's broadcast and channel table has Apple's status", arguments: appleTable)
    func statusIsApples(_ reason: String, _ status: Int) {
        #expect(APNsReason(rawValue: reason).status == status, "\(reason)")
    }

    @Test func topicMismatchIsAForbiddenAnswerButStillAFixOfTheRequest() {
        // 403, yet not "fix credentials": the key or certificate is fine for its own apps.
        #expect(APNsReason.topicMismatch.status == 403)
        #expect(APNsRemedy(reason: .topicMismatch, status: 403) == .fixRequest)
    }
}
