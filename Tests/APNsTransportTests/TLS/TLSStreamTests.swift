import Foundation
import Testing
@testable import APNsTransport

/// TLSStream against `openssl s_server`: OpenSSL's own server decides what a correct
/// client is, and reverses lines (`-rev`) so that a round trip proves both directions.
@Suite(.serialized, .blockingIO) struct TLSStreamTests {
    /// s_server traces the handshake (`-trace`): the ClientHello's `server_name` extension
    /// is printed with a hex and text dump of the name it carries. A host name must arrive
    /// as SNI; an IP literal must send none (RFC 6066 §3).
    @Test(arguments: ["127.0.0.1", "localhost"])
    func handshakeNegotiatesH2AndRoundTrips(host: String) throws {
        let server = try OpenSSLServer(options: ["-alpn", "h2", "-rev", "-trace"])
        defer { server.stop() }
        let stream = try TLSStream.connect(
            to: TLSEndpoint(host: host, port: server.port), configuration: .trustingTestCA(), timeout: .seconds(10))
        #expect(stream.fileDescriptor >= 0)
        #expect(["TLSv1.2", "TLSv1.3"].contains(stream.protocolVersion))
        try writeAll(stream, Array("hello, APNs\n".utf8))
        let (reply, _) = try readUntil(stream) { $0.contains(UInt8(ascii: "\n")) }
        #expect(String(decoding: reply, as: UTF8.self).contains("sNPA ,olleh"))
        // s_server (-naccept 1) exits once the connection closes, flushing its whole log.
        stream.close()
        #expect(server.background.waitForExit(), "s_server did not exit: \(server.background.log)")
        let log = server.background.log
        #expect(log.contains("ALPN protocols advertised by the client: h2"), "\(log)")
        let lines = log.split(separator: "\n")
        let sni = lines.indices.filter { lines[$0].contains("extension_type=server_name(0)") }
        if host == "localhost" {
            // The extension, then its dump: `0000 - 00 0c 00 00 09 6c 6f ... .....localhost`.
            #expect(sni.contains { $0 + 1 < lines.count && lines[$0 + 1].hasSuffix(".....localhost") }, "\(log)")
        } else {
            #expect(sni.isEmpty, "\(log)")
        }
    }

    /// IPv6: the socket path, and verification of an IPv6 address SAN (no SNI for IPs).
    @Test func connectsOverIPv6() throws {
        let server = try OpenSSLServer(address: "::1", options: ["-alpn", "h2", "-rev"])
        defer { server.stop() }
        let stream = try connectForTest(TLSEndpoint(host: "::1", port: server.port), .trustingTestCA())
        defer { stream.close() }
        try writeAll(stream, Array("six\n".utf8))
        let (reply, _) = try readUntil(stream) { $0.contains(UInt8(ascii: "\n")) }
        #expect(String(decoding: reply, as: UTF8.self).contains("xis"))
    }

    /// Connect on one task, read and write on another: the stream is `Sendable`.
    @Test func streamMovesBetweenTasks() async throws {
        let server = try OpenSSLServer(options: ["-alpn", "h2", "-rev"])
        defer { server.stop() }
        let endpoint = server.endpoint
        let configuration = try TLSConfiguration.trustingTestCA()
        let stream = try await Task.detached { try connectForTest(endpoint, configuration) }.value
        let reply = try await Task.detached {
            try writeAll(stream, Array("detached\n".utf8))
            return try readUntil(stream) { $0.contains(UInt8(ascii: "\n")) }.bytes
        }.value
        stream.close()
        #expect(String(decoding: reply, as: UTF8.self).contains("dehcated"))
    }

