import APNsCore
import APNsOpenSSL
import COpenSSL
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The outcome of one non-blocking read or write on a ``TLSStream``.
enum TLSIOResult: Sendable, Equatable {
    /// This many bytes were read or written (never 0 for a read: see `closed`).
    case done(Int)
    /// Nothing could be done now; poll the descriptor for readability, then retry.
    case wantRead
    /// Nothing could be done now; poll the descriptor for writability, then retry.
    case wantWrite
    /// The peer closed the connection (TLS close_notify or TCP EOF).
    case closed
}

/// Where a connection goes: a host name (or IP literal) and a port.
struct TLSEndpoint: Sendable, Hashable {
    var host: String
    var port: Int
}

/// A connected TCP socket with a completed TLS handshake that negotiated ALPN `h2`,
/// in non-blocking mode: the owner of one connection's ``SSLSession`` and its socket.
///
/// ``connect(to:configuration:timeout:addresses:)`` blocks the calling thread (DNS, TCP, the proxy
/// tunnel and the handshake). After it, ``read(into:)`` and ``write(_:)`` never block:
/// they return `.wantRead` / `.wantWrite`, and the caller polls ``fileDescriptor``.
///
/// Calls from different threads are serialised by a lock; an I/O loop on one thread is
/// still the intended use (the lock is then never contended).
///
/// OpenSSL's rule for retrying a write: after `.wantWrite`, call ``write(_:)`` again with
/// at least the same bytes (the buffer may move: `SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER`).
/// A write may take part of a large buffer (`SSL_MODE_ENABLE_PARTIAL_WRITE`); pass the rest
/// next time. A read can return `.wantWrite` and a write `.wantRead` (TLS may need to send
/// or receive a record first); poll for what was asked and call the same function again.
///
/// Read until `.wantRead` before polling for readability: OpenSSL may hold decrypted bytes
/// (a TLS record holds up to 16 KB) that poll(2) on the socket cannot see; see
/// ``hasBufferedBytes``.
///
/// The first ``connect(to:configuration:timeout:addresses:)`` sets SIGPIPE to "ignore" if it still
/// has the default action (OpenSSL writes to the socket with `write(2)`, which would raise
/// it when the peer has gone); a handler the application installed is left alone.
// @unchecked Sendable: `state` (the session and the descriptor) is read and written only
// inside `lock`; the session (not Sendable) is released once, under the lock, in close().
final class TLSStream: @unchecked Sendable {
    private struct State {
        var session: SSLSession?
        var fd: Int32
        /// A fatal TLS or socket error happened: no close_notify may be sent.
        var broken = false
        /// ``read(into:)`` has returned application data (for HTTP/2, the server's
        /// SETTINGS at least): until then, a TLS failure means the server processed nothing.
        var receivedData = false
    }

    private var state: State
    private let lock = ThreadLock()
    /// The negotiated protocol version, for example `TLSv1.3`.
    let protocolVersion: String
    /// For error details: the server's name and `host:port`, and the configuration.
    private let host: String
    private let endpointDescription: String
    private let configuration: TLSConfiguration

    private init(session: SSLSession, fd: Int32, protocolVersion: String, host: String, endpointDescription: String, configuration: TLSConfiguration) {
        state = State(session: session, fd: fd)
        self.protocolVersion = protocolVersion
        self.host = host
        self.endpointDescription = endpointDescription
        self.configuration = configuration
    }

    deinit {
        close()
    }

    // MARK: Connecting

