import Foundation
import Testing

/// Standard output and standard error that cannot be written (a full disk, a closed pipe):
/// the tool says so when it can and exits with its documented statuses, never with a trap
/// (132) or killed by SIGPIPE (141).
@Suite("apns: unwritable standard streams")
struct OutputStreamTests {
    /// Runs `script` with `sh -c`, `$0` the `apns` executable; returns what it printed.
    static func shell(_ script: String, _ arguments: [String] = []) async throws -> CLI.Result {
        try await CLI.tool("/bin/sh", ["-c", script, try CLI.executable] + arguments, timeout: .seconds(120))
    }

    @Test("standard error that cannot be written changes nothing: --version to /dev/full is 1, no subcommand is 2")
    func unwritableStandardError() async throws {
        let version = try await Self.shell(#""$0" --version >/dev/full 2>/dev/full; echo "status $?""#)
        #expect(version.stdout == "status 1\n", "\(version)")
        let usage = try await Self.shell(#""$0" 2>/dev/full; echo "status $?""#)
        #expect(usage.stdout == "status 2\n", "\(usage)")
    }

    @Test("a closed pipe on standard output is a write failure (exit 1, one line), not death by SIGPIPE or a trap",
          arguments: [false, true])
    func closedPipe(standardErrorToo: Bool) async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // Far more than a pipe holds, so the tool is still writing when `head` has gone.
        let tokens = directory.appendingPathComponent("tokens.txt")
        try String(repeating: Fixtures.goodToken + "\n", count: 3000).write(to: tokens, atomically: true, encoding: .utf8)
        // Standard error to the same closed pipe, or to the script's output (fd 3).
        let errors = standardErrorToo ? "2>&1" : "2>&3"
        let result = try await Self.shell(
            #"exec 3>&1; ( "$0" "$@" "# + errors + #"; echo "status $?" >&3 ) | head -c 1 >/dev/null"#,
            ["send", "--no-auth", "--dry-run", "--topic", Fixtures.topic, "--body", "Hi", "--tokens-file", tokens.path])
        #expect(result.lines.last == "status 1", "\(result)")
        if !standardErrorToo {
            #expect(result.lines.first == "apns: cannot write to standard output (Broken pipe): what it printed is incomplete", "\(result)")
        }
    }
}
