// WANBenchmark: the latency-bound throughput of issue 18 (section 3). The SDK's public
// API (APNsClient's batch send over HTTP2Transport) against APNsMockServer behind its link
// emulation, beside h2load on the same server and link.
//
//   swift build -c release --product WANBenchmark
//   .build/release/WANBenchmark [--rounds R] [--seconds S] [--rtt 20,50,150] [--h2load-streams M] [--no-h2load] [--quick]
//
// The server: token authentication with ES256 signature checks, 1 stream per connection
// until its first request with a valid token, then 1,000 (as APNs does), nghttp2's default
// 65,535-byte connection window, and every byte it sends delayed by the round trip
// (`MockAPNsServer.setLinkEmulation(_:)`: answers, SETTINGS and PING acknowledgements
// arrive one round trip after the request left). The server runs in this process, on its
// own thread, so it shares the CPU with the client (and with h2load during h2load's runs).
//
// For each round trip (20, 50 and 150 ms by default), in each of R interleaved rounds
// (default 3):
// - fixed: 1, 4 and 16 connections (`connectionCount` = C, no stagger), opened by a warm-up
//   batch first, then one `APNsClient` batch of the 128-byte example alert to distinct
//   device tokens with C × 1,000 in flight, sized to last about S seconds (default 3);
// - h2load on the same link: `-c C -m 1000`, S seconds after a 1 s warm-up, the same
//   body, path shape and a provider token signed by the same key;
// - left to decide: a new transport with `connectionCount` 16 and the default stagger
//   (250 ms), cold, one batch of 16 × 1,000 in flight lasting about S + 4 seconds;
//   how many connections it opened, its rate and the time until full throughput.
//
// Rates: "steady" counts the answers from 0.5 s after the batch starts to one round trip
// before it ends (what h2load's warm-up and fixed duration measure); "time to 90 %" is the
// start of the first second-long window holding at least 90 % of the final second's
// answers (the final second ends one round trip before the batch ends).
// Limits: C × 1,000 streams ÷ RTT, and C × 65,535 bytes of window ÷ 128-byte body ÷ RTT.
// `--quick` is a smoke run: one round, 1 s per measurement, round trip 50 ms only.
import APNsMockServer
import APNsTransport
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

// MARK: Options

struct Options {
    var rounds = 3
    var seconds = 3.0
    var roundTrips = [20, 50, 150]
    var connectionCounts = [1, 4, 16]
    var runsH2load = true
    var h2loadStreams = 1000

    init(_ arguments: [String]) throws {
        var index = 1
        func value(_ name: String) throws -> String {
            index += 1
            guard index < arguments.count else { throw UsageError("\(name) needs a value") }
            return arguments[index]
        }
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "--rounds":
                guard let rounds = Int(try value(argument)), rounds > 0 else { throw UsageError("--rounds needs a positive integer") }
                self.rounds = rounds
            case "--seconds":
                guard let seconds = Double(try value(argument)), seconds >= 1, seconds <= 60 else {
                    throw UsageError("--seconds needs a number from 1 to 60")
                }
                self.seconds = seconds
            case "--rtt":
                let list = try value(argument).split(separator: ",").map { Int($0) }
                guard !list.isEmpty, list.allSatisfy({ ($0 ?? 0) > 0 && ($0 ?? 0) <= 1000 }) else {
                    throw UsageError("--rtt needs milliseconds from 1 to 1000, comma-separated")
                }
                roundTrips = list.compactMap { $0 }
            case "--h2load-streams":
                guard let streams = Int(try value(argument)), streams > 0 else { throw UsageError("--h2load-streams needs a positive integer") }
                h2loadStreams = streams
            case "--no-h2load":
                runsH2load = false
            case "--quick":
                rounds = 1
                seconds = 1
                roundTrips = [50]
            default:
                throw UsageError("unknown argument \(argument)")
            }
            index += 1
        }
    }
}

struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

// MARK: Timeline of answers

