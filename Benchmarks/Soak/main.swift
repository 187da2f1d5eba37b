// Soak: a million notifications through APNsClient and HTTP2Transport to APNsMockServer
// (in this process) while a seeded fault injector scripts GOAWAYs, dropped and refused
// connections, 429/500/503 bursts, response delays, stalls and stream-limit drops.
//
//   swift build -c release --product Soak
//   .build/release/Soak [--notifications N] [--seed S] [--connections C] [--concurrency K]
//                       [--fault-gap G] [--timeout SECONDS] [--no-stalls] [--watchdog SECONDS]
//                       [--rss-bound MIB] [--batch SIZE] [--streamed] [--round-trip MS]
//
// --round-trip MS puts the mock server behind a link emulation: everything it sends (answers,
// SETTINGS, PING acknowledgements, GOAWAY) leaves MS milliseconds late, so every request
// sees a round trip of MS milliseconds, with the same faults as on loopback.
// --batch SIZE sends with APNsClient's batch send, SIZE device tokens per call (window
// --concurrency), instead of one send per notification from --concurrency tasks.
// --streamed sends everything with one streamed batch (the device tokens as an
// AsyncSequence, window --concurrency).
// Prints progress every 10% (rate, RSS, open connections, faults so far), then the
// report: outcomes by kind, faults by kind, duplicates at the server and their
// classification, RSS, connections. Exits 1 if any check failed (a lost or doubly
// answered notification, an unexplained duplicate, a stall, RSS growth past the bound).
// The same engine runs at 10,000 notifications in the default test suite.
import Foundation
import SoakEngine

/// The value after the last `flag`, so that a flag given after scripts/soak.sh's own
/// `--notifications 1000000` wins.
func value(_ flag: String) -> String? {
    let arguments = CommandLine.arguments
    guard let index = arguments.lastIndex(of: flag), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

func integer(_ flag: String) -> Int? {
    guard let text = value(flag) else { return nil }
    guard let number = Int(text.replacingOccurrences(of: "_", with: "")) else {
        FileHandle.standardError.write(Data("Soak: \(flag) needs an integer, not '\(text)'\n".utf8))
        exit(2)
    }
    return number
}

if CommandLine.arguments.contains("--help") || CommandLine.arguments.contains("-h") {
    print("usage: Soak [--notifications N] [--seed S] [--connections C] [--concurrency K] [--fault-gap G]")
    print("            [--timeout SECONDS] [--no-stalls] [--watchdog SECONDS] [--rss-bound MIB] [--batch SIZE] [--streamed]")
    print("            [--round-trip MS]")
    exit(0)
}

let defaults = SoakConfiguration()
let notifications = integer("--notifications") ?? 1_000_000
let configuration = SoakConfiguration(
    notifications: notifications,
    seed: value("--seed").flatMap { UInt64($0) } ?? defaults.seed,
    connections: integer("--connections") ?? 4,
    concurrency: integer("--concurrency") ?? 200,
    meanFaultGap: integer("--fault-gap"),
    requestTimeout: .seconds(integer("--timeout") ?? 5),
    stalls: !CommandLine.arguments.contains("--no-stalls"),
    watchdog: .seconds(integer("--watchdog") ?? 30),
    rssGrowthLimitBytes: (integer("--rss-bound") ?? 32) << 20,
    batchSize: integer("--batch"),
    streamed: CommandLine.arguments.contains("--streamed"),
    oneWayDelay: integer("--round-trip").map { .milliseconds($0) },
    log: { line in
        print(line)
        fflush(nil)
    }
)
print("Soak seed \(configuration.seed) (repeat the fault sequence with --seed \(configuration.seed))")
let report = try await Soak.run(configuration)
print(report)
fflush(nil)
exit(report.passed ? 0 : 1)
