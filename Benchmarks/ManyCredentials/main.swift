// ManyCredentialsBenchmark: issue 18's idle cost of many credentials. N provider keys of
// N different teams, one `APNsClient` each, all sharing ONE `HTTP2Transport`; each
// credential's pool holds its own connection(s) to `apns mock-server`, which runs in a
// child process and binds every connection to the key of its first token. Only the
// public API (`APNsCore`, `APNsTransport`) is used, as a provider would, so the figures are
// those of whichever transport design the package has.
//
//   swift build -c release --product ManyCredentialsBenchmark --product apns
//   .build/release/ManyCredentialsBenchmark [--credentials N] [--connections-per-credential C]
//       [--burst K] [--server-binary PATH] [--hold SECONDS] [--open-concurrency M]
//   (or scripts/many-credentials-bench.sh [the same arguments])
//
// Phases:
// - baseline: after the N keys and token caches exist, before the transport: the client's
//   and the server's threads and resident memory;
// - open: one notification per credential (C per credential with C connections each), M
//   credentials at a time (64 by default), so every pool opens its connection(s);
// - idle: --hold seconds without a request, then threads, VmRSS and descriptors of both
//   processes and the transport's open connections (`credentialStatistics`); the cost
//   per connection is (idle - baseline) / connections;
// - burst: K notifications to every credential at once (N × K sends, every tenant
//   concurrently); per credential the time from the burst's start to its last answer.
//
// It prints a table and one machine-readable line (`credentials=… failed=…`), and whether
// issue 18's goals hold: client threads <= cores + 4, client RSS <= 150 MiB, every
// credential answered in the burst. Goals not met are reported, not fatal; the exit
// status is 1 only when the benchmark itself could not run.
import APNsCore
import APNsTransport
import Foundation

#if canImport(Glibc)
import Glibc
#endif

// MARK: Options

/// The command line.
struct Options {
    /// Credentials (provider keys of distinct teams), one `APNsClient` each.
    var credentials = 1_000
    /// Connections each credential's pool holds (`connectionCount`).
    var connectionsPerCredential = 1
    /// Notifications per credential in the burst.
    var burst = 1
    /// The `apns` executable that runs the mock server; by default the one beside this
    /// executable.
    var serverBinary: String?
    /// Seconds to stay idle before measuring.
    var hold = 3.0
    /// Credentials opening their connections at once in the open phase.
    var openConcurrency = 64

    /// The usage line.
    static let usage = """
        usage: ManyCredentialsBenchmark [--credentials N (1000)] [--connections-per-credential C (1)] \
        [--burst K (1)] [--server-binary PATH (apns beside this executable)] [--hold SECONDS (3)] \
        [--open-concurrency M (64)]
        """

    /// Parses `arguments` (the first is the program's name).
    init(_ arguments: [String]) throws {
        var index = 1
        func value(_ name: String) throws -> String {
            index += 1
            guard index < arguments.count else { throw BenchmarkError("\(name) needs a value") }
            return arguments[index]
        }
        func positive(_ name: String) throws -> Int {
            guard let number = Int(try value(name)), number > 0 else { throw BenchmarkError("\(name) needs a positive integer") }
            return number
        }
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "--credentials": credentials = try positive(argument)
            case "--connections-per-credential": connectionsPerCredential = try positive(argument)
            case "--burst": burst = try positive(argument)
            case "--open-concurrency": openConcurrency = try positive(argument)
            case "--server-binary": serverBinary = try value(argument)
            case "--hold":
                guard let seconds = Double(try value(argument)), seconds >= 0, seconds <= 3_600 else {
                    throw BenchmarkError("--hold needs seconds from 0 to 3600")
                }
                hold = seconds
            case "--help", "-h":
                print(Self.usage)
                exit(0)
            default:
                throw BenchmarkError("unknown argument \(argument)")
            }
            index += 1
        }
    }
}

/// The `apns` executable in the directory of this one (the same build directory).
func apnsBesideThisExecutable() -> String {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    let executable = length > 0 ? String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self) : CommandLine.arguments[0]
    return URL(fileURLWithPath: executable).deletingLastPathComponent().appendingPathComponent("apns").path
}

// MARK: Figures

/// `duration` in seconds.
func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

/// `value` with `digits` decimals.
func fixed(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }

/// The value at `fraction` (0...1) of `sorted` (nearest rank), or 0 when empty.
func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
    guard !sorted.isEmpty else { return 0 }
    let rank = Int((fraction * Double(sorted.count)).rounded(.up))
    return sorted[min(sorted.count - 1, max(0, rank - 1))]
}

