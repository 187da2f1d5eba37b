import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `apns mock-server` as a separate process, spoken to with curl (nghttp2 + OpenSSL, not our code).
@Suite("apns mock-server")
struct MockServerCommandTests {
    @Test("prints its port and CA file, answers curl like APNs, and stops cleanly", arguments: [SIGTERM, SIGINT])
    func answersCurlAndStops(signal: Int32) async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let caPath = directory.appendingPathComponent("ca.pem").path
        let badToken = String(repeating: "2b", count: 32)
        let server = try CLI.start([
            "mock-server", "--ca-file", caPath, "--unregistered", Fixtures.unregisteredToken, "--bad-device-token", badToken.uppercased(), "--verbose",
        ])
        defer { server.cleanUp() }
        let port = try #require(Int(try await server.waitForLine(startingWith: "port: ")))
        #expect(try await server.waitForLine(startingWith: "ca-file: ") == caPath)
        #expect(try String(contentsOfFile: caPath, encoding: .utf8).contains("-----BEGIN CERTIFICATE-----"))

        func post(_ token: String) async throws -> (status: Int, body: String) {
            let result = try await CLI.tool("/usr/bin/curl", [
                "--silent", "--http2", "--cacert", caPath, "--max-time", "20",
                "--header", "apns-topic: \(Fixtures.topic)", "--header", "apns-push-type: alert",
                "--data", #"{"aps":{"alert":"Hello"}}"#, "--write-out", "\n%{http_code} %{http_version}",
                "https://localhost:\(port)/3/device/\(token)",
            ])
            #expect(result.status == 0, "\(result)")
            let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false)
            let statusLine = lines.last.map(String.init) ?? ""
            #expect(statusLine.hasSuffix(" 2"), "curl did not speak HTTP/2: \(statusLine)")
            return (Int(statusLine.split(separator: " ").first ?? "") ?? 0, lines.dropLast().joined(separator: "\n"))
        }

        let accepted = try await post(Fixtures.goodToken)
        #expect(accepted.status == 200)
        let unregistered = try await post(Fixtures.unregisteredToken)
        #expect(unregistered.status == 410)
        let body = try CLI.jsonObject(unregistered.body)
        #expect(body["reason"] as? String == "Unregistered")
        #expect(body["timestamp"] is NSNumber)
        let bad = try await post(badToken)
        #expect(bad.status == 400)
        #expect(try CLI.jsonObject(bad.body)["reason"] as? String == "BadDeviceToken")

        _ = try await server.waitForLine(startingWith: "#1 ")
        kill(server.pid, signal)
        let status = try await server.wait(timeout: .seconds(20))
        #expect(status == 0, "\(server.stdout)\(server.stderr)")
        let output = server.stdout
        #expect(output.contains("received \(signal == SIGINT ? "SIGINT" : "SIGTERM"): stopping"))
        #expect(output.contains("stopped after 3 requests (1 accepted, 2 rejected)"), "\(output)")
        #expect(output.contains("→ 410 Unregistered"), "\(output)")
        // The per-request lines show only the start of a device token.
        #expect(!output.contains(Fixtures.unregisteredToken), "\(output)")
        #expect(server.stderr.isEmpty, "\(server.stderr)")
    }

    @Test("--port and --certificate: stopped and started again, the server is where curl looks, with the certificate it trusts")
    func restartsWhereClientsLook() async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await Fixtures.makeServerCertificate(in: directory)
        let trusted = directory.appendingPathComponent("server-ca.pem").path
        // A port the system picks: the first server takes it, the second is told it.
        let first = try CLI.start([
            "mock-server", "--certificate", directory.appendingPathComponent("server.pem").path,
            "--certificate-key", directory.appendingPathComponent("server.key").path,
        ])
        defer { first.cleanUp() }
        let port = try #require(Int(try await first.waitForLine(startingWith: "port: ")))
        #expect(try await first.waitForLine(startingWith: "ca-file: ").hasPrefix("none"))

        func status() async throws -> String {
            let result = try await CLI.tool("/usr/bin/curl", [
                "--silent", "--http2", "--cacert", trusted, "--max-time", "20",
                "--header", "apns-topic: \(Fixtures.topic)", "--data", #"{"aps":{"alert":"Hello"}}"#,
                "--output", "/dev/null", "--write-out", "%{http_code}", "https://localhost:\(port)/3/device/\(Fixtures.goodToken)",
            ])
            return result.stdout
        }
        #expect(try await status() == "200")
        kill(first.pid, SIGTERM)
        #expect(try await first.wait(timeout: .seconds(20)) == 0)
        // Gone: curl cannot connect (exit 7 prints 000).
        #expect(try await status() == "000")

        let second = try CLI.start([
            "mock-server", "--port", String(port), "--certificate", directory.appendingPathComponent("server.pem").path,
            "--certificate-key", directory.appendingPathComponent("server.key").path,
        ])
        defer { second.cleanUp() }
        #expect(Int(try await second.waitForLine(startingWith: "port: ")) == port)
        #expect(try await status() == "200")
        kill(second.pid, SIGTERM)
        #expect(try await second.wait(timeout: .seconds(20)) == 0)

        // Options that do not go together are refused before anything starts.
        let unpaired = try await CLI.run(["mock-server", "--certificate", trusted])
        #expect(unpaired.status == 2, "\(unpaired)")
        #expect(unpaired.stderr.contains("--certificate-key"), "\(unpaired)")
    }

    @Test("with --token-key, a request without a provider token is refused 403 MissingProviderToken")
    func requiresProviderToken() async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = try await Fixtures.makeKey(in: directory)
        let publicPath = directory.appendingPathComponent("public.pem").path
        let caPath = directory.appendingPathComponent("ca.pem").path
        let server = try CLI.start(["mock-server", "--ca-file", caPath, "--token-key", publicPath, "--key-id", Fixtures.keyID])
        defer { server.cleanUp() }
        #expect(key.publicKeyPEM.contains("PUBLIC KEY"))
        let port = try #require(Int(try await server.waitForLine(startingWith: "port: ")))
        // The line it suggests names the credentials a token server takes.
        let hint = try await server.waitForLine(startingWith: "try: ")
        #expect(hint.contains("--key-file <AuthKey.p8> --key-id \(Fixtures.keyID) --team-id <team ID>"), "\(hint)")
        let result = try await CLI.tool("/usr/bin/curl", [
            "--silent", "--http2", "--cacert", caPath, "--max-time", "20",
            "--header", "apns-topic: \(Fixtures.topic)", "--data", #"{"aps":{"alert":"Hello"}}"#,
            "--write-out", "\n%{http_code}", "https://localhost:\(port)/3/device/\(Fixtures.goodToken)",
        ])
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.last == "403", "\(result)")
        #expect(try CLI.jsonObject(String(lines.first ?? ""))["reason"] as? String == "MissingProviderToken")
        kill(server.pid, SIGTERM)
        #expect(try await server.wait(timeout: .seconds(20)) == 0)
    }

    @Test("with --client-ca, curl presenting a client certificate from that CA is accepted; without one it is refused")
    func clientCertificates() async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await Fixtures.makeClientCertificate(in: directory)
        let clientCA = directory.appendingPathComponent("ca.pem").path
        let caPath = directory.appendingPathComponent("server-ca.pem").path
        let server = try CLI.start(["mock-server", "--ca-file", caPath, "--client-ca", clientCA])
        defer { server.cleanUp() }
        let port = try #require(Int(try await server.waitForLine(startingWith: "port: ")))
        func post(_ extra: [String]) async throws -> [Substring] {
            let result = try await CLI.tool("/usr/bin/curl", [
                "--silent", "--http2", "--cacert", caPath, "--max-time", "20",
                "--header", "apns-topic: \(Fixtures.topic)", "--data", #"{"aps":{"alert":"Hello"}}"#,
                "--write-out", "\n%{http_code}", "https://localhost:\(port)/3/device/\(Fixtures.goodToken)",
            ] + extra)
            return result.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        }
        let withCertificate = try await post([
            "--cert", directory.appendingPathComponent("client.pem").path,
            "--key", directory.appendingPathComponent("client.key").path,
        ])
        #expect(withCertificate.last == "200", "\(withCertificate)")
        // No certificate and no token: refused (the handshake, or 403 for the missing token).
        let without = try await post([])
        #expect(without.last != "200", "\(without)")
        kill(server.pid, SIGTERM)
        #expect(try await server.wait(timeout: .seconds(20)) == 0)
    }

    @Test("with --team-id, a token signed by the registered key but issued for another team is 403 InvalidProviderToken")
    func teamIDIsChecked() async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = try await Fixtures.makeKey(in: directory)
        #expect(key.publicKeyPEM.contains("PUBLIC KEY"))
        let publicPath = directory.appendingPathComponent("public.pem").path
        for (serverTeam, expected) in [("OTHERTEAM1", "rejected 403 InvalidProviderToken"), (Fixtures.teamID, "accepted apns-id ")] {
            let caPath = directory.appendingPathComponent("ca-\(serverTeam).pem").path
            let server = try CLI.start([
                "mock-server", "--ca-file", caPath, "--token-key", publicPath, "--key-id", Fixtures.keyID,
                "--team-id", serverTeam, "--bundle-id", Fixtures.topic,
            ])
            defer { server.cleanUp() }
            let port = try #require(Int(try await server.waitForLine(startingWith: "port: ")))
            let result = try await CLI.run([
                "send", "--key-file", key.privateKeyPath, "--key-id", Fixtures.keyID, "--team-id", Fixtures.teamID,
                "--host", "127.0.0.1", "--port", String(port), "--ca-file", caPath,
                "--topic", Fixtures.topic, "--body", "Hello", Fixtures.goodToken,
            ])
            #expect(result.lines.first?.contains(expected) == true, "server team \(serverTeam): \(result)")
            #expect(result.status == (serverTeam == Fixtures.teamID ? 0 : 1), "\(result)")
            kill(server.pid, SIGTERM)
            #expect(try await server.wait(timeout: .seconds(20)) == 0)
        }
    }

    @Test("clients that vanish while it answers (FIN or RST mid-stream) never end the process")
    func survivesVanishingClients() async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let caPath = directory.appendingPathComponent("ca.pem").path
        let server = try CLI.start(["mock-server", "--ca-file", caPath])
        defer { server.cleanUp() }
        let port = try #require(Int(try await server.waitForLine(startingWith: "port: ")))
        // Python's ssl module, not our code, is the client: it pipelines 1,000 requests,
        // then closes (FIN) or resets (RST) the connection while the server is still
        // writing answers. A write to such a socket raises SIGPIPE, whose default action
        // ends the process; before the server's thread blocked it, this killed it (141).
        let script = directory.appendingPathComponent("vanish.py")
        try Data(Self.vanishingClient.utf8).write(to: script)
        let clients = try await CLI.tool("/usr/bin/python3", [script.path, String(port), caPath, Fixtures.goodToken], timeout: .seconds(120))
        #expect(clients.status == 0, "\(clients)")
        #expect(kill(server.pid, 0) == 0, "the server died: \(server.stdout)\(server.stderr)")

        let after = try await CLI.tool("/usr/bin/curl", [
            "--silent", "--http2", "--cacert", caPath, "--max-time", "20",
            "--header", "apns-topic: \(Fixtures.topic)", "--data", #"{"aps":{"alert":"Hello"}}"#,
            "--write-out", "%{http_code}", "--output", "/dev/null", "https://localhost:\(port)/3/device/\(Fixtures.goodToken)",
        ])
        #expect(after.stdout == "200", "\(after)")
        kill(server.pid, SIGTERM)
        #expect(try await server.wait(timeout: .seconds(20)) == 0, "\(server.stdout)\(server.stderr)")
        #expect(server.stdout.contains("stopped after"), "\(server.stdout)")
    }

    /// Connects 30 times with TLS + ALPN h2, pipelines 1,000 POSTs (HPACK literals without
    /// indexing), waits 0-30 ms, then shuts the socket down or resets it (SO_LINGER 0).
    static let vanishingClient = #"""
    import socket, ssl, struct, sys, time
    port, ca, token = int(sys.argv[1]), sys.argv[2], sys.argv[3]

    def literal(name, value):
        n, v = name.encode(), value.encode()
        return bytes([0x00, len(n)]) + n + bytes([len(v)]) + v

    def frame(kind, flags, stream, payload):
        return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload

    block = b"".join(literal(n, v) for n, v in [
        (":method", "POST"), (":scheme", "https"), (":path", "/3/device/" + token),
        (":authority", "localhost"), ("apns-topic", "com.example.app"), ("apns-push-type", "alert")])
    body = b'{"aps":{"alert":"hi"}}'
    requests = b"".join(frame(1, 4, s, block) + frame(0, 1, s, body) for s in range(1, 2000, 2))
    context = ssl.create_default_context(cafile=ca)
    context.set_alpn_protocols(["h2"])
    for round in range(3):
        for pause in (0, 0.005, 0.01, 0.02, 0.03):
            for reset in (False, True):
                tls = context.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="localhost")
                assert tls.selected_alpn_protocol() == "h2"
                try:
                    tls.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b"") + requests)
                    time.sleep(pause)
                    if reset:
                        tls.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    else:
                        tls.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass  # the server may close first (for example after a GOAWAY)
                tls.close()
    """#

    @Test("two servers started without --ca-file write their CAs to different files, and each file verifies its own server (curl)")
    func twoServersTwoCAFiles() async throws {
        let first = try CLI.start(["mock-server"])
        defer { first.cleanUp() }
        let firstPort = try #require(Int(try await first.waitForLine(startingWith: "port: ")))
        let firstCA = try await first.waitForLine(startingWith: "ca-file: ")
        let second = try CLI.start(["mock-server"])
        defer { second.cleanUp() }
        let secondPort = try #require(Int(try await second.waitForLine(startingWith: "port: ")))
        let secondCA = try await second.waitForLine(startingWith: "ca-file: ")
        #expect(firstCA != secondCA)

        func status(port: Int, ca: String) async throws -> String {
            let result = try await CLI.tool("/usr/bin/curl", [
                "--silent", "--http2", "--cacert", ca, "--max-time", "20", "--output", "/dev/null",
                "--header", "apns-topic: \(Fixtures.topic)", "--data", #"{"aps":{"alert":"Hello"}}"#,
                "--write-out", "%{http_code}", "https://localhost:\(port)/3/device/\(Fixtures.goodToken)",
            ])
            return result.stdout
        }
        #expect(try await status(port: firstPort, ca: firstCA) == "200")
        #expect(try await status(port: secondPort, ca: secondCA) == "200")
        // The other server's CA does not verify: curl fails the handshake (no HTTP status).
        #expect(try await status(port: firstPort, ca: secondCA) == "000")

        kill(second.pid, SIGTERM)
        #expect(try await second.wait(timeout: .seconds(20)) == 0, "\(second.stdout)\(second.stderr)")
        kill(first.pid, SIGTERM)
        #expect(try await first.wait(timeout: .seconds(20)) == 0, "\(first.stdout)\(first.stderr)")
        // A file named for its port is the server's own, and goes with it.
        for ca in [firstCA, secondCA] where ca.hasSuffix("-\(firstPort).pem") || ca.hasSuffix("-\(secondPort).pem") {
            #expect(!FileManager.default.fileExists(atPath: ca), "\(ca)")
        }
    }

    @Test("a --ca-file or --port-file in a folder that does not exist: exit 1, one line naming the folder")
    func unwritableFiles() async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let missing = directory.appendingPathComponent("no-such-folder")
        for arguments in [["--ca-file", missing.appendingPathComponent("ca.pem").path],
                          ["--ca-file", directory.appendingPathComponent("ca.pem").path, "--port-file", missing.appendingPathComponent("port").path]] {
            let result = try await CLI.run(["mock-server"] + arguments)
            #expect(result.status == 1, "\(result)")
            #expect(result.errorLines == ["apns: cannot write \(arguments.last!): the folder \(missing.path) does not exist"], "\(result)")
        }
    }

    @Test("a --port-file that cannot be written leaves no CA file of the server's own behind")
    func unwritablePortFileRemovesOwnCAFile() async throws {
        // A temporary directory of the test's own: the first server claims the default CA
        // file there, so the second writes one named for its port.
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let environment = ["TMPDIR": directory.path]
        let first = try CLI.start(["mock-server"], environment: environment)
        defer { first.cleanUp() }
        let firstCA = try await first.waitForLine(startingWith: "ca-file: ")
        #expect(firstCA.hasPrefix(directory.path), "TMPDIR not used: \(firstCA)")
        let portFile = directory.appendingPathComponent("no-such-folder/port").path
        let second = try await CLI.run(["mock-server", "--port-file", portFile], environment: environment)
        #expect(second.status == 1 && second.stderr.contains("cannot write \(portFile)"), "\(second)")
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("apns-mock-ca-") }
        #expect(left.isEmpty, "left behind: \(left)")
        kill(first.pid, SIGTERM)
        #expect(try await first.wait(timeout: .seconds(20)) == 0, "\(first.stdout)\(first.stderr)")
    }

    @Test("SIGTERM sent the moment --port-file appears, as a test suite's fixture sends it, stops it cleanly every time: exit 0, the port file removed")
    func signalTheMomentThePortFileAppears() async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // The port file says the server is ready; a signal right after it once found the
        // server before it caught signals, and the default action killed it, the port file
        // left behind (about one start in ten). Busy polling, so the signal follows the file
        // as closely as a foreign test suite's can.
        for run in 0..<30 {
            let portFile = directory.appendingPathComponent("port-\(run)").path
            let server = try CLI.start(["mock-server", "--ca-file", directory.appendingPathComponent("ca.pem").path, "--port-file", portFile])
            defer { server.cleanUp() }
            let deadline = ContinuousClock.now + .seconds(90)
            while access(portFile, F_OK) != 0, server.process.isRunning, ContinuousClock.now < deadline {}
            #expect(access(portFile, F_OK) == 0, "no port file: \(server.stdout)\(server.stderr)")
            kill(server.pid, SIGTERM)
            let status = try await server.wait(timeout: .seconds(20))
            let reason = server.process.terminationReason == .uncaughtSignal ? "killed by signal \(status)" : "exit \(status)"
            #expect(status == 0 && server.process.terminationReason == .exit, "run \(run): \(reason)\n\(server.stdout)\(server.stderr)")
            #expect(!FileManager.default.fileExists(atPath: portFile), "run \(run): the port file names a port no longer served")
            if status != 0 { break }
        }
    }

    @Test("SIGHUP (its terminal closed) stops it cleanly, as SIGINT and SIGTERM do; the port file goes with it")
    func stopsOnHangUp() async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let portFile = directory.appendingPathComponent("port").path
        let server = try CLI.start(["mock-server", "--ca-file", directory.appendingPathComponent("ca.pem").path, "--port-file", portFile])
        defer { server.cleanUp() }
        let port = try await server.waitForLine(startingWith: "port: ")
        #expect(try String(contentsOfFile: portFile, encoding: .utf8) == port + "\n")
        kill(server.pid, SIGHUP)
        #expect(try await server.wait(timeout: .seconds(20)) == 0, "\(server.stdout)\(server.stderr)")
        #expect(server.stdout.contains("received SIGHUP: stopping") && server.stdout.contains("stopped after"), "\(server.stdout)")
        #expect(!FileManager.default.fileExists(atPath: portFile), "the port file names a port no longer served")
    }
}
