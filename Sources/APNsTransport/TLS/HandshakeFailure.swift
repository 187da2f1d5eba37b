import APNsCore
import APNsOpenSSL
import COpenSSL
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Turns a failed TLS handshake into a detail that says what happened and what to fix.
enum HandshakeFailure {
    /// Alerts a server sends when it refuses the client certificate, or the lack of one.
    static let clientCertificateAlerts: [Int32] = [
        SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED, SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE,
        SSL_R_SSLV3_ALERT_BAD_CERTIFICATE, SSL_R_TLSV1_ALERT_UNKNOWN_CA,
        SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED, SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED,
        SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN, SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE,
        SSL_R_TLSV1_ALERT_ACCESS_DENIED, SSL_R_TLSV1_ALERT_DECRYPT_ERROR,
    ]

    /// Whether a handshake that failed with `errors` fails the same way on every attempt:
    /// the server refused the client certificate (or asked for one the transport does not
    /// have), the server's certificate failed verification, or the server offers no TLS
    /// version or application protocol this client accepts (TLS 1.1 or older, no `h2`).
    /// A closed socket or a timeout is not.
    static func isPermanent(_ errors: OpenSSLErrors) -> Bool {
        errors.contains(reason: SSL_R_CERTIFICATE_VERIFY_FAILED)
            || clientCertificateAlerts.contains { $0 != SSL_R_TLSV1_ALERT_DECRYPT_ERROR && errors.contains(reason: $0) }
            // The server's TLS versions, or its lack of HTTP/2: its setup, not a moment's.
            || errors.contains(reason: SSL_R_TLSV1_ALERT_PROTOCOL_VERSION) || errors.contains(reason: SSL_R_UNSUPPORTED_PROTOCOL)
            || errors.contains(reason: SSL_R_NO_PROTOCOLS_AVAILABLE) || errors.contains(reason: SSL_R_TLSV1_ALERT_NO_APPLICATION_PROTOCOL)
            // A handshake message (a certificate chain) larger than OpenSSL accepts: the
            // server sends the same one every time.
            || errors.contains(reason: SSL_R_EXCESSIVE_MESSAGE_SIZE)
    }

    static func describe(
        ssl: OpaquePointer, sslError: Int32, errors: OpenSSLErrors, errno systemError: Int32,
        host: String, where endpoint: String, configuration: TLSConfiguration
    ) -> String {
        let openSSL = errors.text(or: "")
        if errors.contains(reason: SSL_R_CERTIFICATE_VERIFY_FAILED) {
            let verifyResult = Int32(truncatingIfNeeded: SSL_get_verify_result(ssl))
            return verificationFailure(verifyResult, ssl: ssl, host: host, endpoint: endpoint, configuration: configuration)
        }
        if errors.contains(reason: SSL_R_TLSV1_ALERT_PROTOCOL_VERSION)
            || errors.contains(reason: SSL_R_UNSUPPORTED_PROTOCOL)
            || errors.contains(reason: SSL_R_NO_PROTOCOLS_AVAILABLE) {
            return "TLS 1.1 or older refused: \(endpoint) does not offer TLS 1.2 or 1.3; APNs and this client need TLS 1.2 or later (\(openSSL))"
        }
        if errors.contains(reason: SSL_R_TLSV1_ALERT_NO_APPLICATION_PROTOCOL) {
            return "the server did not negotiate HTTP/2 (ALPN h2); APNs requires it (\(endpoint) sent no_application_protocol)"
        }
        if errors.contains(reason: SSL_R_EXCESSIVE_MESSAGE_SIZE) {
            return "\(endpoint) sent a handshake message larger than TLS clients accept (usually a certificate chain of hundreds of kilobytes): "
                + "the server must send a shorter chain (\(openSSL))"
        }
        if errors.contains(reason: SSL_R_WRONG_VERSION_NUMBER) || errors.contains(reason: SSL_R_PACKET_LENGTH_TOO_LONG) {
            return "\(endpoint) does not speak TLS (is it a plain-text port, or a proxy that needs configuring?) (\(openSSL))"
        }
        if clientCertificateAlerts.contains(where: errors.contains(reason:)) {
            if let identity = configuration.clientIdentity {
                let name = identity.subjectCommonName.map { "'\($0)'" } ?? "the client certificate"
                return "\(endpoint) rejected the client certificate \(name) (\(openSSL)): check that it is an APNs certificate for this environment and that it has not been revoked"
            }
            if errors.contains(reason: SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED) {
                return "\(endpoint) requires a client certificate: set TLSConfiguration(clientIdentity:) or use token-based authentication (\(openSSL))"
            }
            return "\(endpoint) refused the handshake (\(openSSL)): it accepts nothing this client offers (TLS 1.2 or 1.3, "
                + "ECDHE with AES-GCM or ChaCha20-Poly1305, ALPN h2), or it requires a client certificate (set TLSConfiguration(clientIdentity:))"
        }
        if sslError == SSL_ERROR_ZERO_RETURN || (sslError == SSL_ERROR_SYSCALL && errors.codes.isEmpty) {
            let reason = sslError == SSL_ERROR_ZERO_RETURN || systemError == 0
                ? "the connection closed" : TCPConnector.errorString(systemError)
            return "\(endpoint) ended the TLS handshake: \(reason)"
                + (configuration.clientIdentity == nil ? "" : " (a server that rejects the client certificate may just close)")
        }
        return "the TLS handshake with \(endpoint) failed: \(openSSL.isEmpty ? "SSL error \(sslError)" : openSSL)"
    }

