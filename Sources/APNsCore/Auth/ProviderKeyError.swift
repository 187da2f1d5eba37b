/// Why a ``ProviderKey`` could not be loaded.
///
/// Compare ``kind`` to tell the cases apart; ``description`` says what was wrong with the
/// input in words a person can act on. Neither ever contains key material.
public struct ProviderKeyError: Error, Sendable, CustomStringConvertible {
    /// The category of failure: an open set, so new kinds can be added without breaking
    /// a `switch`; compare with `==`.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case fileNotReadable = "file_not_readable"
            case environmentVariableNotSet = "environment_variable_not_set"
            case malformed = "malformed"
            case encryptedKey = "encrypted_key"
            case publicKey = "public_key"
            case unsupportedKeyType = "unsupported_key_type"
            case keyGenerationFailed = "key_generation_failed"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The file does not exist or cannot be read.
        public static let fileNotReadable = Kind(.fileNotReadable)
        /// The environment variable is not set or is empty.
        public static let environmentVariableNotSet = Kind(.environmentVariableNotSet)
        /// The input is neither a PEM private key nor DER that OpenSSL can decode.
        public static let malformed = Kind(.malformed)
        /// The key is protected by a passphrase. Keys from Apple are not; export it
        /// without one (`openssl pkcs8 -topk8 -nocrypt`).
        public static let encryptedKey = Kind(.encryptedKey)
        /// The input is a public key; signing needs the private key (the `.p8` file).
        public static let publicKey = Kind(.publicKey)
        /// The key is not an EC key on P-256 (for example P-384, secp256k1, RSA, Ed25519).
        public static let unsupportedKeyType = Kind(.unsupportedKeyType)
        /// OpenSSL could not generate a key.
        public static let keyGenerationFailed = Kind(.keyGenerationFailed)

        /// A short, stable label (`"encrypted_key"`), safe for logs and metric labels.
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
