import Foundation
import Testing

/// `apns bench` shows the progress of a long run on a terminal, and nothing off one.
@Suite("apns bench progress")
struct BenchProgressTests {
    @Test("on a terminal a long run draws its progress on standard error, ending at the count; off a terminal, none")
    func progressOnATerminal() async throws {
        let arguments = ["bench", "--count", "10000", "--streams", "100", "--skip-h2load", "--batch"]
        // util-linux script(1) gives the command a pseudo-terminal; standard output goes
        // to /dev/null, so what script prints is standard error as a terminal shows it.
        let command = ([try CLI.executable] + arguments).joined(separator: " ") + " >/dev/null"
        let onTerminal = try await CLI.tool("/usr/bin/script", ["-q", "-e", "-c", command, "/dev/null"], timeout: .seconds(180))
        #expect(onTerminal.status == 0, "\(onTerminal)")
        #expect(onTerminal.stdout.contains("10000/10000 100%"), "\(onTerminal)")
        #expect(onTerminal.stdout.contains("/s ETA"), "\(onTerminal)")

        let offTerminal = try await CLI.run(arguments + ["--json"], timeout: .seconds(180))
        #expect(offTerminal.status == 0, "\(offTerminal)")
        #expect(!offTerminal.stderr.contains("ETA"), "\(offTerminal)")
        let report = try CLI.jsonObject(try #require(offTerminal.lines.last))
        #expect(report["accepted"] as? Int == 10_000)
    }
}
