import Testing
@testable import APNsTransport

/// The SOCKS5 handshake's bytes against the message formats of RFC 1928 (§3 the greeting,
/// §4 the request, §6 the reply) and RFC 1929 (§2 username/password), written out here by
/// hand from the RFCs; and proxy URLs as curl and RFC 3986 read them. No sockets: the
/// exchange with a real proxy is in ``SOCKS5ProxyTests``.
@Suite("SOCKS5 messages (RFC 1928, RFC 1929) and proxy URLs")
struct SOCKS5Tests {
    @Test("the greeting offers no authentication, and username/password with credentials (RFC 1928 §3)")
    func greeting() throws {
        #expect(SOCKS5.greeting(offeringPassword: false) == [0x05, 0x01, 0x00])
        #expect(SOCKS5.greeting(offeringPassword: true) == [0x05, 0x02, 0x00, 0x02])
        #expect(try SOCKS5.chosenMethod([0x05, 0x00], offeredPassword: false) == .noAuthentication)
        #expect(try SOCKS5.chosenMethod([0x05, 0x00], offeredPassword: true) == .noAuthentication)
        #expect(try SOCKS5.chosenMethod([0x05, 0x02], offeredPassword: true) == .usernamePassword)
        // X'FF': no acceptable method. Without credentials it means the proxy wants some.
        #expect(problem { try SOCKS5.chosenMethod([0x05, 0xFF], offeredPassword: false) }?.contains("requires authentication") == true)
        #expect(problem { try SOCKS5.chosenMethod([0x05, 0x02], offeredPassword: false) }?.contains("requires authentication") == true)
        #expect(problem { try SOCKS5.chosenMethod([0x05, 0xFF], offeredPassword: true) }?.contains("accepts none") == true)
        // GSSAPI (X'01') was never offered; a SOCKS4 or HTTP server answers something else.
        #expect(problem { try SOCKS5.chosenMethod([0x05, 0x01], offeredPassword: true) }?.contains("not offered") == true)
        #expect(problem { try SOCKS5.chosenMethod(Array("HT".utf8), offeredPassword: false) }?.contains("not answer") == true)
    }

    @Test("username/password: VER 1, ULEN, UNAME, PLEN, PASSWD; STATUS 0 is success (RFC 1929 §2)")
    func usernamePassword() throws {
        #expect(try SOCKS5.authentication(username: "alice", password: "pw") == [0x01, 0x05, 0x61, 0x6C, 0x69, 0x63, 0x65, 0x02, 0x70, 0x77])
        #expect(try SOCKS5.authentication(username: "é", password: "") == [0x01, 0x02, 0xC3, 0xA9, 0x00])
        #expect(problem { try SOCKS5.authentication(username: "", password: "x") }?.contains("1 to 255 bytes") == true)
        #expect(problem { try SOCKS5.authentication(username: String(repeating: "u", count: 256), password: "x") } != nil)
        #expect(try SOCKS5.authentication(username: String(repeating: "u", count: 255), password: String(repeating: "p", count: 255)).count == 513)
        #expect(problem { try SOCKS5.authentication(username: "u", password: String(repeating: "p", count: 256)) }?.contains("at most 255") == true)
        #expect(throws: Never.self) { try SOCKS5.checkAuthenticationAnswer([0x01, 0x00], username: "alice") }
        #expect(problem { try SOCKS5.checkAuthenticationAnswer([0x01, 0x01], username: "alice") }?.contains("refused the credentials of user 'alice'") == true)
        #expect(problem { try SOCKS5.checkAuthenticationAnswer([0x01], username: "alice") }?.contains("closed") == true)
    }

