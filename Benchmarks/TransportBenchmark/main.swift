// TransportBenchmark: HTTP2Transport against APNsMockServer, beside h2load against the
// same server with the same request shape.
//
//   swift run -c release TransportBenchmark [--requests N] [--shape CxM] [--no-h2load]
//                                            [--mode call|batch|client] [--connect PORT CA_PATH]
//   swift run -c release TransportBenchmark --observability [--rounds R] [--requests N] [--shape CxM]
//
// Each run sends N notifications (default 50,000) over C connections with M concurrent
// streams each, after a warm-up of 2,000, three ways: `send(_:)` from C×M sending tasks
// ("send"); one `sendBatch` whose window is C×M ("sendBatch"); and APNsClient's batch send
// with that window ("APNsClient batch", from device tokens and one notification). For each
// it prints notifications per second, client CPU µs per notification (and the share of
// the connection threads), p50/p99 latency (not for the client batch, which reports
// none), frames written per notification, failures and the row's peak RSS (VmHWM, reset
// when the row starts, after returning freed heap to the kernel); then
// h2load with the same request shape against the same server, and the CPU ratios.
//
// `--observability` measures what metrics and tracing cost on the send path: R rounds
// (default 3) of the APNsClient batch send, each four times: with swift-metrics' and
// swift-distributed-tracing's no-ops (what a process that bootstraps no backend gets),
// with an in-process MetricsFactory only, with a Tracer that records every span only, and
// with both (RecordingMetrics.swift, RecordingTracer.swift), in rotating order, and prints
// the client CPU µs per notification of each and its ratio to the no-ops.
//
// The mock server runs in a child process (this executable with `server`), so
// getrusage(RUSAGE_SELF) measures the client's CPU alone; h2load's CPU is read with
// getrusage(RUSAGE_CHILDREN) around its run.
import APNsMockServer
import APNsTransport
import CoreMetrics
import Foundation
import Logging
import Tracing

#if canImport(Glibc)
import Glibc
#endif

let arguments = CommandLine.arguments

// MARK: Child: the server

if arguments.count > 1, arguments[1] == "server" {
    let server = MockAPNsServer(
        configuration: .init(maxConcurrentStreams: 1000, listensOnIPv6: false, recordedRequestLimit: 0)
    )
    let box = ResultBox()
    Task.detached {
        do {
            try await server.start()
            let caPath = NSTemporaryDirectory() + "transport-benchmark-ca-\(getpid()).pem"
            try server.writeCertificateAuthority(to: caPath)
            print("READY \(server.port) \(caPath)")
            fflush(nil)
        } catch {
            print("FAILED \(error)")
            fflush(nil)
            exit(1)
        }
        box.signal()
    }
    box.wait()
    // Serve until the parent closes our stdin.
    while let _ = readLine() {}
    exit(0)
}

/// A one-shot semaphore for the top-level code.
final class ResultBox: @unchecked Sendable {
    // Safe: DispatchSemaphore is thread-safe.
    private let semaphore = DispatchSemaphore(value: 0)
    func signal() { semaphore.signal() }
    func wait() { semaphore.wait() }
}

// MARK: Parent: the client

var totalRequests = 50_000
if let index = arguments.firstIndex(of: "--requests"), index + 1 < arguments.count, let n = Int(arguments[index + 1]) {
    totalRequests = n
}

// `--connect PORT CA_PATH`: use a server started separately with `TransportBenchmark server`
// (to profile the client alone, for example under valgrind, which cannot spawn it).
let child = Process()
let childIn = Pipe()
let port: Int
let caPath: String
if let index = arguments.firstIndex(of: "--connect"), index + 2 < arguments.count, let given = Int(arguments[index + 1]) {
    port = given
    caPath = arguments[index + 2]
} else {
    child.executableURL = URL(fileURLWithPath: arguments[0])
    child.arguments = ["server"]
    let childOut = Pipe()
    child.standardOutput = childOut
    child.standardInput = childIn
    try child.run()
    let firstLine = String(decoding: childOut.fileHandleForReading.availableData, as: UTF8.self)
    let fields = firstLine.split(separator: " ").map(String.init)
    guard fields.count >= 3, fields[0] == "READY", let parsed = Int(fields[1].trimmingCharacters(in: .whitespacesAndNewlines)) else {
        print("the server did not start: \(firstLine)")
        exit(1)
    }
    port = parsed
    caPath = fields[2].trimmingCharacters(in: .whitespacesAndNewlines)
}
let caPEM = try String(contentsOfFile: caPath, encoding: .utf8)

