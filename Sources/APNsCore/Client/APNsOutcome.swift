/// The outcome of a notification for one device token in a batch send.
public struct APNsOutcome: Sendable, Hashable {
    /// The device token.
    public let deviceToken: DeviceToken
    /// Accepted, or why not.
    public let result: Result<APNsAccepted, APNsError>

    /// Creates an outcome.
    public init(deviceToken: DeviceToken, result: Result<APNsAccepted, APNsError>) {
        self.deviceToken = deviceToken
        self.result = result
    }

    /// The acceptance, if APNs accepted the notification.
    public var accepted: APNsAccepted? {
        if case .success(let accepted) = result { return accepted }
        return nil
    }

    /// The error, if it was not accepted.
    public var error: APNsError? {
        if case .failure(let error) = result { return error }
        return nil
    }
}
