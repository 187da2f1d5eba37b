import APNsCore
import APNsMockServer
import Foundation
import Testing

/// `apns send` against an in-process mock APNs server, over the real HTTP/2 transport.
@Suite("apns send")
struct SendCommandTests {
    /// Runs `body` with a running server and a directory holding its CA file.
    func withServer<T: Sendable>(
        authentication: MockAPNsServer.Authentication = .none,
        _ body: (MockAPNsServer, URL, [String]) async throws -> T
    ) async throws -> T {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        return try await withMockAPNsServer(configuration: .init(bundleIDs: [Fixtures.topic], authentication: authentication)) { server in
            server.respond(toDeviceToken: Fixtures.unregisteredToken, with: .unregistered())
            let caPath = directory.appendingPathComponent("ca.pem").path
            try server.writeCertificateAuthority(to: caPath)
            let target = ["--host", "127.0.0.1", "--port", String(server.port), "--ca-file", caPath]
            return try await body(server, directory, target)
        }
    }

    /// A mock server in token mode that checks each JWT's ES256 signature with the public
    /// key of a `.p8` key made by openssl in a temporary directory.
    func withTokenServer(
        _ body: (MockAPNsServer, URL, Fixtures.KeyPair) async throws -> Void
    ) async throws {
        try await withServer(authentication: .none) { _, directory, _ in
            let key = try await Fixtures.makeKey(in: directory)
            var verifier = ProviderTokenVerifier()
            try verifier.register(publicKeyPEM: key.publicKeyPEM, keyID: Fixtures.keyID)
            try await withMockAPNsServer(configuration: .init(
                bundleIDs: [Fixtures.topic], authentication: .providerToken(.signature(verifier)))
            ) { server in
                try await body(server, directory, key)
            }
        }
    }

    /// The body the server received for `token`, parsed by JSONSerialization.
    func receivedPayload(_ server: MockAPNsServer, token: String) throws -> [String: Any] {
        let request = try #require(server.recordedRequests.first { $0.deviceToken == token })
        return try #require(try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any])
    }

    @Test("a .p8 key, tokens as arguments, payload from flags: one line per token with its remedy, exit 1 for the unregistered one")
    func keyAndFlags() async throws {
        // Token mode: the server checks each JWT's ES256 signature with OpenSSL's public key.
        try await withTokenServer { server, directory, key in
            server.respond(toDeviceToken: Fixtures.unregisteredToken, with: .unregistered())
            let caPath = directory.appendingPathComponent("token-ca.pem").path
            try server.writeCertificateAuthority(to: caPath)
            let result = try await CLI.run([
                "send", "--key-file", key.privateKeyPath, "--key-id", Fixtures.keyID, "--team-id", Fixtures.teamID,
                "--host", "127.0.0.1", "--port", String(server.port), "--ca-file", caPath,
                "--topic", Fixtures.topic, "--title", "Game Request", "--body", "Bob wants to play poker",
                "--badge", "3", "--sound", "default", "--thread-id", "games", "--custom", "game-id=42",
                "--collapse-id", "poker", Fixtures.goodToken, Fixtures.unregisteredToken,
            ])
            #expect(result.status == 1, "\(result)")
            let lines = result.lines
            #expect(lines.count == 3, "\(result)")
            #expect(lines.first?.hasPrefix("\(Fixtures.goodToken)  accepted apns-id ") == true, "\(result)")
            #expect(lines.dropFirst().first?.contains("rejected 410 Unregistered → remove this device token") == true, "\(result)")
            #expect(lines.last?.hasPrefix("2 notifications: 1 accepted, 1 rejected, 0 not sent or failed") == true, "\(result)")

            let payload = try receivedPayload(server, token: Fixtures.goodToken)
            let aps = try #require(payload["aps"] as? [String: Any])
            let alert = try #require(aps["alert"] as? [String: Any])
            #expect(alert["title"] as? String == "Game Request")
            #expect(alert["body"] as? String == "Bob wants to play poker")
            #expect(aps["badge"] as? Int == 3)
            #expect(aps["sound"] as? String == "default")
            #expect(aps["thread-id"] as? String == "games")
            #expect(payload["game-id"] as? Int == 42)
            let request = try #require(server.recordedRequests.first { $0.deviceToken == Fixtures.goodToken })
            #expect(request.value(of: "apns-collapse-id") == "poker")
            #expect(request.value(of: "apns-push-type") == "alert")
            #expect(request.providerToken?.keyID == Fixtures.keyID)
            #expect(request.status == 200)
        }
    }

