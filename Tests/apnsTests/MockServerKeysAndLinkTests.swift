import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `apns mock-server`'s key-scope and link-emulation flags, against `apns send` and curl
/// (nghttp2 + OpenSSL) as separate processes. The expected reasons are Apple's: a key not
/// enabled for the server's environment gets 403 `BadEnvironmentKeyIdInToken`, a request
/// outside a topic-specific key's topics 400 `TopicDisallowed`.
@Suite("apns mock-server: key scopes and link emulation")
struct MockServerKeysAndLinkTests {
    /// Starts `apns mock-server --accept-any-token` with `flags`, sends one notification
    /// signed by `Fixtures.keyID` with `apns send`, and returns the first output line and
    /// the exit status of `apns send`.
    func sendThrough(_ flags: [String], topic: String = Fixtures.topic) async throws -> (line: String, status: Int32) {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = try await Fixtures.makeKey(in: directory)
        let caPath = directory.appendingPathComponent("ca.pem").path
        let server = try CLI.start(["mock-server", "--ca-file", caPath, "--accept-any-token"] + flags)
        defer { server.cleanUp() }
        let port = try #require(Int(try await server.waitForLine(startingWith: "port: ")))
        let result = try await CLI.run([
            "send", "--key-file", key.privateKeyPath, "--key-id", Fixtures.keyID, "--team-id", Fixtures.teamID,
            "--host", "127.0.0.1", "--port", String(port), "--ca-file", caPath,
            "--topic", topic, "--body", "Hello", Fixtures.goodToken,
        ])
        kill(server.pid, SIGTERM)
        #expect(try await server.wait(timeout: .seconds(20)) == 0, "\(server.stdout)\(server.stderr)")
        return (result.lines.first ?? "", result.status)
    }

    @Test("an environment-scoped key is refused 403 BadEnvironmentKeyIdInToken in the other environment only")
    func environmentScopedKeys() async throws {
        let cases: [([String], String)] = [
            (["--environment", "production", "--sandbox-only-key", Fixtures.keyID], "rejected 403 BadEnvironmentKeyIdInToken"),
            (["--environment", "sandbox", "--sandbox-only-key", Fixtures.keyID], "accepted apns-id "),
            (["--sandbox-only-key", "OTHERKEY01", "--environment", "production"], "accepted apns-id "),
            (["--production-only-key", Fixtures.keyID], "rejected 403 BadEnvironmentKeyIdInToken"),
            (["--environment", "production", "--production-only-key", Fixtures.keyID], "accepted apns-id "),
        ]
        for (flags, expected) in cases {
            let (line, status) = try await sendThrough(flags)
            #expect(line.contains(expected), "\(flags): \(line)")
            #expect(status == (expected.hasPrefix("accepted") ? 0 : 1), "\(flags): \(line)")
            // The advice names the cause Apple gives for the reason, as `apns check` does.
            if expected.contains("BadEnvironmentKeyIdInToken") {
                #expect(line.contains("the key is not enabled for this environment"), "\(line)")
            } else if expected.contains("TopicDisallowed") {
                #expect(line.contains("outside a topic-specific key's topics"), "\(line)")
            }
        }
    }

    @Test("a topic-specific key is refused 400 TopicDisallowed for other topics, with its environment limit kept")
    func topicSpecificKeys() async throws {
        let cases: [([String], String)] = [
            (["--topic-key", "\(Fixtures.keyID)=com.example.other"], "rejected 400 TopicDisallowed"),
            (["--topic-key", "\(Fixtures.keyID)=com.example.other,\(Fixtures.topic)"], "accepted apns-id "),
            // Both limits: the right topic, the wrong environment.
            (["--topic-key", "\(Fixtures.keyID)=\(Fixtures.topic)", "--production-only-key", Fixtures.keyID],
             "rejected 403 BadEnvironmentKeyIdInToken"),
        ]
        for (flags, expected) in cases {
            let (line, status) = try await sendThrough(flags)
            #expect(line.contains(expected), "\(flags): \(line)")
            #expect(status == (expected.hasPrefix("accepted") ? 0 : 1), "\(flags): \(line)")
            // The advice names the cause Apple gives for the reason, as `apns check` does.
            if expected.contains("BadEnvironmentKeyIdInToken") {
                #expect(line.contains("the key is not enabled for this environment"), "\(line)")
            } else if expected.contains("TopicDisallowed") {
                #expect(line.contains("outside a topic-specific key's topics"), "\(line)")
            }
        }
    }