let payload = Array(#"{"aps":{"alert":{"title":"Benchmark","body":"A notification of a typical size, about a hundred bytes."}}}"#.utf8)
let topic = "com.example.benchmark"

func request(_ index: Int) throws -> APNsRequest {
    var hex = String(index, radix: 16)
    hex = String(repeating: "0", count: 64 - hex.count) + hex
    return try APNsRequest(
        method: .post,
        authority: "127.0.0.1:\(port)",
        path: "/3/device/" + hex,
        headers: [
            HeaderField(name: "apns-push-type", value: "alert"),
            HeaderField(name: "apns-expiration", value: "0"),
            HeaderField(name: "apns-priority", value: "10"),
            HeaderField(name: "apns-topic", value: topic),
        ],
        body: payload
    )
}

struct CPU {
    static func selfMicroseconds() -> Double { usage(RUSAGE_SELF.rawValue) }
    static func childrenMicroseconds() -> Double { usage(RUSAGE_CHILDREN.rawValue) }
    static func usage(_ who: Int32) -> Double {
        var usage = rusage()
        getrusage(who, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e6
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec)
    }
    /// CPU of this process's threads whose name starts with `prefix` (from /proc), in µs.
    static func threadsMicroseconds(prefix: String) -> Double {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        var total = 0.0
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        for tid in tasks {
            guard let comm = try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8),
                comm.hasPrefix(prefix),
                let stat = try? String(contentsOfFile: "/proc/self/task/\(tid)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            // Fields after the command: state is [0]; utime [11], stime [12].
            if fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) {
                total += (user + system) / ticks * 1e6
            }
        }
        return total
    }

    /// Resets the kernel's peak-RSS mark (VmHWM) to the current RSS, so that
    /// ``rowPeakRSSMegabytes()`` measures one row (Linux: `5` to /proc/self/clear_refs).
    static func resetPeakRSS() {
        // Give the heap the earlier rows freed back to the kernel first (glibc's
        // malloc_trim, which the Glibc module does not export).
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") {
            typealias MallocTrim = @convention(c) (Int) -> Int32
            _ = unsafeBitCast(symbol, to: MallocTrim.self)(0)
        }
        let fd = open("/proc/self/clear_refs", O_WRONLY)
        guard fd >= 0 else { return }
        var five: UInt8 = 0x35
        _ = write(fd, &five, 1)
        close(fd)
    }

    /// VmHWM from /proc/self/status, in MB: the peak RSS since the last ``resetPeakRSS()``.
    static func rowPeakRSSMegabytes() -> Double {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "")
        else { return .nan }
        return kilobytes / 1024
    }

    static func peakRSSMegabytes() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_maxrss) / 1024
    }
}

struct Figures {
    var label: String
    var requests: Int
    var seconds: Double
    var cpuMicroseconds: Double
    var p50: Double
    var p99: Double
    var framesPerRequest: Double
    var failures: Int
    var ioThreadMicroseconds: Double = .nan
    var peakRSSMegabytes: Double = .nan
    var perSecond: Double { Double(requests) / seconds }
    var cpuPerRequest: Double { cpuMicroseconds / Double(requests) }
}

/// How the measured requests are handed to the transport.
enum Mode: String {
    /// `send(_:)` from C×M tasks, each sending its next request when its last one finished.
    case call
    /// One `sendBatch` with a window of C×M requests.
    case batch
    /// `APNsClient.send(_:to:maxConcurrency:)` with a window of C×M: the SDK's batch path
    /// from a notification and device tokens (request building, apns-ids, outcomes).
    case client

    var label: String {
        switch self {
        case .call: "send"
        case .batch: "sendBatch"
        case .client: "APNsClient batch"
        }
    }
}

/// An in-process metrics backend and tracer (either may be left out: swift-metrics' or
/// swift-distributed-tracing's no-op then), given to the transport and the client.
struct Observability {
    var metrics: RecordingMetricsFactory?
    var tracer: RecordingTracer?
}

