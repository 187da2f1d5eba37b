/// Why ``ProviderTokenVerifier`` refused a token or a public key.
///
/// Compare ``kind`` to tell the cases apart; ``description`` says which part was wrong.
/// The description never repeats the token.
public struct ProviderTokenVerificationError: Error, Sendable, CustomStringConvertible {
    /// The category of failure: an open set, compare with `==`.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case malformed = "malformed"
            case unsupportedAlgorithm = "unsupported_algorithm"
            case unknownKeyID = "unknown_key_id"
            case badSignature = "bad_signature"
            case invalidPublicKey = "invalid_public_key"
            case wrongTeamID = "wrong_team_id"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// Not three base64url parts, or a header or claims set that is not the JSON APNs
        /// expects (`kid` and `iss` strings, an integer `iat`).
        public static let malformed = Kind(.malformed)
        /// The header's `alg` is not `ES256`.
        public static let unsupportedAlgorithm = Kind(.unsupportedAlgorithm)
        /// No public key is registered for the header's `kid`.
        public static let unknownKeyID = Kind(.unknownKeyID)
        /// The signature is not a valid ES256 signature of the token by the key of `kid`.
        public static let badSignature = Kind(.badSignature)
        /// A key given to ``ProviderTokenVerifier/register(publicKeyPEM:keyID:teamID:)`` is
        /// not a P-256 public key in PEM.
        public static let invalidPublicKey = Kind(.invalidPublicKey)
        /// The signature is valid, but the key of `kid` was registered with a team id and
        /// the token's `iss` names another team (APNs answers `InvalidProviderToken`).
        public static let wrongTeamID = Kind(.wrongTeamID)

        /// A short, stable label (`"bad_signature"`), safe for logs and metric labels.
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
