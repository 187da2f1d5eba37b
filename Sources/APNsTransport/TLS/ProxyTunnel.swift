import APNsCore
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

/// Opens a tunnel through a proxy on a socket already connected to it, as its
/// ``ProxyConfiguration/kind`` says:
///
/// - HTTP `CONNECT` (RFC 9110 §9.3.6): sends `CONNECT host:port HTTP/1.1` with `Host` and,
///   when configured, `Proxy-Authorization: Basic` (RFC 7617), then reads the response
///   head and requires 2xx.
/// - SOCKS5 (RFC 1928): the greeting, username/password authentication (RFC 1929) when
///   the proxy chooses it, then CONNECT with the destination's host name; see ``SOCKS5``.
///
/// It reads exactly what the proxy's answers hold, so the first byte after them is the
/// first byte of the tunnel (the TLS handshake with APNs).
enum ProxyTunnel {
    /// The largest response head accepted from an HTTP proxy.
    static let maximumResponseHead = 16 * 1024

    /// Opens the tunnel to `endpoint` on `fd` (non-blocking) before `deadline`.
    /// - Throws: ``APNsCore/APNsTransportError`` `.connectionFailed` saying what the proxy answered.
    static func open(
        _ fd: Int32, to endpoint: TLSEndpoint, through proxy: ProxyConfiguration, deadline: ContinuousClock.Instant
    ) throws(APNsTransportError) {
        if proxy.kind == .socks5 {
            try openSOCKS5(fd, to: endpoint, through: proxy, deadline: deadline)
            return
        }
        let proxyName = "the proxy \(proxy.host):\(proxy.port)"
        let request = try request(to: endpoint, proxy: proxy)
        var bytes = Array(request.utf8)
        defer { wipe(&bytes) }
        try sendAll(fd, bytes, deadline: deadline, proxyName: proxyName, what: "the CONNECT request")

        // Read the response head one byte at a time, so that not a byte of the tunnel
        // after it is consumed (the head is short; this costs a few hundred syscalls once).
        // The head ends with an empty line; a bare LF ends a line too (RFC 9112 §2.2 lets
        // a recipient take one, and some proxies send them). Interim (1xx) responses before
        // the final one are read and passed over (RFC 9110 §15.2: a client must be able to
        // parse them even when it does not expect one).
        var headBytes = 0
        var status = 0
        var shown = ""
        repeat {
            var head: [UInt8] = []
            while !Self.endsHead(head) {
                guard headBytes < maximumResponseHead else {
                    throw .connectionFailed("\(proxyName) sent a response head over \(maximumResponseHead) bytes")
                }
                let byte = try receive(fd, count: 1, deadline: deadline, proxyName: proxyName, what: "CONNECT \(authority(endpoint))")
                guard byte.count == 1 else {
                    throw .connectionFailed("\(proxyName) closed the connection before answering CONNECT \(authority(endpoint))")
                }
                head += byte
                headBytes += 1
            }
            let statusLine = Self.statusLine(of: head)
            let parts = statusLine.split(separator: " ", maxSplits: 2)
            // What the proxy said, for the error: its first 80 characters, escaped.
            shown = PrintableText.escaped(String(statusLine.prefix(80)))
            guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let code = Int(parts[1]), (100...999).contains(code) else {
                // Not an HTTP proxy (another service on that port, a TLS one): the same
                // answer on every attempt, as a SOCKS5 proxy's reply that is not SOCKS5.
                throw APNsTransportError.connectionFailed(
                    "\(proxyName) answered CONNECT with something that is not HTTP/1.x: '\(shown)'").permanent
            }
            status = code
        } while (100..<200).contains(status) && status != 101
        switch status {
        case 200..<300:
            return
        // 407 is the status for this (RFC 9110 §15.5.8); some proxies (tinyproxy) send 401.
        // Refused credentials, or a destination the proxy forbids (403), are refused again
        // on every attempt: permanent, so the client does not retry them.
        case 401 where proxy.username == nil, 407 where proxy.username == nil:
            throw APNsTransportError.connectionFailed(
                "\(proxyName) requires authentication (\(shown)): set ProxyConfiguration(username:password:)").permanent
        case 401, 407:
            throw APNsTransportError.connectionFailed(
                "\(proxyName) refused the credentials of user '\(proxy.username ?? "")' (\(shown))").permanent
        case 403:
            throw APNsTransportError.connectionFailed("\(proxyName) refused CONNECT \(authority(endpoint)): \(shown)").permanent
        default:
            throw .connectionFailed("\(proxyName) refused CONNECT \(authority(endpoint)): \(shown)")
        }
    }

