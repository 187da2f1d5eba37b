/// Why a ``ProviderTokenCache`` could not be created or could not sign a token.
///
/// Compare ``code`` to tell the cases apart; ``description`` names the bad value and the
/// rule it breaks. Neither ever contains key material or a token.
public struct ProviderTokenError: Error, Sendable, CustomStringConvertible {
    /// The category of failure: an open set, compare with `==`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case invalidKeyID
            case invalidTeamID
            case invalidRefreshInterval
            case signingFailed
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The key id (`kid`) is not the 10-character identifier Apple shows next to the
        /// key in the developer account.
        public static let invalidKeyID = Code(.invalidKeyID)
        /// The team id (`iss`) is not the 10-character identifier of the developer team.
        public static let invalidTeamID = Code(.invalidTeamID)
        /// The refresh interval is outside 20...59 minutes: APNs refuses tokens older than
        /// 60 minutes and new tokens more often than every 20.
        public static let invalidRefreshInterval = Code(.invalidRefreshInterval)
        /// OpenSSL failed to sign; the description carries its error queue.
        public static let signingFailed = Code(.signingFailed)

        /// A short, stable label (`"invalid_key_id"`), safe for logs and metric labels.
        public var description: String { base.rawValue }
    }

    /// The category of failure.
    public let code: Code
    /// What was wrong, for people.
    public let description: String

    init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }
}

extension ProviderTokenError {
    /// The former name of ``Code``.
    @available(*, deprecated, renamed: "Code")
    public typealias Kind = Code

    /// The former name of ``code``.
    @available(*, deprecated, renamed: "code")
    public var kind: Code { code }
}
