#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The `apns-request-id` of a broadcast or channel management request: a UUID in
/// canonical lowercase `8-4-4-4-12` form.
///
/// APNs echoes it in the response (and makes one when the request has none); the client
/// generates one per call when you give none, and every retry reuses it.
///
/// See [Sending broadcast push notification requests to APNs](https://developer.apple.com/documentation/usernotifications/sending-broadcast-push-notification-requests-to-apns).
public struct APNsRequestID: Sendable, Hashable, CustomStringConvertible {
    /// The canonical lowercase form, for example `eabeae54-14a8-11e5-b60b-1697f925ec7b`.
    public let uuidString: String

    /// Parses a UUID in `8-4-4-4-12` form, in either case; the result is lowercase.
    ///
    /// - Throws: ``APNsRequestError`` with code ``APNsRequestError/Code/invalidHeaderValue``
    ///   and header `apns-request-id` if `string` is not a canonical UUID.
    public init(_ string: String) throws(APNsRequestError) {
        do {
            self.uuidString = try APNsID(string).uuidString
        } catch {
            throw APNsRequestError(
                .invalidHeaderValue,
                header: "apns-request-id",
                position: error.position,
                error.description.replacing("apns-id", with: "apns-request-id")
            )
        }
    }

    /// The request ID of a Foundation `UUID`.
    public init(_ uuid: UUID) {
        self.uuidString = APNsID(uuid).uuidString
    }

    /// A new random (version 4, RFC 9562 §5.4) request ID.
    public static func random() -> APNsRequestID {
        APNsRequestID(checked: APNsID.random().uuidString)
    }

    private init(checked: String) { self.uuidString = checked }

    /// The canonical lowercase form, ``uuidString``.
    public var description: String { uuidString }
}
