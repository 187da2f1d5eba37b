/// Why a ``ClientIdentity`` could not be loaded.
///
/// Compare ``code`` to tell the cases apart; ``description`` says what was wrong in words a
/// person can act on. Neither ever contains key material or a password.
public struct ClientIdentityError: Error, Sendable, CustomStringConvertible {
    /// The category of failure: an open set, so new kinds can be added without breaking
    /// a `switch`; compare with `==`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case fileNotReadable
            case malformed
            case passwordRequired
            case wrongPassword
            case missingCertificate
            case missingPrivateKey
            case keyMismatch
            case expired
            case notYetValid
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The file does not exist or cannot be read.
        public static let fileNotReadable = Code(.fileNotReadable)
        /// The input is not a PKCS#12 archive, a PEM certificate or a PEM private key.
        public static let malformed = Code(.malformed)
        /// The private key is encrypted and no password was given.
        public static let passwordRequired = Code(.passwordRequired)
        /// The password does not open the PKCS#12 archive or the encrypted PEM key.
        public static let wrongPassword = Code(.wrongPassword)
        /// The input holds no certificate.
        public static let missingCertificate = Code(.missingCertificate)
        /// The input holds no private key.
        public static let missingPrivateKey = Code(.missingPrivateKey)
        /// The private key does not belong to the certificate (`X509_check_private_key`).
        public static let keyMismatch = Code(.keyMismatch)
        /// The certificate's notAfter is in the past (RFC 5280 §4.1.2.5).
        public static let expired = Code(.expired)
        /// The certificate's notBefore is in the future (RFC 5280 §4.1.2.5).
        public static let notYetValid = Code(.notYetValid)

        /// A short, stable label (`"wrong_password"`), safe for logs and metric labels.
        public var description: String { base.rawValue }
    }

    /// The category of failure.
    public let code: Code
    /// What was wrong and what to do, for people.
    public let description: String

    init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }
}

extension ClientIdentityError {
    /// The former name of ``Code``.
    @available(*, deprecated, renamed: "Code")
    public typealias Kind = Code

    /// The former name of ``code``.
    @available(*, deprecated, renamed: "code")
    public var kind: Code { code }
}
