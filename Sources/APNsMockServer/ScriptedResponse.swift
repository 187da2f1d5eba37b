import Foundation

/// An answer the mock server gives instead of `200` to a request that passed validation.
///
/// APNs answers with a status and a JSON body `{"reason": "…"}`; for `410` the body also
/// carries `timestamp`, the last time APNs knew the device token was invalid, in
/// milliseconds since 1970. See [Handling notification responses from APNs](https://developer.apple.com/documentation/usernotifications/handling-notification-responses-from-apns).
public struct ScriptedResponse: Sendable, Hashable {
    /// The HTTP status, for example `410`.
    public var status: Int
    /// The reason string APNs would send, for example `Unregistered`.
    public var reason: String
    /// For `410`: the `timestamp` field, in milliseconds since 1970.
    public var timestampMilliseconds: Int64?

    /// A response with the given status and reason.
    /// - Parameters:
    ///   - status: The HTTP status.
    ///   - reason: The value of the `reason` field.
    ///   - timestampMilliseconds: The value of the `timestamp` field; only APNs' `410` has one.
    public init(status: Int, reason: String, timestampMilliseconds: Int64? = nil) {
        self.status = status
        self.reason = reason
        self.timestampMilliseconds = timestampMilliseconds
    }

    /// `410 Unregistered`: the device token is no longer active for the topic.
    /// - Parameter since: The moment APNs last saw the token invalid (default: now).
    public static func unregistered(since: Date = Date()) -> ScriptedResponse {
        ScriptedResponse(status: 410, reason: "Unregistered",
                         timestampMilliseconds: Int64((since.timeIntervalSince1970 * 1000).rounded(.down)))
    }

    /// `429 TooManyRequests`: too many requests for the same device token.
    public static let tooManyRequests = ScriptedResponse(status: 429, reason: "TooManyRequests")
    /// `500 InternalServerError`.
    public static let internalServerError = ScriptedResponse(status: 500, reason: "InternalServerError")
    /// `503 ServiceUnavailable`.
    public static let serviceUnavailable = ScriptedResponse(status: 503, reason: "ServiceUnavailable")

    /// The JSON body APNs sends with this status, for example `{"reason":"Unregistered","timestamp":1700000000000}`.
    public var jsonBody: String {
        var json = #"{"reason":"#
        json += Self.quoted(reason)
        if let timestampMilliseconds {
            json += #","timestamp":"# + String(timestampMilliseconds)
        }
        json += "}"
        return json
    }

    static func quoted(_ string: String) -> String {
        var out = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20:
                out += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count)
                    + String(scalar.value, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