    @Test("credentials and the environment from APNS_* variables (as APNsSettings reads them), no flag")
    func credentialsFromEnvironmentVariables() async throws {
        try await withTokenServer { server, directory, key in
            let caPath = directory.appendingPathComponent("env-ca.pem").path
            try server.writeCertificateAuthority(to: caPath)
            let variables = [
                "APNS_ENVIRONMENT": "127.0.0.1:\(server.port)",
                "APNS_KEY": try String(contentsOfFile: key.privateKeyPath, encoding: .utf8),
                "APNS_KEY_ID": Fixtures.keyID,
                "APNS_TEAM_ID": Fixtures.teamID,
            ]
            let result = try await CLI.run(
                ["send", "--ca-file", caPath, "--topic", Fixtures.topic, "--body", "Hi", Fixtures.goodToken],
                environment: variables
            )
            #expect(result.status == 0, "\(result)")
            let request = try #require(server.recordedRequests.first { $0.deviceToken == Fixtures.goodToken })
            #expect(request.providerToken?.keyID == Fixtures.keyID)
            #expect(request.status == 200)

            // A malformed variable is named.
            let bad = try await CLI.run(
                ["send", "--ca-file", caPath, "--topic", Fixtures.topic, "--body", "Hi", Fixtures.goodToken],
                environment: variables.merging(["APNS_ENVIRONMENT": "moon"]) { $1 }
            )
            #expect(bad.status != 0)
            #expect("\(bad)".contains("APNS_ENVIRONMENT"), "\(bad)")
        }
    }

    @Test("localized alerts: --loc-key, --loc-args, --title-loc-key, --title-loc-args as Apple's payload keys")
    func localizedAlert() async throws {
        try await withServer { server, _, target in
            let result = try await CLI.run(
                ["send", "--no-auth"] + target + [
                    "--topic", Fixtures.topic, "--loc-key", "GAME_PLAY_REQUEST_FORMAT", "--loc-args", "Jenna", "--loc-args", "Frank",
                    "--title-loc-key", "GAME_TITLE", "--title-loc-args", "Poker", Fixtures.goodToken,
                ])
            #expect(result.status == 0, "\(result)")
            let payload = try receivedPayload(server, token: Fixtures.goodToken)
            let alert = try #require((payload["aps"] as? [String: Any])?["alert"] as? [String: Any])
            // Apple's key names (Creating the Remote Notification Payload, table 9-2).
            #expect(alert["loc-key"] as? String == "GAME_PLAY_REQUEST_FORMAT")
            #expect(alert["loc-args"] as? [String] == ["Jenna", "Frank"])
            #expect(alert["title-loc-key"] as? String == "GAME_TITLE")
            #expect(alert["title-loc-args"] as? [String] == ["Poker"])
        }
    }

    @Test("a Live Activity update from flags: liveactivity push type and topic, event, content-state, stale-date, alert")
    func liveActivityUpdate() async throws {
        try await withServer { server, _, target in
            let result = try await CLI.run(
                ["send", "--no-auth"] + target + [
                    "--topic", Fixtures.topic, "--event", "update", "--content-state", #"{"score":"2-1"}"#,
                    "--stale-date", "1900000000", "--title", "Goal!", "--body", "2-1", Fixtures.goodToken,
                ])
            #expect(result.status == 0, "\(result)")
            let request = try #require(server.recordedRequests.first { $0.deviceToken == Fixtures.goodToken })
            #expect(request.value(of: "apns-push-type") == "liveactivity")
            #expect(request.value(of: "apns-topic") == Fixtures.topic + ".push-type.liveactivity")
            let aps = try #require(try receivedPayload(server, token: Fixtures.goodToken)["aps"] as? [String: Any])
            #expect(aps["event"] as? String == "update")
            #expect((aps["content-state"] as? [String: Any])?["score"] as? String == "2-1")
            #expect(aps["stale-date"] as? Int == 1_900_000_000)
            #expect(aps["timestamp"] is Int)
            let alert = try #require(aps["alert"] as? [String: Any])
            #expect(alert["title"] as? String == "Goal!")

            // A start without its attributes is refused before anything is sent.
            let start = try await CLI.run(
                ["send", "--no-auth"] + target + ["--topic", Fixtures.topic, "--event", "start", "--content-state", "{}", Fixtures.goodToken])
            #expect(start.status != 0)
            #expect("\(start)".contains("--event start needs --attributes-type, --attributes and --content-state"), "\(start)")

            // Apple requires an alert to start a Live Activity: without --title or --body, refused.
            let silentStart = try await CLI.run(
                ["send", "--no-auth"] + target + ["--topic", Fixtures.topic, "--event", "start", "--content-state", "{}",
                 "--attributes-type", "Match", "--attributes", "{}", Fixtures.goodToken])
            #expect(silentStart.status != 0)
            #expect("\(silentStart)".contains("--event start needs an alert"), "\(silentStart)")
        }
    }

