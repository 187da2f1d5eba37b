/// Why ``ProviderTokenVerifier`` refused a token or a public key.
///
/// Compare ``code`` to tell the cases apart; ``description`` says which part was wrong.
/// The description never repeats the token.
public struct ProviderTokenVerificationError: Error, Sendable, CustomStringConvertible {
    /// The category of failure: an open set, compare with `==`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case malformed
            case unsupportedAlgorithm
            case unknownKeyID
            case badSignature
            case invalidPublicKey
            case wrongTeamID
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// Not three base64url parts, or a header or claims set that is not the JSON APNs
        /// expects (`kid` and `iss` strings, an integer `iat`).
        public static let malformed = Code(.malformed)
        /// The header's `alg` is not `ES256`.
        public static let unsupportedAlgorithm = Code(.unsupportedAlgorithm)
        /// No public key is registered for the header's `kid`.
        public static let unknownKeyID = Code(.unknownKeyID)
        /// The signature is not a valid ES256 signature of the token by the key of `kid`.
        public static let badSignature = Code(.badSignature)
        /// A key given to ``ProviderTokenVerifier/register(publicKeyPEM:keyID:teamID:)`` is
        /// not a P-256 public key in PEM.
        public static let invalidPublicKey = Code(.invalidPublicKey)
        /// The signature is valid, but the key of `kid` was registered with a team id and
        /// the token's `iss` names another team (APNs answers `InvalidProviderToken`).
        public static let wrongTeamID = Code(.wrongTeamID)

        /// A short, stable label (`"bad_signature"`), safe for logs and metric labels.
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

extension ProviderTokenVerificationError {
    /// The former name of ``Code``.
    @available(*, deprecated, renamed: "Code")
    public typealias Kind = Code

    /// The former name of ``code``.
    @available(*, deprecated, renamed: "code")
    public var kind: Code { code }
}