/// The transport's open connections now, added up over its pools, and how many pools
/// (credentials) hold at least one and at least `perCredential`.
func openConnections(_ transport: HTTP2Transport, perCredential: Int) -> (connections: Int, pools: Int, withOne: Int, full: Int) {
    let pools = transport.credentialStatistics
    return (
        pools.reduce(0) { $0 + $1.openConnections },
        pools.count,
        pools.count { $0.openConnections >= 1 },
        pools.count { $0.openConnections >= perCredential }
    )
}

/// One credential of the run: its client and how it is named.
struct Tenant: Sendable {
    /// The key ID (10 characters).
    let keyID: String
    /// The team ID (10 characters).
    let teamID: String
    /// The client sending with this credential's tokens, on the shared transport.
    let client: APNsClient
}

/// What one credential's sends in a phase came to.
struct CredentialResult: Sendable {
    /// The credential's index.
    var index: Int
    /// From the phase's start to the credential's last answer.
    var elapsed: Duration
    /// Sends that did not end accepted.
    var failures: Int
    /// The first failure, described.
    var firstError: String?
}

/// Sends `count` notifications at once with `client` to device tokens made from
/// `credential` and the notification's number, and times the last answer from `start`.
func sendAll(
    _ count: Int, with client: APNsClient, credential: Int, notification: PushNotification, from start: ContinuousClock.Instant
) async -> CredentialResult {
    let errors = await withTaskGroup(of: String?.self) { group in
        for number in 0..<count {
            group.addTask {
                var bytes = [UInt8](repeating: 0x5C, count: 32)
                bytes.withUnsafeMutableBytes {
                    $0.storeBytes(of: UInt32(credential).bigEndian, toByteOffset: 0, as: UInt32.self)
                    $0.storeBytes(of: UInt32(number).bigEndian, toByteOffset: 4, as: UInt32.self)
                }
                do {
                    _ = try await client.send(notification, to: try DeviceToken(bytes: bytes))
                    return nil
                } catch {
                    return "\(error)"
                }
            }
        }
        var errors: [String] = []
        for await error in group { if let error { errors.append(error) } }
        return errors
    }
    return CredentialResult(index: credential, elapsed: start.duration(to: .now), failures: errors.count, firstError: errors.first)
}

// MARK: The run

