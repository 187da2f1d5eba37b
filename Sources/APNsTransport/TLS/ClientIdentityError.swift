/// Why a ``ClientIdentity`` could not be loaded.
///
/// Compare ``kind`` to tell the cases apart; ``description`` says what was wrong in words a
/// person can act on. Neither ever contains key material or a password.
public struct ClientIdentityError: Error, Sendable, CustomStringConvertible {
    /// The category of failure: an open set, so new kinds can be added without breaking
    /// a `switch`; compare with `==`.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case fileNotReadable = "file_not_readable"
            case malformed = "malformed"
            case passwordRequired = "password_required"
            case wrongPassword = "wrong_password"
            case missingCertificate = "missing_certificate"
            case missingPrivateKey = "missing_private_key"
            case keyMismatch = "key_mismatch"
            case expired = "expired"
            case notYetValid = "not_yet_valid"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The file does not exist or cannot be read.
        public static let fileNotReadable = Kind(.fileNotReadable)
        /// The input is not a PKCS#12 archive, a PEM certificate or a PEM private key.
        public static let malformed = Kind(.malformed)
        /// The private key is encrypted and no password was given.
        public static let passwordRequired = Kind(.passwordRequired)
        /// The password does not open the PKCS#12 archive or the encrypted PEM key.
        public static let wrongPassword = Kind(.wrongPassword)
        /// The input holds no certificate.
        public static let missingCertificate = Kind(.missingCertificate)
        /// The input holds no private key.
        public static let missingPrivateKey = Kind(.missingPrivateKey)
        /// The private key does not belong to the certificate (`X509_check_private_key`).
        public static let keyMismatch = Kind(.keyMismatch)
        /// The certificate's notAfter is in the past (RFC 5280 §4.1.2.5).
        public static let expired = Kind(.expired)
        /// The certificate's notBefore is in the future (RFC 5280 §4.1.2.5).
        public static let notYetValid = Kind(.notYetValid)

        /// A short, stable label (`"wrong_password"`), safe for logs and metric labels.
        public var description: String { base.rawValue }
    }

    /// The category of failure.
    public let kind: Kind
    /// What was wrong and what to do, for people.
    public let description: String

    init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }
}
