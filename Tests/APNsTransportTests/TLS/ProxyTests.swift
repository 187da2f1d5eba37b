import Foundation
import Testing
@testable import APNsTransport

/// TLS through an HTTP CONNECT proxy: Debian's `tinyproxy` (1.11, with BasicAuth), started
/// on a free loopback port with a temporary configuration and stopped by each test.
private let tinyproxyInstalled = FileManager.default.isExecutableFile(atPath: "/usr/bin/tinyproxy")

@Suite(.serialized, .blockingIO) struct ProxyTests {
    static let user = "alice"
    static let password = "s3cret-pass"

    /// Starts tinyproxy on a free loopback port.
    static func startProxy() throws -> (BackgroundProcess, Int) {
        for _ in 0..<5 {
            let port = try unusedLoopbackPort()
            let config = FileManager.default.temporaryDirectory.appendingPathComponent("tinyproxy-\(UUID().uuidString).conf")
            // tinyproxy reads it once, at start: done with it when it accepts connections or is stopped.
            defer { try? FileManager.default.removeItem(at: config) }
            try """
                Port \(port)
                Listen 127.0.0.1
                Timeout 30
                MaxClients 10
                LogLevel Info
                BasicAuth \(user) \(password)

                """.write(to: config, atomically: true, encoding: .utf8)
            let proxy = try BackgroundProcess("/usr/bin/tinyproxy", ["-d", "-c", config.path], log: "tinyproxy")
            if proxy.waitForLog(seconds: 5, { $0.contains("Accepting connections") }) { return (proxy, port) }
            proxy.stop()  // most likely the port was taken in between: try another
        }
        throw HarnessError(description: "tinyproxy did not start")
    }

    @Test(.enabled(if: tinyproxyInstalled, "needs tinyproxy: apt-get install tinyproxy"))
    func tunnelsTLSThroughAnAuthenticatingProxy() throws {
        let (proxy, proxyPort) = try Self.startProxy()
        defer { proxy.stop() }
        let server = try OpenSSLServer(options: ["-alpn", "h2", "-rev"])
        defer { server.stop() }
        let configuration = try TLSConfiguration.trustingTestCA(
            proxy: ProxyConfiguration(host: "127.0.0.1", port: proxyPort, username: Self.user, password: Self.password))
        // "localhost": the proxy resolves it; TLS still verifies the name and sends SNI.
        let stream = try TLSStream.connect(
            to: TLSEndpoint(host: "localhost", port: server.port), configuration: configuration, timeout: .seconds(10))
        defer { stream.close() }
        try writeAll(stream, Array("through the tunnel\n".utf8))
        let (reply, _) = try readUntil(stream) { $0.contains(UInt8(ascii: "\n")) }
        #expect(String(decoding: reply, as: UTF8.self).contains("lennut eht hguorht"))
        #expect(proxy.log.contains("CONNECT localhost:\(server.port)"), "\(proxy.log)")
    }

    @Test(.enabled(if: tinyproxyInstalled, "needs tinyproxy: apt-get install tinyproxy"))
    func wrongProxyPasswordIsAConnectionFailure() throws {
        let (proxy, proxyPort) = try Self.startProxy()
        defer { proxy.stop() }
        let configuration = TLSConfiguration(proxy: ProxyConfiguration(host: "127.0.0.1", port: proxyPort, username: Self.user, password: "wrong"))
        let error = connectionError(TLSEndpoint(host: "127.0.0.1", port: 443), configuration)
        #expect(error?.code == .connectionFailed)
        #expect(error?.mayHaveReachedAPNs == false)
        #expect(error?.detail?.contains("refused the credentials of user 'alice'") == true, "\(String(describing: error))")
        #expect(error?.isPermanent == true)
        // tinyproxy answers 401 where RFC 9110 §15.5.8 says 407; both mean "credentials".
        #expect(error?.detail?.contains("401") == true || error?.detail?.contains("407") == true)
        #expect(error?.detail?.contains("wrong") == false)
    }

    @Test(.enabled(if: tinyproxyInstalled, "needs tinyproxy: apt-get install tinyproxy"))
    func missingProxyCredentialsAreAConnectionFailure() throws {
        let (proxy, proxyPort) = try Self.startProxy()
        defer { proxy.stop() }
        let configuration = TLSConfiguration(proxy: ProxyConfiguration(host: "127.0.0.1", port: proxyPort))
        let error = connectionError(TLSEndpoint(host: "127.0.0.1", port: 443), configuration)
        #expect(error?.code == .connectionFailed)
        #expect(error?.detail?.contains("requires authentication") == true, "\(String(describing: error))")
    }

    @Test("a CONNECT response head ends at an empty line, CRLF or bare LF (RFC 9112 §2.2)")
    func responseHeadEnds() {
        let cases: [(String, Bool)] = [
            ("HTTP/1.1 200 Connection established\r\n\r\n", true),
            ("HTTP/1.1 200 OK\n\n", true),
            ("HTTP/1.1 200 OK\r\n\n", true),
            ("HTTP/1.1 200 OK\nVia: proxy\n\r\n", true),
            ("HTTP/1.1 200 OK\r\n", false),
            ("HTTP/1.1 200 OK\r\nVia: proxy\r\n", false),
            ("HTTP/1.1 200 OK\r", false),
            ("\n", false),
        ]
        for (head, ends) in cases {
            #expect(ProxyTunnel.endsHead(Array(head.utf8)) == ends, "\(head.debugDescription)")
        }
        // The status line, whichever line end: split on the bytes (CR LF is one Swift
        // Character, which a split on "\n" missed: every CRLF proxy was refused).
        #expect(ProxyTunnel.statusLine(of: Array("HTTP/1.1 200 Connection established\r\nVia: p\r\n\r\n".utf8)) == "HTTP/1.1 200 Connection established")
        #expect(ProxyTunnel.statusLine(of: Array("HTTP/1.1 407 Proxy Authentication Required\nX: y\n\n".utf8)) == "HTTP/1.1 407 Proxy Authentication Required")
    }

    @Test func connectRequestFollowsRFC9110AndRFC7617() throws {
        let request = try ProxyTunnel.request(
            to: TLSEndpoint(host: "api.push.apple.com", port: 443),
            proxy: ProxyConfiguration(host: "proxy", port: 3128, username: "Aladdin", password: "open sesame"))
        // RFC 7617 §2's example credentials.
        #expect(request == "CONNECT api.push.apple.com:443 HTTP/1.1\r\nHost: api.push.apple.com:443\r\nProxy-Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==\r\n\r\n")
        let v6 = try ProxyTunnel.request(to: TLSEndpoint(host: "::1", port: 2197), proxy: ProxyConfiguration(host: "proxy", port: 3128))
        #expect(v6 == "CONNECT [::1]:2197 HTTP/1.1\r\nHost: [::1]:2197\r\n\r\n")
        #expect(throws: APNsTransportError.self) {
            try ProxyTunnel.request(to: TLSEndpoint(host: "a\r\nX: y", port: 1), proxy: ProxyConfiguration(host: "p", port: 1))
        }
        #expect(throws: APNsTransportError.self) {
            try ProxyTunnel.request(to: TLSEndpoint(host: "a", port: 1), proxy: ProxyConfiguration(host: "p", port: 1, username: "a:b"))
        }
    }
}
