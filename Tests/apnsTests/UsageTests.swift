import Foundation
import Testing

/// Bad flags, unreadable keys and help text: what a person sees when something is off.
@Suite("apns: usage errors, key problems and help")
struct UsageTests {
    static let badArguments: [[String]] = [
        ["send", "--topic", "com.example.app", "--body", "hi", Fixtures.goodToken],  // no credentials
        ["send", "--no-auth", "--body", "hi", Fixtures.goodToken],  // no --topic
        ["send", "--no-auth", "--topic", "com.example.app", Fixtures.goodToken],  // no payload
        ["send", "--no-auth", "--topic", "com.example.app", "--body", "hi", "--priority", "7", Fixtures.goodToken],
        ["send", "--no-auth", "--topic", "com.example.app", "--custom", "id=not json", Fixtures.goodToken],
        ["send", "--no-auth", "--topic", "com.example.app", "--body", "hi", "--payload-file", "p.json", Fixtures.goodToken],
        ["send", "--no-auth", "--topic", "com.example.app", "--body", "hi", "--sandbox", "--production", Fixtures.goodToken],
        ["send", "--no-auth", "--topic", "com.example.app", "--body", "hi", "--push-type", "telegram", Fixtures.goodToken],
        ["send", "--no-auth", "--topic", "com.example.app", "--body", "hi", "--expiration", "tomorrow", Fixtures.goodToken],
        ["send", "--key-file", "k.p8", "--key-id", "short", "--team-id", "DEF123GHIJ", "--topic", "t", "--body", "hi", Fixtures.goodToken],
        ["send", "--key-file", "k.p8", "--topic", "t", "--body", "hi", Fixtures.goodToken],  // no --key-id, --team-id
        ["send", "--no-auth", "--topic", "com.example.app", "--body", "hi"],  // no tokens
        ["send", "--no-auth", "--topic", "com.example.app", "--body", "hi", "--port", "70000", Fixtures.goodToken],
        ["mock-server", "--status", "404", "--fail-next", "1"],
        ["mock-server", "--status", "429"],  // no --fail-next: it would be ignored
        ["send", "--no-auth", "--topic", "com.example.app", "--body", "hi", "--host", "https://127.0.0.1:8443", Fixtures.goodToken],
        ["send", "--no-auth", "--topic", "com.example.app", "--body", "hi", "--host", "127.0.0.1:8443", Fixtures.goodToken],
        ["send", "--no-auth", "--topic", "com.example.app", "--body", "hi", "--host", "[::1]", Fixtures.goodToken],
        ["mock-server", "--token-key", "public.pem"],
        ["mock-server", "--environment", "staging"],
        ["mock-server", "--sandbox-only-key", "ABC123DEFG"],  // no --token-key or --accept-any-token
        ["mock-server", "--accept-any-token", "--sandbox-only-key", "short"],
        ["mock-server", "--accept-any-token", "--sandbox-only-key", "ABC123DEFG", "--production-only-key", "ABC123DEFG"],
        ["mock-server", "--accept-any-token", "--topic-key", "ABC123DEFG"],  // no topics
        ["mock-server", "--accept-any-token", "--topic-key", "ABC123DEFG=a", "--topic-key", "ABC123DEFG=b"],
        ["mock-server", "--link-delay", "-1"],
        ["mock-server", "--max-streams", "99999999999"],  // more than SETTINGS_MAX_CONCURRENT_STREAMS holds
        ["mock-server", "--bandwidth", "0"],
        ["mock-server", "--stall-every", "1000"],  // no --stall-length
        ["mock-server", "--stall-every", "100", "--stall-length", "100"],
        ["bench", "--connections", "0"],
        // Flag values the SDK's validation refuses: usage errors too.
        ["send", "--no-auth", "--dry-run", "--topic", "com.example.app", "--body", "hi", "--collapse-id", "", Fixtures.goodToken],
        ["send", "--no-auth", "--dry-run", "--topic", "com.example.app", "--content-available", "--priority", "10", Fixtures.goodToken],
        ["send", "--no-auth", "--dry-run", "--topic", "com.example.app", "--body", "hi", "--badge=-3", Fixtures.goodToken],
        ["send", "--no-auth", "--dry-run", "--topic", "com.example app", "--body", "hi", Fixtures.goodToken],
        ["check", "--no-auth", "--host", "127.0.0.1", "--port", "9", "--topic", ""],
        ["check", "--no-auth", "--host", "127.0.0.1", "--port", "9", "--topic", "com.example app"],
        ["frobnicate"],
        [],  // no subcommand: nothing was done, so not a success
        ["channel"],  // the same for channel's subcommands
    ]