    @Test("--link-delay holds every answer back: curl has its answer no sooner than the delay after its handshake")
    func linkDelay() async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let caPath = directory.appendingPathComponent("ca.pem").path
        // Bandwidth and stalls ride along: far from binding for one small answer, but the
        // server must start with them (a stall may only lengthen the wait).
        let server = try CLI.start([
            "mock-server", "--ca-file", caPath, "--link-delay", "400", "--bandwidth", "1000000",
            "--stall-every", "60000", "--stall-length", "1",
        ])
        defer { server.cleanUp() }
        let port = try #require(Int(try await server.waitForLine(startingWith: "port: ")))
        let result = try await CLI.tool("/usr/bin/curl", [
            "--silent", "--http2", "--cacert", caPath, "--max-time", "20",
            "--header", "apns-topic: \(Fixtures.topic)", "--data", #"{"aps":{"alert":"Hello"}}"#,
            "--output", "/dev/null", "--write-out", "%{http_code} %{time_appconnect} %{time_total}",
            "https://localhost:\(port)/3/device/\(Fixtures.goodToken)",
        ])
        let fields = result.stdout.split(separator: " ")
        #expect(fields.first == "200", "\(result)")
        // A lower bound only (curl's own clock; a loaded machine only adds): the TLS
        // handshake is not delayed, the answer leaves 400 ms after the server made it.
        let handshakeDone = try #require(fields.count == 3 ? Double(fields[1]) : nil, "\(result)")
        // (time_total, not time_starttransfer: for a POST curl counts the start of the upload.)
        let answered = try #require(fields.count == 3 ? Double(fields[2]) : nil, "\(result)")
        #expect(answered - handshakeDone >= 0.4, "\(result)")
        kill(server.pid, SIGTERM)
        #expect(try await server.wait(timeout: .seconds(20)) == 0, "\(server.stdout)\(server.stderr)")
    }

    @Test("--help names the key-scope and link flags")
    func help() async throws {
        let result = try await CLI.run(["mock-server", "--help"])
        #expect(result.status == 0, "\(result)")
        for flag in ["--environment", "--sandbox-only-key", "--production-only-key", "--topic-key", "--link-delay",
                     "--bandwidth", "--stall-every", "--stall-length", "BadEnvironmentKeyIdInToken", "TopicDisallowed"] {
            #expect(result.stdout.contains(flag), "\(flag) missing from\n\(result.stdout)")
        }
    }
}

/// `APNS_CA_FILE`: the tool trusts the CA it names when there is no `--ca-file`, as
/// `APNsSettings` does.
@Suite("apns: APNS_CA_FILE")
struct CAFileVariableTests {
    @Test("apns send trusts the mock server's CA from APNS_CA_FILE; without it the system's store refuses the server")
    func trustsTheVariable() async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let caPath = directory.appendingPathComponent("ca.pem").path
        let server = try CLI.start(["mock-server", "--ca-file", caPath])
        defer { server.cleanUp() }
        let port = try #require(Int(try await server.waitForLine(startingWith: "port: ")))
        let send = ["send", "--no-auth", "--host", "127.0.0.1", "--port", String(port),
                    "--topic", Fixtures.topic, "--body", "Hello", Fixtures.goodToken]

        let trusted = try await CLI.run(send, environment: ["APNS_CA_FILE": caPath])
        #expect(trusted.status == 0, "\(trusted)")
        #expect(trusted.lines.first?.contains("accepted apns-id ") == true, "\(trusted)")

        // The mock server's CA is in no system store: the handshake fails.
        let untrusted = try await CLI.run(send, environment: ["APNS_CA_FILE": ""])
        #expect(untrusted.status != 0, "\(untrusted)")
        #expect(untrusted.lines.first?.contains("accepted") != true, "\(untrusted)")

        // --ca-file wins over the variable.
        let flagWins = try await CLI.run(send + ["--ca-file", caPath], environment: ["APNS_CA_FILE": "/nonexistent/ca.pem"])
        #expect(flagWins.status == 0, "\(flagWins)")

        kill(server.pid, SIGTERM)
        #expect(try await server.wait(timeout: .seconds(20)) == 0, "\(server.stdout)\(server.stderr)")
        #expect(server.stdout.contains("stopped after 2 requests"), "\(server.stdout)")
    }

    @Test("an APNS_CA_FILE that cannot be read or holds no certificate exits 1 with one line naming it")
    func badVariable() async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let notPEM = directory.appendingPathComponent("not.pem").path
        try Data("hello\n".utf8).write(to: URL(fileURLWithPath: notPEM))
        let send = ["send", "--no-auth", "--host", "127.0.0.1", "--port", "9", "--topic", Fixtures.topic, "--body", "Hi", Fixtures.goodToken]
        for (path, expected) in [("/nonexistent/ca.pem", "cannot read the CA file /nonexistent/ca.pem (APNS_CA_FILE)"),
                                 (notPEM, "\(notPEM) (APNS_CA_FILE) holds no PEM certificate")] {
            let result = try await CLI.run(send, environment: ["APNS_CA_FILE": path])
            #expect(result.status == 1, "\(result)")
            #expect(result.errorLines.count == 1, "\(result)")
            #expect(result.stderr.contains(expected), "\(result)")
        }
    }
}