    @Test("--json: one object per line that JSONSerialization reads, tokens from a file, a malformed token reported as invalid and not counted as sent")
    func jsonLinesFromTokensFile() async throws {
        try await withServer { server, directory, target in
            let tokens = directory.appendingPathComponent("tokens.txt")
            try Data("# devices\n\(Fixtures.goodToken)\n\n\(Fixtures.unregisteredToken)\nnot-hex\n".utf8).write(to: tokens)
            let result = try await CLI.run(
                ["send", "--no-auth"] + target + ["--topic", Fixtures.topic, "--body", "Hi", "--tokens-file", tokens.path, "--json"])
            #expect(result.status == 1, "\(result)")
            let objects = try result.lines.map(CLI.jsonObject)
            #expect(objects.count == 4, "\(result)")
            #expect(objects[0]["token"] as? String == Fixtures.goodToken)
            #expect(objects[0]["outcome"] as? String == "accepted")
            #expect(objects[0]["status"] as? Int == 200)
            #expect(objects[1]["outcome"] as? String == "rejected")
            #expect(objects[1]["status"] as? Int == 410)
            #expect(objects[1]["reason"] as? String == "Unregistered")
            #expect(objects[1]["remedy"] as? String == "removeDeviceToken")
            #expect(objects[1]["timestamp"] is NSNumber)
            #expect(objects[2]["token"] as? String == "not-hex")
            #expect(objects[2]["outcome"] as? String == "invalid")
            let summary = try #require(objects[3]["summary"] as? [String: Any])
            // The malformed token was never sent: counted as invalid, not as sent.
            #expect(summary["sent"] as? Int == 2, "\(result)")
            #expect(summary["accepted"] as? Int == 1)
            #expect(summary["rejected"] as? Int == 1)
            #expect(summary["failed"] as? Int == 0, "\(result)")
            #expect(summary["invalid"] as? Int == 1, "\(result)")
            #expect(server.statistics.requests == 2)
        }
    }

