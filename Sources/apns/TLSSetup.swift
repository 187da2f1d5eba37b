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
        let isPEM = String(decoding: data.prefix(8192), as: UTF8.self).contains("-----BEGIN")
        do {
            if !isPEM {
                return try ClientIdentity(pkcs12Data: data, password: certificate.password ?? "")
            }
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