/// Runs every phase and prints the figures; throws only when the benchmark cannot run.
func run(_ options: Options) async throws {
    let credentials = options.credentials
    let perCredential = options.connectionsPerCredential
    let totalConnections = credentials * perCredential
    let cores = ProcessInfo.processInfo.activeProcessorCount
    // Each process holds a socket per connection, plus its own few descriptors.
    let fileLimit = raiseOpenFileLimit(to: totalConnections + 256)
    if fileLimit < totalConnections + 256 {
        print("warning: the open-file limit is \(fileLimit), below the \(totalConnections + 256) this run needs (raise the hard limit: ulimit -Hn)")
    }
    var template = Array((FileManager.default.temporaryDirectory.path + "/many-credentials-XXXXXX").utf8CString)
    guard let made = mkdtemp(&template) else { throw BenchmarkError("cannot make a temporary directory") }
    let directory = String(cString: made)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let childFiles = ServerChild.files(in: directory)
    forwardTerminatingSignalsToServerChild(removing: [childFiles.port, childFiles.ca, childFiles.log], in: directory)

    let binary = options.serverBinary ?? apnsBesideThisExecutable()
    let server = try await ServerChild.start(binary: binary, directory: directory)
    defer { server.stop() }
    print("ManyCredentialsBenchmark: \(credentials) credentials × \(perCredential) connection(s), burst \(options.burst) per credential, hold \(fixed(options.hold)) s, \(cores) cores, open-file limit \(fileLimit)")
    print("mock server: \(binary) (pid \(server.pid), port \(server.port))")
    fflush(nil)

    // N keys of N teams, and a token cache each (the credentials a multi-tenant provider holds).
    let keysStart = ContinuousClock.now
    var keys: [(keyID: String, teamID: String, tokens: ProviderTokenCache)] = []
    keys.reserveCapacity(credentials)
    for index in 0..<credentials {
        let keyID = "K" + String(format: "%09d", index)
        let teamID = "T" + String(format: "%09d", index)
        keys.append((keyID, teamID, try ProviderTokenCache(key: ProviderKey.generate(), keyID: keyID, teamID: teamID)))
    }
    let keySeconds = seconds(keysStart.duration(to: .now))
    try await Task.sleep(for: .milliseconds(500))
    let baselineClient = ProcessFigures.read()
    let baselineServer = ProcessFigures.read(pid: server.pid)

    var configuration = HTTP2Transport.Configuration(
        environment: .custom(host: "127.0.0.1", port: server.port),
        tls: TLSConfiguration(trustRoots: .certificates(server.caPEM)),
        connectionCount: perCredential
    )
    configuration.maxConnections = totalConnections
    // Longer than the run: no pool may idle out while measured.
    configuration.credentialIdleTimeout = .seconds(3_600)
    // A pool's connections open together (the open phase sends C at once per credential).
    configuration.connectionStagger = .zero
    let transport = HTTP2Transport(configuration: configuration)
    let tenants = keys.map { key in
        Tenant(keyID: key.keyID, teamID: key.teamID, client: APNsClient(credentials: .providerToken(key.tokens), transport: transport))
    }
    keys.removeAll()
    let afterTransport = ProcessFigures.read()

    var payload = Payload.alert(title: "Tenant", body: "An alert to one of many tenants")
    payload.aps.sound = "default"
    let notification = PushNotification(payload: payload, topic: .bundleID("com.example.manycredentials"))

    // Phase "open": C sends per credential, M credentials at a time.
    let openStart = ContinuousClock.now
    var openResults: [CredentialResult] = []
    await withTaskGroup(of: CredentialResult.self) { group in
        var next = 0
        func addNext() {
            let index = next
            let client = tenants[index].client
            group.addTask { await sendAll(perCredential, with: client, credential: index, notification: notification, from: ContinuousClock.now) }
            next += 1
        }
        while next < min(options.openConcurrency, credentials) { addNext() }
        for await result in group {
            openResults.append(result)
            if next < credentials { addNext() }
        }
    }
    let openSeconds = seconds(openStart.duration(to: .now))
    let openFailed = openResults.filter { $0.failures > 0 }
    let opened = openConnections(transport, perCredential: perCredential)
    print("open: \(credentials - openFailed.count) of \(credentials) credentials answered in \(fixed(openSeconds, 2)) s; \(opened.connections) connections open in \(opened.pools) pools (\(opened.full) with \(perCredential))")
    if let first = openFailed.first { print("open: first failure (credential \(first.index)): \(first.firstError ?? "?")") }
    fflush(nil)

    // Phase "idle".
    try await Task.sleep(for: .seconds(options.hold))
    let idleClient = ProcessFigures.read()
    let idleServer = ProcessFigures.read(pid: server.pid)
    let idle = openConnections(transport, perCredential: perCredential)
    let budget = transport.connectionBudget
    let openedBeforeBurst = transport.statistics.connectionsOpened

    // Phase "burst": every credential at once.
    let burstStart = ContinuousClock.now
    var burstResults: [CredentialResult] = []
    burstResults.reserveCapacity(credentials)
    await withTaskGroup(of: CredentialResult.self) { group in
        for index in 0..<credentials {
            let client = tenants[index].client
            group.addTask { await sendAll(options.burst, with: client, credential: index, notification: notification, from: burstStart) }
        }
        for await result in group { burstResults.append(result) }
    }
    let burstSeconds = seconds(burstStart.duration(to: .now))
    let burstClient = ProcessFigures.read()
    // What of that the allocator keeps without needing it: ask glibc to give free pages
    // back, then read again (the connections' own state stays).
    #if canImport(Glibc)
    // malloc.h is not in Glibc's Swift module: look the function up.
    if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") {
        typealias MallocTrim = @convention(c) (Int) -> Int32
        _ = unsafeBitCast(symbol, to: MallocTrim.self)(0)
    }
    #endif
    let trimmedClient = ProcessFigures.read()
    let burstServer = ProcessFigures.read(pid: server.pid)
    let afterBurst = openConnections(transport, perCredential: perCredential)
    let openedInBurst = transport.statistics.connectionsOpened - openedBeforeBurst
    let latencies = burstResults.map { seconds($0.elapsed) * 1_000 }.sorted()
    let burstFailed = burstResults.filter { $0.failures > 0 }.sorted { $0.index < $1.index }
    let failedNotifications = burstResults.reduce(0) { $0 + $1.failures }

    let shutdownStart = ContinuousClock.now
    await transport.shutdown()
    let shutdownSeconds = seconds(shutdownStart.duration(to: .now))
    let afterShutdown = ProcessFigures.read()
    // `shutdown()` is documented to return once every thread has ended: look again later.
    try await Task.sleep(for: .seconds(1))
    let secondAfterShutdown = ProcessFigures.read()

    // MARK: Report
    let connections = max(1, idle.connections)
    let perConnectionKiB = Double(idleClient.rssKiB - baselineClient.rssKiB) / Double(connections)
    let perConnectionThreads = Double(idleClient.threads - baselineClient.threads) / Double(connections)
    let serverPerConnectionKiB = Double(idleServer.rssKiB - baselineServer.rssKiB) / Double(connections)
    let threadGoal = cores + 4
    let threadsMet = idleClient.threads <= threadGoal
    let rssMet = idleClient.rssMiB <= 150
    let starvedMet = burstFailed.isEmpty && burstResults.count == credentials
    func figures(_ figures: ProcessFigures) -> String {
        "threads \(figures.threads), RSS \(fixed(figures.rssMiB)) MiB, \(figures.descriptors) descriptors"
    }
    func met(_ value: Bool) -> String { value ? "met" : "NOT met" }

    print("")
    print("key generation          \(credentials) P-256 keys and token caches in \(fixed(keySeconds, 2)) s")
    print("client baseline         \(figures(baselineClient)) (keys made, no transport)")
    print("client, transport made  \(figures(afterTransport)) (no connection yet)")
    print("server baseline         \(figures(baselineServer))")
    print("time to open all        \(fixed(openSeconds, 2)) s (\(options.openConcurrency) credentials at a time), \(openFailed.count) credentials failed")
    print("connections idle        \(idle.connections) open in \(idle.pools) pools (\(idle.withOne) credentials with one, \(idle.full) with \(perCredential)); budget held \(budget.held), peak \(budget.peak), limit \(budget.limit)")
    print("client idle             \(figures(idleClient)) after \(fixed(options.hold)) s")
    print("server idle             \(figures(idleServer))")
    print("client per connection   \(fixed(perConnectionThreads, 2)) threads, \(fixed(perConnectionKiB)) KiB")
    print("server per connection   \(fixed(Double(idleServer.threads - baselineServer.threads) / Double(connections), 2)) threads, \(fixed(serverPerConnectionKiB)) KiB")
    print("burst                   \(credentials) × \(options.burst) notifications in \(fixed(burstSeconds, 2)) s; per credential, start to last answer: min \(fixed(latencies.first ?? 0)) ms, median \(fixed(percentile(latencies, 0.5))) ms, p99 \(fixed(percentile(latencies, 0.99))) ms, max \(fixed(latencies.last ?? 0)) ms")
    print("burst failures          \(burstFailed.count) credentials, \(failedNotifications) notifications")
    if let first = burstFailed.first {
        print("burst first failure     credential \(first.index) (\(tenants[first.index].teamID) \(tenants[first.index].keyID)): \(first.firstError ?? "?")")
    }
    print("after the burst         client \(figures(burstClient)), peak RSS \(fixed(burstClient.peakRSSMiB)) MiB; server \(figures(burstServer)); \(afterBurst.connections) connections open, \(openedInBurst) opened during the burst")
    print("after malloc_trim(0)    client \(figures(trimmedClient))")
    print("shutdown                \(fixed(shutdownSeconds, 2)) s; client on return \(figures(afterShutdown)); 1 s later \(figures(secondAfterShutdown))")
    print("goal: client threads <= cores + 4 (\(threadGoal)): \(met(threadsMet)) (\(idleClient.threads))")
    print("goal: client RSS <= 150 MiB: \(met(rssMet)) (\(fixed(idleClient.rssMiB)) MiB; with the server \(fixed(idleClient.rssMiB + idleServer.rssMiB)) MiB)")
    print("goal: no credential starved in the burst: \(met(starvedMet)) (\(burstResults.count - burstFailed.count) of \(credentials) answered without failure, slowest \(fixed(latencies.last ?? 0)) ms)")
    print("")
    print(
        "credentials=\(credentials) connections=\(idle.connections) cores=\(cores) threads_client=\(idleClient.threads) rss_client_mib=\(fixed(idleClient.rssMiB))"
            + " threads_server=\(idleServer.threads) rss_server_mib=\(fixed(idleServer.rssMiB))"
            + " baseline_threads_client=\(baselineClient.threads) baseline_rss_client_mib=\(fixed(baselineClient.rssMiB))"
            + " per_connection_kib=\(fixed(perConnectionKiB)) server_per_connection_kib=\(fixed(serverPerConnectionKiB))"
            + " open_seconds=\(fixed(openSeconds, 2)) burst=\(options.burst) burst_min_ms=\(fixed(latencies.first ?? 0)) burst_median_ms=\(fixed(percentile(latencies, 0.5)))"
            + " burst_p99_ms=\(fixed(percentile(latencies, 0.99))) burst_max_ms=\(fixed(latencies.last ?? 0)) failed=\(burstFailed.count)"
            + " goal_threads=\(threadsMet ? "met" : "not_met") goal_rss=\(rssMet ? "met" : "not_met") goal_starved=\(starvedMet ? "met" : "not_met")"
    )
    fflush(nil)
}

/// The parsed command line.
let options: Options
do {
    options = try Options(CommandLine.arguments)
} catch {
    FileHandle.standardError.write(Data("ManyCredentialsBenchmark: \(error)\n\(Options.usage)\n".utf8))
    exit(2)
}
do {
    try await run(options)
} catch {
    FileHandle.standardError.write(Data("ManyCredentialsBenchmark: \(error)\n".utf8))
    exit(1)
}
