import APNsCore
import Foundation

/// The device tokens of each user, in memory: what a provider server keeps (usually in a
/// database) so that it can reach a user's devices.
///
/// A device token belongs to one app installation, so it belongs to one user at a time:
/// registering a token for a second user (a sign-out and a sign-in on the same device)
/// moves it.
public actor DeviceRegistry {
    /// One registered token.
    public struct Registration: Sendable, Hashable {
        /// The device token.
        public let deviceToken: DeviceToken
        /// When the device last registered it.
        public let registeredAt: Date
    }

    private var tokensByUser: [String: [DeviceToken: Date]] = [:]
    private var userByToken: [DeviceToken: String] = [:]

    /// An empty registry.
    public init() {}

    /// Registers `deviceToken` for `user` at `date`, moving it from any other user.
    ///
    /// - Returns: `true` when the token was not registered for `user` before.
    @discardableResult
    public func register(_ deviceToken: DeviceToken, for user: String, at date: Date = Date()) -> Bool {
        let previousUser = userByToken.updateValue(user, forKey: deviceToken)
        if let previousUser, previousUser != user {
            tokensByUser[previousUser]?[deviceToken] = nil
            if tokensByUser[previousUser]?.isEmpty == true { tokensByUser[previousUser] = nil }
        }
        tokensByUser[user, default: [:]][deviceToken] = date
        return previousUser != user
    }

    /// The registrations of `user`, oldest first (then by token, so the order is stable).
    public func registrations(for user: String) -> [Registration] {
        (tokensByUser[user] ?? [:])
            .map { Registration(deviceToken: $0.key, registeredAt: $0.value) }
            .sorted { ($0.registeredAt, $0.deviceToken.hexString) < ($1.registeredAt, $1.deviceToken.hexString) }
    }

    /// Removes `deviceToken`, whoever it was registered for.
    ///
    /// - Returns: `true` when the token was registered.
    @discardableResult
    public func forget(_ deviceToken: DeviceToken) -> Bool {
        guard let user = userByToken.removeValue(forKey: deviceToken) else { return false }
        tokensByUser[user]?[deviceToken] = nil
        if tokensByUser[user]?.isEmpty == true { tokensByUser[user] = nil }
        return true
    }

    /// How many tokens are registered, for every user together.
    public var count: Int { userByToken.count }
}