    @Test("CONNECT: VER 5, CMD 1, RSV 0, ATYP 1/3/4, the address, the port in network order (RFC 1928 §4, §5)")
    func connectRequest() throws {
        // A host name goes to the proxy as X'03', its length, its octets, no NUL.
        let name = Array("api.push.apple.com".utf8)
        #expect(try SOCKS5.connectRequest(host: "api.push.apple.com", port: 443) == [0x05, 0x01, 0x00, 0x03, 18] + name + [0x01, 0xBB])
        #expect(try SOCKS5.connectRequest(host: "127.0.0.1", port: 2197) == [0x05, 0x01, 0x00, 0x01, 127, 0, 0, 1, 0x08, 0x95])
        let loopback6: [UInt8] = Array(repeating: 0, count: 15) + [1]
        #expect(try SOCKS5.connectRequest(host: "::1", port: 443) == [0x05, 0x01, 0x00, 0x04] + loopback6 + [0x01, 0xBB])
        #expect(try SOCKS5.connectRequest(host: "[::1]", port: 443) == [0x05, 0x01, 0x00, 0x04] + loopback6 + [0x01, 0xBB])
        let documentation6: [UInt8] = [0x20, 0x01, 0x0D, 0xB8] + Array(repeating: 0, count: 11) + [0x07]
        #expect(try SOCKS5.connectRequest(host: "2001:db8::7", port: 65535) == [0x05, 0x01, 0x00, 0x04] + documentation6 + [0xFF, 0xFF])
        // Not an IPv4 literal: a name (the proxy decides what it means).
        #expect(try SOCKS5.connectRequest(host: "256.1.1.1", port: 1)[3] == 0x03)
        #expect(problem { try SOCKS5.connectRequest(host: String(repeating: "a", count: 256), port: 443) }?.contains("1 to 255 bytes") == true)
        #expect(try SOCKS5.connectRequest(host: String(repeating: "a", count: 255), port: 443).count == 4 + 1 + 255 + 2)
        #expect(problem { try SOCKS5.connectRequest(host: "a", port: 0) } != nil)
    }

    @Test("the reply: its length from ATYP, each REP code in the RFC's words (RFC 1928 §6)")
    func reply() throws {
        #expect(try SOCKS5.remainingReplyLength(afterHead: [0x05, 0x00, 0x00, 0x01, 10], destination: "d") == 3 + 2)
        #expect(try SOCKS5.remainingReplyLength(afterHead: [0x05, 0x00, 0x00, 0x03, 7], destination: "d") == 7 + 2)
        #expect(try SOCKS5.remainingReplyLength(afterHead: [0x05, 0x00, 0x00, 0x04, 0x20], destination: "d") == 15 + 2)
        let meanings: [UInt8: String] = [
            1: "general SOCKS server failure", 2: "connection not allowed by ruleset", 3: "network unreachable",
            4: "host unreachable", 5: "connection refused", 6: "TTL expired", 7: "command not supported",
            8: "address type not supported",
        ]
        for (code, meaning) in meanings {
            let text = problem { try SOCKS5.remainingReplyLength(afterHead: [0x05, code, 0x00, 0x01, 0], destination: "api.push.apple.com:443") }
            #expect(text == "could not open the tunnel to api.push.apple.com:443: \(meaning) (reply \(code))")
        }
        // A failure reply cut short still says why.
        #expect(problem { try SOCKS5.remainingReplyLength(afterHead: [0x05, 0x05], destination: "d") }?.contains("connection refused") == true)
        #expect(problem { try SOCKS5.remainingReplyLength(afterHead: [0x05], destination: "d") }?.contains("closed") == true)
        #expect(problem { try SOCKS5.remainingReplyLength(afterHead: [0x05, 0x00, 0x00], destination: "d") }?.contains("middle") == true)
        #expect(problem { try SOCKS5.remainingReplyLength(afterHead: [0x05, 0x00, 0x00, 0x02, 0], destination: "d") }?.contains("address type") == true)
        #expect(problem { try SOCKS5.remainingReplyLength(afterHead: [0x04, 0x5A, 0, 0, 0], destination: "d") }?.contains("not a SOCKS5 reply") == true)
    }

