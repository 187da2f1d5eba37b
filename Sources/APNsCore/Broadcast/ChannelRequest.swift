/// A channel management request: create, read, list or delete the broadcast channels of
/// an app (iOS 18 Live Activities).
///
/// | request | method and path | headers | success |
/// |---|---|---|---|
/// | ``create(storagePolicy:)`` | `POST /1/apps/<bundle ID>/channels` | body `{"message-storage-policy":0,"push-type":"LiveActivity"}` | 201, `apns-channel-id` |
/// | ``read(_:)`` | `GET /1/apps/<bundle ID>/channels` | `apns-channel-id` | 200, JSON configuration |
/// | ``list`` | `GET /1/apps/<bundle ID>/all-channels` | | 200, `{"channels": [...]}` |
/// | ``delete(_:)`` | `DELETE /1/apps/<bundle ID>/channels` | `apns-channel-id` | 204 |
///
/// Every request carries an `apns-request-id`, which APNs echoes. Channel management has
/// its own hosts: ``APNsEnvironment/sandboxChannelManagement`` (port 2195) and
/// ``APNsEnvironment/productionChannelManagement`` (port 2196).
///
/// See [Sending channel management requests to APNs](https://developer.apple.com/documentation/usernotifications/sending-channel-management-requests-to-apns).
public enum ChannelRequest: Sendable, Hashable {
    /// Creates a channel with a storage policy.
    case create(storagePolicy: MessageStoragePolicy)
    /// Reads a channel's configuration.
    case read(ChannelID)
    /// Lists every channel of the app.
    case list
    /// Deletes a channel.
    case delete(ChannelID)

    /// The HTTP status APNs answers on success: 201, 200, 200 or 204.
    public var successStatus: Int {
        switch self {
        case .create: 201
        case .read, .list: 200
        case .delete: 204
        }
    }

    /// Builds the request.
    ///
    /// Headers, in this order: `:method`, `:scheme`, `:path`, `:authority`, `authorization`
    /// (token auth only), `apns-channel-id` (read and delete), `apns-request-id`, and for
    /// create `content-type: application/json`.
    ///
    /// - Parameters:
    ///   - bundleID: Your app's bundle ID.
    ///   - environment: A channel management environment, usually
    ///     ``APNsEnvironment/channelManagement`` of the push environment.
    ///   - authorization: The `authorization` value (`bearer <JWT>`), or `nil` with a certificate.
    ///   - requestID: The `apns-request-id`; a new random one if `nil`.
    ///   - timeout: See ``APNsRequest/timeout``.
    /// - Throws: ``APNsRequestError`` if the bundle ID is empty or not a bundle identifier.
    public func request(
        bundleID: String,
        environment: APNsEnvironment,
        authorization: String? = nil,
        requestID: APNsRequestID = .random(),
        timeout: Duration = APNsRequest.defaultTimeout
    ) throws(APNsRequestError) -> APNsRequest {
        var headers = [HeaderField]()
        headers.reserveCapacity(4)
        if let authorization {
            headers.append(HeaderField(name: "authorization", value: authorization))
        }
        let method: APNsRequest.Method
        let path: String
        var body: [UInt8] = []
        switch self {
        case .create(let policy):
            method = .post
            path = try Self.path("/1/apps/", bundleID: bundleID, then: "/channels")
            headers.append(HeaderField(name: "apns-request-id", value: requestID.uuidString))
            headers.append(HeaderField(name: "content-type", value: "application/json"))
            body = Array(#"{"message-storage-policy":\#(policy.rawValue),"push-type":"LiveActivity"}"#.utf8)
        case .read(let channel), .delete(let channel):
            method = self == .read(channel) ? .get : .delete
            path = try Self.path("/1/apps/", bundleID: bundleID, then: "/channels")
            headers.append(HeaderField(name: "apns-channel-id", value: channel.rawValue))
            headers.append(HeaderField(name: "apns-request-id", value: requestID.uuidString))
        case .list:
            method = .get
            path = try Self.path("/1/apps/", bundleID: bundleID, then: "/all-channels")
            headers.append(HeaderField(name: "apns-request-id", value: requestID.uuidString))
        }
        return try APNsRequest(
            method: method,
            authority: environment.authority,
            path: path,
            headers: headers,
            body: body,
            timeout: timeout
        )
    }

    /// `prefix + bundleID + suffix`, after checking that `bundleID` is a bundle identifier:
    /// non-empty, only ASCII letters, digits, `-` and `.` (so it cannot change the path),
    /// and not ending in a `.push-type.` topic suffix (`.push-type.liveactivity`,
    /// `.push-type.widgets`, `.push-type.controls`), which APNs refuses in these paths with
    /// `TopicDisallowed` ("Ensure that no push type suffix is added to the bundle ID").
    static func path(_ prefix: String, bundleID: String, then suffix: String = "") throws(APNsRequestError) -> String {
        guard !bundleID.isEmpty else {
            throw APNsRequestError(.invalidTopic, header: ":path", "the bundle ID is empty")
        }
        try Topic.checkBundleID(bundleID, header: ":path")
        for pushType in [PushType.liveactivity, .widgets, .controls] {
            let topicSuffix = Topic.suffix(for: pushType)
            guard bundleID.hasSuffix(topicSuffix), bundleID.utf8.count > topicSuffix.utf8.count else { continue }
            let bare = bundleID.dropLast(topicSuffix.count)
            throw APNsRequestError(
                .invalidTopic,
                header: ":path",
                position: bare.utf8.count,
                "the bundle ID ends in the topic suffix \(topicSuffix) of \(pushType.rawValue) pushes; broadcast and "
                    + "channel requests take the app's bundle ID without it (\(bare)), or APNs answers TopicDisallowed"
            )
        }
        return prefix + bundleID + suffix
    }
}