    /// Connects (through `configuration.proxy` when set), handshakes and checks ALPN `h2`.
    /// Blocks the calling thread for at most `timeout`, which covers name resolution
    /// (run on a thread of its own, since `getaddrinfo` has no timeout), TCP connect, the
    /// proxy tunnel and the handshake.
    /// - Throws: ``APNsCore/APNsTransportError`` `.connectionFailed` or `.tlsFailure`, with
    ///   `mayHaveReachedAPNs == false` and a detail that says what to fix.
    static func connect(
        to endpoint: TLSEndpoint,
        configuration: TLSConfiguration,
        timeout: Duration,
        addresses: AddressChoice = AddressChoice()
    ) throws(APNsTransportError) -> TLSStream {
        capns_ignore_sigpipe_if_default()
        if configuration.trustRoots.verifiesNothing, TrustRoots.isApplePushHost(endpoint.host) {
            throw .tlsFailure(
                "certificate verification is off (TrustRoots.insecureNoVerification_forTestingOnly), "
                    + "which is refused for Apple's host \(endpoint.host): use .system trust roots"
            ).permanent
        }
        let deadline = ContinuousClock.now + timeout
        let context = try SSLContext.client(configuration: configuration)

        if let proxy = configuration.proxy {
            // Before any connection to the proxy.
            try proxy.checkCredentials()
            let fd: Int32
            do {
                fd = try TCPConnector.connect(host: proxy.host, port: proxy.port, deadline: deadline)
            } catch {
                // The proxy, not APNs, could not be reached: say so (the address alone
                // reads as APNs' own).
                throw APNsTransportError(
                    code: error.code, mayHaveReachedAPNs: false,
                    detail: "cannot reach the proxy \(proxy.host):\(proxy.port): " + (error.detail ?? error.code.description),
                    isPermanent: error.isPermanent)
            }
            do {
                try ProxyTunnel.open(fd, to: endpoint, through: proxy, deadline: deadline)
            } catch {
                _ = Glibc_close(fd)
                throw error
            }
            var addressFailed = false
            do {
                return try handshake(context: context, fd: fd, endpoint: endpoint, configuration: configuration,
                                     deadline: deadline, timeout: timeout, addressFailed: &addressFailed)
            } catch {
                // The handshake ran through the tunnel: a connection the proxy closed or
                // held reads as the server's, so the detail says which path it took.
                throw APNsTransportError(
                    code: error.code, mayHaveReachedAPNs: error.mayHaveReachedAPNs,
                    detail: (error.detail ?? error.code.description) + " (through the proxy \(proxy.host):\(proxy.port))",
                    responseStatus: error.responseStatus, isPermanent: error.isPermanent)
            }
        }
        // An address that accepts TCP but never finishes the TLS handshake (a load
        // balancer node with no working backend) would hold the attempt for the whole
        // timeout, as Happy Eyeballs ends at the TCP connect: while other addresses are
        // left, a handshake gets a slice of the time, and one that runs out of it, or that
        // the server closes or resets without a TLS alert, moves the attempt on to the
        // next address (and the address to the back of later attempts' order, see
        // ``AddressHealth``).
        var excluded: Set<String> = []
        while true {
            let (fd, address, others) = try TCPConnector.connect(
                host: endpoint.host, port: endpoint.port, deadline: deadline, choice: addresses, excluding: excluded)
            let slice = max(Duration.seconds(2), timeout / 4)
            let handshakeDeadline = others > 0 ? min(deadline, .now + slice) : deadline
            var addressFailed = false
            do {
                return try handshake(context: context, fd: fd, endpoint: endpoint, configuration: configuration,
                                     deadline: handshakeDeadline, timeout: others > 0 ? min(slice, timeout) : timeout,
                                     lastAddress: others == 0, addressFailed: &addressFailed)
            } catch {
                guard addressFailed else { throw error }
                addresses.health?.noteFailedHandshake(address)
                guard others > 0, ContinuousClock.now < deadline else { throw error }
                excluded.insert(address)
            }
        }
    }

    /// A session from `context` on `fd`, and its handshake; on failure the socket is closed.
    private static func handshake(
        context: SSLContext, fd: Int32, endpoint: TLSEndpoint, configuration: TLSConfiguration,
        deadline: ContinuousClock.Instant, timeout: Duration, lastAddress: Bool = true, addressFailed: inout Bool
    ) throws(APNsTransportError) -> TLSStream {
        let session: SSLSession
        do {
            session = try context.makeSession()
        } catch {
            _ = Glibc_close(fd)
            throw .tlsFailure(error.description)
        }
        // From here `handshake` owns both; on failure it closes the socket (and the
        // session is released with it).
        return try handshake(session: session, fd: fd, endpoint: endpoint, configuration: configuration,
                             deadline: deadline, timeout: timeout, lastAddress: lastAddress, addressFailed: &addressFailed)
    }

    private static func handshake(
        session: SSLSession, fd: Int32, endpoint: TLSEndpoint, configuration: TLSConfiguration,
        deadline: ContinuousClock.Instant, timeout: Duration, lastAddress: Bool, addressFailed: inout Bool
    ) throws(APNsTransportError) -> TLSStream {
        var ranOut = false
        defer { addressFailed = ranOut }
        let (version, host, endpointText) = try session.withUnsafeHandle { (ssl: OpaquePointer) throws(APNsTransportError) in
            try handshake(
                ssl: ssl, fd: fd, endpoint: endpoint, configuration: configuration, deadline: deadline, timeout: timeout,
                lastAddress: lastAddress, addressFailed: &ranOut)
        }
        return TLSStream(session: session, fd: fd, protocolVersion: version, host: host, endpointDescription: endpointText, configuration: configuration)
    }