    @Test("a bad flag or value exits 2 with one line on standard error", arguments: badArguments)
    func badFlag(arguments: [String]) async throws {
        let result = try await CLI.run(arguments)
        #expect(result.status == 2, "\(result)")
        #expect(result.errorLines.count == 1, "\(result)")
        #expect(result.stderr.hasPrefix("apns: "), "\(result)")
        #expect(result.stderr.hasSuffix(" (run with --help for usage)\n"), "\(result)")
        #expect(result.stdout.isEmpty, "\(result)")
    }

    @Test("a flag without the flag it needs names that flag, not a missing whole",
          arguments: [(["send", "--cert-key-file", "client.key", "--topic", "com.example.app", "--body", "hi", Fixtures.goodToken], "--cert-file"),
                      (["send", "--no-auth", "--topic", "com.example.app", "--loc-args", "Jenna", Fixtures.goodToken], "--loc-args needs --loc-key"),
                      (["send", "--no-auth", "--topic", "com.example.app", "--title-loc-args", "Poker", Fixtures.goodToken],
                       "--title-loc-args needs --title-loc-key")])
    func missingCompanionFlag(_ arguments: [String], _ expected: String) async throws {
        // No APNS_* credentials from the test's environment.
        let result = try await CLI.run(arguments, environment: ["APNS_KEY_FILE": "", "APNS_KEY": "", "APNS_CERTIFICATE_FILE": ""])
        #expect(result.status == 2, "\(result)")
        #expect(result.errorLines.count == 1 && result.stderr.contains(expected), "\(result)")
        #expect(!result.stderr.contains("no credentials") && !result.stderr.contains("nothing to send"), "\(result)")
    }

    @Test("--version prints one line with a version number and exits 0")
    func version() async throws {
        let result = try await CLI.run(["--version"])
        #expect(result.status == 0, "\(result)")
        #expect(result.stderr.isEmpty, "\(result)")
        let line = result.stdout.trimmingCharacters(in: .newlines)
        #expect(!line.contains("\n"), "\(result)")
        // Semantic Versioning 2.0.0: MAJOR.MINOR.PATCH, optionally -prerelease.
        #expect(line.wholeMatch(of: /[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?/) != nil, "\(result)")
    }

    @Test("no subcommand names the subcommands in its usage line")
    func noSubcommand() async throws {
        let result = try await CLI.run([])
        #expect(result.status == 2, "\(result)")
        for name in ["send", "check", "mock-server", "demo", "bench"] {
            #expect(result.stderr.contains(name), "\(result)")
        }
    }

    @Test("a negative number after an option is named as such, not as a missing value")
    func negativeNumber() async throws {
        let result = try await CLI.run(["bench", "--count", "-5"])
        #expect(result.status == 2, "\(result)")
        #expect(result.errorLines == ["apns: --count is -5: it must not be negative (run with --help for usage)"], "\(result)")
    }

    @Test("a misspelled flag is named as such, with the flag it resembles, before other checks")
    func misspelledFlag() async throws {
        let result = try await CLI.run(["send", "--no-auth", "--topic", Fixtures.topic, "--bodyy", "hi", Fixtures.goodToken])
        #expect(result.status == 2, "\(result)")
        #expect(result.errorLines == ["apns: Unknown option '--bodyy'. Did you mean '--body'? (run with --help for usage)"], "\(result)")
    }

