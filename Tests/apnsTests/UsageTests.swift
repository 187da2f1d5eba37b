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
        ["mock-server", "--token-key", "public.pem"],
        ["bench", "--connections", "0"],
        ["frobnicate"],
    ]

    @Test("a bad flag or value exits 2 with one line on standard error", arguments: badArguments)
    func badFlag(arguments: [String]) async throws {
        let result = try await CLI.run(arguments)
        #expect(result.status == 2, "\(result)")
        #expect(result.errorLines.count == 1, "\(result)")
        #expect(result.stderr.hasPrefix("apns: "), "\(result)")
        #expect(result.stdout.isEmpty, "\(result)")
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
        }
    }

    @Test("a key readable by other users draws a chmod 600 warning; a private one does not; the key is never printed")
    func exposedKeyWarning() async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = try await Fixtures.makeKey(in: directory, mode: 0o644)
        let arguments = [
            "send", "--key-file", key.privateKeyPath, "--key-id", Fixtures.keyID, "--team-id", Fixtures.teamID,
            "--host", "127.0.0.1", "--port", "9", "--topic", Fixtures.topic, "--body", "hi", Fixtures.goodToken,
        ]
        let exposed = try await CLI.run(arguments)
        #expect(exposed.stderr.contains("chmod 600 \(key.privateKeyPath)"), "\(exposed)")
        #expect(exposed.status == 1, "\(exposed)")  // nothing listens on port 9

        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: key.privateKeyPath)
        let private_ = try await CLI.run(arguments)
        #expect(!private_.stderr.contains("chmod"), "\(private_)")

        let keyBody = key.privateKeyPEM.split(separator: "\n").filter { !$0.hasPrefix("-----") }
        for line in keyBody {
            #expect(!exposed.stdout.contains(line) && !exposed.stderr.contains(line))
        }
    }

    @Test("--help shows examples", arguments: ["send", "mock-server", "demo", "bench"])
    func helpShowsExamples(subcommand: String) async throws {
        let result = try await CLI.run([subcommand, "--help"])
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("Examples:"), "\(result)")
        #expect(result.stdout.contains("apns \(subcommand)"), "\(result)")
    }
}
