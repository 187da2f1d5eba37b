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

/// Opens an HTTP CONNECT tunnel (RFC 9110 §9.3.6) on a socket already connected to the
/// proxy: sends `CONNECT host:port HTTP/1.1` with `Host` and, when configured,
/// `Proxy-Authorization: Basic` (RFC 7617), then reads the response head and requires 2xx.
enum ProxyTunnel {
    /// The largest response head accepted from a proxy.
    static let maximumResponseHead = 16 * 1024

    /// Opens the tunnel to `endpoint` on `fd` (non-blocking) before `deadline`.
    /// - Throws: ``APNsCore/APNsTransportError`` `.connectionFailed` saying what the proxy answered.
    static func open(
        _ fd: Int32, to endpoint: TLSEndpoint, through proxy: ProxyConfiguration, deadline: ContinuousClock.Instant
    ) throws(APNsTransportError) {
        let proxyName = "the proxy \(proxy.host):\(proxy.port)"
        let request = try request(to: endpoint, proxy: proxy)
        var bytes = Array(request.utf8)
        defer { bytes.withUnsafeMutableBytes { if let base = $0.baseAddress { OPENSSL_cleanse_(base, $0.count) } } }

        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL_)) }
            if n > 0 {
                sent += n
            } else if n < 0, errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR {
                guard TCPConnector.wait(fd, for: Int16(POLLOUT), until: deadline) else {
                    throw .connectionFailed("\(proxyName) did not accept the CONNECT request in time")
                }
            } else {
                throw .connectionFailed("sending CONNECT to \(proxyName) failed: \(TCPConnector.errorString(errno))")
            }
        }

        // Read the response head one byte at a time, so that not a byte of the tunnel
        // after it is consumed (the head is short; this costs a few hundred syscalls once).
        var head: [UInt8] = []
        let terminator: [UInt8] = Array("\r\n\r\n".utf8)
        var byte: UInt8 = 0
        while !head.ends(with: terminator) {
            guard head.count < maximumResponseHead else {
                throw .connectionFailed("\(proxyName) sent a response head over \(maximumResponseHead) bytes")
            }
            let n = recv(fd, &byte, 1, 0)
            if n == 1 {
                head.append(byte)
            } else if n == 0 {
                throw .connectionFailed("\(proxyName) closed the connection before answering CONNECT \(authority(endpoint))")
            } else if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR {
                guard TCPConnector.wait(fd, for: Int16(POLLIN), until: deadline) else {
                    throw .connectionFailed("\(proxyName) did not answer CONNECT \(authority(endpoint)) in time")
                }
            } else {
                throw .connectionFailed("reading the answer of \(proxyName) failed: \(TCPConnector.errorString(errno))")
            }
        }
        let text = String(decoding: head, as: UTF8.self)
        let statusLine = text.components(separatedBy: "\r\n").first ?? ""
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            throw .connectionFailed("\(proxyName) answered CONNECT with something that is not HTTP/1.x: '\(statusLine.prefix(80))'")
        }
        switch status {
        case 200..<300:
            return
        // 407 is the status for this (RFC 9110 §15.5.8); some proxies (tinyproxy) send 401.
        case 401 where proxy.username == nil, 407 where proxy.username == nil:
            throw .connectionFailed("\(proxyName) requires authentication (\(statusLine)): set ProxyConfiguration(username:password:)")
        case 401, 407:
            throw .connectionFailed("\(proxyName) refused the credentials of user '\(proxy.username ?? "")' (\(statusLine))")
        default:
            throw .connectionFailed("\(proxyName) refused CONNECT \(authority(endpoint)): \(statusLine)")
        }
    }

    /// The CONNECT request; it holds the proxy password, so callers wipe it.
    static func request(to endpoint: TLSEndpoint, proxy: ProxyConfiguration) throws(APNsTransportError) -> String {
        let target = authority(endpoint)
        for field in [endpoint.host, proxy.username ?? "", proxy.password ?? ""] where field.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A }) {
            throw .connectionFailed("the host name or proxy credentials contain a line break")
        }
        var request = "CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n"
        if let username = proxy.username {
            guard !username.contains(":") else {
                throw .connectionFailed("the proxy user name must not contain ':' (RFC 7617 §2)")
            }
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