    @Test("a key file that does not exist or holds no key exits 1 with one line naming it")
    func unreadableKey() async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let garbage = directory.appendingPathComponent("garbage.p8")
        try Data("not a key\n".utf8).write(to: garbage)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: garbage.path)
        for path in [directory.appendingPathComponent("missing.p8").path, garbage.path] {
            let result = try await CLI.run([
                "send", "--key-file", path, "--key-id", Fixtures.keyID, "--team-id", Fixtures.teamID,
                "--topic", Fixtures.topic, "--body", "hi", Fixtures.goodToken,
            ])
            #expect(result.status == 1, "\(result)")
            #expect(result.errorLines.count == 1, "\(result)")
            #expect(result.stderr.contains(path), "\(result)")
            // A run-time failure is not fixed by reading --help: no pointer to it.
            #expect(!result.stderr.contains("--help"), "\(result)")
        }
    }

    @Test("a key that other users can read is refused with one line saying chmod 600, before anything is sent; a private one is used; the key is never printed",
          arguments: [0o644, 0o640, 0o604, 0o666])
    func exposedKeyIsRefused(mode: Int) async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = try await Fixtures.makeKey(in: directory, mode: mode)
        let arguments = [
            "send", "--key-file", key.privateKeyPath, "--key-id", Fixtures.keyID, "--team-id", Fixtures.teamID,
            "--host", "127.0.0.1", "--port", "9", "--topic", Fixtures.topic, "--body", "hi", Fixtures.goodToken,
        ]
        let exposed = try await CLI.run(arguments)
        #expect(exposed.status == 1, "\(exposed)")
        #expect(exposed.errorLines == [
            "apns: \(key.privateKeyPath) holds a private key and is accessible to other users (mode \(String(mode, radix: 8))): run chmod 600 \(key.privateKeyPath)",
        ], "\(exposed)")
        #expect(exposed.stdout.isEmpty, "\(exposed)")
        #expect(!exposed.stderr.contains("--help"), "\(exposed)")

        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: key.privateKeyPath)
        let private_ = try await CLI.run(arguments)
        #expect(!private_.stderr.contains("chmod"), "\(private_)")
        #expect(private_.status == 1, "\(private_)")  // the key is used; nothing listens on port 9

        let keyBody = key.privateKeyPEM.split(separator: "\n").filter { !$0.hasPrefix("-----") }
        for line in keyBody {
            #expect(!exposed.stdout.contains(line) && !exposed.stderr.contains(line))
        }
    }

    @Test("a key pasted into APNS_KEY_FILE, APNS_CERTIFICATE_FILE or APNS_KEY_ID is named with one line that never quotes it")
    func keyTextInAPathVariable() async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = try await Fixtures.makeKey(in: directory, mode: 0o600)
        let keyBody = key.privateKeyPEM.split(separator: "\n").filter { !$0.hasPrefix("-----") }
        let base = ["APNS_ENVIRONMENT": "sandbox", "APNS_KEY_ID": Fixtures.keyID, "APNS_TEAM_ID": Fixtures.teamID]
        let cases: [(variables: [String: String], named: String)] = [
            (base.merging(["APNS_KEY_FILE": key.privateKeyPEM]) { $1 }, "APNS_KEY_FILE"),
            (base.merging(["APNS_KEY_FILE": keyBody.joined()]) { $1 }, "APNS_KEY_FILE"),
            (base.merging(["APNS_KEY_FILE": key.privateKeyPath, "APNS_KEY_ID": key.privateKeyPEM]) { $1 }, "APNS_KEY_ID"),
            (["APNS_ENVIRONMENT": "sandbox", "APNS_CERTIFICATE_FILE": key.privateKeyPEM], "APNS_CERTIFICATE_FILE"),
        ]
        for (variables, named) in cases {
            let result = try await CLI.run(["send", "--topic", Fixtures.topic, "--body", "hi", Fixtures.goodToken], environment: variables)
            #expect(result.status != 0, "\(result)")
            #expect(result.errorLines.count == 1, "\(result)")
            #expect(result.stderr.contains(named) && result.stderr.contains("not shown"), "\(result)")
            for line in keyBody {
                #expect(!result.stdout.contains(line) && !result.stderr.contains(line), "\(named): the key is printed")
            }
        }
    }

    @Test("a public key or a certificate given as --key-file is named for what it is, not refused for its mode")
    func publicFileAsKey() async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = try await Fixtures.makeKey(in: directory)
        try await Fixtures.makeClientCertificate(in: directory)
        let publicKey = directory.appendingPathComponent("public.pem").path
        try key.publicKeyPEM.write(toFile: publicKey, atomically: true, encoding: .utf8)
        let certificate = directory.appendingPathComponent("client.pem").path
        for path in [publicKey, certificate] {
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
            let result = try await CLI.run(["send", "--key-file", path, "--key-id", Fixtures.keyID, "--team-id", Fixtures.teamID,
                                            "--topic", Fixtures.topic, "--body", "hi", Fixtures.goodToken])
            #expect(result.status == 1, "\(result)")
            #expect(!result.stderr.contains("chmod"), "\(result)")
            #expect(result.errorLines.count == 1, "\(result)")
        }
        let asCertificate = try await CLI.run(["send", "--key-file", certificate, "--key-id", Fixtures.keyID, "--team-id", Fixtures.teamID,
                                               "--topic", Fixtures.topic, "--body", "hi", Fixtures.goodToken])
        #expect(asCertificate.stderr.contains("--cert-file"), "\(asCertificate)")
    }

    @Test("a certificate without its key, a key without a certificate, a .p12 without its password: each says which flag is missing")
    func certificateHalves() async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await Fixtures.makeClientCertificate(in: directory)
        let key = try await Fixtures.makeKey(in: directory)
        let target = ["--host", "127.0.0.1", "--port", "9", "--topic", Fixtures.topic, "--body", "hi", Fixtures.goodToken]
        let pem = directory.appendingPathComponent("client.pem").path
        let noKey = try await CLI.run(["send", "--cert-file", pem] + target)
        #expect(noKey.status == 1 && noKey.stderr.contains("--cert-key-file"), "\(noKey)")
        let noCertificate = try await CLI.run(["send", "--cert-file", key.privateKeyPath] + target)
        #expect(noCertificate.status == 1 && noCertificate.stderr.contains("holds no certificate")
                    && noCertificate.stderr.contains("--key-file"), "\(noCertificate)")
        let p12 = directory.appendingPathComponent("client.p12").path
        let noPassword = try await CLI.run(["send", "--cert-file", p12] + target)
        #expect(noPassword.status == 1 && noPassword.stderr.contains("--cert-password"), "\(noPassword)")
        for result in [noKey, noCertificate] { #expect(result.errorLines.count == 1, "\(result)") }
    }

    @Test("a .p12 that other users can read is refused; a public PEM certificate beside a private key file is not")
    func exposedCertificateKeyIsRefused() async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await Fixtures.makeClientCertificate(in: directory)
        let p12 = directory.appendingPathComponent("client.p12").path
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: p12)
        let target = ["--host", "127.0.0.1", "--port", "9", "--topic", Fixtures.topic, "--body", "hi", Fixtures.goodToken]
        let exposed = try await CLI.run(["send", "--cert-file", p12, "--cert-password", Fixtures.p12Password] + target)
        #expect(exposed.status == 1, "\(exposed)")
        #expect(exposed.errorLines.count == 1, "\(exposed)")
        #expect(exposed.stderr.hasSuffix("run chmod 600 \(p12)\n"), "\(exposed)")

        let pem = directory.appendingPathComponent("client.pem").path
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: pem)
        let separate = try await CLI.run(["send", "--cert-file", pem, "--cert-key-file", directory.appendingPathComponent("client.key").path] + target)
        #expect(!separate.stderr.contains("chmod"), "\(separate)")
    }

    @Test("--help shows examples", arguments: ["send", "mock-server", "demo", "bench"])
    func helpShowsExamples(subcommand: String) async throws {
        let result = try await CLI.run([subcommand, "--help"])
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("Examples:"), "\(result)")
        #expect(result.stdout.contains("apns \(subcommand)"), "\(result)")
    }
}
