// APNsBench: the SDK through its public API only, in a process of its own, for
// side-by-side runs with h2load against one server (`run-bench.sh`'s PROJECT_BENCH
// interface; any HTTP/2 server that answers like APNs will do).
//
//   APNsBench HOST PORT KEY.p8 KEYID TEAMID TOPIC N CONC
//
// It sends N copies of Apple's 128-byte example alert, CONC in flight on one
// connection, with a provider token signed by KEY.p8, to device tokens made with
// `DeviceToken(bytes:)`, and prints `ok=<n> failed=<n> seconds=<s>` and, on a second
// line, the process's CPU time per notification (getrusage, whole process) and its peak
// RSS (and the RSS just before the send, which holds the N device tokens).
// `APNS_BENCH_MODE` chooses how it sends:
//   batch  (default) one `client.send(_:to:maxConcurrency:)` call, outcomes collected
//   stream one `client.send(_:to:maxConcurrency:onOutcome:)` call, outcomes counted
//   feedstream  `feed` from an `AsyncStream` that another task fills as fast as it can
//   feedgen  `feed` with each token made as it is read (none held before the send): the
//          streamed batch's memory when the caller never holds every token
//   feed   the streamed batch: one `client.send(_:to:maxConcurrency:onOutcome:)` call
//          whose tokens come from an `AsyncSequence` read as the window frees room (a
//          cursor over the tokens, as a database cursor or a queue consumer would give them)
//   workers one `client.send(_:to:)` per notification from CONC long-lived tasks, each
//          sending its next notification when the last one's outcome is in (the issue's
//          "one send per notification from 100 tasks"; `MODE=single` means this mode)
//   tasks  one `client.send(_:to:)` per notification, each in a child task of its own,
//          CONC at a time (the caller also pays one task per notification)
//   tasks-global  the tasks pattern with the group driven from the global executor, as
//          in a server's request handler (SendModes.swift): in `tasks` it is driven
//          from this file's top-level code, which runs on the main actor
//   main   the workers pattern from CONC tasks isolated to the main actor (`Task { }` in
//          top-level or @MainActor code): every send begins and ends on the main thread
//   floor  the workers pattern with no SDK and no I/O: CONC tasks await N continuations
//          that one other thread resumes in turns (Floor.swift); what an awaited send
//          costs before any transport work
//          (with APNS_BENCH_FLOOR=sdk, each await as the SDK's: its frames' sizes, a
//          cancellation handler, a request of two objects the other thread reads; with
//          sdk-nocancel, sdk-smallframes, sdk-norequest or a comma-separated mix, without
//          that part)
//   floortasks  the tasks pattern with no SDK and no I/O: a child task per await, each
//          awaiting a call with a small frame, or with APNS_BENCH_FRAME=large one past the
//          task allocator's first slab (Floor.swift)
// `APNS_BENCH_EXECUTOR=1` runs the tasks of `workers`, `tasks` and `tasks-global` on the
// transport's I/O thread (`withTaskExecutorPreference(client.taskExecutor)`), with every
// connection on that thread (`threadPlacement = .taskExecutorThread`);
// `APNS_BENCH_EXECUTOR=spread` with the default placement instead. It runs those of
// `floor` on the floor's resuming thread, which is then their task executor.
// `APNS_BENCH_CONNECTIONS` (or `CONNS`) sets the connection count (1 by default).
// `APNS_BENCH_CA` (or `APNS_PERF_CA`, which `run-bench.sh` exports for the clients it
// runs) names the CA certificate (PEM) to trust instead of the system's store.
// `count-allocations.sh` runs it with an LD_PRELOAD allocation counter to count heap
// allocations per notification.
// One warm-up notification opens the connection first; it is not counted.
import APNsTransport
import FoundationEssentials
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Writes `message` and a line break to standard error.
func printError(_ message: String) {
    let bytes = Array((message + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

let arguments = CommandLine.arguments
guard arguments.count == 9, let port = Int(arguments[2]), let count = Int(arguments[7]), let window = Int(arguments[8]) else {
    printError("usage: APNsBench HOST PORT KEY.p8 KEYID TEAMID TOPIC N CONC")
    exit(2)
}
let host = arguments[1]
let benchEnvironment = ProcessInfo.processInfo.environment
// `run-bench.sh` and `run-wan.sh` name the modes MODE=batch|single and the connections
// CONNS; `single` is one send per notification from CONC tasks (`workers`).
let mode = benchEnvironment["APNS_BENCH_MODE"] ?? benchEnvironment["MODE"].map { $0 == "single" ? "workers" : $0 } ?? "batch"
let connections = max(1, Int(benchEnvironment["APNS_BENCH_CONNECTIONS"] ?? benchEnvironment["CONNS"] ?? "") ?? 1)

func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
}

/// `value` with `digits` digits after the point (`String(format:)` is in Foundation, which
/// this program does not load: see <doc:SendingAtScale>).
func fixed(_ value: Double, _ digits: Int) -> String {
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let scaled = Int((abs(value) * scale).rounded())
    let whole = scaled / Int(scale), fraction = String(scaled % Int(scale))
    let sign = value < 0 && scaled != 0 ? "-" : ""
    if digits == 0 { return "\(sign)\(whole)" }
    return "\(sign)\(whole)." + String(repeating: "0", count: digits - fraction.count) + fraction
}

/// VmRSS now, in MiB: what the process holds before the send (the device tokens included).
func currentRSSMegabytes() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
        let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "")
    else { return .nan }
    return kilobytes / 1024
}

