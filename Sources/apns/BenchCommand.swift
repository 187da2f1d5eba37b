import APNsCore
import APNsMockServer
import ArgumentParser
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `apns bench`: throughput, client CPU per notification and latency percentiles of the
/// SDK against a mock server, beside h2load against the same server.
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure throughput, CPU per notification and latency against a mock APNs server, beside h2load.",
        discussion: """
            Without --host, starts `apns mock-server` as a child process, so that getrusage \
            counts only the client's CPU time, and sends --count alerts over --connections HTTP/2 \
            connections with up to --streams requests in flight on each. --in-process runs the \
            mock server inside this process instead (no second process; the CPU figures then \
            include the server's work). When h2load (nghttp2-client) is on PATH, or --h2load \
            names it, runs it with the same request shape against the same server and prints \
            the ratio. On a terminal, runs of 10,000 notifications or more show their \
            progress on standard error.

            Examples:
              apns bench
              apns bench --connections 2 --streams 500 --count 200000
              apns bench --in-process --count 5000
              apns bench --batch --count 100000
              apns bench --on-io-thread --count 100000
              apns bench --host 127.0.0.1 --port 8443 --ca-file /tmp/apns-mock-ca.pem
            """
    )

    @Option(help: "HTTP/2 connections.")
    var connections = 1

    @Option(help: "Requests in flight per connection.")
    var streams = 100

    @Option(help: "Notifications to send.")
    var count = 20_000

    @Option(help: "A running mock server's host (default: start one).")
    var host: String?

    @Option(help: "The running mock server's port.")
    var port: Int?

    @Option(name: .customLong("ca-file"), help: "The running mock server's CA file.")
    var caFile: String?

    @Flag(name: .customLong("in-process"), help: "Run the mock server inside this process instead of a child process (CPU figures then include the server).")
    var inProcess = false

    @Option(help: "The h2load executable: a path, or a name looked up in PATH.")
    var h2load = "h2load"

    @Flag(name: .customLong("skip-h2load"), help: "Do not run h2load.")
    var skipH2load = false

    @Flag(help: "Print one JSON object with every figure instead of the lines for people (warnings and progress still go to standard error).")
    var json = false

    @Flag(help: "Send all notifications with one batch call (APNsClient.send(_:to:maxConcurrency:), window connections × streams) instead of one send per notification; no per-notification latency.")
    var batch = false

    @Flag(help: "Send all notifications with one streamed batch (APNsClient.send(_:to:maxConcurrency:onOutcome:) reading the device tokens from an AsyncSequence as the window frees room, window connections × streams); no per-notification latency.")
    var stream = false

    @Flag(name: .customLong("on-io-thread"), help: "Run the sending tasks on the transport's I/O thread (withTaskExecutorPreference(client.taskExecutor), every connection on that thread) instead of Swift's global executor.")
    var onIOThread = false

    /// Checks the values together; called from `run()` so that a misspelled flag is
    /// reported as such before any of these checks.
    func check() throws {
        if !(1...64).contains(connections) { throw ValidationError("--connections must be 1...64") }
        if !(1...10_000).contains(streams) { throw ValidationError("--streams must be 1...10000") }
        if count < 1 { throw ValidationError("--count must be at least 1") }
        if (host == nil) != (port == nil) { throw ValidationError("--host and --port go together") }
        if host != nil && caFile == nil { throw ValidationError("--host needs --ca-file (the mock server's CA)") }
        if inProcess && host != nil { throw ValidationError("--in-process starts its own server: drop --host, --port and --ca-file") }
        if h2load.isEmpty { throw ValidationError("--h2load must name an executable") }
        if !skipH2load, h2load.contains("/"), Self.executable(named: h2load, searchPath: nil) == nil {
            throw ValidationError("--h2load \(h2load) is not an executable file")
        }
        if batch && onIOThread { throw ValidationError("--on-io-thread is for one send per notification: drop --batch or --on-io-thread") }
        if stream && onIOThread { throw ValidationError("--on-io-thread is for one send per notification: drop --stream or --on-io-thread") }
        if stream && batch { throw ValidationError("--batch and --stream are two ways to send: choose one") }
    }

    static let topic = "com.example.bench"
    static let payload = #"{"aps":{"alert":{"title":"Benchmark","body":"Hello from apns bench"}}}"#
    static let deviceToken = String(repeating: "ab", count: 32)

    /// The figures of one run, printed as JSON with `--json`.
    private final class Report: @unchecked Sendable {
        // @unchecked: written by the command's own task only, one step after another.
        var fields: [String: Any] = [:]
    }

    /// Prints a line for people (not with `--json`).
    /// Prints a line at once (a long run's lines must not wait in a buffer).
    private func say(_ line: String) {
        guard !json else { return }
        print(line)
        Terminal.flush()
    }

    func run() async throws {
        try check()
        Terminal.bootstrapLogging(level: .error)
        let report = Report()
        #if DEBUG
        Terminal.standardError(
            "warning: apns was built in debug mode; its figures are several times slower than a release build (swift build -c release)")
        report.fields["debugBuild"] = true
        #endif
        report.fields["count"] = count
        report.fields["connections"] = connections
        report.fields["streams"] = streams
        report.fields["mode"] = batch ? "batch" : stream ? "stream" : onIOThread ? "send on the I/O thread" : "send"
        defer { if json { Self.printJSON(report.fields) } }
        if inProcess {
            let server = MockAPNsServer(configuration: .init(maxConcurrentStreams: streams, recordedRequestLimit: 0))
            do {
                try await server.start()
            } catch {
                throw CLIError("the in-process mock server could not start: \(error)")
            }
            guard let caPEM = server.certificateAuthorityPEM else {
                await server.stop()
                throw CLIError("the in-process mock server has no CA certificate to trust")
            }
            say("server: 127.0.0.1:\(server.port) (MockAPNsServer in this process: the CPU figures include the server's); \(count) alerts, \(connections) connection(s) × \(streams) streams")
            do {
                try await measure(host: "127.0.0.1", port: server.port, caPEM: caPEM, report: report)
            } catch {
                await server.stop()
                throw error
            }
            await server.stop()
            return
        }
        var child: MockServerProcess?
        let serverHost: String
        let serverPort: Int
        let caPath: String
        if let host, let port, let caFile {
            (serverHost, serverPort, caPath) = (host, port, caFile)
        } else {
            let started = try await MockServerProcess.start(maxStreams: max(streams, 1))
            child = started
            (serverHost, serverPort, caPath) = ("127.0.0.1", started.port, started.caPath)
        }
        defer { child?.stop() }
        // Ctrl-C or SIGTERM: stop the child server and remove its files before ending.
        let watch = child.map { child in
            SignalWatch([SIGINT, SIGTERM]) { signal in
                child.stop()
                Terminal.exit(128 + signal)
            }
        }
        defer { watch?.stop() }
        guard let ca = FileManager.default.contents(atPath: caPath) else {
            throw CLIError("cannot read the CA file \(caPath): check the path and its permissions")
        }
        say("server: \(serverHost):\(serverPort)\(child == nil ? "" : " (apns mock-server, child process, so the CPU figures are the client's alone)"); \(count) alerts, \(connections) connection(s) × \(streams) streams")
        try await measure(host: serverHost, port: serverPort, caPEM: String(decoding: ca, as: UTF8.self), report: report)
    }

    /// Runs the SDK, then h2load, against the server and prints their figures.
    private func measure(host serverHost: String, port serverPort: Int, caPEM: String, report: Report) async throws {
        let cpuLabel = inProcess ? "CPU (client and in-process server)" : "client CPU"

        var sdkRate: Double?
        var sdkCPU: Double?
        do {
            let result = try await runSDK(host: serverHost, port: serverPort, caPEM: caPEM)
            sdkRate = result.rate
            sdkCPU = result.cpuMicroseconds
            report.fields["notificationsPerSecond"] = result.rate
            report.fields["cpuMicrosecondsPerNotification"] = result.cpuMicroseconds
            report.fields["accepted"] = result.accepted
            report.fields["failed"] = count - result.accepted
            if !batch && !stream {
                report.fields["latencyP50Milliseconds"] = result.p50 * 1000
                report.fields["latencyP99Milliseconds"] = result.p99 * 1000
            }
            if batch || stream {
                say(String(format: "swift-apns (%@): %.0f notifications/s, %.1f µs %@ per notification (%d accepted, %d failed)",
                             batch ? "one batch call" : "one streamed batch", result.rate, result.cpuMicroseconds, cpuLabel,
                             result.accepted, count - result.accepted))
            } else {
                say(String(format: "swift-apns%@: %.0f notifications/s, %.1f µs %@ per notification, latency p50 %.2f ms p99 %.2f ms (%d accepted, %d failed)",
                             onIOThread ? " (tasks on the I/O thread)" : "", result.rate, result.cpuMicroseconds, cpuLabel, result.p50 * 1000, result.p99 * 1000, result.accepted, count - result.accepted))
            }
        } catch let error as CLIError {
            say("swift-apns: skipped: \(error.message)")
            report.fields["error"] = error.message
        }

        if !skipH2load {
            if let executable = Self.executable(named: h2load, searchPath: ProcessInfo.processInfo.environment["PATH"]) {
                let (h2Rate, statusCodes, cpu) = try runH2load(executable, host: serverHost, port: serverPort)
                if let h2Rate {
                    report.fields["h2loadRequestsPerSecond"] = h2Rate
                    report.fields["h2loadCPUMicrosecondsPerRequest"] = cpu / Double(count) * 1e6
                    say(String(format: "h2load:     %.0f requests/s, %.1f µs client CPU per request (%@)",
                                 h2Rate, cpu / Double(count) * 1e6, statusCodes))
                    if let sdkRate, let sdkCPU {
                        report.fields["throughputRatio"] = sdkRate / h2Rate
                        if !inProcess { report.fields["cpuRatio"] = sdkCPU / max(cpu / Double(count) * 1e6, 0.001) }
                        if inProcess {
                            say(String(format: "ratio swift-apns / h2load: %.2f× the throughput (CPU not compared: swift-apns' figure includes the in-process server)",
                                         sdkRate / h2Rate))
                        } else {
                            say(String(format: "ratio swift-apns / h2load: %.2f× the throughput at %.1f× the CPU per request",
                                         sdkRate / h2Rate, sdkCPU / max(cpu / Double(count) * 1e6, 0.001)))
                        }
                    }
                } else {
                    say("h2load: its output had no \"req/s\" figure")
                }
            } else {
                say("h2load: \(h2load) is not on PATH (apt-get install nghttp2-client) — skipped")
            }
        }
        // The SDK was not measured (its line says why): the run did not do its job.
        if let error = report.fields["error"] as? String { throw CLIError("swift-apns was not measured: \(error)") }
        if let failed = report.fields["failed"] as? Int, failed > 0 {
            throw CLIError(
                "\(failed) of \(count) notifications were not accepted, so the figures above do not measure working sends "
                    + "(a server that wants credentials?): apns send to the same server says why")
        }
    }

    /// The executable `name` means: `name` itself when it contains a `/`, else the first
    /// executable regular file called `name` in the directories of `searchPath` (a
    /// colon-separated PATH; an empty entry is the current directory); `nil` when there is none.
    static func executable(named name: String, searchPath: String?) -> String? {
        func isExecutableFile(_ path: String) -> Bool {
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && !isDirectory.boolValue
                && FileManager.default.isExecutableFile(atPath: path)
        }
        if name.contains("/") { return isExecutableFile(name) ? name : nil }
        let directories = (searchPath ?? "").split(separator: ":", omittingEmptySubsequences: false)
        for directory in directories {
            let candidate = (directory.isEmpty ? "." : String(directory)) + "/" + name
            if isExecutableFile(candidate) { return candidate }
        }
        return nil
    }

    private struct SDKResult {
        var rate: Double
        var cpuMicroseconds: Double
        var p50: Double
        var p99: Double
        var accepted: Int
    }

    private func runSDK(host: String, port: Int, caPEM: String) async throws -> SDKResult {
        let environment = APNsEnvironment.custom(host: host, port: port)
        let transport = TransportFactory.make(
            environment: environment,
            tls: try TLSSetup.configuration(trustedCAPEM: caPEM, certificate: nil),
            connections: connections, logger: Logger(label: "apns.bench"),
            threadPlacement: onIOThread ? .taskExecutorThread : .spread)
        let client = APNsClient(environment: environment, credentials: .certificate, transport: transport)
        let token = try DeviceToken(hex: Self.deviceToken)
        let push = PushNotification(body: .raw(Array(Self.payload.utf8)), topic: .bundleID(Self.topic))
        // Warm up: open the connections and learn the stream limit.
        // One first: a server that refuses it (unreachable, wants credentials, does not trust
        // us) would have every measured notification fail the same way, slowly. Say why now.
        do {
            _ = try await client.send(push, to: token)
        } catch {
            await client.shutdown()
            throw CLIError("the server did not accept the first notification (\(OutcomeText.summary(error))), so there is nothing to measure")
        }
        _ = await client.send(push, to: Array(repeating: token, count: min(count, connections * 10)), maxConcurrency: connections)

        let width = connections * streams
        // A bar on standard error for long runs on a terminal; it reads the transport's
        // statistics from a task of its own.
        let progress = BenchProgress.start(total: count, transport: transport)
        defer { progress?.cancel() }
        func endProgress() async {
            progress?.cancel()
            await progress?.value
        }
        if batch {
            let tokens = Array(repeating: token, count: count)
            let cpuBefore = Self.cpuSeconds()
            let start = ContinuousClock.now
            let outcomes = await client.send(push, to: tokens, maxConcurrency: width)
            let elapsed = Terminal.seconds(since: start)
            let cpu = Self.cpuSeconds() - cpuBefore
            await endProgress()
            await client.shutdown()
            return SDKResult(rate: Double(count) / elapsed, cpuMicroseconds: cpu / Double(count) * 1e6,
                             p50: .nan, p99: .nan, accepted: outcomes.filter { $0.accepted != nil }.count)
        }
        if stream {
            let cpuBefore = Self.cpuSeconds()
            let start = ContinuousClock.now
            let summary = await client.send(push, to: RepeatedToken(token: token, count: count), maxConcurrency: width) { _, _ in }
            let elapsed = Terminal.seconds(since: start)
            let cpu = Self.cpuSeconds() - cpuBefore
            await endProgress()
            await client.shutdown()
            return SDKResult(rate: Double(count) / elapsed, cpuMicroseconds: cpu / Double(count) * 1e6,
                             p50: .nan, p99: .nan, accepted: summary.accepted)
        }
        var latencies = [Double](repeating: 0, count: count)
        var accepted = 0
        let cpuBefore = Self.cpuSeconds()
        let start = ContinuousClock.now
        // With --on-io-thread the tasks, and the children they add, run on the
        // transport's I/O thread.
        await withTaskExecutorPreference(onIOThread ? client.taskExecutor : nil) {
        await withTaskGroup(of: (Int, Double, Bool).self) { group in
            var next = 0
            func launch(_ index: Int) {
                group.addTask {
                    let begin = ContinuousClock.now
                    let ok = (try? await client.send(push, to: token)) != nil
                    return (index, Terminal.seconds(since: begin), ok)
                }
            }
            while next < min(width, count) {
                launch(next)
                next += 1
            }
            while let (index, latency, ok) = await group.next() {
                latencies[index] = latency
                if ok { accepted += 1 }
                if next < count {
                    launch(next)
                    next += 1
                }
            }
        }
        }
        let elapsed = Terminal.seconds(since: start)
        let cpu = Self.cpuSeconds() - cpuBefore
        await endProgress()
        await client.shutdown()
        latencies.sort()
        func percentile(_ p: Double) -> Double { latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] }
        return SDKResult(rate: Double(count) / elapsed, cpuMicroseconds: cpu / Double(count) * 1e6,
                         p50: percentile(0.50), p99: percentile(0.99), accepted: accepted)
    }

    /// Runs h2load with the same method, path, headers and body; returns its req/s, its
    /// "status codes" line and its CPU time (user + system, from RUSAGE_CHILDREN: the mock
    /// server child is still running, so only h2load has been waited for).
    private func runH2load(_ executable: String, host: String, port: Int) throws -> (Double?, String, Double) {
        let cpuBefore = Self.cpuSeconds(children: true)
        let body = FileManager.default.temporaryDirectory.appendingPathComponent("apns-bench-\(getpid()).json")
        try Data(Self.payload.utf8).write(to: body)
        defer { try? FileManager.default.removeItem(at: body) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = [
            "-n", String(count), "-c", String(connections), "-m", String(streams),
            "-d", body.path,
            "-H", "apns-topic: \(Self.topic)", "-H", "apns-push-type: alert", "-H", "apns-priority: 10",
            "https://\(host):\(port)/3/device/\(Self.deviceToken)",
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        do {
            try process.run()
        } catch {
            throw CLIError("cannot run h2load \(executable): \(error)")
        }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let cpu = Self.cpuSeconds(children: true) - cpuBefore
        let text = String(decoding: data, as: UTF8.self)
        var rate: Double?
        var statusCodes = "no status line"
        // "finished in 1.02s, 19607.84 req/s, 1.10MB/s"
        // "status codes: 100000 2xx, 0 3xx, 0 4xx, 0 5xx"
        for line in text.split(separator: "\n") {
            if line.hasPrefix("finished in") {
                for part in line.split(separator: ",") where part.hasSuffix("req/s") {
                    rate = Double(part.trimmingCharacters(in: .whitespaces).split(separator: " ")[0])
                }
            } else if line.hasPrefix("status codes: ") {
                statusCodes = String(line.dropFirst("status codes: ".count))
            }
        }
        return (rate, statusCodes, cpu)
    }

    /// Prints `fields` as one JSON object (keys sorted) on standard output.
    private static func printJSON(_ fields: [String: Any]) {
        guard let data = try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys]) else { return }
        print(String(decoding: data, as: UTF8.self))
    }

    /// User plus system CPU time so far of this process, or of its waited-for children.
    static func cpuSeconds(children: Bool = false) -> Double {
        var usage = rusage()
        #if canImport(Glibc)
        getrusage(children ? RUSAGE_CHILDREN.rawValue : RUSAGE_SELF.rawValue, &usage)
        #else
        getrusage(children ? RUSAGE_CHILDREN : RUSAGE_SELF, &usage)
        #endif
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    }
}

/// One device token `count` times, as an `AsyncSequence` that hands each out without
/// suspending (`apns bench --stream`).
struct RepeatedToken: AsyncSequence, Sendable {
    let token: DeviceToken
    let count: Int

    struct AsyncIterator: AsyncIteratorProtocol {
        let token: DeviceToken
        var left: Int

        mutating func next() async -> DeviceToken? { take() }

        mutating func next(isolation actor: isolated (any Actor)?) async -> DeviceToken? { take() }

        private mutating func take() -> DeviceToken? {
            guard left > 0 else { return nil }
            left -= 1
            return token
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(token: token, left: count) }
}