    @Test("tokens on standard input and the payload from a file: the server receives the file's JSON, exit 0")
    func tokensFromStandardInput() async throws {
        try await withServer { server, directory, target in
            let payloadFile = directory.appendingPathComponent("payload.json")
            let json = #"{"aps":{"alert":{"loc-key":"GAME_PLAY_REQUEST_FORMAT","loc-args":["Jenna","Frank"]},"sound":"chime.aiff"},"acme":[1,2]}"#
            try Data(json.utf8).write(to: payloadFile)
            let result = try await CLI.run(
                ["send", "--no-auth"] + target + ["--topic", Fixtures.topic, "--payload-file", payloadFile.path],
                standardInput: "\(Fixtures.goodToken)\n\(Fixtures.otherToken)\n")
            #expect(result.status == 0, "\(result)")
            #expect(result.lines.last?.hasPrefix("2 notifications: 2 accepted") == true, "\(result)")
            let expected = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? NSDictionary)
            for token in [Fixtures.goodToken, Fixtures.otherToken] {
                #expect(NSDictionary(dictionary: try receivedPayload(server, token: token)) == expected)
            }
        }
    }

    @Test("the payload on standard input (--payload-file -) with a background push type and priority 5")
    func payloadFromStandardInput() async throws {
        try await withServer { server, _, target in
            let json = #"{"aps":{"content-available":1},"sync":"inbox"}"#
            let result = try await CLI.run(
                ["send", "--no-auth"] + target + ["--topic", Fixtures.topic, "--payload-file", "-", "--push-type", "background",
                                                   "--priority", "5", "--expiration", "0", Fixtures.goodToken],
                standardInput: json)
            #expect(result.status == 0, "\(result)")
            let request = try #require(server.recordedRequests.first)
            #expect(request.value(of: "apns-push-type") == "background")
            #expect(request.value(of: "apns-priority") == "5")
            #expect(request.value(of: "apns-expiration") == "0")
            let expected = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? NSDictionary)
            #expect(NSDictionary(dictionary: try receivedPayload(server, token: Fixtures.goodToken)) == expected)
        }
    }

    @Test("a payload file that starts with a UTF-8 byte order mark (as some editors write) is sent without it")
    func payloadWithByteOrderMark() async throws {
        try await withServer { server, directory, target in
            let payloadFile = directory.appendingPathComponent("bom.json")
            let json = #"{"aps":{"alert":"Grüße"}}"#
            try Data([0xEF, 0xBB, 0xBF] + Array(json.utf8)).write(to: payloadFile)
            let result = try await CLI.run(
                ["send", "--no-auth"] + target + ["--topic", Fixtures.topic, "--payload-file", payloadFile.path, Fixtures.goodToken])
            #expect(result.status == 0, "\(result)")
            let request = try #require(server.recordedRequests.first)
            // RFC 8259, section 8.1: a BOM must not be sent in networked JSON.
            #expect(request.body.first == UInt8(ascii: "{"), "\(Array(request.body.prefix(4)))")
            let expected = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? NSDictionary)
            #expect(NSDictionary(dictionary: try receivedPayload(server, token: Fixtures.goodToken)) == expected)
        }
    }

    @Test("tokens on a pipe that stays silent: one notice on standard error after a few seconds, then the tokens are sent")
    func silentPipeNotice() async throws {
        try await withServer { server, _, target in
            let command = (try [CLI.executable] + ["send", "--no-auth"] + target + ["--topic", Fixtures.topic, "--body", "Hi"])
                .map { "'\($0)'" }.joined(separator: " ")
            // The notice comes after 3 s of silence; the token after 12 s, so that a tool
            // slow to start on a loaded machine still meets the silence (5 s was not).
            let result = try await CLI.tool("/bin/sh", ["-c", "(sleep 12; echo \(Fixtures.goodToken)) | \(command)"], timeout: .seconds(90))
            #expect(result.status == 0, "\(result)")
            #expect(result.errorLines == ["apns: waiting for device tokens on standard input, one per line, until it ends (no tokens were given as arguments or with --tokens-file)"], "\(result)")
            #expect(result.lines.first?.hasPrefix("\(Fixtures.goodToken)  accepted apns-id") == true, "\(result)")
            #expect(server.recordedRequests.count == 1)
        }
    }

    @Test("a batch wider than the window: one line per token, in input order, and every request reaches the server")
    func batchKeepsOrder() async throws {
        try await withServer { server, _, target in
            let tokens = (0..<250).map { i in String(format: "%064x", i * 7919 + 1) }
            let result = try await CLI.run(
                ["send", "--no-auth"] + target + ["--topic", Fixtures.topic, "--body", "Hi", "--concurrency", "16", "--json"],
                standardInput: tokens.joined(separator: "\n"))
            #expect(result.status == 0, "\(result)")
            let objects = try result.lines.map(CLI.jsonObject)
            #expect(objects.dropLast().compactMap { $0["token"] as? String } == tokens)
            #expect(objects.dropLast().allSatisfy { $0["outcome"] as? String == "accepted" })
            #expect(Set(server.recordedRequests.compactMap(\.deviceToken)) == Set(tokens))
        }
    }

    @Test("SIGINT in the middle of a batch: every token still gets its line (in flight: may have reached APNs; the rest: not sent), the summary, exit 130")
    func interruptedBatch() async throws {
        try await withServer { server, _, target in
            server.setResponseDelay(.milliseconds(50))
            // 20,000 at 10 in flight and 50 ms an answer: 100 s of work, so that the signal
            // lands early even if the test's own task wakes late on a loaded machine.
            let tokens = (0..<20_000).map { String(format: "%064x", $0 + 1) }
            let running = try CLI.start(["send", "--no-auth"] + target + ["--topic", Fixtures.topic, "--body", "Hi", "--concurrency", "10"],
                                        standardInput: tokens.joined(separator: "\n"))
            defer { running.cleanUp() }
            for _ in 0..<600 where server.statistics.requests < 50 { try await Task.sleep(for: .milliseconds(50)) }
            #expect(server.statistics.requests >= 50)
            kill(running.pid, SIGINT)
            let status = try await running.wait(timeout: .seconds(60))
            #expect(status == 130, "\(running.stderr)")
            let lines = running.stdout.split(separator: "\n").map(String.init)
            #expect(lines.count == 20_001, "\(lines.count) lines")
            #expect(lines.dropLast().map { String($0.prefix(64)) } == tokens)
            #expect(lines.last?.hasPrefix("20000 notifications: ") == true, "\(lines.last ?? "")")
            let inFlight = lines.filter { $0.contains("may have reached APNs") }.count
            let notSent = lines.filter { $0.contains("never reached APNs") }.count
            #expect(inFlight <= 10 && notSent > 10_000, "\(inFlight) in flight, \(notSent) not sent")
            #expect(running.stderr.contains("interrupted by SIGINT"), "\(running.stderr)")
        }
    }

    @Test("refused credentials: the reason on each token's line, nothing logged on standard error without --verbose; APNS_TOPIC names the topic")
    func quietWithoutVerbose() async throws {
        try await withTokenServer { server, directory, _ in
            let ca = directory.appendingPathComponent("ca-token.pem").path
            try server.writeCertificateAuthority(to: ca)
            let result = try await CLI.run(
                ["send", "--no-auth", "--host", "127.0.0.1", "--port", String(server.port), "--ca-file", ca, "--body", "Hi",
                 Fixtures.goodToken, Fixtures.otherToken],
                environment: ["APNS_TOPIC": Fixtures.topic])
            #expect(result.status == 1, "\(result)")
            #expect(result.lines.prefix(2).allSatisfy { $0.contains("rejected 403 MissingProviderToken") }, "\(result)")
            #expect(result.lines.prefix(2).allSatisfy { $0.contains("no credentials reached APNs") }, "\(result)")
            #expect(result.stderr.isEmpty, "\(result.stderr)")
            #expect(server.recordedRequests.allSatisfy { $0.value(of: "apns-topic") == Fixtures.topic })
        }
    }

    @Test("a server whose CA is not trusted: the line names --ca-file, not the Swift API")
    func untrustedServerNamesTheFlag() async throws {
        try await withServer { server, _, _ in
            let result = try await CLI.run(["send", "--no-auth", "--host", "127.0.0.1", "--port", String(server.port),
                                            "--topic", Fixtures.topic, "--body", "Hi", Fixtures.goodToken],
                                           environment: ["APNS_CA_FILE": ""])
            #expect(result.status == 1, "\(result)")
            #expect(result.stdout.contains("--ca-file (or APNS_CA_FILE)") && !result.stdout.contains("TLSConfiguration"), "\(result)")
        }
    }

    @Test("--key-file with APNS_KEY_ID and APNS_TEAM_ID: each value the flags leave out comes from its variable, named as such when wrong")
    func flagsAndVariablesMix() async throws {
        try await withTokenServer { server, directory, key in
            let ca = directory.appendingPathComponent("ca-mix.pem").path
            try server.writeCertificateAuthority(to: ca)
            let send = ["send", "--key-file", key.privateKeyPath, "--host", "127.0.0.1", "--port", String(server.port), "--ca-file", ca,
                        "--topic", Fixtures.topic, "--body", "Hi", Fixtures.goodToken]
            let mixed = try await CLI.run(send, environment: ["APNS_KEY_ID": Fixtures.keyID, "APNS_TEAM_ID": Fixtures.teamID])
            #expect(mixed.status == 0, "\(mixed)")
            #expect(server.statistics.accepted == 1)
            let wrong = try await CLI.run(send, environment: ["APNS_KEY_ID": "bad", "APNS_TEAM_ID": Fixtures.teamID])
            #expect(wrong.status == 2 && wrong.stderr.contains("APNS_KEY_ID bad is not"), "\(wrong)")
            let missing = try await CLI.run(send, environment: ["APNS_KEY_ID": Fixtures.keyID, "APNS_TEAM_ID": ""])
            #expect(missing.status == 2 && missing.stderr.contains("--team-id (or APNS_TEAM_ID)"), "\(missing)")
        }
    }

    @Test("a mock server whose stream limit is beyond SETTINGS_MAX_CONCURRENT_STREAMS' 32 bits announces the largest it can, and serves")
    func hugeStreamLimit() async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withMockAPNsServer(configuration: .init(bundleIDs: [Fixtures.topic], maxConcurrentStreams: 99_999_999_999)) { server in
            let caPath = directory.appendingPathComponent("ca.pem").path
            try server.writeCertificateAuthority(to: caPath)
            let result = try await CLI.run(["send", "--no-auth", "--host", "127.0.0.1", "--port", String(server.port), "--ca-file", caPath,
                                            "--topic", Fixtures.topic, "--body", "Hi", Fixtures.goodToken])
            #expect(result.status == 0, "\(result)")
            #expect(server.statistics.accepted == 1)
        }
    }

    @Test("a permanent failure (a server certificate not trusted) is not to be retried: --json says remedy fixSetup")
    func permanentFailureRemedy() async throws {
        try await withServer { _, _, target in
            // The server's CA left out: the handshake fails the same way every time.
            let untrusted = Array(target.prefix(4))
            let result = try await CLI.run(["send", "--no-auth", "--json"] + untrusted + ["--topic", Fixtures.topic, "--body", "Hi", Fixtures.goodToken])
            #expect(result.status == 1, "\(result)")
            let object = try CLI.jsonObject(try #require(result.lines.first))
            #expect(object["outcome"] as? String == "failed", "\(result)")
            #expect(object["code"] as? String == "tlsFailure", "\(result)")
            #expect(object["remedy"] as? String == "fixSetup", "\(result)")
            #expect((object["advice"] as? String)?.contains("sending again fails the same way") == true, "\(result)")
        }
    }

    @Test("output that cannot be written (a full disk) is an error, exit 1, not a silent success")
    func unwritableOutput() async throws {
        try await withServer { _, _, target in
            let token = String(repeating: "ab", count: 32)
            // /dev/full: every write fails with ENOSPC.
            let result = try await CLI.tool("/bin/sh", ["-c", #"exec "$0" "$@" >/dev/full"#, try CLI.executable, "send", "--no-auth"]
                                                + target + ["--topic", Fixtures.topic, "--body", "Hi", token])
            #expect(result.status == 1, "\(result)")
            #expect(result.stderr.contains("cannot write to standard output"), "\(result.stderr)")
        }
    }

    @Test("a server's reason with a newline and escape codes prints escaped on one line: it cannot forge another token's outcome")
    func forgedReasonEscaped() async throws {
        try await withServer { server, _, target in
            let token = String(repeating: "ab", count: 32)
            let forged = "BadDeviceToken\n\(String(repeating: "f", count: 64))  accepted apns-id 00000000-0000-4000-8000-000000000000\u{1B}[2J"
            server.respond(toDeviceToken: token, with: ScriptedResponse(status: 400, reason: forged))
            let result = try await CLI.run(["send", "--no-auth"] + target + ["--topic", Fixtures.topic, "--body", "Hi", token])
            #expect(result.status == 1, "\(result)")
            // One line for the token, one summary line; the newline and ESC written as \u{…}.
            #expect(result.lines.count == 2, "\(result.lines)")
            #expect(result.lines.first?.contains(#"rejected 400 BadDeviceToken\u{A}ffff"#) == true, "\(result.lines)")
            #expect(!result.stdout.contains("\u{1B}"))
            // --json keeps the reason exactly, JSON-escaped.
            let json = try await CLI.run(["send", "--no-auth", "--json"] + target + ["--topic", Fixtures.topic, "--body", "Hi", token])
            let object = try CLI.jsonObject(try #require(json.lines.first))
            #expect(object["reason"] as? String == forged)
        }
    }

    @Test("on a terminal a long batch draws a progress bar with rate and ETA on standard error; off a terminal, none")
    func progressBar() async throws {
        try await withServer { server, directory, target in
            server.setResponseDelay(.milliseconds(1))
            let tokens = (0..<300).map { i in String(format: "%064x", i + 1) }
            let tokensFile = directory.appendingPathComponent("tokens.txt")
            try Data(tokens.joined(separator: "\n").utf8).write(to: tokensFile)
            let arguments = ["send", "--no-auth"] + target
                + ["--topic", Fixtures.topic, "--body", "Hi", "--concurrency", "10", "--tokens-file", tokensFile.path]
            // util-linux script(1) gives the command a pseudo-terminal; standard output goes
            // to /dev/null, so what script prints is standard error as a terminal shows it.
            let command = ([try CLI.executable] + arguments).joined(separator: " ") + " >/dev/null"
            let onTerminal = try await CLI.tool("/usr/bin/script", ["-q", "-e", "-c", command, "/dev/null"], timeout: .seconds(60))
            #expect(onTerminal.status == 0, "\(onTerminal)")
            #expect(onTerminal.stdout.contains("300/300 100%"), "\(onTerminal)")
            #expect(onTerminal.stdout.contains("/s ETA"), "\(onTerminal)")
            let offTerminal = try await CLI.run(arguments)
            #expect(offTerminal.status == 0, "\(offTerminal)")
            #expect(offTerminal.stderr.isEmpty, "\(offTerminal)")
            #expect(offTerminal.lines.count == 301)
        }
    }

    @Test("a VoIP push to a bundle ID goes to the .voip topic")
    func voipTopicSuffix() async throws {
        try await withServer { server, _, target in
            let result = try await CLI.run(
                ["send", "--no-auth"] + target + ["--topic", Fixtures.topic, "--push-type", "voip", "--custom", #"caller="Jenna""#, Fixtures.goodToken])
            #expect(result.status == 0, "\(result)")
            #expect(server.recordedRequests.first?.value(of: "apns-topic") == Fixtures.topic + ".voip")
            // Every payload carries an aps dictionary, even one built from custom keys only.
            let payload = try receivedPayload(server, token: Fixtures.goodToken)
            #expect(payload["aps"] is [String: Any])
            #expect(payload["caller"] as? String == "Jenna")
        }
    }

    @Test("a server that is not there: exit 1 and the line says it never reached APNs")
    func connectionRefused() async throws {
        let result = try await CLI.run(["send", "--no-auth", "--host", "127.0.0.1", "--port", "9", "--topic", Fixtures.topic, "--body", "hi", Fixtures.goodToken])
        #expect(result.status == 1, "\(result)")
        #expect(result.stdout.contains("failed") && result.stdout.contains("never reached APNs"), "\(result)")
    }
}

/// `apns bench` end to end, with a small count.
@Suite("apns bench")
struct BenchCommandTests {
    @Test("reports throughput, CPU per notification and latency percentiles")
    func bench() async throws {
        let result = try await CLI.run(["bench", "--count", "2000", "--streams", "50", "--skip-h2load"], timeout: .seconds(120))
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("2000 accepted, 0 failed"), "\(result)")
        #expect(result.stdout.contains("µs client CPU per notification"), "\(result)")
        #expect(result.stdout.contains("p99"), "\(result)")
        #expect(result.stdout.contains("child process, so the CPU figures are the client's alone"), "\(result)")
    }

    @Test("bench's child server ends with it, on SIGINT and on SIGKILL: its port closes and its files go", arguments: [SIGINT, SIGKILL])
    func benchChildEndsWithParent(_ signal: Int32) async throws {
        let running = try CLI.start(["bench", "--count", "5000000", "--skip-h2load"])
        defer { running.cleanUp() }
        let server = try await running.waitForLine(startingWith: "server: 127.0.0.1:", timeout: .seconds(60))
        let port = try #require(Int(server.prefix { $0.isNumber }))
        #expect(try await Self.connects(to: port))
        kill(running.pid, signal)
        // (wait(timeout:) reads a SIGKILL as its own timeout: the status does not matter here.)
        _ = try? await running.wait(timeout: .seconds(30))
        // The child notices within a quarter of a second (SIGKILL) or is stopped at once (SIGINT).
        var open = true
        for _ in 0..<200 where open {  // 20 s at least: a loaded machine can hold the child back
            open = try await Self.connects(to: port)
            if open { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(!open, "the child server still listens on \(port)")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apns-bench-\(running.pid)").path
        for _ in 0..<200 where FileManager.default.fileExists(atPath: directory) { try await Task.sleep(for: .milliseconds(100)) }
        #expect(!FileManager.default.fileExists(atPath: directory))
    }

    /// Whether a TCP connection to 127.0.0.1:`port` is accepted.
    static func connects(to port: Int) async throws -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw CLI.Failure(description: "socket: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return result == 0
    }

    @Test("bench against a server that refuses its requests ends with status 1 and says so; a missing --h2load path is a usage error")
    func benchThatFails() async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // A server that wants a provider token: the benchmark sends none.
        let configuration = MockAPNsServer.Configuration(authentication: .providerToken(ProviderTokenCheck { _, _ in true }))
        try await withMockAPNsServer(configuration: configuration) { server in
            let ca = directory.appendingPathComponent("ca-bench.pem").path
            try server.writeCertificateAuthority(to: ca)
            let result = try await CLI.run(["bench", "--host", "127.0.0.1", "--port", String(server.port), "--ca-file", ca,
                                            "--count", "50", "--skip-h2load"], timeout: .seconds(120))
            #expect(result.status == 1, "\(result)")
            // The first is refused, so the 50 are never sent: the reason is given at once.
            #expect(result.stderr.contains("did not accept the first notification (rejected 403 MissingProviderToken)"), "\(result)")
            #expect(server.statistics.requests == 1, "\(server.statistics)")
        }
        // Nothing listens on the port: the connection's failure, not 2 minutes of failed sends.
        let ca = directory.appendingPathComponent("ca-none.pem").path
        try await withMockAPNsServer { server in try server.writeCertificateAuthority(to: ca) }
        let unreachable = try await CLI.withRefusingPort { port in
            try await CLI.run(["bench", "--host", "127.0.0.1", "--port", String(port), "--ca-file", ca,
                               "--count", "100000", "--skip-h2load"], timeout: .seconds(120))
        }
        #expect(unreachable.status == 1, "\(unreachable)")
        #expect(unreachable.stderr.contains("did not accept the first notification (failed connectionFailed"), "\(unreachable)")
        let missing = try await CLI.run(["bench", "--count", "10", "--h2load", "/nonexistent/h2load"])
        #expect(missing.status == 2 && missing.stderr.contains("--h2load /nonexistent/h2load is not an executable file"), "\(missing)")
    }

    @Test("--in-process runs the mock server in the process and says the CPU figures include it")
    func inProcess() async throws {
        let result = try await CLI.run(["bench", "--in-process", "--count", "500", "--streams", "20", "--skip-h2load"], timeout: .seconds(120))
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("MockAPNsServer in this process: the CPU figures include the server's"), "\(result)")
        #expect(result.stdout.contains("µs CPU (client and in-process server) per notification"), "\(result)")
        #expect(result.stdout.contains("500 accepted, 0 failed"), "\(result)")
    }

    @Test("--json prints one object JSONSerialization reads; a debug build warns on standard error")
    func jsonReport() async throws {
        let result = try await CLI.run(
            ["bench", "--in-process", "--count", "300", "--streams", "10", "--skip-h2load", "--json"], timeout: .seconds(120))
        #expect(result.status == 0, "\(result)")
        #expect(result.lines.count == 1, "\(result)")
        let object = try CLI.jsonObject(try #require(result.lines.first))
        #expect(object["accepted"] as? Int == 300)
        #expect(object["failed"] as? Int == 0)
        #expect(object["count"] as? Int == 300)
        #expect((object["notificationsPerSecond"] as? Double ?? 0) > 0)
        #expect((object["cpuMicrosecondsPerNotification"] as? Double ?? 0) > 0)
        // The tests run a debug build of apns: it says so, on standard error only.
        #expect(object["debugBuild"] as? Bool == true)
        #expect(result.errorLines.contains { $0.contains("debug mode") }, "\(result)")
    }

    @Test("--in-process with --host is a usage error")
    func inProcessExcludesHost() async throws {
        let result = try await CLI.run(["bench", "--in-process", "--host", "127.0.0.1", "--port", "9", "--ca-file", "ca.pem"])
        #expect(result.status == 2, "\(result)")
        #expect(result.errorLines.count == 1, "\(result)")
    }

    /// A directory holding an `h2load` script that prints h2load's two summary lines and
    /// records its arguments in `arguments` beside it.
    static func fakeH2load() throws -> URL {
        let directory = try CLI.temporaryDirectory()
        // If making it fails, it goes here; once returned, the caller removes it.
        var made = false
        defer { if !made { try? FileManager.default.removeItem(at: directory) } }
        let script = directory.appendingPathComponent("h2load")
        try Data("""
            #!/bin/sh
            printf '%s\\n' "$*" > "$(dirname "$0")/arguments"
            echo "finished in 0.10s, 4321.00 req/s, 1.00MB/s"
            echo "status codes: 300 2xx, 0 3xx, 0 4xx, 0 5xx"

            """.utf8).write(to: script)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script.path)
        made = true
        return directory
    }

    @Test("h2load is found on PATH, not only at /usr/bin/h2load, and runs against the same server")
    func h2loadOnPath() async throws {
        let directory = try Self.fakeH2load()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = "/nonexistent-apns-test:\(directory.path):/usr/bin:/bin"
        let result = try await CLI.run(["bench", "--count", "300", "--streams", "10"], environment: ["PATH": path], timeout: .seconds(120))
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("h2load:     4321 requests/s"), "\(result)")
        #expect(result.stdout.contains("(300 2xx, 0 3xx, 0 4xx, 0 5xx)"), "\(result)")
        #expect(result.stdout.contains("ratio swift-apns / h2load"), "\(result)")
        let arguments = try String(contentsOf: directory.appendingPathComponent("arguments"), encoding: .utf8)
        let port = try #require(result.lines.first?.split(separator: " ")[1].split(separator: ":").last)
        #expect(arguments.hasPrefix("-n 300 -c 1 -m 10 "), "\(arguments)")
        #expect(arguments.contains("https://127.0.0.1:\(port)/3/device/"), "\(arguments)")
    }

    @Test("without h2load on PATH, bench says so and still reports the SDK's figures")
    func h2loadMissing() async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let result = try await CLI.run(["bench", "--count", "100", "--streams", "10"], environment: ["PATH": directory.path], timeout: .seconds(120))
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("h2load: h2load is not on PATH (apt-get install nghttp2-client) — skipped"), "\(result)")
        #expect(result.stdout.contains("100 accepted, 0 failed"), "\(result)")
    }

    @Test("bench --on-io-thread sends from tasks on the transport's thread and says so; with --batch it is refused")
    func ioThreadBench() async throws {
        let result = try await CLI.run(
            ["bench", "--on-io-thread", "--in-process", "--count", "500", "--streams", "20", "--skip-h2load"],
            timeout: .seconds(120)
        )
        #expect(result.status == 0, "\(result)")
        let line = try #require(result.lines.first { $0.hasPrefix("swift-apns (tasks on the I/O thread): ") }, "\(result)")
        #expect(line.contains("500 accepted, 0 failed"), "\(line)")
        #expect(line.contains("p99"), "\(line)")
        let refused = try await CLI.run(["bench", "--on-io-thread", "--batch", "--count", "10"])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("--on-io-thread is for one send per notification"), "\(refused)")
    }

    @Test("bench --batch sends with one batch call and reports throughput and CPU, no latency")
    func batchBench() async throws {
        let result = try await CLI.run(
            ["bench", "--batch", "--in-process", "--count", "500", "--connections", "2", "--streams", "20", "--skip-h2load"],
            timeout: .seconds(120)
        )
        #expect(result.status == 0, "\(result)")
        let line = try #require(result.lines.first { $0.hasPrefix("swift-apns (one batch call): ") }, "\(result)")
        #expect(line.contains("notifications/s"), "\(line)")
        #expect(line.contains("500 accepted, 0 failed"), "\(line)")
        #expect(!line.contains("latency"), "\(line)")
    }

    @Test("bench --stream sends with one streamed batch and reports throughput and CPU; with --batch it is refused")
    func streamBench() async throws {
        let result = try await CLI.run(
            ["bench", "--stream", "--in-process", "--count", "500", "--connections", "2", "--streams", "20", "--skip-h2load", "--json"],
            timeout: .seconds(120)
        )
        #expect(result.status == 0, "\(result)")
        let object = try CLI.jsonObject(try #require(result.lines.last, "\(result)"))
        #expect(object["mode"] as? String == "stream", "\(result)")
        #expect(object["accepted"] as? Int == 500, "\(result)")
        #expect(object["failed"] as? Int == 0, "\(result)")
        #expect(object["latencyP50Milliseconds"] == nil, "\(result)")
        let refused = try await CLI.run(["bench", "--stream", "--batch", "--count", "10"])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("--batch and --stream are two ways to send"), "\(refused)")
    }
}
