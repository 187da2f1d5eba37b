/// Why a ``ProviderTokenCache`` could not be created or could not sign a token.
///
/// Compare ``kind`` to tell the cases apart; ``description`` names the bad value and the
/// rule it breaks. Neither ever contains key material or a token.
public struct ProviderTokenError: Error, Sendable, CustomStringConvertible {
    /// The category of failure: an open set, compare with `==`.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case invalidKeyID = "invalid_key_id"
            case invalidTeamID = "invalid_team_id"
            case invalidRefreshInterval = "invalid_refresh_interval"
            case signingFailed = "signing_failed"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The key id (`kid`) is not the 10-character identifier Apple shows next to the
        /// key in the developer account.
        public static let invalidKeyID = Kind(.invalidKeyID)
        /// The team id (`iss`) is not the 10-character identifier of the developer team.
        public static let invalidTeamID = Kind(.invalidTeamID)
        /// The refresh interval is outside 20...59 minutes: APNs refuses tokens older than
        /// 60 minutes and new tokens more often than every 20.
        public static let invalidRefreshInterval = Kind(.invalidRefreshInterval)
        /// OpenSSL failed to sign; the description carries its error queue.
        public static let signingFailed = Kind(.signingFailed)

        /// A short, stable label (`"invalid_key_id"`), safe for logs and metric labels.
        public var description: String { base.rawValue }
    }

    /// The category of failure.
    public let kind: Kind
    /// What was wrong, for people.
    public let description: String

    init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }
}