func peakRSSMegabytes() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
        let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "")
    else { return .nan }
    return kilobytes / 1024
}

let environment = APNsEnvironment.custom(host: host, port: port)
var trust = TrustRoots.system
if let caPath = benchEnvironment["APNS_BENCH_CA"] ?? benchEnvironment["APNS_PERF_CA"] {
    trust = .certificates(try String(contentsOfFile: caPath, encoding: .utf8))
}
let onIOThread = benchEnvironment["APNS_BENCH_EXECUTOR"].map { $0 != "0" && !$0.isEmpty } ?? false
var transportConfiguration = HTTP2Transport.Configuration(
    environment: environment,
    tls: TLSConfiguration(trustRoots: trust),
    connectionCount: connections,
    maxQueuedRequests: max(10_000, window)
)
// `APNS_BENCH_EXECUTOR=spread` keeps the default placement (one connection on the
// executor's thread, the others spread).
if onIOThread, benchEnvironment["APNS_BENCH_EXECUTOR"] != "spread" { transportConfiguration.threadPlacement = .taskExecutorThread }
let transport = HTTP2Transport(configuration: transportConfiguration)
let tokens = try ProviderTokenCache(
    key: ProviderKey(contentsOfFile: arguments[3]),
    keyID: arguments[4],
    teamID: arguments[5]
)
if ProcessInfo.processInfo.environment["APNS_BENCH_SIGN_FIRST"] != nil {
    do { _ = try tokens.token() } catch { print("sign first failed: \(error)") }
}
let client = APNsClient(environment: environment, credentials: .providerToken(tokens), transport: transport)
// Apple's example alert, 128 bytes once encoded.
var payload = Payload.alert(title: "Game Request", body: "Bob wants to play poker")
payload.aps.badge = 5
payload.aps.sound = "default"
try payload.setCustom("acme1", to: "bar")
try payload.setCustom("acme2", to: 42)
let notification = PushNotification(payload: payload, topic: .bundleID(arguments[6]))
// Device tokens as an app server has them: bytes from its database. A constant once made:
// a top-level `var` read from the sending tasks would cost the runtime's exclusivity
// check on every access, which is the benchmark's cost, not the SDK's.
let deviceTokens: [DeviceToken] = try {
    // `feedgen` makes its tokens as it reads them: only the warm-up's is made here.
    let made = mode == "feedgen" ? 1 : count
    var tokens: [DeviceToken] = []
    tokens.reserveCapacity(made)
    // One buffer for every token's bytes (a token keeps its 32 bytes inline), so making
    // them allocates nothing per token and `count-allocations.sh` counts only the send.
    var bytes = [UInt8](repeating: 0xA5, count: 32)
    for index in 0..<made { tokens.append(try benchToken(index, buffer: &bytes)) }
    return tokens
}()

do {
    _ = try await client.send(notification, to: deviceTokens[0])
} catch {
    printError("warm-up failed: \(error)")
}