    /// The handshake on `ssl`; returns the protocol version, the host and `host:port`.
    /// `addressFailed` is set when it failed in a way another address of the host may not:
    /// `deadline` passed, or the server closed or reset the connection without a TLS alert
    /// (a load balancer node with no working backend); not for a certificate, an alert or
    /// a protocol the server refused, which every address would meet again. A server that
    /// closes at the ClientHello is probed for TLS 1.0/1.1 only at the `lastAddress` (at
    /// another, the attempt moves on).
    private static func handshake(
        ssl: OpaquePointer, fd: Int32, endpoint: TLSEndpoint, configuration: TLSConfiguration,
        deadline: ContinuousClock.Instant, timeout: Duration, lastAddress: Bool, addressFailed: inout Bool
    ) throws(APNsTransportError) -> (version: String, host: String, endpoint: String) {
        var ok = false
        defer {
            if !ok {
                _ = Glibc_close(fd)
                ERR_clear_error()
            }
        }
        // A fully qualified name's trailing dot ("localhost.") is not part of the name SNI
        // carries (RFC 6066 §3) or the certificate lists: drop it, as curl does.
        var host = TCPConnector.unbracketed(endpoint.host)
        if host.count > 1, host.hasSuffix(".") { host.removeLast() }
        let endpointText = ProxyTunnel.authority(endpoint)
        guard SSL_set_fd(ssl, fd) == 1 else {
            throw .tlsFailure("SSL_set_fd failed: \(OpenSSLErrors.drain().text(or: "?"))")
        }
        if TCPConnector.isIPLiteral(host) {
            // No SNI for IP literals (RFC 6066 §3); verify the IP address SAN instead.
            if configuration.trustRoots.source != .none, X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) != 1 {
                throw .tlsFailure("cannot verify the IP address \(host): \(OpenSSLErrors.drain().text(or: "X509_VERIFY_PARAM_set1_ip_asc failed"))")
            }
        } else {
            guard capns_SSL_set_tlsext_host_name(ssl, host) == 1 else {
                throw .tlsFailure("cannot send the server name \(host) (SNI): \(OpenSSLErrors.drain().text(or: "SSL_set_tlsext_host_name failed"))")
            }
            // The name is checked against the certificate's DNS names only, never its
            // subject's common name (RFC 9525 §6.3; Apple's platforms refuse a certificate
            // without a subjectAltName too).
            SSL_set_hostflags(ssl, UInt32(X509_CHECK_FLAG_NEVER_CHECK_SUBJECT))
            if configuration.trustRoots.source != .none, SSL_set1_host(ssl, host) != 1 {
                throw .tlsFailure("cannot verify the host name \(host): \(OpenSSLErrors.drain().text(or: "SSL_set1_host failed"))")
            }
        }
        SSL_set_connect_state(ssl)

        while true {
            ERR_clear_error()
            let result = SSL_connect(ssl)
            if result == 1 { break }
            let error = SSL_get_error(ssl, result)
            let ready: Bool
            switch error {
            case SSL_ERROR_WANT_READ:
                ready = TCPConnector.wait(fd, for: Int16(POLLIN), until: deadline)
            case SSL_ERROR_WANT_WRITE:
                ready = TCPConnector.wait(fd, for: Int16(POLLOUT), until: deadline)
            default:
                let errors = OpenSSLErrors.drain()
                let systemError = errno
                if error == SSL_ERROR_ZERO_RETURN || (error == SSL_ERROR_SYSCALL && errors.codes.isEmpty),
                    lastAddress, configuration.proxy == nil, BIO_number_read(SSL_get_rbio(ssl)) == 0,
                    let legacy = LegacyVersionProbe.version(of: endpoint, deadline: min(deadline, .now + .seconds(3)))
                {
                    // Closed without answering the ClientHello, yet it speaks TLS 1.0/1.1.
                    throw APNsTransportError.tlsFailure(
                        "\(endpointText) offers only \(legacy): it closed the connection when offered TLS 1.2 and 1.3, "
                            + "and completed a \(legacy) handshake; APNs and this client need TLS 1.2 or later"
                    ).permanent
                }
                let failure = APNsTransportError.tlsFailure(HandshakeFailure.describe(
                    ssl: ssl, sslError: error, errors: errors, errno: systemError,
                    host: host, where: endpointText, configuration: configuration))
                // Closed or reset with no TLS alert: this node, not the service, failed.
                if error == SSL_ERROR_ZERO_RETURN || (error == SSL_ERROR_SYSCALL && errors.codes.isEmpty) {
                    addressFailed = true
                }
                throw HandshakeFailure.isPermanent(errors) ? failure.permanent : failure
            }
            guard ready else {
                addressFailed = true
                // A connection problem, not a TLS one: over a slow path (a cold connection
                // costs three round trips) or to a server that does not answer TLS, the
                // handshake just did not finish in time. tlsFailure would read as a
                // certificate or trust problem on a dashboard.
                throw .connectionFailed(
                    "the TLS handshake with \(endpointText) did not finish within the connect timeout (\(timeout)): "
                        + "the server did not answer TLS in time; over a slow path, a longer connectTimeout helps")
            }
        }