func runTransport(
    connections: Int,
    streams: Int,
    requests: Int,
    mode: Mode,
    observability: Observability? = nil
) async throws -> Figures {
    var tls = TLSConfiguration()
    tls.trustRoots = .certificates(caPEM)
    let transport = HTTP2Transport(
        configuration: .init(
            environment: .custom(host: "127.0.0.1", port: port),
            tls: tls,
            connectionCount: connections,
            maxQueuedRequests: connections * streams * 2,
            maxConcurrentStreamsPerConnection: streams,
            logger: Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() }),
            metricsFactory: observability?.metrics ?? NOOPMetricsHandler.instance
        )
    )
    let prepared = try (0..<(requests + 2_000)).map { try request($0) }
    // The row's peak RSS counts from here: the prepared requests (the same for every row)
    // are in it, the rows before are not.
    CPU.resetPeakRSS()
    // Warm up: open the connections and let the stream limit rise.
    _ = await drive(transport, Array(prepared[requests...]), concurrency: connections * streams)

    // The measured requests are copied out before the clock starts: the copy is the
    // harness's work, not the transport's.
    let measured = Array(prepared[..<requests])
    let client = APNsClient(
        environment: .custom(host: "127.0.0.1", port: port),
        credentials: .certificate,
        transport: transport,
        metricsFactory: observability?.metrics ?? NOOPMetricsHandler.instance,
        tracer: observability?.tracer ?? NoOpTracer()
    )
    let tokens = try (mode == .client ? 0..<requests : 0..<0).map { index -> DeviceToken in
        let hex = String(index, radix: 16)
        return try DeviceToken(hex: String(repeating: "0", count: 64 - hex.count) + hex)
    }
    let before = transport.statistics
    let clock = ContinuousClock()
    let cpuStart = CPU.selfMicroseconds()
    let ioStart = CPU.threadsMicroseconds(prefix: "apns-h2")
    let start = clock.now
    let (failures, unsorted): (Int, [Double])
    switch mode {
    case .call: (failures, unsorted) = await drive(transport, measured, concurrency: connections * streams)
    case .batch: (failures, unsorted) = await driveBatch(transport, measured, window: connections * streams)
    case .client: (failures, unsorted) = await driveClient(client, tokens, window: connections * streams)
    }
    let elapsed = clock.now - start
    let cpu = CPU.selfMicroseconds() - cpuStart
    let ioCPU = CPU.threadsMicroseconds(prefix: "apns-h2") - ioStart
    let after = transport.statistics
    let peakRSS = CPU.rowPeakRSSMegabytes()
    await transport.shutdown()
    let latencies = unsorted.sorted()
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return Figures(
        label: "\(mode.label) c=\(connections) m=\(streams)",
        requests: requests,
        seconds: seconds,
        cpuMicroseconds: cpu,
        p50: latencies.isEmpty ? .nan : latencies[requests / 2],
        p99: latencies.isEmpty ? .nan : latencies[requests * 99 / 100],
        framesPerRequest: Double(after.framesSent - before.framesSent) / Double(after.requestsSent - before.requestsSent),
        failures: failures,
        ioThreadMicroseconds: ioCPU,
        peakRSSMegabytes: peakRSS
    )
}

/// Sends every request with `concurrency` tasks; returns the failures and each latency in µs.
func drive(_ transport: HTTP2Transport, _ requests: [APNsRequest], concurrency: Int) async -> (failures: Int, latencies: [Double]) {
    let next = Counter()
    let recorder = LatencyRecorder(count: requests.count)
    // Independent tasks rather than a task group: the runtime finds a finishing child in
    // its group by walking the list of children, which with 4,000 senders ending together
    // costs the harness O(n²) inside the measured time.
    let senders = (0..<min(concurrency, requests.count)).map { _ in
        Task {
            var failed = 0
            let clock = ContinuousClock()
            while let index = next.take(limit: requests.count) {
                let start = clock.now
                do {
                    let response = try await transport.send(requests[index])
                    if response.status != 200 { failed += 1 }
                } catch {
                    failed += 1
                }
                let elapsed = clock.now - start
                recorder.record(index, Double(elapsed.components.attoseconds) / 1e12 + Double(elapsed.components.seconds) * 1e6)
            }
            return failed
        }
    }
    var failures = 0
    for sender in senders { failures += await sender.value }
    return (failures, recorder.values)
}