/// Answers counted in 10 ms buckets from the start of a batch, from any thread.
final class Timeline: Sendable {
    static let bucket = 0.010
    private let start: ContinuousClock.Instant
    private let buckets = Mutex<[Int]>([Int](repeating: 0, count: 4096))
    private let failures = Atomic<Int>(0)

    init() { start = .now }

    func record(accepted: Bool) {
        let elapsed = start.duration(to: .now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let index = max(0, Int(seconds / Self.bucket))
        if !accepted { failures.add(1, ordering: .relaxed) }
        guard accepted else { return }
        buckets.withLock { buckets in
            while index >= buckets.count { buckets.append(contentsOf: repeatElement(0, count: buckets.count)) }
            buckets[index] += 1
        }
    }

    var counts: [Int] { buckets.withLock { $0 } }
    var failed: Int { failures.load(ordering: .relaxed) }
}

/// What one batch's answers over time say.
struct RateAnalysis {
    /// Answers per second from 0.5 s to one round trip before the end.
    var steady: Double
    /// Answers per second in the final second (ending one round trip before the end).
    var final: Double
    /// Start of the first one-second window with at least 90 % of the final second's answers.
    var timeTo90: Double?
    /// The longest time without an answer between the first answer and the last.
    var longestGap: Double

    init(counts: [Int], elapsed: Double, roundTrip: Double) {
        let bucket = Timeline.bucket
        var gap = 0
        var longest = 0
        if let firstAnswer = counts.firstIndex(where: { $0 > 0 }), let lastAnswer = counts.lastIndex(where: { $0 > 0 }) {
            for count in counts[firstAnswer...lastAnswer] {
                gap = count == 0 ? gap + 1 : 0
                longest = max(longest, gap)
            }
        }
        longestGap = Double(longest) * bucket
        let end = max(0, Int(((elapsed - roundTrip) / bucket).rounded(.down)))
        let first = min(Int(0.5 / bucket), end)
        func sum(_ from: Int, _ to: Int) -> Int {
            guard to > from else { return 0 }
            return counts[max(0, from)..<min(to, counts.count)].reduce(0, +)
        }
        steady = end > first ? Double(sum(first, end)) / (Double(end - first) * bucket) : 0
        let window = Int(1 / bucket)
        let finalCount = sum(end - window, end)
        final = Double(finalCount)
        timeTo90 = nil
        if end >= window, finalCount > 0 {
            var running = sum(0, window)
            for start in 0...(end - window) {
                if Double(running) >= 0.9 * Double(finalCount) {
                    timeTo90 = Double(start) * bucket
                    break
                }
                if start + window < counts.count { running += counts[start + window] }
                running -= counts[start]
            }
        }
    }
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

// MARK: The server and the notification

let options: Options
do {
    options = try Options(CommandLine.arguments)
} catch {
    FileHandle.standardError.write(Data("WANBenchmark: \(error)\nusage: WANBenchmark [--rounds R] [--seconds S] [--rtt 20,50,150] [--h2load-streams M] [--no-h2load] [--quick]\n".utf8))
    exit(2)
}

let keyID = "WANBENCH01"
let teamID = "WANTEAM001"
let topic = "com.example.wanbench"
let key = try ProviderKey.generate()
var verifier = ProviderTokenVerifier()
verifier.register(key, keyID: keyID, teamID: teamID)
let server = MockAPNsServer(
    configuration: .init(
        bundleIDs: [topic],
        authentication: .providerToken(.signature(verifier)),
        maxConcurrentStreams: 1000,
        listensOnIPv6: false,
        recordedRequestLimit: 0
    )
)
try await server.start()
let tokens = try ProviderTokenCache(key: key, keyID: keyID, teamID: teamID)

// Apple's example alert, 128 bytes once encoded (the body h2load sends too).
var payload = Payload.alert(title: "Game Request", body: "Bob wants to play poker")
payload.aps.badge = 5
payload.aps.sound = "default"
try payload.setCustom("acme1", to: "bar")
try payload.setCustom("acme2", to: 42)
let body = try payload.encoded(for: .alert)
let notification = PushNotification(payload: payload, topic: .bundleID(topic))
let bodyPath = NSTemporaryDirectory() + "wanbench-body-\(getpid()).json"
try Data(body).write(to: URL(fileURLWithPath: bodyPath))
defer { try? FileManager.default.removeItem(atPath: bodyPath) }

let maxNotifications = 600_000
var deviceTokens: [DeviceToken] = []
deviceTokens.reserveCapacity(maxNotifications)
var tokenBytes = [UInt8](repeating: 0xA5, count: 32)
for index in 0..<maxNotifications {
    tokenBytes.withUnsafeMutableBytes { $0.storeBytes(of: UInt64(index).bigEndian, toByteOffset: 0, as: UInt64.self) }
    deviceTokens.append(try DeviceToken(bytes: tokenBytes))
}

let streamLimit = 1000
let window = 65_535

func limits(connections: Int, roundTrip: Double) -> (streams: Double, window: Double) {
    (
        Double(connections * streamLimit) / roundTrip,
        Double(connections) * (Double(window) / Double(body.count)).rounded(.down) / roundTrip
    )
}

// MARK: The SDK

struct SDKRun {
    var accepted: Int
    var failed: Int
    var elapsed: Double
    var analysis: RateAnalysis
    var connectionsOpened: Int
    var warmConnections: Int
}

/// One batch through the public API. `fixed`: `connectionCount` connections opened at once
/// by a warm-up batch before the measured one; otherwise a cold pool with the default stagger.
@MainActor
func runSDK(connections: Int, fixed: Bool, count: Int, roundTrip: Double) async throws -> SDKRun {
    let transport = try server.makeTransport { configuration in
        configuration.connectionCount = connections
        configuration.maxQueuedRequests = 100_000
        if fixed { configuration.connectionStagger = .zero }
    }
    let client = APNsClient(environment: server.environment, credentials: .providerToken(tokens), transport: transport)
    let inFlight = connections * streamLimit
    var warm = 0
    if fixed {
        // Enough waiting requests that the pool opens every connection; a few tries at most.
        for _ in 0..<4 where transport.statistics.connectionsOpened < connections {
            let warmUp = Array(deviceTokens[0..<min(maxNotifications, connections * 1_500)])
            _ = await client.send(notification, to: warmUp, maxConcurrency: inFlight) { _, _ in }
        }
        warm = transport.statistics.connectionsOpened
    }
    let batch = Array(deviceTokens[0..<count])
    let timeline = Timeline()
    let start = ContinuousClock.now
    let summary = await client.send(notification, to: batch, maxConcurrency: inFlight) { _, outcome in
        timeline.record(accepted: outcome.accepted != nil)
    }
    let elapsed = seconds(start.duration(to: .now))
    let opened = transport.statistics.connectionsOpened
    await client.shutdown()
    return SDKRun(
        accepted: summary.accepted,
        failed: count - summary.accepted,
        elapsed: elapsed,
        analysis: RateAnalysis(counts: timeline.counts, elapsed: elapsed, roundTrip: roundTrip),
        connectionsOpened: opened,
        warmConnections: warm
    )
}

// MARK: h2load

struct H2loadRun {
    /// Requests answered 2xx in the main duration (after the warm-up).
    var succeeded: Int
    var failed: Int
    /// h2load's own figure: `succeeded` over the main duration.
    var rate: Double
}

func h2loadPath() -> String? {
    for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
        let path = "\(directory)/h2load"
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return nil
}

/// h2load with C connections × 1,000 streams for `duration` seconds after a 1 s warm-up.
@MainActor
func runH2load(_ path: String, connections: Int, duration: Double) async throws -> H2loadRun {
    let token = try tokens.token()
    let device = String(repeating: "a5", count: 32)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
    process.arguments = [
        String(Int(duration) + 30), path,
        "-c", String(connections), "-m", String(options.h2loadStreams),
        "-D", String(Int(duration.rounded(.up))), "--warm-up-time", "1",
        "-d", bodyPath,
        "-H", "authorization: \(token.authorizationValue)",
        "-H", "apns-topic: \(topic)",
        "-H", "apns-push-type: alert",
        "https://127.0.0.1:\(server.port)/3/device/\(device)",
    ]
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    try process.run()
    // Read on a thread of its own: the pipe must be drained while h2load runs.
    let output: String = await withCheckedContinuation { continuation in
        Thread.detachNewThread {
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            continuation.resume(returning: String(decoding: data, as: UTF8.self))
        }
    }
    // "finished in 4.00s, 1234.00 req/s, ..." and "requests: T total, S started, D done, N succeeded, F failed, E errored, ..."
    var run = H2loadRun(succeeded: 0, failed: 0, rate: 0)
    for line in output.split(separator: "\n") {
        let words = line.split(whereSeparator: { $0 == " " || $0 == "," })
        if line.hasPrefix("finished in"), words.count > 4, words[4] == "req/s" {
            run.rate = Double(words[3]) ?? 0
        } else if line.hasPrefix("requests:") {
            for (index, word) in words.enumerated() where index > 0 {
                if word == "succeeded" { run.succeeded = Int(words[index - 1]) ?? 0 }
                if word == "failed" || word == "errored" { run.failed += Int(words[index - 1]) ?? 0 }
            }
        }
    }
    if ProcessInfo.processInfo.environment["WANBENCH_VERBOSE"] != nil {
        // The provider token stays out of the log.
        let shown = (process.arguments ?? []).dropFirst(2).map { $0.hasPrefix("authorization:") ? "authorization: bearer …" : $0 }
        FileHandle.standardError.write(Data("h2load \(shown.joined(separator: " ")):\n\(output)\n".utf8))
    }
    if run.rate == 0 {
        FileHandle.standardError.write(Data("h2load printed no result:\n\(output)\n".utf8))
    }
    return run
}

// MARK: Rounds

struct Key: Hashable { var roundTrip: Int; var connections: Int }
var sdkRuns: [Key: [SDKRun]] = [:]
var h2loadRuns: [Key: [H2loadRun]] = [:]
var autoRuns: [Int: [SDKRun]] = [:]
let h2load = options.runsH2load ? h2loadPath() : nil
if options.runsH2load, h2load == nil { print("h2load not found on PATH: its columns stay empty") }

func format(_ value: Double) -> String {
    let number = NSNumber(value: value.rounded())
    let formatter = NumberFormatter()
    formatter.numberStyle = .decimal
    formatter.groupingSeparator = ","
    formatter.usesGroupingSeparator = true
    return formatter.string(from: number) ?? String(Int(value))
}

func count(for rate: Double, seconds: Double) -> Int {
    min(maxNotifications, max(2_000, Int(rate * seconds)))
}

print("WANBenchmark: body \(body.count) bytes, server in this process, \(options.rounds) round(s), \(options.seconds) s per measurement")
let benchmarkStart = ContinuousClock.now
for round in 1...options.rounds {
    for roundTripMilliseconds in options.roundTrips {
        let roundTrip = Double(roundTripMilliseconds) / 1000
        server.setLinkEmulation(.init(oneWayDelay: .milliseconds(roundTripMilliseconds)))
        for connections in options.connectionCounts {
            let key = Key(roundTrip: roundTripMilliseconds, connections: connections)
            let limit = limits(connections: connections, roundTrip: roundTrip)
            // Size the batch from the last round's rate, else from the link's limit.
            // (never below the link's limit or 40,000/s, whichever is lower, so that a slow
            // round does not make the next one too short to measure).
            let floor = min(min(limit.streams, limit.window), 40_000)
            let estimate = max(floor, sdkRuns[key]?.map(\.analysis.steady).max() ?? 0)
            let run = try await runSDK(
                connections: connections, fixed: true, count: count(for: estimate, seconds: options.seconds), roundTrip: roundTrip
            )
            sdkRuns[key, default: []].append(run)
            var line = "round \(round) rtt \(roundTripMilliseconds) ms c \(connections): SDK steady \(format(run.analysis.steady))/s (\(run.accepted) in \(String(format: "%.2f", run.elapsed)) s, \(run.failed) failed, \(run.warmConnections) connections, longest gap \(String(format: "%.2f", run.analysis.longestGap)) s)"
            if let h2load {
                let h2 = try await runH2load(h2load, connections: connections, duration: options.seconds)
                h2loadRuns[key, default: []].append(h2)
                line += "; h2load \(format(h2.rate))/s (\(h2.succeeded) in \(options.seconds) s after 1 s of warm-up, \(h2.failed) failed)"
            }
            print(line)
            fflush(nil)
        }
        // Left to decide: connectionCount 16, cold, the default stagger.
        let fixed16 = sdkRuns[Key(roundTrip: roundTripMilliseconds, connections: 16)]?.last?.analysis.steady ?? 40_000
        let run = try await runSDK(
            connections: 16, fixed: false, count: count(for: fixed16, seconds: options.seconds + 4), roundTrip: roundTrip
        )
        autoRuns[roundTripMilliseconds, default: []].append(run)
        let time = run.analysis.timeTo90.map { String(format: "%.2f s", $0) } ?? "never"
        print("round \(round) rtt \(roundTripMilliseconds) ms pool of 16 left to decide: steady \(format(run.analysis.steady))/s, final second \(format(run.analysis.final))/s, 90 % at \(time), \(run.connectionsOpened) connections opened, \(run.failed) failed, longest gap \(String(format: "%.2f", run.analysis.longestGap)) s")
        fflush(nil)
    }
}
server.setLinkEmulation(nil)
await server.stop()
print("total \(String(format: "%.0f", seconds(benchmarkStart.duration(to: .now)))) s")

// MARK: Summary

func range(_ values: [Double], _ show: (Double) -> String = format) -> String {
    guard let low = values.min(), let high = values.max() else { return "–" }
    let sorted = values.sorted()
    let median = sorted[sorted.count / 2]
    return values.count == 1 ? show(median) : "\(show(median)) (\(show(low))–\(show(high)))"
}
func ratio(_ value: Double) -> String { String(format: "%.2f", value) }

print("")
print("Medians over \(options.rounds) round(s) (range); notifications per second.")
print("")
print("| round trip | connections | streams ÷ RTT | window ÷ body ÷ RTT | h2load | SDK batch | SDK ÷ h2load, per round |")
print("|---|---|---|---|---|---|---|")
for roundTripMilliseconds in options.roundTrips {
    for connections in options.connectionCounts {
        let key = Key(roundTrip: roundTripMilliseconds, connections: connections)
        let limit = limits(connections: connections, roundTrip: Double(roundTripMilliseconds) / 1000)
        let sdk = (sdkRuns[key] ?? []).map(\.analysis.steady)
        let h2 = (h2loadRuns[key] ?? []).map(\.rate)
        let ratios = zip(sdk, h2).map { $1 > 0 ? ratio($0 / $1) : "–" }.joined(separator: ", ")
        print("| \(roundTripMilliseconds) ms | \(connections) | \(format(limit.streams)) | \(format(limit.window)) | \(range(h2)) | \(range(sdk)) | \(ratios.isEmpty ? "–" : ratios) |")
    }
}
print("")
print("| round trip | pool of 16 left to decide: steady | × its limit | × 16 fixed connections | time to 90 % | connections opened |")
print("|---|---|---|---|---|---|")
for roundTripMilliseconds in options.roundTrips {
    let runs = autoRuns[roundTripMilliseconds] ?? []
    let limit = limits(connections: 16, roundTrip: Double(roundTripMilliseconds) / 1000)
    let allowed = min(limit.streams, limit.window)
    let fixed = sdkRuns[Key(roundTrip: roundTripMilliseconds, connections: 16)] ?? []
    let ofFixed = zip(runs, fixed).map { ratio($0.analysis.steady / max(1, $1.analysis.steady)) }.joined(separator: ", ")
    print("| \(roundTripMilliseconds) ms | \(range(runs.map(\.analysis.steady))) | \(range(runs.map { $0.analysis.steady / allowed }, ratio)) | \(ofFixed) | \(range(runs.compactMap(\.analysis.timeTo90), { String(format: "%.2f s", $0) })) | \(range(runs.map { Double($0.connectionsOpened) })) |")
}