    /// Against a TLS server that never reads (Python's ssl module), writes must stop with
    /// `.wantWrite` instead of blocking, and reads with `.wantRead`.
    @Test func ioNeverBlocks() throws {
        let pki = try TestPKI.get()
        let server = try BackgroundProcess("/usr/bin/python3", ["-c", """
            import socket, ssl, time
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain("\(pki.path("server.pem"))", "\(pki.path("server.key"))")
            ctx.set_alpn_protocols(["h2"])
            s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
            print("PORT", s.getsockname()[1], flush=True)
            c, _ = s.accept(); t = ctx.wrap_socket(c, server_side=True)
            print("ALPN", t.selected_alpn_protocol(), flush=True)
            time.sleep(60)
            """], log: "python-tls")
        defer { server.stop() }
        var port = 0
        #expect(server.waitForLog { log in
            port = log.split(separator: "\n").first { $0.hasPrefix("PORT ") }.flatMap { Int($0.dropFirst(5)) } ?? 0
            return port > 0
        })
        let stream = try connectForTest(TLSEndpoint(host: "127.0.0.1", port: port), .trustingTestCA())
        defer { stream.close() }
        #expect(server.waitForLog { $0.contains("ALPN h2") })

        var buffer = [UInt8](repeating: 0, count: 4096)
        var result = try buffer.withUnsafeMutableBytes { try stream.read(into: $0) }
        while case .done = result {  // a TLS 1.3 session ticket is not application data
            result = try buffer.withUnsafeMutableBytes { try stream.read(into: $0) }
        }
        #expect(result == .wantRead)

        let chunk = [UInt8](repeating: 0x61, count: 256 * 1024)
        var written = 0
        var last: TLSIOResult = .done(0)
        for _ in 0..<10_000 {
            last = try chunk.withUnsafeBytes { try stream.write($0) }
            guard case .done(let n) = last else { break }
            #expect(n > 0 && n <= chunk.count)
            written += n
        }
        #expect(last == .wantWrite, "wrote \(written) bytes without filling the socket")
        // The retry after .wantWrite takes the same bytes and again does not block.
        #expect(try chunk.withUnsafeBytes { try stream.write($0) } == .wantWrite)
    }

    /// A small read leaves the rest of a TLS record inside OpenSSL, where poll(2) cannot
    /// see it; `hasBufferedBytes` says so.
    @Test func bufferedBytesAreReported() throws {
        let server = try OpenSSLServer(options: ["-alpn", "h2", "-rev"])
        defer { server.stop() }
        let stream = try connectForTest(server.endpoint, .trustingTestCA())
        defer { stream.close() }
        try writeAll(stream, Array("abcdefghijklmnopqrstuvwxyz\n".utf8))
        var one = [UInt8](repeating: 0, count: 1)
        var first: TLSIOResult = .wantRead
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            first = try one.withUnsafeMutableBytes { try stream.read(into: $0) }
            guard first == .wantRead else { break }
            _ = TCPConnector.wait(stream.fileDescriptor, for: Int16(POLLIN), until: deadline)
        }
        #expect(first == .done(1))
        #expect(one == [UInt8(ascii: "z")])
        #expect(stream.hasBufferedBytes)
        let (rest, _) = try readUntil(stream) { $0.contains(UInt8(ascii: "\n")) }
        #expect(String(decoding: rest, as: UTF8.self).hasPrefix("yxwvutsrqponmlkjihgfedcba"))
        #expect(!stream.hasBufferedBytes)
    }

    @Test func closeIsIdempotentAndLaterCallsSeeClosed() throws {
        let server = try OpenSSLServer(options: ["-alpn", "h2", "-rev"])
        defer { server.stop() }
        let stream = try connectForTest(server.endpoint, .trustingTestCA())
        stream.close()
        stream.close()
        #expect(stream.fileDescriptor == -1)
        var buffer = [UInt8](repeating: 0, count: 16)
        #expect(try buffer.withUnsafeMutableBytes { try stream.read(into: $0) } == .closed)
        #expect(try [1, 2, 3].withUnsafeBytes { try stream.write($0) } == .closed)
    }

    /// s_server -rev answers a line "CLOSE" by shutting the connection down.
    @Test func peerShutdownReadsAsClosed() throws {
        let server = try OpenSSLServer(options: ["-alpn", "h2", "-rev"])
        defer { server.stop() }
        let stream = try connectForTest(server.endpoint, .trustingTestCA())
        defer { stream.close() }
        try writeAll(stream, Array("CLOSE\n".utf8))
        let (_, closed) = try readUntil(stream) { _ in false }
        #expect(closed)
        #expect(server.background.log.contains("CONNECTION CLOSED"))
    }

    /// One megabyte in large write calls (partial writes, many TLS records), received
    /// intact by s_server, which prints what it reads.
    @Test func largeWritesArriveIntact() throws {
        let server = try OpenSSLServer(options: ["-alpn", "h2", "-ign_eof"])
        defer { server.stop() }
        let stream = try connectForTest(server.endpoint, .trustingTestCA())
        defer { stream.close() }
        let line = Array("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_\n".utf8)
        var payload: [UInt8] = []
        for _ in 0..<(1 << 20) / line.count { payload += line }
        payload += Array("END-OF-PAYLOAD\n".utf8)
        try writeAll(stream, payload)
        #expect(server.background.waitForLog(seconds: 20) { $0.contains("END-OF-PAYLOAD") })
        let log = server.background.log
        let received = log.split(separator: "\n").filter { $0 == "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_" }.count
        #expect(received == (1 << 20) / line.count)
    }

    // MARK: Refusals

    @Test func hostnameMismatchIsRefused() throws {
        let server = try OpenSSLServer(certificate: "example", options: ["-alpn", "h2", "-rev"])
        defer { server.stop() }
        let error = connectionError(TLSEndpoint(host: "localhost", port: server.port), try .trustingTestCA())
        #expect(error?.code == .tlsFailure)
        #expect(error?.mayHaveReachedAPNs == false)
        #expect(error?.detail?.contains("hostname mismatch: the certificate of localhost is for 'example.com'") == true, "\(String(describing: error))")
    }

    @Test("a certificate with its name only in the subject's common name is refused: names are checked against subjectAltName (RFC 9525)")
    func commonNameAloneIsRefused() throws {
        let server = try OpenSSLServer(certificate: "nosan", options: ["-alpn", "h2", "-rev"])
        defer { server.stop() }
        let error = connectionError(TLSEndpoint(host: "localhost", port: server.port), try .trustingTestCA())
        #expect(error?.code == .tlsFailure)
        #expect(error?.isPermanent == true)
        #expect(error?.detail?.contains("lists no DNS name or IP address in subjectAltName") == true, "\(String(describing: error))")
        #expect(error?.detail?.contains("common name 'localhost'") == true, "\(String(describing: error))")
    }

    @Test("a certificate chain larger than OpenSSL accepts (100 KB) fails once, as permanent: the server sends the same chain every time")
    func oversizedChainIsPermanent() throws {
        let pki = try TestPKI.get()
        // The leaf, then the intermediate 400 times over: about 180 KB of DER, sent whole by
        // Python's ssl module (OpenSSL's s_server refuses to send it).
        let chain = try pki.text("server.pem") + String(repeating: try pki.text("intermediate.pem"), count: 400)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("apns-huge-chain-\(UUID().uuidString).pem").path
        try chain.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(chain.utf8.count > 200_000)
        let server = try BackgroundProcess("/usr/bin/python3", ["-c", """
            import socket, ssl, sys
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(sys.argv[1], sys.argv[2])
            ctx.set_alpn_protocols(["h2"])
            s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
            print("PORT", s.getsockname()[1], flush=True)
            c, _ = s.accept()
            try:
                ctx.wrap_socket(c, server_side=True)
            except Exception as e:
                print("REFUSED", e, flush=True)
            """, path, pki.path("server.key")], log: "python-huge-chain")
        defer { server.stop() }
        var port = 0
        #expect(server.waitForLog { log in
            port = log.split(separator: "\n").first { $0.hasPrefix("PORT ") }.flatMap { Int($0.dropFirst(5)) } ?? 0
            return port > 0
        })
        let error = connectionError(TLSEndpoint(host: "localhost", port: port), try .trustingTestCA())
        #expect(error?.code == .tlsFailure, "\(String(describing: error))")
        #expect(error?.isPermanent == true, "\(String(describing: error))")
        #expect(error?.detail?.contains("larger than TLS clients accept") == true, "\(String(describing: error))")
    }

    @Test("a trusted intermediate is an anchor: its leaf verifies without the root (curl's partial chains)")
    func intermediateAloneIsTrusted() throws {
        let server = try OpenSSLServer(certificate: "chainserver", options: ["-alpn", "h2", "-rev"])
        defer { server.stop() }
        let pki = try TestPKI.get()
        let stream = try connectForTest(
            TLSEndpoint(host: "localhost", port: server.port),
            TLSConfiguration(trustRoots: .certificates(try pki.text("intermediate.pem"))))
        stream.close()
        // Without it (the root alone, and the server sends no chain), verification fails.
        let second = try OpenSSLServer(certificate: "chainserver", options: ["-alpn", "h2", "-rev"])
        defer { second.stop() }
        let error = connectionError(TLSEndpoint(host: "localhost", port: second.port), try .trustingTestCA())
        #expect(error?.code == .tlsFailure && error?.isPermanent == true, "\(String(describing: error))")
    }

    @Test("TLS 1.2: only ephemeral AEAD suites (RFC 9113 §9.2.2); a server offering AES128-SHA alone is refused, one offering ECDHE with AES-GCM is not")
    func http2CipherSuitesOnly() throws {
        let weak = try OpenSSLServer(options: ["-alpn", "h2", "-rev", "-no_tls1_3", "-cipher", "AES128-SHA"])
        defer { weak.stop() }
        let error = connectionError(TLSEndpoint(host: "localhost", port: weak.port), try .trustingTestCA())
        #expect(error?.code == .tlsFailure, "\(String(describing: error))")
        #expect(error?.mayHaveReachedAPNs == false)
        let strong = try OpenSSLServer(options: ["-alpn", "h2", "-rev", "-no_tls1_3", "-cipher", "ECDHE-ECDSA-AES128-GCM-SHA256"])
        defer { strong.stop() }
        let stream = try connectForTest(TLSEndpoint(host: "localhost", port: strong.port), try .trustingTestCA())
        stream.close()
    }

    @Test("a server's request to renegotiate TLS 1.2 is refused (RFC 9113 §9.2.1): one handshake, not two")
    func renegotiationIsRefused() throws {
        let server = try OpenSSLServer(options: ["-alpn", "h2", "-no_tls1_3", "-state"])
        defer { server.stop() }
        let stream = try connectForTest(TLSEndpoint(host: "localhost", port: server.port), try .trustingTestCA())
        defer { stream.close() }
        // s_server's command "r" sends a HelloRequest; the line after it, data. The client
        // reads until that data arrives or the connection ends: refused, s_server may end
        // it with a handshake_failure alert, which the read reports as a TLS failure.
        // First some data, as an HTTP/2 server's SETTINGS come first: after it, a failure
        // may follow requests the server read.
        server.background.type("before renegotiation\n")
        _ = try readUntil(stream) { String(decoding: $0, as: UTF8.self).contains("before renegotiation") }
        server.background.type("r\n")
        server.background.type("after renegotiation\n")
        do {
            _ = try readUntil(stream) { String(decoding: $0, as: UTF8.self).contains("after renegotiation") }
        } catch let error as APNsTransportError {
            // The server ended the session after the client's refusal: requests written
            // before may have been read, so it is no client-certificate refusal.
            #expect(error.code == .connectionClosed, "\(error.debugDescription)")
            #expect(error.mayHaveReachedAPNs)
        }
        // Bounded wait for the server to log what it did.
        for _ in 0..<400 where !server.background.log.contains("write hello request") {
            Thread.sleep(forTimeInterval: 0.05)
        }
        let log = server.background.log
        #expect(log.contains("write hello request"), "\(log)")
        let clientHellos = log.components(separatedBy: "read client hello").count - 1
        #expect(clientHellos == 1, "the client answered the HelloRequest with a new handshake: \(log)")
    }

    @Test func ipAddressMismatchIsRefused() throws {
        let server = try OpenSSLServer(certificate: "example", options: ["-alpn", "h2", "-rev"])
        defer { server.stop() }
        let error = connectionError(server.endpoint, try .trustingTestCA())
        #expect(error?.code == .tlsFailure)
        #expect(error?.detail?.contains("the certificate of 127.0.0.1 is for 'example.com'") == true, "\(String(describing: error))")
    }

    @Test func untrustedCAIsRefusedWithTheSystemStore() throws {
        let server = try OpenSSLServer(options: ["-alpn", "h2", "-rev"])
        defer { server.stop() }
        let error = connectionError(server.endpoint, .default)
        #expect(error?.code == .tlsFailure)
        #expect(error?.detail?.contains("unable to get local issuer certificate") == true, "\(String(describing: error))")
        #expect(error?.detail?.contains("TLSConfiguration(trustRoots: .certificates(pem))") == true)
    }

    @Test func certificateFromAnotherCAIsRefused() throws {
        let server = try OpenSSLServer(certificate: "untrusted", options: ["-alpn", "h2", "-rev"])
        defer { server.stop() }
        let error = connectionError(server.endpoint, try .trustingTestCA())
        #expect(error?.code == .tlsFailure)
        #expect(error?.detail?.contains("does not chain to the CA certificates in TrustRoots.certificates(_:)") == true, "\(String(describing: error))")
    }

    @Test func expiredServerCertificateIsRefused() throws {
        let server = try OpenSSLServer(certificate: "expired", options: ["-alpn", "h2", "-rev"])
        defer { server.stop() }
        let error = connectionError(server.endpoint, try .trustingTestCA())
        #expect(error?.code == .tlsFailure)
        let notAfter = try run("openssl", ["x509", "-in", TestPKI.get().path("expired.pem"), "-noout", "-enddate", "-dateopt", "iso_8601"])
        // openssl prints e.g. "notAfter=2026-11-21 03:55:26Z"; we print ISO 8601 with a T.
        let stamp = notAfter.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "notAfter=", with: "").replacingOccurrences(of: " ", with: "T")
        #expect(error?.detail?.contains("expired on \(stamp)") == true, "\(String(describing: error)) vs \(stamp)")
    }

    @Test func insecureModeAcceptsAnyCertificate() throws {
        let server = try OpenSSLServer(certificate: "untrusted", options: ["-alpn", "h2", "-rev"])
        defer { server.stop() }
        let stream = try TLSStream.connect(
            to: TLSEndpoint(host: "localhost", port: server.port),
            configuration: TLSConfiguration(trustRoots: .insecureNoVerification_forTestingOnly), timeout: .seconds(10))
        stream.close()
    }

    @Test(arguments: [[String](), ["-alpn", "http/1.1"]])
    func serverWithoutH2IsRefused(alpn: [String]) throws {
        let server = try OpenSSLServer(options: alpn + ["-rev"])
        defer { server.stop() }
        let error = connectionError(server.endpoint, try .trustingTestCA())
        #expect(error?.code == .tlsFailure)
        #expect(error?.detail?.contains("the server did not negotiate HTTP/2 (ALPN h2); APNs requires it") == true, "\(String(describing: error))")
    }

    @Test func tls11OnlyServerIsRefused() throws {
        let server = try OpenSSLServer(options: ["-alpn", "h2", "-rev", "-tls1_1", "-cipher", "DEFAULT:@SECLEVEL=0"])
        defer { server.stop() }
        let error = connectionError(server.endpoint, try .trustingTestCA())
        #expect(error?.code == .tlsFailure)
        #expect(error?.detail?.contains("APNs and this client need TLS 1.2 or later") == true, "\(String(describing: error))")
    }

    /// OpenSSL's s_server offering only TLS 1.0 (or 1.1) answers a ClientHello for TLS 1.2
    /// and 1.3 with a protocol_version alert: the error names the versions.
    @Test(arguments: ["-tls1", "-tls1_1"])
    func legacyOnlyServerWithAlertIsNamed(option: String) throws {
        let server = try OpenSSLServer(options: ["-alpn", "h2", "-rev", option, "-cipher", "DEFAULT:@SECLEVEL=0"])
        defer { server.stop() }
        let error = connectionError(server.endpoint, try .trustingTestCA())
        #expect(error?.code == .tlsFailure)
        #expect(error?.detail?.contains("APNs and this client need TLS 1.2 or later") == true, "\(String(describing: error))")
    }

    /// A server that closes the connection on a TLS 1.2/1.3 ClientHello without an alert,
    /// yet completes a TLS 1.0 handshake (Python's ssl module, run by the test): the
    /// client's probe names the version instead of reporting "the connection closed".
    @Test func legacyOnlyServerThatClosesSilentlyIsNamed() throws {
        let pki = try TestPKI.get()
        let server = try BackgroundProcess("/usr/bin/python3", ["-c", """
            import socket, ssl, sys
            s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(2)
            print("PORT", s.getsockname()[1], flush=True)
            c, _ = s.accept(); c.recv(4096); c.close()          # the ClientHello: closed, no alert
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.minimum_version = ssl.TLSVersion.TLSv1; ctx.maximum_version = ssl.TLSVersion.TLSv1
            ctx.set_ciphers("ALL:@SECLEVEL=0")
            ctx.load_cert_chain(sys.argv[1], sys.argv[2])
            c, _ = s.accept(); c.settimeout(5)
            try:
                t = ctx.wrap_socket(c, server_side=True); print("LEGACY", t.version(), flush=True); t.close()
            except Exception as e:
                print("FAILED", e, flush=True)
            """, pki.path("server.pem"), pki.path("server.key")], log: "legacy")
        defer { server.stop() }
        var port = 0
        #expect(server.waitForLog { log in
            guard let line = log.split(separator: "\n").first(where: { $0.hasPrefix("PORT ") }) else { return false }
            port = Int(line.split(separator: " ").last ?? "") ?? 0
            return port > 0
        })
        let error = connectionError(TLSEndpoint(host: "127.0.0.1", port: port), try .trustingTestCA())
        #expect(error?.code == .tlsFailure)
        #expect(error?.mayHaveReachedAPNs == false)
        // Python's own report of the probe's handshake: TLSv1.
        #expect(server.waitForLog { $0.contains("LEGACY") || $0.contains("FAILED") })
        #expect(server.log.contains("LEGACY TLSv1"), "\(server.log)")
        #expect(error?.detail?.contains("offers only TLSv1:") == true, "\(String(describing: error))")
        #expect(error?.detail?.contains("APNs and this client need TLS 1.2 or later") == true)
    }

    @Test func plainTCPServerIsRefused() throws {
        // A proxy port or an HTTP port answers a ClientHello with plain text.
        let server = try BackgroundProcess("/usr/bin/python3", ["-c", """
            import socket,sys
            s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(1)
            print("PORT", s.getsockname()[1], flush=True)
            c,_=s.accept(); c.recv(4096); c.sendall(b"HTTP/1.1 400 Bad Request\\r\\nContent-Length: 0\\r\\n\\r\\n"); c.close()
            """], log: "plain")
        defer { server.stop() }
        var port = 0
        #expect(server.waitForLog { log in
            port = log.split(separator: " ").last.flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 0
            return port > 0
        })
        let error = connectionError(TLSEndpoint(host: "127.0.0.1", port: port), try .trustingTestCA())
        #expect(error?.code == .tlsFailure)
        #expect(error?.detail?.contains("does not speak TLS") == true, "\(String(describing: error))")
    }

    // MARK: Client certificates

    @Test func serverRequiringAClientCertificateRefusesNone() throws {
        let pki = try TestPKI.get()
        let server = try OpenSSLServer(options: ["-alpn", "h2", "-rev", "-Verify", "1", "-verify_return_error", "-CAfile", pki.path("ca.pem")])
        defer { server.stop() }
        let error = connectionErrorAfterFirstRead(server.endpoint, try .trustingTestCA())
        #expect(error?.code == .tlsFailure)
        #expect(error?.mayHaveReachedAPNs == false)
        #expect(error?.detail?.contains("requires a client certificate: set TLSConfiguration(clientIdentity:)") == true, "\(String(describing: error))")
    }

    /// The intermediate loaded with the client certificate is sent with it: the server
    /// trusts only the root. Without the intermediate, the same server refuses.
    @Test(arguments: ["pem", "p12", "leaf-only"])
    func clientIntermediatesAreSent(source: String) throws {
        let pki = try TestPKI.get()
        let identity = switch source {
        case "pem": try ClientIdentity(certificatePEM: pki.text("chainclient-with-intermediate.pem"), privateKeyPEM: pki.text("chainclient.key"))
        case "p12": try ClientIdentity(pkcs12File: pki.path("chainclient.p12"), password: TestPKI.password)
        default: try ClientIdentity(certificatePEM: pki.text("chainclient.pem"), privateKeyPEM: pki.text("chainclient.key"))
        }
        let server = try OpenSSLServer(options: ["-alpn", "h2", "-rev", "-Verify", "2", "-verify_return_error", "-CAfile", pki.path("ca.pem")])
        defer { server.stop() }
        if source == "leaf-only" {
            let error = connectionErrorAfterFirstRead(server.endpoint, try .trustingTestCA(clientIdentity: identity))
            #expect(error?.code == .tlsFailure)
            #expect(error?.detail?.contains("rejected the client certificate 'Chained Push Services'") == true, "\(String(describing: error))")
            return
        }
        #expect(identity.chain.count == 1)
        let stream = try connectForTest(server.endpoint, .trustingTestCA(clientIdentity: identity))
        defer { stream.close() }
        try writeAll(stream, Array("chain\n".utf8))
        let (reply, _) = try readUntil(stream) { $0.contains(UInt8(ascii: "\n")) }
        #expect(String(decoding: reply, as: UTF8.self).contains("niahc"))
    }

    @Test func trustRootsWithoutACertificateAreATLSFailure() throws {
        let error = connectionError(TLSEndpoint(host: "127.0.0.1", port: 1), TLSConfiguration(trustRoots: .certificates("not a PEM")))
        #expect(error?.code == .tlsFailure)
        #expect(error?.detail?.contains("holds no certificate") == true, "\(String(describing: error))")
    }

    @Test func clientCertificateFromAnUnknownCAIsRejected() throws {
        let pki = try TestPKI.get()
        let stranger = try ClientIdentity(certificatePEM: pki.text("untrusted.pem"), privateKeyPEM: pki.text("untrusted.key"))
        let server = try OpenSSLServer(options: ["-alpn", "h2", "-rev", "-Verify", "1", "-verify_return_error", "-CAfile", pki.path("ca.pem")])
        defer { server.stop() }
        let error = connectionErrorAfterFirstRead(server.endpoint, try .trustingTestCA(clientIdentity: stranger))
        #expect(error?.code == .tlsFailure)
        #expect(error?.detail?.contains("rejected the client certificate 'localhost'") == true, "\(String(describing: error))")
        #expect(error?.isPermanent == true)
    }

    @Test(arguments: ["pem", "p12", "legacy-p12"])
    func clientCertificateIsPresented(format: String) throws {
        let pki = try TestPKI.get()
        let identity = switch format {
        case "pem": try ClientIdentity(certificatePEM: pki.text("client.pem"), privateKeyPEM: pki.text("client.key"))
        case "p12": try ClientIdentity(pkcs12File: pki.path("client.p12"), password: TestPKI.password)
        default: try ClientIdentity(pkcs12File: pki.path("client-legacy.p12"), password: TestPKI.password)
        }
        let server = try OpenSSLServer(options: ["-alpn", "h2", "-rev", "-Verify", "1", "-verify_return_error", "-CAfile", pki.path("ca.pem")])
        defer { server.stop() }
        let stream = try connectForTest(server.endpoint, .trustingTestCA(clientIdentity: identity))
        defer { stream.close() }
        try writeAll(stream, Array("ping\n".utf8))
        let (reply, _) = try readUntil(stream) { $0.contains(UInt8(ascii: "\n")) }
        #expect(String(decoding: reply, as: UTF8.self).contains("gnip"))
        // s_server verified our certificate against the CA and logs its subject.
        #expect(server.background.log.contains("CN = Apple Push Services: com.example.app"))
    }
}

/// With TLS 1.3 the client finishes its handshake before the server checks the client
/// certificate; the refusal then arrives on the first read. Either is a clear error.
func connectionErrorAfterFirstRead(_ endpoint: TLSEndpoint, _ configuration: TLSConfiguration) -> APNsTransportError? {
    do {
        let stream = try TLSStream.connect(to: endpoint, configuration: configuration, timeout: .seconds(10))
        defer { stream.close() }
        try writeAll(stream, Array("x\n".utf8))
        let (_, closed) = try readUntil(stream) { _ in false }
        Issue.record("no error; closed: \(closed)")
        return nil
    } catch let error as APNsTransportError {
        return error
    } catch {
        Issue.record("unexpected \(error)")
        return nil
    }
}