let rssBeforeSend = currentRSSMegabytes()
let cpuBefore = cpuSeconds()
let start = ContinuousClock.now
var ok = 0
switch mode {
case "tasks":
    ok = await withTaskExecutorPreference(onIOThread ? client.taskExecutor : nil) { await withTaskGroup(of: Bool.self) { group in
        var next = 0
        var accepted = 0
        while next < min(window, count) {
            let token = deviceTokens[next]
            group.addTask { (try? await client.send(notification, to: token)) != nil }
            next += 1
        }
        while let result = await group.next() {
            if result { accepted += 1 }
            if next < count {
                let token = deviceTokens[next]
                group.addTask { (try? await client.send(notification, to: token)) != nil }
                next += 1
            }
        }
        return accepted
    } }
case "tasks-global":
    ok = await sendFromTasks(
        client: client,
        notification: notification,
        deviceTokens: deviceTokens,
        window: window,
        executor: onIOThread ? client.taskExecutor : nil
    )
case "workers":
    // CONC long-lived tasks, each sending one notification at a time: the caller's own
    // cost is one task for the whole run instead of one per notification.
    final class NextIndex: Sendable {
        let value = Atomic<Int>(0)
    }
    let next = NextIndex()
    let tokens = deviceTokens
    ok = await withTaskExecutorPreference(onIOThread ? client.taskExecutor : nil) { await withTaskGroup(of: Int.self) { group in
        for _ in 0..<min(window, count) {
            group.addTask {
                var accepted = 0
                while true {
                    let index = next.value.add(1, ordering: .relaxed).oldValue
                    if index >= tokens.count { return accepted }
                    if (try? await client.send(notification, to: tokens[index])) != nil { accepted += 1 }
                }
            }
        }
        var total = 0
        for await accepted in group { total += accepted }
        return total
    } }
case "main":
    // The workers pattern from tasks isolated to the main actor, as `Task { }` in
    // top-level code (or in any @MainActor code) makes them: each send starts and ends on
    // the main thread.
    final class MainNextIndex: Sendable {
        let value = Atomic<Int>(0)
    }
    let next = MainNextIndex()
    let tokens = deviceTokens
    var workers: [Task<Int, Never>] = []
    for _ in 0..<min(window, count) {
        workers.append(Task { @MainActor in
            var accepted = 0
            while true {
                let index = next.value.add(1, ordering: .relaxed).oldValue
                if index >= tokens.count { return accepted }
                if (try? await client.send(notification, to: tokens[index])) != nil { accepted += 1 }
            }
        })
    }
    for worker in workers { ok += await worker.value }
case "floor":
    ok = await runFloor(count: count, tasks: window, sdk: FloorShape(benchEnvironment["APNS_BENCH_FLOOR"]), onResumer: onIOThread)
case "floortasks":
    ok = await runFloorTasks(count: count, tasks: window, largeFrame: benchEnvironment["APNS_BENCH_FRAME"] == "large")
case "feedstream":
    ok = await sendFeedStream(client: client, notification: notification, deviceTokens: deviceTokens, window: window)
case "feedgen":
    ok = await sendFeed(client: client, notification: notification, tokens: GeneratedTokens(count: count), window: window)
case "feed":
    ok = await sendFeed(client: client, notification: notification, deviceTokens: deviceTokens, window: window)
case "stream":
    let summary = await client.send(notification, to: deviceTokens, maxConcurrency: window) { _, _ in }
    ok = summary.accepted
default:
    let outcomes = await client.send(notification, to: deviceTokens, maxConcurrency: window)
    ok = outcomes.reduce(0) { $0 + ($1.accepted != nil ? 1 : 0) }
}
let elapsed = start.duration(to: .now)
let cpu = cpuSeconds() - cpuBefore
await client.shutdown()
let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
print("ok=\(ok) failed=\(count - ok) seconds=\(fixed(seconds, 3))")
print("mode=\(mode) cpu_us_per_notification=\(fixed(cpu / Double(count) * 1e6, 2)) peak_rss_mib=\(fixed(peakRSSMegabytes(), 1)) rss_before_send_mib=\(fixed(rssBeforeSend, 1))")