    @Test("proxy URLs: schemes, default ports, percent-encoded credentials, IPv6 in brackets")
    func urls() throws {
        let socks = try ProxyConfiguration(url: "socks5://alice:s%40cret%3A1@proxy.example:1081")
        #expect(socks == .socks5(host: "proxy.example", port: 1081, username: "alice", password: "s@cret:1"))
        #expect(try ProxyConfiguration(url: "SOCKS5H://10.0.0.7") == .socks5(host: "10.0.0.7", port: 1080))
        #expect(try ProxyConfiguration(url: "http://proxy.corp:3128/") == ProxyConfiguration(host: "proxy.corp", port: 3128))
        #expect(try ProxyConfiguration(url: "proxy.corp:3128") == ProxyConfiguration(host: "proxy.corp", port: 3128))
        #expect(try ProxyConfiguration(url: "http://proxy.corp") == ProxyConfiguration(host: "proxy.corp", port: 80))
        #expect(try ProxyConfiguration(url: "http://[::1]:8080") == ProxyConfiguration(host: "::1", port: 8080))
        #expect(try ProxyConfiguration(url: "http://bob@[2001:db8::1]") == ProxyConfiguration(host: "2001:db8::1", port: 80, username: "bob"))
        #expect(try ProxyConfiguration(url: "socks5://user:@h:1") == .socks5(host: "h", port: 1, username: "user", password: ""))
        #expect(try ProxyConfiguration(url: "socks5://h:1").kind.description == "socks5")
        #expect(ProxyConfiguration(host: "h", port: 1).kind == .httpConnect)

        let refused: [(String, String)] = [
            ("https://proxy:443", "TLS to the proxy"),
            ("socks4://proxy:1080", "unsupported scheme 'socks4'"),
            ("http://proxy:0", "not a TCP port"),
            ("http://proxy:99999", "not a TCP port"),
            ("http://proxy:31x", "not a TCP port"),
            ("http://proxy:3128/path", "path"),
            ("http://:3128", "no host"),
            ("http://::1:3128", "without brackets"),
            ("http://[::1:3128", "closing ']'"),
            ("http://[::1]x", "not :port"),
            ("socks5://al%ZZ:pw@proxy:1080", "user name"),
            ("socks5://alice:pw%4@proxy:1080", "password"),
            ("socks5://@proxy:1080", "user name"),
            // Credentials that no attempt could send: Basic authentication takes no ':' in
            // the user name and no control character (RFC 7617 §2); SOCKS5 takes at most
            // 255 bytes of each (RFC 1929).
            ("http://apns%3Auser:pw@proxy:3128", "':' in its user name"),
            ("http://apns:line%0Abreak@proxy:3128", "control character"),
            ("socks5://apns:\(String(repeating: "p", count: 256))@proxy:1080", "password of 256 bytes"),
            ("socks5://\(String(repeating: "u", count: 256)):pw@proxy:1080", "user name of 256 bytes"),
        ]
        for (url, problem) in refused {
            #expect(throws: ProxyURLError.self, "\(url)") { try ProxyConfiguration(url: url) }
            do {
                _ = try ProxyConfiguration(url: url)
            } catch {
                #expect(error.problem.contains(problem), "\(url): \(error)")
            }
        }
        // The password never appears in an error.
        do {
            _ = try ProxyConfiguration(url: "socks4://alice:topsecret@proxy:1080")
            Issue.record("accepted socks4")
        } catch {
            #expect(error.url == "socks4://alice:***@proxy:1080")
            #expect(!error.description.contains("topsecret"))
        }
        // A password not percent-encoded, holding '/', '?' or '#' (RFC 3986 §3.2.1 allows
        // none of them there): refused, and still never shown.
        for url in ["http://apns:Hunter2/xyz@127.0.0.1:9", "socks5://apns:a?b#c@proxy:1080", "apns:pa/ss@proxy:3128"] {
            do {
                _ = try ProxyConfiguration(url: url)
                Issue.record("accepted \(url)")
            } catch {
                for secret in ["Hunter2", "a?b#c", "pa/ss"] { #expect(!error.description.contains(secret), "\(error)") }
                #expect(error.description.contains("***"), "\(error)")
                #expect(error.problem.contains("percent-encode"), "\(error)")
            }
        }
    }

    @Test("a configuration printed, interpolated or dumped never shows its password")
    func redactedDescriptions() throws {
        let socks = ProxyConfiguration.socks5(host: "10.0.0.7", port: 1080, username: "apns", password: "hunter2")
        #expect(socks.description == "socks5://apns:***@10.0.0.7:1080")
        #expect("\(socks)" == socks.description && String(reflecting: socks) == socks.description)
        var dumped = ""
        dump(TLSConfiguration(proxy: socks), to: &dumped)
        #expect(dumped.contains("10.0.0.7") && !dumped.contains("hunter2"), "\(dumped)")
        #expect(ProxyConfiguration(host: "::1", port: 3128).description == "http://[::1]:3128")
        #expect(ProxyConfiguration(host: "p", port: 1, username: "u").description == "http://u@p:1")
        // A description is a URL that reads back as the same proxy, password aside.
        #expect(try ProxyConfiguration(url: socks.description) == .socks5(host: "10.0.0.7", port: 1080, username: "apns", password: "***"))
    }

    /// The refusal's words, or `nil` if `body` returned (or threw anything else).
    private func problem<T>(_ body: () throws -> T) -> String? {
        do {
            _ = try body()
            return nil
        } catch let refusal as SOCKS5.Refusal {
            return refusal.problem
        } catch {
            Issue.record("not a SOCKS5.Refusal: \(error)")
            return nil
        }
    }
}
