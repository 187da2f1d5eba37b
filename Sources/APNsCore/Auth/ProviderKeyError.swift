/// Why a ``ProviderKey`` could not be loaded.
///
/// Compare ``code`` to tell the cases apart; ``description`` says what was wrong with the
/// input in words a person can act on. Neither ever contains key material.
public struct ProviderKeyError: Error, Sendable, CustomStringConvertible {
    /// The category of failure: an open set, so new kinds can be added without breaking
    /// a `switch`; compare with `==`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case fileNotReadable
            case environmentVariableNotSet
            case malformed
            case encryptedKey
            case publicKey
            case unsupportedKeyType
            case keyGenerationFailed
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The file does not exist or cannot be read.
        public static let fileNotReadable = Code(.fileNotReadable)
        /// The environment variable is not set or is empty.
        public static let environmentVariableNotSet = Code(.environmentVariableNotSet)
        /// The input is neither a PEM private key nor DER that OpenSSL can decode.
        public static let malformed = Code(.malformed)
        /// The key is protected by a passphrase. Keys from Apple are not; export it
        /// without one (`openssl pkcs8 -topk8 -nocrypt`).
        public static let encryptedKey = Code(.encryptedKey)
        /// The input is a public key; signing needs the private key (the `.p8` file).
        public static let publicKey = Code(.publicKey)
        /// The key is not an EC key on P-256 (for example P-384, secp256k1, RSA, Ed25519).
        public static let unsupportedKeyType = Code(.unsupportedKeyType)
        /// OpenSSL could not generate a key.
        public static let keyGenerationFailed = Code(.keyGenerationFailed)

        /// A short, stable label (`encryptedKey`), safe for logs and metric labels.
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

extension ProviderKeyError {
    /// The former name of ``Code``.
    @available(*, deprecated, renamed: "Code")
    public typealias Kind = Code

    /// The former name of ``code``.
    @available(*, deprecated, renamed: "code")
    public var kind: Code { code }
}