        var selected: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &selected, &length)
        let protocolName = selected.map { String(decoding: UnsafeBufferPointer(start: $0, count: Int(length)), as: UTF8.self) }
        guard protocolName == "h2" else {
            // The server's setup: every attempt meets it again.
            throw APNsTransportError.tlsFailure("the server did not negotiate HTTP/2 (ALPN h2); APNs requires it"
                + (protocolName.map { " (\(endpointText) chose '\($0)')" } ?? " (\(endpointText) chose no protocol)")).permanent
        }
        let version = SSL_get_version(ssl).map { String(cString: $0) } ?? "?"
        ok = true
        return (version, host, endpointText)
    }

    // MARK: I/O

    /// The socket, for poll(2); -1 after ``close()``.
    var fileDescriptor: Int32 {
        lock.withLock { state.fd }
    }

    /// Whether OpenSSL holds received bytes not yet returned by ``read(into:)``
    /// (`SSL_has_pending`): if so, read again before polling the descriptor.
    var hasBufferedBytes: Bool {
        lock.withLock {
            guard let session = state.session else { return false }
            return session.withUnsafeHandle { SSL_has_pending($0) == 1 }
        }
    }

    /// Reads decrypted bytes into `buffer` (an empty buffer returns `.done(0)` and reads nothing).
    /// - Throws: ``APNsCore/APNsTransportError`` `.tlsFailure` (`mayHaveReachedAPNs == false`)
    ///   when the server refused the client certificate, or when a TLS error (an alert)
    ///   ended the session before the server sent any application data; otherwise
    ///   `.connectionClosed` on a TLS or socket error.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(APNsTransportError) -> TLSIOResult {
        lock.lock()
        defer { lock.unlock() }
        guard let session = state.session else { return .closed }
        guard let base = buffer.baseAddress, buffer.count > 0 else { return .done(0) }
        return try session.withUnsafeHandle { (ssl: OpaquePointer) throws(APNsTransportError) -> TLSIOResult in
            ERR_clear_error()
            let n = SSL_read(ssl, base, Int32(clamping: buffer.count))
            if n > 0 {
                state.receivedData = true
                return .done(Int(n))
            }
            return try outcome(ssl: ssl, result: n, operation: "read")
        }
    }

    /// Encrypts and writes bytes from `buffer`; with `.done(n)`, n may be less than the count.
    /// - Throws: ``APNsCore/APNsTransportError`` `.tlsFailure` or `.connectionClosed`, as
    ///   ``read(into:)``; a write that fails because the server reset the connection after
    ///   refusing the client certificate reports the refusal (see `outcome`).
    func write(_ buffer: UnsafeRawBufferPointer) throws(APNsTransportError) -> TLSIOResult {
        lock.lock()
        defer { lock.unlock() }
        guard let session = state.session else { return .closed }
        guard let base = buffer.baseAddress, buffer.count > 0 else { return .done(0) }
        return try session.withUnsafeHandle { (ssl: OpaquePointer) throws(APNsTransportError) -> TLSIOResult in
            ERR_clear_error()
            let n = SSL_write(ssl, base, Int32(clamping: buffer.count))
            if n > 0 { return .done(Int(n)) }
            return try outcome(ssl: ssl, result: n, operation: "write")
        }
    }

    /// Maps a failed `SSL_read`/`SSL_write` to a result or an error (`SSL_get_error`).
    /// Called with `lock` held.
    private func outcome(ssl: OpaquePointer, result: Int32, operation: String) throws(APNsTransportError) -> TLSIOResult {
        let systemError = errno
        let error = SSL_get_error(ssl, result)
        switch error {
        case SSL_ERROR_WANT_READ:
            return .wantRead
        case SSL_ERROR_WANT_WRITE:
            return .wantWrite
        case SSL_ERROR_ZERO_RETURN:
            return .closed
        case SSL_ERROR_SYSCALL:
            state.broken = true
            let errors = OpenSSLErrors.drain()
            if !state.receivedData, let refusal = pendingRefusal(ssl: ssl) {
                // The server refused the session and closed; our write (or read) hit its
                // TCP reset before we had read the alert it sent first.
                throw refusal
            }
            if errors.codes.isEmpty && (result == 0 || systemError == 0) { return .closed }
            let reason = errors.messages.isEmpty ? TCPConnector.errorString(systemError) : errors.text(or: "")
            throw .connectionClosed("TLS \(operation) failed: \(reason)")
        default:
            state.broken = true
            let errors = OpenSSLErrors.drain()
            if let refusal = tlsFailure(ssl: ssl, sslError: error, errors: errors, errno: systemError) {
                throw refusal
            }
            throw .connectionClosed("TLS \(operation) failed: \(errors.text(or: "SSL error \(error)"))")
        }
    }

    /// The TLS error for a failure that means the server processed nothing, or `nil`: a
    /// client certificate alert on a TLS 1.3 session, at any time. The client's handshake
    /// ends before the server has checked the client certificate, so its refusal arrives
    /// on the first read, after requests may have been written; a server that refuses the
    /// certificate never reads them.
    ///
    /// Any other TLS error once the handshake is done (another alert, a record that cannot
    /// be decrypted) is not such a proof, even before the server sent any data: a server
    /// may process a request before its SETTINGS arrive (RFC 9113 §3.4 lets the client
    /// send before it has the server's preface), and a record cut or forged on the way
    /// can be the one that carried them. Requests written on such a session may have
    /// reached APNs (an outside audit's server read a request, sent nothing, then a
    /// corrupt record: it was reported "processed nothing" and sent five times).
    ///
    /// Called with `lock` held.
    private func tlsFailure(ssl: OpaquePointer, sslError: Int32, errors: OpenSSLErrors, errno systemError: Int32) -> APNsTransportError? {
        // Only TLS 1.3 ends the client's handshake before the server checked the
        // certificate; with TLS 1.2 such an alert after the handshake is something else (a
        // refused renegotiation, say), and whether the server processed requests is
        // decided below.
        if SSL_version(ssl) == TLS1_3_VERSION, HandshakeFailure.clientCertificateAlerts.contains(where: errors.contains(reason:)) {
            let failure = APNsTransportError.tlsFailure(HandshakeFailure.describe(
                ssl: ssl, sslError: sslError, errors: errors, errno: systemError,
                host: host, where: endpointDescription, configuration: configuration))
            return HandshakeFailure.isPermanent(errors) ? failure.permanent : failure
        }
        return nil
    }

    /// After a socket error (a TCP reset, usually on a write) on a session that has received
    /// nothing: peeks at what the server sent before it closed, without consuming
    /// application data. A server that refuses the client certificate sends an alert and
    /// closes; a write that then meets the reset must report the alert, not the reset.
    /// Called with `lock` held.
    private func pendingRefusal(ssl: OpaquePointer) -> APNsTransportError? {
        var byte: UInt8 = 0
        ERR_clear_error()
        let n = SSL_peek(ssl, &byte, 1)
        if n > 0 {
            state.receivedData = true
            return nil
        }
        let error = SSL_get_error(ssl, n)
        guard error == SSL_ERROR_SSL else {
            ERR_clear_error()
            return nil
        }
        let errors = OpenSSLErrors.drain()
        return tlsFailure(ssl: ssl, sslError: error, errors: errors, errno: 0)
    }

    /// Sends TLS close_notify (best effort) and closes the socket. Idempotent.
    func close() {
        lock.withLock {
            if let session = state.session {
                let broken = state.broken
                session.withUnsafeHandle { ssl in
                    if !broken, SSL_is_init_finished(ssl) == 1 {
                        _ = SSL_shutdown(ssl)
                    }
                }
                ERR_clear_error()
                // The last reference: SSL_free runs here, under the lock.
                state.session = nil
            }
            if state.fd >= 0 {
                _ = Glibc_close(state.fd)
                state.fd = -1
            }
        }
    }
}

/// `close(2)`, named apart from ``TLSStream/close()``.
private func Glibc_close(_ fd: Int32) -> Int32 {
    #if canImport(Glibc)
    Glibc.close(fd)
    #else
    Darwin.close(fd)
    #endif
}