    /// The first line of a response head, without its CRLF or LF. Split on the bytes: in a
    /// Swift `String`, CR LF is one `Character`, which a split on `"\n"` does not see.
    static func statusLine(of head: [UInt8]) -> String {
        var line = head.prefix { $0 != UInt8(ascii: "\n") }
        if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
        return String(decoding: line, as: UTF8.self)
    }

    /// Whether `head` ends with an empty line: CRLF CRLF, or LF LF (and the mixes).
    static func endsHead(_ head: [UInt8]) -> Bool {
        guard head.last == UInt8(ascii: "\n"), head.count >= 2 else { return false }
        var index = head.count - 2
        if head[index] == UInt8(ascii: "\r") {
            guard index >= 1 else { return false }
            index -= 1
        }
        return head[index] == UInt8(ascii: "\n")
    }

    /// The SOCKS5 exchange (see ``SOCKS5``) on `fd`.
    private static func openSOCKS5(
        _ fd: Int32, to endpoint: TLSEndpoint, through proxy: ProxyConfiguration, deadline: ContinuousClock.Instant
    ) throws(APNsTransportError) {
        let proxyName = "the SOCKS5 proxy \(proxy.host):\(proxy.port)"
        let destination = authority(endpoint)
        // The handshake's checks say what is wrong; this names the proxy in front of it.
        // `permanent`: a refusal of the credentials or methods the transport offers, which
        // every attempt meets again.
        func checked<T>(permanent: Bool = false, _ step: () throws(SOCKS5.Refusal) -> T) throws(APNsTransportError) -> T {
            do { return try step() } catch {
                let failure = APNsTransportError.connectionFailed("\(proxyName) \(error.problem)")
                throw permanent || error.isPermanent ? failure.permanent : failure
            }
        }
        let offersPassword = proxy.username != nil
        try sendAll(fd, SOCKS5.greeting(offeringPassword: offersPassword), deadline: deadline, proxyName: proxyName, what: "the SOCKS5 greeting")
        let choice = try receive(fd, count: 2, deadline: deadline, proxyName: proxyName, what: "the SOCKS5 greeting")
        guard choice.count == 2 else {
            throw .connectionFailed("\(proxyName) closed the connection before answering the SOCKS5 greeting")
        }
        if try checked(permanent: true, { () throws(SOCKS5.Refusal) in try SOCKS5.chosenMethod(choice, offeredPassword: offersPassword) }) == .usernamePassword {
            let username = proxy.username ?? ""
            var credentials = try checked(permanent: true) { () throws(SOCKS5.Refusal) in try SOCKS5.authentication(username: username, password: proxy.password ?? "") }
            defer { wipe(&credentials) }
            try sendAll(fd, credentials, deadline: deadline, proxyName: proxyName, what: "the credentials")
            let verdict = try receive(fd, count: 2, deadline: deadline, proxyName: proxyName, what: "the credentials")
            try checked(permanent: true) { () throws(SOCKS5.Refusal) in try SOCKS5.checkAuthenticationAnswer(verdict, username: username) }
        }
        let request = try checked(permanent: true) { () throws(SOCKS5.Refusal) in try SOCKS5.connectRequest(host: TCPConnector.unbracketed(endpoint.host), port: endpoint.port) }
        try sendAll(fd, request, deadline: deadline, proxyName: proxyName, what: "CONNECT \(destination)")
        let head = try receive(fd, count: SOCKS5.replyHeadLength, deadline: deadline, proxyName: proxyName, what: "CONNECT \(destination)")
        let remaining = try checked { () throws(SOCKS5.Refusal) in try SOCKS5.remainingReplyLength(afterHead: head, destination: destination) }
        let rest = try receive(fd, count: remaining, deadline: deadline, proxyName: proxyName, what: "CONNECT \(destination)")
        guard rest.count == remaining else {
            throw .connectionFailed("\(proxyName) closed the connection in the middle of its reply to CONNECT \(destination)")
        }
    }

