// The broadcast channels the mock server holds, for tests to read and seed.
extension MockAPNsServer {
    /// The channels of `bundleID`, in creation order.
    ///
    /// The server serves broadcasts (`POST /4/broadcasts/apps/<bundle ID>`) and channel
    /// management (`/1/apps/<bundle ID>/channels`, `/all-channels`) on the same port as
    /// device pushes. For those requests, ``RecordedRequest/apnsID`` holds the
    /// `apns-request-id` the server answered with.
    public func channels(bundleID: String) -> [MockChannel] {
        state.channels.channels(bundleID: bundleID)
    }

    /// Every channel of every bundle ID, grouped by bundle ID in sorted order.
    public var allChannels: [MockChannel] {
        state.channels.all
    }

    /// Creates a channel as `POST /1/apps/<bundle ID>/channels` would, for a test that needs
    /// one before it starts; `nil` when the bundle ID has reached ``channelLimit``.
    ///
    /// - Parameters:
    ///   - bundleID: The app's bundle ID.
    ///   - storagePolicy: 0 (no message storage) or 1 (most recent message).
    @discardableResult
    public func addChannel(bundleID: String, storagePolicy: Int = 0) -> MockChannel? {
        state.channels.create(bundleID: bundleID, storagePolicy: storagePolicy)
    }

    /// The most channels one bundle ID may have; creating one more is answered
    /// `400 CannotCreateChannelConfig`. Apple's limit, and the default, is 10,000.
    public var channelLimit: Int {
        state.channels.limit
    }

    /// Sets ``channelLimit`` (values below 0 count as 0), for example to 2 to reach the limit quickly.
    public func setChannelLimit(_ limit: Int) {
        state.channels.limit = limit
    }

    /// Answers every valid broadcast to the channel `channelID` with `response` (for
    /// example `ScriptedResponse(status: 400, reason: "ChannelNotRegistered")`, or
    /// ``ScriptedResponse/tooManyRequests``); `nil` removes the rule. The channel itself is
    /// left as it is. ``resetScript()`` removes every such rule.
    public func respond(toChannel channelID: String, with response: ScriptedResponse?) {
        state.shared.withLock { $0.perChannel[channelID] = response }
    }

    /// Deletes every channel.
    public func removeAllChannels() {
        state.channels.removeAll()
    }
}
