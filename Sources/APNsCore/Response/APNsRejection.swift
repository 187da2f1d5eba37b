#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// APNs refused a notification: the status, the reason, and what to do about it.
///
/// A rejection always carries the HTTP ``status``, even when the body is not the JSON
/// APNs documents (then ``reason`` is `nil`). ``remedy`` classifies it:
///
/// ```swift
/// switch rejection.remedy {
/// case .removeDeviceToken: try await tokens.delete(rejection.deviceToken)
/// case .retryLater: queue.retry(notification, after: .seconds(60))
/// case .fixCredentials, .fixRequest: logger.error("push rejected: \(rejection)")
/// }
/// ```
///
/// See [Handling notification responses from APNs](https://developer.apple.com/documentation/usernotifications/handling-notification-responses-from-apns).
public struct APNsRejection: Sendable, Hashable, CustomStringConvertible {
    /// The HTTP `:status`, for example 410.
    public let status: Int
    /// The `reason` from the JSON body; `nil` if the body had none or was not JSON.
    public let reason: APNsReason?
    /// The `apns-id` APNs echoed (the request's when the response has none).
    public let apnsID: APNsID?
    /// For status 410, the last time APNs confirmed the token was no longer valid for the
    /// topic (the body's `timestamp`, in milliseconds since 1970). Stop sending to the token
    /// unless the device registers it again later than this.
    public let timestamp: Date?
    /// The device token the notification was sent to, if it was a device push.
    public let deviceToken: DeviceToken?
    /// The `apns-request-id` of a broadcast or channel-management call (APNs echoes it;
    /// the request's stands in when the response has none); `nil` for device pushes.
    public let requestID: APNsRequestID?
    /// What the SDK adds to Apple's reason, when it knows more: for example, for an
    /// `ExpiredProviderToken` answer to a token younger than an hour, that this host's
    /// clock is behind Apple's and when the next token will be signed. `nil` for most
    /// rejections.
    public var detail: String?

    /// Creates a rejection.
    public init(
        status: Int,
        reason: APNsReason?,
        apnsID: APNsID? = nil,
        timestamp: Date? = nil,
        deviceToken: DeviceToken? = nil,
        requestID: APNsRequestID? = nil,
        detail: String? = nil
    ) {
        self.status = status
        self.reason = reason
        self.apnsID = apnsID
        self.timestamp = timestamp
        self.deviceToken = deviceToken
        self.requestID = requestID
        self.detail = detail
    }

    /// The rejection `response` says, if its status is not 200; `nil` for a 200.
    ///
    /// - Parameters:
    ///   - response: The response.
    ///   - request: The request it answers; its `apns-id` and `apns-request-id` stand in
    ///     if the response has none, and its device token is kept.
    public init?(response: APNsResponse, request: APNsRequest? = nil) {
        guard response.status != 200 else { return nil }
        // Parsed once: the transport parsed the body as the response arrived.
        let body = response.errorBody
        let echoed = response.apnsID
        // A device push carries no apns-request-id: its headers need not be written out.
        let requested = request.flatMap { $0.isDevicePush ? nil : $0.header("apns-request-id") }
        let requestID = (response.header("apns-request-id") ?? requested).flatMap { try? APNsRequestID($0) }
        self.init(
            status: response.status,
            reason: body?.reason.map(APNsReason.init(rawValue:)),
            apnsID: echoed ?? request?.apnsID,
            timestamp: body?.timestamp.map { Date(timeIntervalSince1970: $0 / 1000) },
            deviceToken: request?.deviceToken,
            requestID: requestID
        )
    }

    /// What to do about this rejection; see ``APNsRemedy``.
    public var remedy: APNsRemedy { APNsRemedy(reason: reason, status: status) }

    /// `<status> <reason>`, for example `410 Unregistered`, with the redacted device token
    /// and the `apns-id` (what Apple's developer support asks for about a notification).
    public var description: String {
        var text = String(status) + " " + (reason?.description ?? "(no reason)")
        if let deviceToken { text += " for device token " + deviceToken.redacted }
        if let apnsID { text += " (apns-id " + apnsID.uuidString + ")" }
        if let requestID { text += " (apns-request-id " + requestID.uuidString + ")" }
        if let detail { text += ": " + detail }
        return text
    }
}