    /// Sends all of `bytes` on the non-blocking `fd` before `deadline`.
    private static func sendAll(
        _ fd: Int32, _ bytes: [UInt8], deadline: ContinuousClock.Instant, proxyName: String, what: String
    ) throws(APNsTransportError) {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL_)) }
            if n > 0 {
                sent += n
            } else if n < 0, errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR {
                guard TCPConnector.wait(fd, for: Int16(POLLOUT), until: deadline) else {
                    throw .connectionFailed("\(proxyName) did not accept \(what) in time")
                }
            } else {
                throw .connectionFailed("sending \(what) to \(proxyName) failed: \(TCPConnector.errorString(errno))")
            }
        }
    }

    /// Reads exactly `count` bytes from the non-blocking `fd` before `deadline`, or fewer
    /// if the proxy closes the connection first (never more: what follows is the tunnel's).
    private static func receive(
        _ fd: Int32, count: Int, deadline: ContinuousClock.Instant, proxyName: String, what: String
    ) throws(APNsTransportError) -> [UInt8] {
        var received = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let n = received[filled...].withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                filled += n
            } else if n == 0 {
                break
            } else if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR {
                guard TCPConnector.wait(fd, for: Int16(POLLIN), until: deadline) else {
                    throw .connectionFailed("\(proxyName) did not answer \(what) in time")
                }
            } else {
                throw .connectionFailed("reading the answer of \(proxyName) to \(what) failed: \(TCPConnector.errorString(errno))")
            }
        }
        return Array(received[..<filled])
    }

    /// Overwrites `bytes`, which held a password.
    private static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { if let base = $0.baseAddress { OPENSSL_cleanse_(base, $0.count) } }
    }

    /// The CONNECT request; it holds the proxy password, so callers wipe it.
    static func request(to endpoint: TLSEndpoint, proxy: ProxyConfiguration) throws(APNsTransportError) -> String {
        let target = authority(endpoint)
        // Every attempt would fail the same way: permanent, so nothing retries it.
        if endpoint.host.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A }) {
            throw APNsTransportError.connectionFailed("the host name contains a line break").permanent
        }
        try proxy.checkCredentials()  // the request must never carry credentials it cannot
        var request = "CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n"
        if let username = proxy.username {
            let credentials = Data("\(username):\(proxy.password ?? "")".utf8).base64EncodedString()
            request += "Proxy-Authorization: Basic \(credentials)\r\n"
        }
        return request + "\r\n"
    }

    /// `host:port`, with brackets around an IPv6 literal (RFC 9110 §7.2, RFC 3986 §3.2.2).
    static func authority(_ endpoint: TLSEndpoint) -> String {
        let host = TCPConnector.unbracketed(endpoint.host)
        return (host.contains(":") ? "[\(host)]" : host) + ":\(endpoint.port)"
    }
}

#if canImport(Glibc)
private let MSG_NOSIGNAL_ = Int(MSG_NOSIGNAL)
#else
private let MSG_NOSIGNAL_ = 0
#endif

private func OPENSSL_cleanse_(_ pointer: UnsafeMutableRawPointer, _ count: Int) {
    COpenSSL.OPENSSL_cleanse(pointer, count)
}

extension Array where Element == UInt8 {
    fileprivate func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix
    }
}