/// Sends every request with one `sendBatch` call; returns the failures and each latency
/// in µs (from when the transport made the request to its result).
func driveBatch(_ transport: HTTP2Transport, _ requests: [APNsRequest], window: Int) async -> (failures: Int, latencies: [Double]) {
    let started = LatencyRecorder(count: requests.count)
    let recorder = LatencyRecorder(count: requests.count)
    let failures = Atomic<Int>(0)
    let clock = ContinuousClock()
    let origin = clock.now
    @Sendable func microseconds() -> Double {
        let elapsed = clock.now - origin
        return Double(elapsed.components.attoseconds) / 1e12 + Double(elapsed.components.seconds) * 1e6
    }
    await transport.sendBatch(
        count: requests.count,
        maxConcurrency: window,
        makeRequest: { index in
            started.record(index, microseconds())
            return requests[index]
        },
        onResult: { index, _, result in
            if case .success(let response) = result, response.status == 200 {} else {
                failures.wrappingAdd(1, ordering: .relaxed)
            }
            recorder.record(index, microseconds() - started[index])
        }
    )
    return (failures.load(ordering: .relaxed), recorder.values)
}

/// Sends `count` notifications with `APNsClient.send(_:to:maxConcurrency:)`; the client
/// reports no per-notification latency. The device tokens and the notification are made
/// before the clock starts, like the requests of the other modes.
func driveClient(_ client: APNsClient, _ tokens: [DeviceToken], window: Int) async -> (failures: Int, latencies: [Double]) {
    let notification = PushNotification(body: .raw(payload), topic: .bundleID(topic))
    let outcomes = await client.send(notification, to: tokens, maxConcurrency: window)
    return (outcomes.filter { $0.accepted == nil }.count, [])
}

import Synchronization

final class Counter: Sendable {
    private let value = Atomic<Int>(0)
    func take(limit: Int) -> Int? {
        let index = value.wrappingAdd(1, ordering: .relaxed).oldValue
        return index < limit ? index : nil
    }
}

final class LatencyRecorder: @unchecked Sendable {
    // Safe: each index is written by exactly one task, and read after all tasks finished.
    private let storage: UnsafeMutableBufferPointer<Double>
    init(count: Int) {
        storage = .allocate(capacity: count)
        storage.initialize(repeating: 0)
    }
    deinit { storage.deallocate() }
    func record(_ index: Int, _ microseconds: Double) { storage[index] = microseconds }
    subscript(index: Int) -> Double { storage[index] }
    var values: [Double] { Array(storage) }
}

