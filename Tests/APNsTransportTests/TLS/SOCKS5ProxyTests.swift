import APNsMockServer
import Foundation
import Testing
@testable import APNsTransport

/// TLS and whole notifications through a SOCKS5 proxy: Debian's `microsocks` (1.0.3, an
/// independent C implementation of RFC 1928 and RFC 1929), started on a free loopback port
/// and stopped by each test. The messages' bytes are checked against the RFCs in
/// ``SOCKS5Tests``; here a real proxy accepts them.
private let microsocksInstalled = FileManager.default.isExecutableFile(atPath: "/usr/bin/microsocks")

@Suite(.serialized, .blockingIO) struct SOCKS5ProxyTests {
    static let user = "alice"
    static let password = "s3cret:pass"

    /// Starts microsocks on a free loopback port, with username/password authentication
    /// when `authenticated`.
    static func startProxy(authenticated: Bool) throws -> (BackgroundProcess, Int) {
        for _ in 0..<5 {
            let port = try unusedLoopbackPort()
            var arguments = ["-i", "127.0.0.1", "-p", "\(port)"]
            if authenticated { arguments += ["-u", user, "-P", password] }
            let proxy = try BackgroundProcess("/usr/bin/microsocks", arguments, log: "microsocks")
            // microsocks says nothing when it listens: it is ready when it accepts.
            let end = Date().addingTimeInterval(5)
            while Date() < end, proxy.process.isRunning {
                if canConnect(port: port) { return (proxy, port) }
                usleep(20_000)
            }
            proxy.stop()  // most likely the port was taken in between: try another
        }
        throw HarnessError(description: "microsocks did not start")
    }

