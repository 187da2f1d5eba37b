import APNsCore

/// What became of one notification sent to a user's devices: what the HTTP API answers.
///
/// Device tokens appear redacted (``APNsCore/DeviceToken/redacted``): a report ends up in
/// logs and dashboards, where a whole token does not belong.
public struct DeliveryReport: Sendable, Hashable, Codable {
    /// What became of one device's notification.
    public struct Device: Sendable, Hashable, Codable {
        /// The redacted device token.
        public var deviceToken: String
        /// `accepted`, `unregistered`, `rejected`, `failed` or `invalid`.
        public var result: String
        /// Apple's reason for a rejection (`Unregistered`, `BadDeviceToken`, …), or the
        /// transport or request error code for a failure.
        public var reason: String?
        /// The `apns-id` APNs acknowledged.
        public var apnsID: String?
        /// Whether the token was removed from the registry.
        public var forgotten: Bool
    }

    /// The user the notification was for.
    public var user: String
    /// How many devices it was sent to.
    public var devices: Int
    /// How many APNs accepted.
    public var accepted: Int = 0
    /// How many APNs answered with a "remove this token" reason (410 `Unregistered`,
    /// `ExpiredToken`) or `BadDeviceToken`.
    public var unregistered: Int = 0
    /// How many APNs rejected for another reason.
    public var rejected: Int = 0
    /// How many got no answer (a transport failure after the client's retries).
    public var failed: Int = 0
    /// How many were never sent because the notification was invalid.
    public var invalid: Int = 0
    /// How many tokens were removed from the registry.
    public var forgotten: Int = 0
    /// Each device's outcome, in the order the devices registered.
    public var results: [Device] = []

    /// An empty report for `devices` devices of `user`.
    public init(user: String, devices: Int) {
        self.user = user
        self.devices = devices
    }
}