func runH2load(connections: Int, streams: Int, requests: Int) throws -> Figures? {
    let payloadPath = NSTemporaryDirectory() + "transport-benchmark-payload.json"
    try Data(payload).write(to: URL(fileURLWithPath: payloadPath))
    // h2load from PATH (Debian's nghttp2-client puts it in /usr/bin).
    let searchPath = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin"
    guard
        let h2loadPath = searchPath.split(separator: ":").map({ "\($0)/h2load" })
            .first(where: { FileManager.default.isExecutableFile(atPath: $0) })
    else { return nil }
    let h2load = Process()
    h2load.executableURL = URL(fileURLWithPath: h2loadPath)
    h2load.arguments = [
        "-n", String(requests), "-c", String(connections), "-m", String(streams), "-t", "1",
        "-d", payloadPath,
        "-H", "apns-push-type: alert", "-H", "apns-expiration: 0", "-H", "apns-priority: 10",
        "-H", "apns-topic: \(topic)",
        "https://127.0.0.1:\(port)/3/device/" + String(repeating: "ab", count: 32),
    ]
    let out = Pipe()
    h2load.standardOutput = out
    h2load.standardError = Pipe()
    let cpuStart = CPU.childrenMicroseconds()
    try h2load.run()
    let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    h2load.waitUntilExit()
    let cpu = CPU.childrenMicroseconds() - cpuStart
    // "finished in 1.23s, 40650.41 req/s, ..." and "requests: ... 50000 succeeded, 0 failed"
    guard let finished = text.split(separator: "\n").first(where: { $0.hasPrefix("finished in") }) else { return nil }
    // "finished in 58.12ms, 86028.91 req/s, ..." (the unit is us, ms or s).
    let elapsedText = finished.split(separator: " ")[2].trimmingCharacters(in: CharacterSet(charactersIn: ","))
    let seconds: Double
    if elapsedText.hasSuffix("ms") {
        seconds = (Double(elapsedText.dropLast(2)) ?? 0) / 1e3
    } else if elapsedText.hasSuffix("us") {
        seconds = (Double(elapsedText.dropLast(2)) ?? 0) / 1e6
    } else {
        seconds = Double(elapsedText.dropLast(1)) ?? 0
    }
    let failed = text.split(separator: "\n").first { $0.hasPrefix("requests:") }
        .flatMap { line in line.split(separator: ",").first { $0.contains("failed") } }
        .flatMap { Int($0.split(separator: " ").first ?? "") } ?? 0
    let statusLine = text.split(separator: "\n").first { $0.hasPrefix("status codes:") } ?? ""
    return Figures(
        label: "h2load        c=\(connections) m=\(streams)",
        requests: requests,
        seconds: seconds,
        cpuMicroseconds: cpu,
        p50: .nan,
        p99: .nan,
        framesPerRequest: .nan,
        failures: failed + (statusLine.contains(" 0 2xx") ? requests : 0)
    )
}

func format(_ value: Double, _ digits: Int = 1) -> String {
    value.isNaN ? "-" : String(format: "%.\(digits)f", value)
}

if arguments.contains("--observability") {
    var rounds = 3
    if let index = arguments.firstIndex(of: "--rounds"), index + 1 < arguments.count, let n = Int(arguments[index + 1]), n > 0 {
        rounds = n
    }
    var (connections, streams) = (1, 100)
    if let index = arguments.firstIndex(of: "--shape"), index + 1 < arguments.count {
        let parts = arguments[index + 1].split(separator: "x").compactMap { Int($0) }
        if parts.count == 2 { (connections, streams) = (parts[0], parts[1]) }
    }
    print(
        "TransportBenchmark --observability: APNsClient batch send, c=\(connections) m=\(streams), "
            + "\(rounds) rounds × \(totalRequests) notifications, against APNsMockServer (TLS, child process)"
    )
    print("CPU µs per notification (ratio to no-op)")
    print("round      no-op          metrics          tracing     metrics+tracing")
    enum Variant: CaseIterable {
        case none, metrics, tracing, both
        var observability: Observability {
            switch self {
            case .none: Observability()
            case .metrics: Observability(metrics: RecordingMetricsFactory())
            case .tracing: Observability(tracer: RecordingTracer())
            case .both: Observability(metrics: RecordingMetricsFactory(), tracer: RecordingTracer())
            }
        }
    }
    var figures: [[Double]] = []  // [round][variant]
    for round in 1...rounds {
        // Rotate the order, so that no variant always runs first or on a warmer process.
        let variants = Variant.allCases
        let order = (0..<variants.count).map { variants[($0 + round - 1) % variants.count] }
        var cpu = [Double](repeating: .nan, count: variants.count)
        for variant in order {
            let observability = variant.observability
            let row = try await runTransport(
                connections: connections,
                streams: streams,
                requests: totalRequests,
                mode: .client,
                observability: observability
            )
            if row.failures > 0 { print("round \(round): \(row.failures) failures") }
            // The recording side really recorded: one span per notification and per
            // batch, a counter per outcome, a timing per request.
            if let tracer = observability.tracer, tracer.finishedSpans.count < totalRequests + 1 {
                print("round \(round): the tracer saw \(tracer.finishedSpans.count) spans")
                exit(1)
            }
            if let metrics = observability.metrics {
                let accepted = metrics.total("apns_notifications_accepted_total")
                let timed = metrics.timings("apns_request_duration_seconds")
                guard accepted == Int64(totalRequests), timed >= Int64(totalRequests) else {
                    print("round \(round): the metrics backend saw \(accepted) accepted, \(timed) timings")
                    exit(1)
                }
            }
            cpu[variants.firstIndex(of: variant)!] = row.cpuPerRequest
        }
        figures.append(cpu)
        print(
            String(round).leftPadded(5),
            format(cpu[0], 2).leftPadded(10),
            (format(cpu[1], 2) + " (" + format(cpu[1] / cpu[0], 2) + "×)").leftPadded(16),
            (format(cpu[2], 2) + " (" + format(cpu[2] / cpu[0], 2) + "×)").leftPadded(16),
            (format(cpu[3], 2) + " (" + format(cpu[3] / cpu[0], 2) + "×)").leftPadded(19)
        )
    }
    // Per variant: the median and the best round, and the median of the per-round ratios
    // (each against the no-op run of the same round, which cancels slow drifts of a shared
    // machine better than a ratio of medians).
    func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
    let names = ["no-op", "metrics", "tracing", "metrics+tracing"]
    for (index, name) in names.enumerated() {
        let values = figures.map { $0[index] }
        let ratios = figures.map { $0[index] / $0[0] }
        print(
            "\(name):".padding(toLength: 17, withPad: " ", startingAt: 0),
            "median \(format(median(values), 2)) µs, best \(format(values.min() ?? .nan, 2)) µs"
                + (index == 0 ? "" : ", median ratio to no-op \(format(median(ratios), 2))×, best/best \(format((values.min() ?? .nan) / (figures.map { $0[0] }.min() ?? .nan), 2))×")
        )
    }
    if child.isRunning {
        try? childIn.fileHandleForWriting.close()
        child.waitUntilExit()
    }
    exit(0)
}