    private static func canConnect(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    @Test(.enabled(if: microsocksInstalled, "needs microsocks: apt-get install microsocks"), arguments: [false, true])
    func tunnelsTLSThroughTheProxy(authenticated: Bool) throws {
        let (proxy, proxyPort) = try Self.startProxy(authenticated: authenticated)
        defer { proxy.stop() }
        let server = try OpenSSLServer(options: ["-alpn", "h2", "-rev"])
        defer { server.stop() }
        let configuration = try TLSConfiguration.trustingTestCA(
            proxy: .socks5(
                host: "127.0.0.1", port: proxyPort,
                username: authenticated ? Self.user : nil, password: authenticated ? Self.password : nil))
        let stream = try connectForTest(TLSEndpoint(host: "127.0.0.1", port: server.port), configuration)
        defer { stream.close() }
        // The first bytes after the proxy's reply are the TLS handshake's: had the tunnel
        // eaten or left a byte, TLS would have failed; this line goes through and back.
        try writeAll(stream, Array("through the SOCKS5 tunnel\n".utf8))
        let (reply, _) = try readUntil(stream) { $0.contains(UInt8(ascii: "\n")) }
        #expect(String(decoding: reply, as: UTF8.self).contains("lennut 5SKCOS eht hguorht"))
    }

    @Test(.enabled(if: microsocksInstalled, "needs microsocks: apt-get install microsocks"))
    func wrongPasswordIsAConnectionFailure() throws {
        let (proxy, proxyPort) = try Self.startProxy(authenticated: true)
        defer { proxy.stop() }
        let configuration = TLSConfiguration(proxy: .socks5(host: "127.0.0.1", port: proxyPort, username: Self.user, password: "wrong"))
        let error = connectionError(TLSEndpoint(host: "127.0.0.1", port: 443), configuration)
        #expect(error?.code == .connectionFailed)
        #expect(error?.mayHaveReachedAPNs == false)
        #expect(error?.detail?.contains("the SOCKS5 proxy 127.0.0.1:\(proxyPort) refused the credentials of user 'alice'") == true, "\(String(describing: error))")
        #expect(error?.isPermanent == true)
        #expect(error?.detail?.contains("wrong") == false)
    }

    @Test(.enabled(if: microsocksInstalled, "needs microsocks: apt-get install microsocks"))
    func missingCredentialsAreAConnectionFailure() throws {
        let (proxy, proxyPort) = try Self.startProxy(authenticated: true)
        defer { proxy.stop() }
        let configuration = TLSConfiguration(proxy: .socks5(host: "127.0.0.1", port: proxyPort))
        let error = connectionError(TLSEndpoint(host: "127.0.0.1", port: 443), configuration)
        #expect(error?.code == .connectionFailed)
        #expect(error?.detail?.contains("requires authentication") == true, "\(String(describing: error))")
    }

    @Test(.enabled(if: microsocksInstalled, "needs microsocks: apt-get install microsocks"))
    func theProxysReplyCodeIsTheError() throws {
        let (proxy, proxyPort) = try Self.startProxy(authenticated: false)
        defer { proxy.stop() }
        let configuration = TLSConfiguration(proxy: .socks5(host: "127.0.0.1", port: proxyPort))
        // Nothing listens there: the proxy's own connect is refused, and it says so (REP 5).
        let closed = try unusedLoopbackPort()
        let refused = connectionError(TLSEndpoint(host: "127.0.0.1", port: closed), configuration)
        #expect(refused?.code == .connectionFailed)
        #expect(refused?.detail?.contains("could not open the tunnel to 127.0.0.1:\(closed): connection refused (reply 5)") == true, "\(String(describing: refused))")
        // A name is sent as a name (the client resolves nothing): the proxy cannot resolve
        // a name under .invalid (RFC 6761) and answers with a failure code.
        let unresolvable = connectionError(TLSEndpoint(host: "apns-socks-test.invalid", port: 443), configuration)
        #expect(unresolvable?.code == .connectionFailed)
        #expect(unresolvable?.detail?.contains("the SOCKS5 proxy 127.0.0.1:\(proxyPort) could not open the tunnel to apns-socks-test.invalid:443") == true, "\(String(describing: unresolvable))")
    }

    /// A proxy that misbehaves in one way, in Python: it prints `PORT <n>` and handles one
    /// connection as `mode` says.
    static let misbehavingProxy = """
        import socket, sys, time
        mode = sys.argv[1]
        s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
        print("PORT", s.getsockname()[1], flush=True)
        c, _ = s.accept()
        greeting = c.recv(16)
        if mode == "silent":
            time.sleep(30)
        elif mode == "http":
            c.sendall(b"HTTP/1.1 400 Bad Request\\r\\nContent-Length: 0\\r\\n\\r\\n")
        elif mode == "ruleset":
            c.sendall(b"\\x05\\x00")
            request = c.recv(300)
            c.sendall(b"\\x05\\x02\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00")
        elif mode == "cut":
            c.sendall(b"\\x05\\x00")
            request = c.recv(300)
            c.sendall(b"\\x05\\x00\\x00\\x03\\x20proxy")
        c.close()
        time.sleep(1)
        """

    @Test(
        "a proxy that says nothing, speaks HTTP, refuses by its ruleset or cuts its reply short: each a connectionFailed that says which",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"), "needs python3"),
        arguments: [
            ("silent", "did not answer the SOCKS5 greeting in time"),
            ("http", "did not answer the SOCKS5 greeting as a SOCKS5 proxy (4854)"),
            ("ruleset", "could not open the tunnel to 127.0.0.1:443: connection not allowed by ruleset (reply 2)"),
            ("cut", "closed the connection in the middle of its reply to CONNECT 127.0.0.1:443"),
        ])
    func misbehavingProxy(mode: String, expected: String) throws {
        let proxy = try BackgroundProcess("/usr/bin/python3", ["-c", Self.misbehavingProxy, mode], log: "socks-\(mode)")
        defer { proxy.stop() }
        let port = try #require(proxy.waitForPortLine())
        let configuration = TLSConfiguration(proxy: .socks5(host: "127.0.0.1", port: port))
        let start = ContinuousClock.now
        // 1 s for the silent proxy, whose case is the timeout; 10 s for the others, which
        // answer at once: their case is the answer, which the Python peer must give
        // before the connect timeout, and a loaded machine can hold it back past 1 s.
        let error = connectionError(TLSEndpoint(host: "127.0.0.1", port: 443), configuration, timeout: mode == "silent" ? .seconds(1) : .seconds(10))
        #expect(error?.code == .connectionFailed)
        #expect(error?.mayHaveReachedAPNs == false)
        #expect(error?.detail?.contains("the SOCKS5 proxy 127.0.0.1:\(port) \(expected)") == true, "\(String(describing: error))")
        // The proxy's rules forbidding the destination (as an HTTP proxy's 403) and an
        // answer that is not SOCKS5 meet every attempt again; silence and a cut may pass.
        #expect(error?.isPermanent == ["ruleset", "http"].contains(mode), "\(String(describing: error))")
        // Within the connect timeout, whatever the proxy does: the silent one would hold
        // the attempt 30 s. (A bound that only catches that hang; it was 5 s.)
        #expect(ContinuousClock.now - start < .seconds(20))
    }

    @Test(
        "APNS_PROXY=socks5://… and http://…: notifications reach the mock server through each proxy",
        .enabled(if: microsocksInstalled && FileManager.default.isExecutableFile(atPath: "/usr/bin/tinyproxy"), "needs microsocks and tinyproxy"))
    func settingsSendThroughEitherProxy() async throws {
        let (socks, socksPort) = try Self.startProxy(authenticated: true)
        defer { socks.stop() }
        let (http, httpPort) = try ProxyTests.startProxy()
        defer { http.stop() }
        // The password percent-encoded, as a URL needs its ':' to be.
        let urls = [
            "socks5://\(Self.user):s3cret%3Apass@127.0.0.1:\(socksPort)",
            "http://\(ProxyTests.user):\(ProxyTests.password)@127.0.0.1:\(httpPort)",
        ]
        try await withCertificateServerSettings { server, variables, ca in
            for url in urls {
                let settings = try APNsSettings(environmentVariables: variables.merging(["APNS_TOPIC": "com.example.app", "APNS_PROXY": url]) { $1 })
                let transport = settings.makeTransport { $0.tls.trustRoots = .certificates(ca) }
                #expect(transport.configuration.tls.proxy == settings.proxy)
                let client = try settings.makeClient(transport: transport)
                let notification = PushNotification(payload: .alert(body: "Hi"), topic: .bundleID(try #require(settings.topic)))
                for device in 1...3 {
                    _ = try await client.send(notification, to: DeviceToken(bytes: [UInt8](repeating: UInt8(device), count: 32)))
                }
                await client.shutdown()
            }
            #expect(server.statistics.accepted == 6)

            // microsocks logs nothing: that the SOCKS5 sends went through it shows in a
            // wrong password, which its refusal turns into the send's failure.
            let settings = try APNsSettings(
                environmentVariables: variables.merging(["APNS_PROXY": "socks5://\(Self.user):wrong@127.0.0.1:\(socksPort)"]) { $1 })
            let client = try settings.makeClient()
            let notification = PushNotification(payload: .alert(body: "Hi"), topic: .bundleID("com.example.app"))
            do {
                _ = try await client.send(notification, to: DeviceToken(bytes: [UInt8](repeating: 9, count: 32)))
                Issue.record("sent with a wrong proxy password")
            } catch let error as APNsError {
                guard case .failed(let failure) = error else {
                    Issue.record("not a failure: \(error)")
                    return
                }
                #expect(failure.code == .connectionFailed)
                #expect(failure.mayHaveReachedAPNs == false)
                #expect(failure.detail?.contains("the SOCKS5 proxy 127.0.0.1:\(socksPort) refused the credentials of user 'alice'") == true, "\(failure)")
            }
            await client.shutdown()
            #expect(server.statistics.accepted == 6)
        }
        // tinyproxy logs each CONNECT it carried.
        #expect(http.log.contains("CONNECT 127.0.0.1:"), "\(http.log)")
    }
}
