import APNsTransport
import Foundation

/// The TLS side of a connection: which CA to trust and which client certificate to present.
enum TLSSetup {
    /// A client certificate as the flags name it.
    struct CertificateFiles {
        /// A `.p12` (PKCS#12) file, or a PEM file with the certificate (and perhaps its key).
        var path: String
        /// A PEM file with the private key, when it is not in `path`.
        var keyPath: String?
        /// The `.p12` password, or the password of an encrypted PEM key.
        var password: String?
    }

    /// The TLS configuration for `trustedCAPEM` (the system's trust store when `nil`) and
    /// `certificate`.
    static func configuration(trustedCAPEM: String?, certificate: CertificateFiles?) throws(CLIError) -> TLSConfiguration {
        var tls = TLSConfiguration()
        if let trustedCAPEM { tls.trustRoots = .certificates(trustedCAPEM) }
        if let certificate { tls.clientIdentity = try identity(certificate) }
        return tls
    }

    /// Loads a `.p12` or PEM client certificate and its key.
    /// - Throws: ``CLIError`` naming the file and what is wrong (wrong password, no key,
    ///   a key that does not match, an expired certificate). The password is never echoed.
    static func identity(_ certificate: CertificateFiles) throws(CLIError) -> ClientIdentity {
        guard let data = FileManager.default.contents(atPath: certificate.path) else {
            throw CLIError("cannot read the certificate \(certificate.path): check the path and its permissions")
        }
        let text = String(decoding: data.prefix(65_536), as: UTF8.self)
        let isPEM = text.contains("-----BEGIN")
        if isPEM {
            // Say which half is missing in the tool's words, not the API's.
            if !text.contains("-----BEGIN CERTIFICATE-----") {
                throw CLIError(
                    "\(certificate.path) holds no certificate"
                        + (text.contains("PRIVATE KEY-----")
                            ? " (only a private key: a .p8 signing key goes with --key-file, --key-id and --team-id)" : "")
                        + ": give the certificate APNs issued, as a .p12 or PEM, with --cert-file")
            }
            if certificate.keyPath == nil, !text.contains("PRIVATE KEY-----") {
                throw CLIError(
                    "\(certificate.path) holds the certificate but not its private key: give the key with --cert-key-file, "
                        + "or use the .p12 exported from Keychain Access (certificate and key together)")
            }
        }
        if !isPEM {
            let opened: Result<ClientIdentity, any Error> = Result { try ClientIdentity(pkcs12Data: data, password: certificate.password ?? "") }
            switch opened {
            case .success(let identity):
                return identity
            case .failure(let error) where certificate.password == nil:
                throw CLIError(
                    "cannot open \(certificate.path) without a password (\(error)): give it with --cert-password or APNS_CERTIFICATE_PASSWORD")
            case .failure(let error):
                throw CLIError("cannot use the certificate \(certificate.path): \(error)")
            }
        }
        do {
            var keyPEM = String(decoding: data, as: UTF8.self)
            if let keyPath = certificate.keyPath {
                guard let keyData = FileManager.default.contents(atPath: keyPath) else {
                    throw CLIError("cannot read the certificate key \(keyPath): check the path and its permissions")
                }
                keyPEM = String(decoding: keyData, as: UTF8.self)
            }
            return try ClientIdentity(
                certificatePEM: String(decoding: data, as: UTF8.self), privateKeyPEM: keyPEM, password: certificate.password)
        } catch let error as CLIError {
            throw error
        } catch {
            throw CLIError("cannot use the certificate \(certificate.path): \(error)")
        }
    }

    /// Warns on standard error when `identity` does not list `topic` among its topics, or
    /// expires within 30 days.
    static func warnAbout(_ identity: ClientIdentity, topic: String, path: String) {
        if !identity.topics.isEmpty && !identity.topics.contains(topic) {
            Terminal.standardError(
                "apns: warning: \(path) covers the topics \(identity.topics.joined(separator: ", ")), not \(topic): APNs will answer TopicDisallowed")
        }
        let days = identity.notAfter.timeIntervalSinceNow / 86_400
        if days < 30 {
            Terminal.standardError(
                "apns: warning: \(path) expires on \(ISO8601DateFormatter().string(from: identity.notAfter)): renew it in your developer account")
        }
    }
}
