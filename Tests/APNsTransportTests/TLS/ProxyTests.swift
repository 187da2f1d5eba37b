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
        try Self.expectTunnel(to: server, configuration)
        #expect(proxy.log.contains("CONNECT localhost:\(server.port)"), "\(proxy.log)")
    }

    /// TLS to `server` (`openssl s_server -rev`, which answers each line reversed) at
    /// "localhost" through the proxy `configuration` names: a line goes through and comes back.
    static func expectTunnel(to server: OpenSSLServer, _ configuration: TLSConfiguration) throws {
        let stream = try TLSStream.connect(
            to: TLSEndpoint(host: "localhost", port: server.port), configuration: configuration, timeout: .seconds(10))
        defer { stream.close() }
        try writeAll(stream, Array("through the tunnel\n".utf8))
        let (reply, _) = try readUntil(stream) { $0.contains(UInt8(ascii: "\n")) }
        #expect(String(decoding: reply, as: UTF8.self).contains("lennut eht hguorht"))
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
        // Credentials Basic authentication cannot carry (RFC 7617 §2: no ':' in the user
        // name, no control character in either) fail every attempt: permanent.
        for proxy in [
            ProxyConfiguration(host: "p", port: 1, username: "a:b"),
            ProxyConfiguration(host: "p", port: 1, username: "a", password: "line\nbreak"),
            ProxyConfiguration(host: "p", port: 1, username: "a\r", password: "x"),
        ] {
            do {
                _ = try ProxyTunnel.request(to: TLSEndpoint(host: "a", port: 1), proxy: proxy)
                Issue.record("made a CONNECT request for \(proxy.username ?? "")")
            } catch {
                #expect(error.isPermanent, "\(error)")
                #expect(error.detail?.contains("RFC 7617") == true, "\(error)")
            }
        }
    }

    /// An HTTP proxy that answers CONNECT in one way, in Python: it prints `PORT <n>`,
    /// takes one connection, reads the request head and, as `mode` says, answers with an
    /// interim `100 Continue` before its `200` and then relays bytes to the port given as
    /// the second argument, or answers as no HTTP proxy does.
    static let scriptedProxy = """
        import socket, sys, threading
        mode, target = sys.argv[1], int(sys.argv[2])
        s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
        print("PORT", s.getsockname()[1], flush=True)
        c, _ = s.accept()
        head = b""
        while b"\\r\\n\\r\\n" not in head:
            chunk = c.recv(1)
            if not chunk: sys.exit(0)
            head += chunk
        if mode == "interim":
            c.sendall(b"HTTP/1.1 100 Continue\\r\\n\\r\\nHTTP/1.1 102 Processing\\r\\nX: y\\r\\n\\r\\nHTTP/1.1 200 Connection established\\r\\n\\r\\n")
            u = socket.create_connection(("127.0.0.1", target))
            def pump(a, b):
                while True:
                    data = a.recv(65536)
                    if not data: break
                    b.sendall(data)
                b.shutdown(socket.SHUT_WR)
            threading.Thread(target=pump, args=(u, c), daemon=True).start()
            pump(c, u)
        elif mode == "ssh":
            c.sendall(b"SSH-2.0-OpenSSH_9.2p1\\r\\n\\r\\n")
            c.recv(1)
        """

    @Test(
        "interim 1xx answers before the 200 are passed over (RFC 9110 §15.2): the tunnel works",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"), "needs python3"))
    func interimResponsesBeforeTheTunnel() throws {
        let server = try OpenSSLServer(options: ["-alpn", "h2", "-rev"])
        defer { server.stop() }
        let proxy = try BackgroundProcess("/usr/bin/python3", ["-c", Self.scriptedProxy, "interim", "\(server.port)"], log: "http-proxy-interim")
        defer { proxy.stop() }
        let port = try #require(proxy.waitForPortLine())
        try Self.expectTunnel(to: server, TLSConfiguration.trustingTestCA(proxy: ProxyConfiguration(host: "127.0.0.1", port: port)))
    }

    @Test(
        "a proxy address where another service answers is a permanent failure naming the proxy",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"), "needs python3"))
    func notAnHTTPProxy() throws {
        let proxy = try BackgroundProcess("/usr/bin/python3", ["-c", Self.scriptedProxy, "ssh", "0"], log: "http-proxy-ssh")
        defer { proxy.stop() }
        let port = try #require(proxy.waitForPortLine())
        let error = connectionError(TLSEndpoint(host: "127.0.0.1", port: 443), TLSConfiguration(proxy: ProxyConfiguration(host: "127.0.0.1", port: port)))
        #expect(error?.code == .connectionFailed)
        #expect(error?.mayHaveReachedAPNs == false)
        #expect(error?.isPermanent == true)
        #expect(error?.detail?.contains("the proxy 127.0.0.1:\(port) answered CONNECT with something that is not HTTP/1.x: 'SSH-2.0") == true, "\(String(describing: error))")
    }

    @Test("a proxy that cannot be reached is named as the proxy, not as APNs' address")
    func unreachableProxyIsNamed() throws {
        let closed = try unusedLoopbackPort()
        for proxy in [ProxyConfiguration(host: "127.0.0.1", port: closed), .socks5(host: "127.0.0.1", port: closed)] {
            let error = connectionError(TLSEndpoint(host: "127.0.0.1", port: 443), TLSConfiguration(proxy: proxy), timeout: .seconds(5))
            #expect(error?.code == .connectionFailed)
            #expect(error?.mayHaveReachedAPNs == false)
            #expect(error?.detail?.hasPrefix("cannot reach the proxy 127.0.0.1:\(closed): ") == true, "\(String(describing: error))")
            #expect(error?.detail?.contains("refused") == true, "\(String(describing: error))")
        }
        // A proxy name that does not resolve (RFC 6761's .invalid).
        let unresolvable = connectionError(
            TLSEndpoint(host: "127.0.0.1", port: 443), TLSConfiguration(proxy: ProxyConfiguration(host: "apns-proxy-test.invalid", port: 3128)),
            timeout: .seconds(5))
        #expect(unresolvable?.detail?.hasPrefix("cannot reach the proxy apns-proxy-test.invalid:3128: ") == true, "\(String(describing: unresolvable))")
    }

    @Test("credentials no proxy can take are refused before any connection, as permanent")
    func impossibleCredentialsFailBeforeConnecting() throws {
        // Nothing listens at the proxy's port: an error about the credentials, not the
        // connection, shows they were checked first.
        let closed = try unusedLoopbackPort()
        for proxy in [
            ProxyConfiguration(host: "127.0.0.1", port: closed, username: "a:b", password: "x"),
            .socks5(host: "127.0.0.1", port: closed, username: "alice", password: String(repeating: "p", count: 256)),
        ] {
            let error = connectionError(TLSEndpoint(host: "127.0.0.1", port: 443), TLSConfiguration(proxy: proxy))
            #expect(error?.code == .connectionFailed)
            #expect(error?.isPermanent == true, "\(String(describing: error))")
            #expect(error?.detail?.contains("configuration has") == true, "\(String(describing: error))")
            #expect(error?.detail?.contains("pppp") == false)
        }
    }
}
