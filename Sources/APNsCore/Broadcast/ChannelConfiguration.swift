#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A channel's configuration as APNs reports it: the JSON body of a `200` answer to
/// `GET /1/apps/<bundle ID>/channels`, `{"message-storage-policy": 0|1, "push-type": "LiveActivity"}`.
///
/// See [Sending channel management requests to APNs](https://developer.apple.com/documentation/usernotifications/sending-channel-management-requests-to-apns).
public struct ChannelConfiguration: Sendable, Hashable {
    /// What APNs keeps for offline devices.
    public let storagePolicy: MessageStoragePolicy
    /// The channel's push type as APNs spells it; `LiveActivity` is the only one Apple documents.
    public let pushType: String

    /// Creates a configuration.
    public init(storagePolicy: MessageStoragePolicy, pushType: String = "LiveActivity") {
        self.storagePolicy = storagePolicy
        self.pushType = pushType
    }

    /// The configuration in a response body, or `nil` if `body` is not a JSON object with
    /// an integer `message-storage-policy` of 0 or 1 and a string `push-type`.
    public init?(json body: [UInt8]) {
        guard let members = try? JSONDecoder().decode(Members.self, from: Data(body)),
            let policy = MessageStoragePolicy(rawValue: members.storagePolicy)
        else { return nil }
        self.init(storagePolicy: policy, pushType: members.pushType)
    }
}

extension ChannelConfiguration {
    /// The two members of a configuration's JSON body.
    private struct Members: Decodable {
        let storagePolicy: Int
        let pushType: String

        enum CodingKeys: String, CodingKey {
            case storagePolicy = "message-storage-policy"
            case pushType = "push-type"
        }
    }
}
