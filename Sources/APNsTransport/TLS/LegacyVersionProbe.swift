import APNsCore
import APNsOpenSSL
import COpenSSL
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Names the protocol of a server that closed the connection on this client's
/// ClientHello without a word: a server that speaks only TLS 1.0 or 1.1 does just that
/// when offered TLS 1.2 and 1.3 (it has no version in common and, often, sends no alert).
///
/// The probe opens one more TCP connection and offers TLS 1.0 and 1.1 only, verifying
/// nothing and sending nothing after the handshake: it runs only after a handshake has
/// already failed, to turn "the connection closed" into "the server offers only TLS 1.0".
/// Nothing is ever sent over the legacy session.
enum LegacyVersionProbe {
    /// The legacy protocol `endpoint` completes a handshake with (`TLSv1`, `TLSv1.1`), or
    /// `nil` when it completes none before `deadline`.
    static func version(of endpoint: TLSEndpoint, deadline: ContinuousClock.Instant) -> String? {
        guard let context = try? SSLContext(.client) else { return nil }
        let configured = context.withUnsafeHandle { context -> Bool in
            // OpenSSL 3 refuses TLS 1.0/1.1 above security level 0.
            SSL_CTX_set_security_level(context, 0)
            guard capns_SSL_CTX_set_min_proto_version(context, capns_TLS1_VERSION()) == 1,
                capns_SSL_CTX_set_max_proto_version(context, capns_TLS1_1_VERSION()) == 1,
                SSL_CTX_set_cipher_list(context, "DEFAULT:@SECLEVEL=0") == 1
            else { return false }
            SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
            return true
        }
        guard configured else {
            ERR_clear_error()
            return nil
        }
        guard let fd = try? TCPConnector.connect(host: endpoint.host, port: endpoint.port, deadline: deadline) else {
            return nil
        }
        defer { _ = close(fd) }
        guard let session = try? context.makeSession() else { return nil }
        defer { ERR_clear_error() }
        return session.withUnsafeHandle { ssl -> String? in
            guard SSL_set_fd(ssl, fd) == 1 else { return nil }
            SSL_set_connect_state(ssl)
            while true {
                ERR_clear_error()
                let result = SSL_connect(ssl)
                if result == 1 { break }
                let ready: Bool
                switch SSL_get_error(ssl, result) {
                case SSL_ERROR_WANT_READ: ready = TCPConnector.wait(fd, for: Int16(POLLIN), until: deadline)
                case SSL_ERROR_WANT_WRITE: ready = TCPConnector.wait(fd, for: Int16(POLLOUT), until: deadline)
                default: return nil
                }
                if !ready { return nil }
            }
            return SSL_get_version(ssl).map { String(cString: $0) }
        }
    }
}