    private static func verificationFailure(
        _ code: Int32, ssl: OpaquePointer, host: String, endpoint: String, configuration: TLSConfiguration
    ) -> String {
        let reason = X509_verify_cert_error_string(Int(code)).map { String(cString: $0) } ?? "error \(code)"
        let leaf = peerLeaf(ssl)
        switch code {
        case X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH:
            let names = leaf?.names ?? []
            guard !names.isEmpty else {
                let commonName = leaf?.subjectCommonName.map { " (its subject's common name '\($0)' is not a name to check: RFC 9525 §6.3)" } ?? ""
                return "certificate verify failed: hostname mismatch: the certificate of \(host) lists no DNS name or IP address in subjectAltName\(commonName); the server needs a certificate with one"
            }
            let list = names.map { "'\($0)'" }.joined(separator: ", ")
            return "certificate verify failed: hostname mismatch: the certificate of \(host) is for \(list); connect to a name the certificate lists"
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT,
             X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN, X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT,
             X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
            switch configuration.trustRoots.source {
            case .certificates:
                return "certificate verify failed: \(reason): the certificate of \(endpoint) does not chain to the CA certificates in TrustRoots.certificates(_:); pass the CA that issued it"
            default:
                return "certificate verify failed: \(reason): the certificate of \(endpoint) does not chain to the system trust store; for a private server pass its CA with TLSConfiguration(trustRoots: .certificates(pem))"
            }
        case X509_V_ERR_CERT_HAS_EXPIRED:
            if let leaf, let notAfter = leaf.notAfter, notAfter < Date() {
                return "certificate verify failed: the server certificate of \(endpoint) expired on \(ClientIdentity.format(notAfter))"
            }
            return "certificate verify failed: a certificate in the chain of \(endpoint) has expired"
        case X509_V_ERR_CERT_NOT_YET_VALID:
            if let leaf, let notBefore = leaf.notBefore, notBefore > Date() {
                return "certificate verify failed: the server certificate of \(endpoint) is not valid until \(ClientIdentity.format(notBefore)); check the system clock"
            }
            return "certificate verify failed: a certificate in the chain of \(endpoint) is not yet valid; check the system clock"
        default:
            return "certificate verify failed: \(reason) (server \(endpoint))"
        }
    }

    /// The server's own certificate, which OpenSSL keeps in the chain even when
    /// verification failed.
    private static func peerLeaf(_ ssl: OpaquePointer) -> X509Certificate? {
        guard let chain = SSL_get_peer_cert_chain(ssl), capns_sk_X509_num(chain) > 0,
              let leaf = capns_sk_X509_value(chain, 0)
        else { return nil }
        X509_up_ref(leaf)
        return X509Certificate(taking: leaf)
    }
}