print("TransportBenchmark: \(totalRequests) notifications per run against APNsMockServer (TLS, child process)")
print("run                                req/s    CPU µs/req   p50 µs    p99 µs  frames/req  failures  I/O-thread µs/req  peak RSS MB")
var ratios: [String] = []
var shapes = [(1, 100), (1, 1000), (4, 100), (4, 1000)]
if let index = arguments.firstIndex(of: "--shape"), index + 1 < arguments.count {
    // --shape 1x100: one run only (for profiling).
    let parts = arguments[index + 1].split(separator: "x").compactMap { Int($0) }
    if parts.count == 2 { shapes = [(parts[0], parts[1])] }
}
let skipH2load = arguments.contains("--no-h2load")
// `--mode call|batch|client`: one way of sending only (default: all three, side by side).
var modes: [Mode] = [.call, .batch, .client]
if let index = arguments.firstIndex(of: "--mode"), index + 1 < arguments.count, let mode = Mode(rawValue: arguments[index + 1]) {
    modes = [mode]
}
for (connections, streams) in shapes {
    var ours: [Figures] = []
    for mode in modes {
        ours.append(try await runTransport(connections: connections, streams: streams, requests: totalRequests, mode: mode))
    }
    let theirs = skipH2load ? nil : try runH2load(connections: connections, streams: streams, requests: totalRequests)
    for figures in ours + (theirs.map { [$0] } ?? []) {
        print(
            figures.label.padding(toLength: 32, withPad: " ", startingAt: 0),
            format(figures.perSecond, 0).leftPadded(9),
            format(figures.cpuPerRequest, 2).leftPadded(12),
            format(figures.p50, 0).leftPadded(9),
            format(figures.p99, 0).leftPadded(9),
            format(figures.framesPerRequest, 2).leftPadded(11),
            String(figures.failures).leftPadded(9),
            format(figures.ioThreadMicroseconds / Double(figures.requests), 2).leftPadded(18),
            format(figures.peakRSSMegabytes).leftPadded(12)
        )
    }
    if let theirs {
        ratios.append(
            "c=\(connections) m=\(streams): CPU per request "
                + zip(modes, ours).map { mode, figures in
                    "\(mode.label) \(format(figures.cpuPerRequest / theirs.cpuPerRequest, 2))×"
                }.joined(separator: ", ") + " h2load's"
        )
    }
}
print("peak RSS of the client process: \(format(CPU.peakRSSMegabytes())) MB")
for line in ratios { print(line) }
if child.isRunning {
    try? childIn.fileHandleForWriting.close()
    child.waitUntilExit()
}

extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
