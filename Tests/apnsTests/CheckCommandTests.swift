import APNsCore
import APNsMockServer
import Foundation
import Testing

/// `apns check` against the mock server, which checks a provider token's ES256 signature
/// with the public key of a `.p8` made by openssl, and a certificate against its CA.
@Suite("apns check")
struct CheckCommandTests {
    /// The flags of a token check against `server` with `key`.
    private func tokenCheck(_ server: MockAPNsServer, _ directory: URL, _ key: Fixtures.KeyPair, keyID: String = Fixtures.keyID) throws -> [String] {
        let caPath = directory.appendingPathComponent("check-ca.pem").path
        try server.writeCertificateAuthority(to: caPath)
        return ["check", "--key-file", key.privateKeyPath, "--key-id", keyID, "--team-id", Fixtures.teamID,
                "--host", "127.0.0.1", "--port", String(server.port), "--ca-file", caPath]
    }

    /// A server in token mode that knows `key` under ``Fixtures/keyID``.
    private func withTokenServer(_ body: (MockAPNsServer, URL, Fixtures.KeyPair) async throws -> Void) async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = try await Fixtures.makeKey(in: directory)
        var verifier = ProviderTokenVerifier()
        try verifier.register(publicKeyPEM: key.publicKeyPEM, keyID: Fixtures.keyID)
        try await withMockAPNsServer(configuration: .init(bundleIDs: [Fixtures.topic], authentication: .providerToken(.signature(verifier)))) { server in
            try await body(server, directory, key)
        }
    }

    @Test("right credentials and topic: the probe is a silent background push to a token of zeros; BadDeviceToken means ok")
    func accepted() async throws {
        try await withTokenServer { server, directory, key in
            // APNs answers a token no device has with BadDeviceToken; the mock server is told to.
            server.respond(toDeviceToken: String(repeating: "0", count: 64), with: ScriptedResponse(status: 400, reason: "BadDeviceToken"))
            let result = try await CLI.run(try tokenCheck(server, directory, key) + ["--topic", Fixtures.topic])
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout.contains("answer: 400 BadDeviceToken"), "\(result)")
            #expect(result.stdout.contains("ok: the credentials and the topic are accepted"))
            let probe = try #require(server.recordedRequests.first)
            #expect(probe.deviceToken == String(repeating: "0", count: 64))
            #expect(probe.value(of: "apns-push-type") == "background")
            #expect(probe.value(of: "apns-priority") == "5")
            #expect(probe.value(of: "apns-topic") == Fixtures.topic)
            let payload = try #require(try JSONSerialization.jsonObject(with: Data(probe.body)) as? [String: Any])
            #expect((payload["aps"] as? [String: Any])?["content-available"] as? Int == 1)
            #expect((payload["aps"] as? [String: Any])?["alert"] == nil)
        }
    }

    @Test("APNS_* variables with white space or a line break at either end are read as APNsSettings reads them")
    func variablesTrimmedAsSettingsTrimThem() async throws {
        try await withTokenServer { server, directory, key in
            server.respond(toDeviceToken: String(repeating: "0", count: 64), with: ScriptedResponse(status: 400, reason: "BadDeviceToken"))
            let caPath = directory.appendingPathComponent("check-ca.pem").path
            try server.writeCertificateAuthority(to: caPath)
            // As a secret made from a file (its final line break) or an env file may leave them.
            let variables = [
                "APNS_ENVIRONMENT": "127.0.0.1:\(server.port)\n",
                "APNS_KEY_FILE": " \(key.privateKeyPath)\n",
                "APNS_KEY_ID": Fixtures.keyID + "\n",
                "APNS_TEAM_ID": " " + Fixtures.teamID,
                "APNS_TOPIC": Fixtures.topic + " \n",
                "APNS_CA_FILE": caPath + "\n",
                "APNS_REQUEST_TIMEOUT": "10\n",
                "APNS_CONNECT_TIMEOUT": " 5\n",
                "APNS_CONNECTIONS": "1\n",
            ]
            let result = try await CLI.run(["check"], environment: variables)
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout.contains("ok: the credentials and the topic are accepted"), "\(result)")
            #expect(server.recordedRequests.first?.value(of: "apns-topic") == Fixtures.topic)
        }
    }

    @Test("a key the server does not know, a topic not its app's: exit 1 with the reason and what to check")
    func refused() async throws {
        try await withTokenServer { server, directory, key in
            let unknownKey = try await CLI.run(try tokenCheck(server, directory, key, keyID: "ZZZ999ZZZZ") + ["--topic", Fixtures.topic])
            #expect(unknownKey.status == 1, "\(unknownKey)")
            #expect(unknownKey.stdout.contains("answer: 403 InvalidProviderToken"), "\(unknownKey)")
            #expect(unknownKey.stdout.contains("problem: the provider token was refused: check the key ID and the team ID"))

            let asJSON = try await CLI.run(try tokenCheck(server, directory, key, keyID: "ZZZ999ZZZZ") + ["--topic", Fixtures.topic, "--json"])
            #expect(asJSON.status == 1)
            let object = try CLI.jsonObject(try #require(asJSON.lines.first))
            #expect(asJSON.lines.count == 1, "\(asJSON)")
            #expect(object["ok"] as? Bool == false)
            #expect(object["status"] as? Int == 403)
            #expect(object["reason"] as? String == "InvalidProviderToken")
            #expect(object["topic"] as? String == Fixtures.topic)

            let otherTopic = try await CLI.run(try tokenCheck(server, directory, key) + ["--topic", "com.example.other"])
            #expect(otherTopic.status == 1, "\(otherTopic)")
            #expect(otherTopic.stdout.contains("problem: the topic"), "\(otherTopic)")
        }
    }

    @Test("nothing listening: exit 1, cannot reach APNs, with what to check; no topic: a usage error")
    func unreachable() async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = try await Fixtures.makeKey(in: directory)
        // A port nothing listens on, held so that no other test's server takes it (one
        // freed by a stopped server was, once, in a parallel run: a TLS failure instead).
        try await CLI.withRefusingPort { port in
            let result = try await CLI.run(["check", "--key-file", key.privateKeyPath, "--key-id", Fixtures.keyID, "--team-id", Fixtures.teamID,
                                            "--host", "127.0.0.1", "--port", String(port), "--topic", Fixtures.topic])
            #expect(result.status == 1, "\(result)")
            #expect(result.stdout.contains("problem: cannot reach APNs"), "\(result)")
            // Refused at once, or, on a loaded machine, the probe's deadline passed while the
            // client waited to try the address again: either way the hint names the network.
            #expect(result.stdout.contains("outbound TCP to port 443") || result.stdout.contains("check the network and the proxy"), "\(result)")
            let noTopic = try await CLI.run(["check", "--no-auth", "--host", "127.0.0.1", "--port", String(port)], environment: ["APNS_TOPIC": ""])
            #expect(noTopic.status == 2, "\(noTopic)")
            #expect(noTopic.stderr.contains("no topic"))
        }
    }

    @Test("a TLS failure's advice fits it: trust-store advice for a chain the system does not trust, none for a server that does not speak TLS")
    func tlsAdviceFitsTheFailure() async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = try await Fixtures.makeKey(in: directory)
        let flags = ["check", "--key-file", key.privateKeyPath, "--key-id", Fixtures.keyID, "--team-id", Fixtures.teamID,
                     "--topic", Fixtures.topic, "--host", "127.0.0.1"]
        // The mock server's CA is not in the system trust store (no --ca-file).
        try await withMockAPNsServer { server in
            let result = try await CLI.run(flags + ["--port", String(server.port)])
            #expect(result.status == 1, "\(result)")
            #expect(result.stdout.contains("does not chain to the system trust store"), "\(result)")
            #expect(result.stdout.contains("check the trust store (ca-certificates)"), "\(result)")
        }
        // A plain-text HTTP/1.1 server (Python's http.server): not a trust-store matter.
        let script = directory.appendingPathComponent("plain.py")
        try """
            import http.server, signal, socketserver
            class H(http.server.BaseHTTPRequestHandler):
                def do_GET(self): self.send_response(400); self.end_headers()
            s = socketserver.TCPServer(("127.0.0.1", 0), H)
            print("PORT", s.server_address[1], flush=True)
            signal.alarm(60)  # gone within a minute even if the test could not stop it
            s.serve_forever()
            """.write(to: script, atomically: true, encoding: .utf8)
        let server = try CLI.launch("/usr/bin/python3", [script.path])
        defer { server.cleanUp() }
        let port = try #require(Int(try await server.waitForLine(startingWith: "PORT ")))
        let plain = try await CLI.run(flags + ["--port", String(port)])
        #expect(plain.status == 1, "\(plain)")
        #expect(plain.stdout.contains("does not speak TLS"), "\(plain)")
        #expect(!plain.stdout.contains("trust store"), "\(plain)")
    }

    @Test("a client certificate: its name and expiry shown before the probe; a topic it does not cover is warned about")
    func certificate() async throws {
        try await Fixtures.withCertificateServer { directory, target, server in
            server.respond(toDeviceToken: String(repeating: "0", count: 64), with: ScriptedResponse(status: 400, reason: "BadDeviceToken"))
            let check = ["check", "--cert-file", directory.appendingPathComponent("client.p12").path, "--cert-password", Fixtures.p12Password] + target
            let result = try await CLI.run(check + ["--topic", Fixtures.topic])
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout.contains("certificate: "), "\(result)")
            #expect(result.stdout.contains("ok: the credentials and the topic are accepted"))
            let other = try await CLI.run(check + ["--topic", "com.example.other"])
            #expect(other.stderr.contains("not com.example.other"), "\(other)")
        }
    }
}
