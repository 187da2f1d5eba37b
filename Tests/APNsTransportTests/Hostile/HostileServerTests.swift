import CNGHTTP2
import Foundation
import MetricsTestKit
import Testing
@testable import APNsTransport

#if canImport(Glibc)
import Glibc
import Synchronization
#endif

/// How big the hostile cases are: small by default (fast, for every run), full size with
/// `SWIFT_APNS_HOSTILE_FULL=1` (`scripts/hostile.sh`).
struct HostileSizes: Sendable {
    /// Whether the full-size mode is on.
    let full: Bool
    /// Requests in flight at once in the limit cases.
    let concurrent: Int
    /// One-byte HPACK references per amplified response (each decodes to 4,035 bytes).
    let references: Int
    /// Body bytes per endless response (under the client's 16 MiB stream window).
    let bodyBytes: Int
    /// The most the peak RSS may grow during one case, in MiB.
    let peakRSSBoundMiB: Double

    static let current: HostileSizes =
        ProcessInfo.processInfo.environment["SWIFT_APNS_HOSTILE_FULL"] == "1"
        ? HostileSizes(full: true, concurrent: 100, references: 16_000, bodyBytes: 15 << 20, peakRSSBoundMiB: 100)
        // Default size runs beside other suites, whose allocations share the process's
        // peak RSS (up to about 75 MiB seen), so its bound is looser; the amplification it
        // sends would still cost about 320 MB without the header list limit.
        : Sanitizer.name == "thread"
            // ThreadSanitizer slows decoding 10–20 times: a lighter load keeps the suite's
            // shape without starving the suites that run beside it.
            ? HostileSizes(full: false, concurrent: 4, references: 2_000, bodyBytes: 1 << 20, peakRSSBoundMiB: 160)
            : HostileSizes(full: false, concurrent: 10, references: 8_000, bodyBytes: 1 << 20, peakRSSBoundMiB: 160)
}

/// The process's peak resident set since a reset (Linux: `/proc/self/clear_refs` and
/// VmHWM), to measure what one case costs in memory.
enum PeakRSS {
    /// Resets the peak mark to the current RSS and returns the current RSS in MiB.
    static func reset() -> Double {
        let fd = open("/proc/self/clear_refs", O_WRONLY)
        if fd >= 0 {
            var five: UInt8 = 0x35
            _ = write(fd, &five, 1)
            close(fd)
        }
        return field("VmRSS:")
    }

    /// How far the peak RSS rose above `baseline` (MiB) since ``reset()``.
    static func growth(since baseline: Double) -> Double {
        max(0, field("VmHWM:") - baseline)
    }

    private static func field(_ name: String) -> Double {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name) }),
            let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "")
        else { return 0 }
        return kilobytes / 1024
    }
}

/// The GitHub issue's misbehaving servers, one test each: the client must fail the
/// affected requests quickly and with the right error, stay within a memory bound, and
/// work again once the server behaves.
///
/// Serialized: peak RSS is per process, so the cases must not overlap.
@Suite("A hostile server cannot exhaust the client", .serialized)
struct HostileServerTests {
    static let sizes = HostileSizes.current
    /// Every request's timeout.
    static let requestTimeout: Duration = .seconds(2)
    /// The slack on top of it.
    /// One second, as the issue asks (five under a sanitizer, where code runs 10–20 times
    /// slower; see ``report(_:_:sourceLocation:)``).
    static let slack: Duration = Sanitizer.name == nil ? .seconds(1) : .seconds(5)

    /// What a case produced, for its checks and its report line.
    struct Run {
        let results: [Result<APNsResponse, APNsTransportError>]
        let elapsed: Duration
        let peakRSSGrowthMiB: Double

        var failures: [APNsTransportError] { results.compactMap(\.failure) }
    }

    // MARK: Harness

    /// A transport over `server` with the short timers of these tests.
    static func transport(_ server: HostileHTTP2Server) -> HTTP2Transport {
        makeTransport(connector: server.connector) {
            $0.connectTimeout = .seconds(2)
            $0.pingTimeout = .seconds(1)
            $0.reconnectBackoffBase = .milliseconds(50)
            $0.reconnectBackoffMax = .milliseconds(200)
            $0.shutdownGracePeriod = .milliseconds(500)
        }
    }

    /// Sends `count` requests at once (tokens from `firstToken`) and measures the time to
    /// the last outcome and the peak RSS growth meanwhile.
    ///
    /// The sends and the clock run in a task of high priority. The suites against
    /// independent servers keep thousands of sending tasks ready on the cooperative pool
    /// (two threads here) while they run; at the default priority this case's tasks
    /// waited behind them, and a failure the transport reported in 4 ms was timed at 3 to
    /// 7 s. What is measured is how soon the transport ends the requests, not the pool's
    /// queue.
    static func measure(_ transport: HTTP2Transport, count: Int, firstToken: Int = 0) async throws -> Run {
        let requests = try (0..<count).map { try devicePush(token: firstToken + $0, timeout: requestTimeout) }
        return await Task(priority: .high) {
            let baseline = PeakRSS.reset()
            let clock = ContinuousClock()
            let start = clock.now
            let outcomes = await sendIndexed(transport, requests: requests)
            let elapsed = clock.now - start
            let growth = PeakRSS.growth(since: baseline)
            return Run(results: outcomes.sorted { $0.index < $1.index }.map(\.result), elapsed: elapsed, peakRSSGrowthMiB: growth)
        }.value
    }

    /// The checks every case shares: in time, within the memory bound; then prints the
    /// report line.
    static func report(_ name: String, _ run: Run, sourceLocation: SourceLocation = #_sourceLocation) {
        let milliseconds = Int(run.elapsed / .milliseconds(1))
        let line = "hostile: \(name) -> \(describe(run.results)) in \(milliseconds) ms, peak RSS +\(String(format: "%.1f", run.peakRSSGrowthMiB)) MiB"
        print(line)
        // Under a sanitizer the time is reported, not asserted: beside the other suites on
        // 2 cores, a task waited up to 20 s to be resumed after its outcome (tests that
        // block the cooperative pool), which says nothing about the transport.
        if Sanitizer.name == nil {
            #expect(run.elapsed <= requestTimeout + slack, "\(line)", sourceLocation: sourceLocation)
        }
        #expect(run.peakRSSGrowthMiB < sizes.peakRSSBoundMiB, "\(line)", sourceLocation: sourceLocation)
    }

    /// The outcomes in a few words, for example `10x responseTooLarge(status 200)`.
    static func describe(_ results: [Result<APNsResponse, APNsTransportError>]) -> String {
        var counts: [String: Int] = [:]
        for result in results {
            let key = switch result {
            case .success(let response): "status \(response.status)"
            case .failure(let error): error.code.description
                + (error.responseStatus.map { "(status \($0))" } ?? "")
                + (error.mayHaveReachedAPNs ? "" : "(not sent)")
            }
            counts[key, default: 0] += 1
        }
        return counts.sorted { $0.key < $1.key }.map { "\($0.value)x \($0.key)" }.joined(separator: ", ")
    }

    /// Switches the server to ``HostileHTTP2Server/Misbehaviour/normal`` and checks that
    /// a new request succeeds. A send that fails with `connectionFailed` (never sent: an
    /// attempt that met the old behaviour, or a backoff longer than its deadline) is tried
    /// again, for at most `requestTimeout` in all, as an application would.
    static func expectRecovery(_ transport: HTTP2Transport, _ server: HostileHTTP2Server, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        server.behave(.normal)
        let request = try devicePush(token: 9_999, timeout: requestTimeout)
        let clock = ContinuousClock()
        let deadline = clock.now + requestTimeout
        while true {
            do throws(APNsTransportError) {
                let response = try await transport.send(request)
                #expect(response.status == 200, sourceLocation: sourceLocation)
                return
            } catch where error.code == .connectionFailed && !error.mayHaveReachedAPNs && clock.now < deadline {
                try? await Task.sleep(for: .milliseconds(20))
            } catch {
                Issue.record("after the server behaved again: \(String(reflecting: error))", sourceLocation: sourceLocation)
                return
            }
        }
    }

    /// Shuts the transport down and stops the server (every thread joined).
    static func finish(_ transport: HTTP2Transport, _ server: HostileHTTP2Server, sourceLocation: SourceLocation = #_sourceLocation) async {
        await transport.shutdown()
        let stopped = await server.stop()
        #expect(stopped, "a hostile server thread did not end", sourceLocation: sourceLocation)
    }

    /// Waits (bounded) until `condition` holds; returns whether it did.
    static func eventually(within limit: Duration = .seconds(3), _ condition: () -> Bool) async -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + limit
        while !condition() {
            if clock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return true
    }

    /// The checks of a response-size limit case: every request failed with
    /// `responseTooLarge`, may have reached APNs, carries the `:status` seen and names
    /// the limit.
    static func expectTooLarge(_ run: Run, status: Int, limit: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(run.failures.count == run.results.count, "\(describe(run.results))", sourceLocation: sourceLocation)
        for error in run.failures {
            #expect(error.code == .responseTooLarge, "\(String(reflecting: error))", sourceLocation: sourceLocation)
            #expect(error.mayHaveReachedAPNs, sourceLocation: sourceLocation)
            #expect(error.responseStatus == status, "\(String(reflecting: error))", sourceLocation: sourceLocation)
            #expect(error.detail?.localizedCaseInsensitiveContains(limit) == true, "\(String(reflecting: error))", sourceLocation: sourceLocation)
        }
    }

    // MARK: The server itself

    @Test("the hand-made HPACK decodes as intended: one 4,035-byte field per 0xBE reference, a literal :status")
    func handMadeHPACK() throws {
        let references = 100
        let amplified = try Self.inflate(
            HandHPACK.status(200) + HandHPACK.literal(name: "apns-id", value: "X")
                + HandHPACK.amplifierEntry + [UInt8](repeating: HandHPACK.amplifierReference, count: references)
        )
        #expect(amplified.first?.name == ":status" && amplified.first?.value == "200")
        let amplifiers = amplified.filter { $0.name == "x-a" }
        #expect(amplifiers.count == references + 1)
        #expect(amplifiers.allSatisfy { $0.value == String(repeating: "a", count: 4000) })
        // RFC 9113 §6.5.2 size: name + value + 32 per field.
        #expect(amplifiers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 32 } == (references + 1) * 4_035)
        let bad = try Self.inflate(HandHPACK.status(literal: "abc") + HandHPACK.status(599))
        #expect(bad.map(\.value) == ["abc", "599"])
        #expect(HandHPACK.integer(4_000, prefixBits: 7) == [0x7F, 0xA1, 0x1E])
    }

    /// Decodes one header block with nghttp2's HPACK decoder.
    static func inflate(_ block: [UInt8]) throws -> [(name: String, value: String)] {
        var inflater: OpaquePointer?
        try #require(nghttp2_hd_inflate_new(&inflater) == 0)
        defer { nghttp2_hd_inflate_del(inflater) }
        var fields: [(name: String, value: String)] = []
        var offset = 0
        // Each call consumes at least one byte or emits a field; bounded by the block.
        for _ in 0...(2 * block.count + 2) {
            var field = nghttp2_nv()
            var flags: Int32 = 0
            let consumed = block.withUnsafeBufferPointer {
                nghttp2_hd_inflate_hd2(inflater, &field, &flags, $0.baseAddress! + offset, $0.count - offset, 1)
            }
            try #require(consumed >= 0, "nghttp2_hd_inflate_hd2: \(consumed)")
            offset += consumed
            if flags & Int32(NGHTTP2_HD_INFLATE_EMIT.rawValue) != 0 {
                fields.append((
                    String(decoding: UnsafeBufferPointer(start: field.name, count: field.namelen), as: UTF8.self),
                    String(decoding: UnsafeBufferPointer(start: field.value, count: field.valuelen), as: UTF8.self)
                ))
            }
            if flags & Int32(NGHTTP2_HD_INFLATE_FINAL.rawValue) != 0 {
                nghttp2_hd_inflate_end_headers(inflater)
                break
            }
        }
        #expect(offset == block.count)
        return fields
    }

    // MARK: Response-size limits

    @Test("HPACK amplification: a few KB of references that decode to megabytes fail with responseTooLarge")
    func hpackAmplification() async throws {
        let server = HostileHTTP2Server(.hpackAmplification(references: Self.sizes.references))
        let transport = Self.transport(server)
        let run = try await Self.measure(transport, count: Self.sizes.concurrent)
        Self.report("hpackAmplification(\(Self.sizes.references) refs x \(Self.sizes.concurrent))", run)
        Self.expectTooLarge(run, status: 200, limit: "header")
        let counters = server.counters
        // The client announced its limit, the default (RFC 9113 §6.5.2), and used one connection.
        #expect(transport.configuration.maxResponseHeaderListSize == 16_384)
        #expect(counters.clientMaxHeaderListSize == 16_384)
        #expect(counters.connectionsAccepted == 1)
        try await Self.expectRecovery(transport, server)
        #expect(server.counters.connectionsAccepted == 1, "the connection stays usable")
        await Self.finish(transport, server)
    }

    @Test("a body that never ends fails with responseTooLarge and the status seen; the stream is reset", arguments: [400, 200])
    func endlessBody(status: Int) async throws {
        let server = HostileHTTP2Server(.endlessBody(status: status, bytes: Self.sizes.bodyBytes))
        let transport = Self.transport(server)
        let run = try await Self.measure(transport, count: Self.sizes.concurrent)
        Self.report("endlessBody(\(status), \(Self.sizes.bodyBytes >> 20) MiB x \(Self.sizes.concurrent))", run)
        #expect(transport.configuration.maxResponseBodySize == 16_384)
        Self.expectTooLarge(run, status: status, limit: "body")
        // RST_STREAM CANCEL (0x8) for each stream (the server reads them a moment after
        // the requests failed), and the server stopped writing early.
        let allReset = await Self.eventually {
            server.counters.resetCodes.filter { $0 == 0x8 }.count == Self.sizes.concurrent
        }
        let counters = server.counters
        #expect(allReset, "reset codes: \(counters.resetCodes)")
        #expect(counters.bytesWritten < Self.sizes.concurrent * Self.sizes.bodyBytes / 2, "\(counters.bytesWritten) bytes written")
        #expect(counters.connectionsAccepted == 1)
        try await Self.expectRecovery(transport, server)
        #expect(server.counters.connectionsAccepted == 1, "the connection stays usable")
        await Self.finish(transport, server)
    }

    // MARK: Deadlines

    @Test("SETTINGS_MAX_CONCURRENT_STREAMS 0: a queued request times out at its deadline, never sent")
    func streamLimitZero() async throws {
        let server = HostileHTTP2Server(.streamLimitZero)
        let transport = Self.transport(server)
        let run = try await Self.measure(transport, count: 1)
        Self.report("streamLimitZero", run)
        #expect(run.failures.count == 1, "\(Self.describe(run.results))")
        if let error = run.failures.first {
            #expect(error.code == .timeout, "\(String(reflecting: error))")
            #expect(!error.mayHaveReachedAPNs)
        }
        // Sent before the SETTINGS arrived, it is refused (not processed) and waits again.
        let counters = server.counters
        #expect(counters.requestsReceived == counters.requestsRefused)
        // The server raises its limit once it behaves (a new SETTINGS).
        try await Self.expectRecovery(transport, server)
        await Self.finish(transport, server)
    }

    @Test("a server that closes every connection before its SETTINGS, or right after them: the pool backs off (a handful of connections in 2 s, not hundreds)",
          arguments: [HostileHTTP2Server.Misbehaviour.closeAtOnce, .settingsThenClose])
    func closesEveryConnection(_ misbehaviour: HostileHTTP2Server.Misbehaviour) async throws {
        let server = HostileHTTP2Server(misbehaviour)
        let transport = makeTransport(connector: server.connector) {
            $0.connectTimeout = .seconds(2)
            $0.reconnectBackoffBase = .milliseconds(200)
            $0.reconnectBackoffMax = .seconds(1)
            $0.shutdownGracePeriod = .milliseconds(500)
        }
        // An application that keeps sending, one request at a time, for two seconds and
        // at least three sends: a test task that a loaded machine resumes seconds late
        // still makes the sends (once, it made one or two in the two seconds).
        let clock = ContinuousClock()
        let end = clock.now + .seconds(2)
        var sends = 0
        var errors: [APNsTransportError.Code: Int] = [:]
        while clock.now < end || sends < 3 {
            let request = try devicePush(token: sends, timeout: .seconds(1))
            do throws(APNsTransportError) {
                _ = try await transport.send(request)
                Issue.record("a request was answered by a server that answers nothing")
            } catch {
                errors[error.code, default: 0] += 1
            }
            sends += 1
            try await Task.sleep(for: .milliseconds(10))
        }
        let connections = server.counters.connectionsAccepted
        // Attempts 200 ms, 400 ms, 800 ms, then 1 s apart (with jitter): about five. Without
        // the backoff each send opened connections as fast as the server closed them.
        // A send whose deadline allows waits for the next attempt rather than failing at
        // once: the three sends or more meet at least two attempts.
        #expect(connections >= 2 && connections <= 10, "\(connections) connections for \(sends) sends: \(errors)")
        if misbehaviour == .closeAtOnce { #expect(transport.statistics.connectionFailures >= 1) }
        await Self.finish(transport, server)
    }

    /// Sends one request with a half-second timeout through `transport`; the error it failed
    /// with (an answer is recorded as an issue and gives `nil`).
    static func failureOfOneRequest(_ transport: HTTP2Transport) async throws -> APNsTransportError? {
        let request = try devicePush(token: 1, timeout: .milliseconds(500))
        do throws(APNsTransportError) {
            _ = try await transport.send(request)
            Issue.record("answered")
            return nil
        } catch {
            return error
        }
    }

    @Test("a window of 0 holds every body back: the request times out as never reaching APNs, its HEADERS reached the server")
    func zeroWindow() async throws {
        let server = HostileHTTP2Server(.zeroWindow)
        let transport = Self.transport(server)
        // A client may send 65,535 bytes on a new stream before the server's SETTINGS
        // arrive (RFC 9113 §6.9.2), so the first request's body can slip through on a slow
        // run; the second one certainly meets the window of 0.
        _ = try? await transport.send(try devicePush(token: 0, timeout: .milliseconds(500)))
        if let error = try await Self.failureOfOneRequest(transport) {
            #expect(error.code == .timeout, "\(String(reflecting: error))")
            #expect(!error.mayHaveReachedAPNs, "\(String(reflecting: error))")
            #expect(error.detail?.contains("completely written") == true, "\(String(reflecting: error))")
        }
        // Not vacuous: the request was under way (its stream reset by the client), not queued.
        #expect(await Self.eventually { server.counters.resetCodes.contains(0x8) }, "\(server.counters.resetCodes)")
        await Self.finish(transport, server)
    }

    /// Sends one request with a long timeout from a task, waits (bounded) until the
    /// server has received `received` HEADERS frames, cancels the task and returns the
    /// failure.
    static func cancelInFlight(_ transport: HTTP2Transport, _ server: HostileHTTP2Server, received: Int) async throws -> APNsTransportError? {
        let request = try devicePush(token: 1, timeout: .seconds(60))
        let task = sendingTask(transport, request)
        #expect(await Self.eventually(within: .seconds(20)) { server.counters.headersReceived >= received })
        task.cancel()
        return await task.value
    }

    @Test("cancelled while a window of 0 holds the body back: never reached APNs, as a timeout in that state says")
    func cancelWithBodyHeldBack() async throws {
        let server = HostileHTTP2Server(.zeroWindow)
        let transport = Self.transport(server)
        // The first request's body may slip through before the server's SETTINGS (see zeroWindow).
        _ = try? await transport.send(try devicePush(token: 0, timeout: .milliseconds(500)))
        let before = server.counters.headersReceived
        let error = try await Self.cancelInFlight(transport, server, received: before + 1)
        #expect(error?.code == .cancelled, "\(String(reflecting: error))")
        #expect(error?.mayHaveReachedAPNs == false, "\(String(reflecting: error))")
        #expect(error?.detail?.contains("completely written") == true, "\(String(reflecting: error))")
        // Not vacuous: its stream was open at the server and the client reset it (CANCEL).
        #expect(await Self.eventually { server.counters.resetCodes.contains(0x8) }, "\(server.counters.resetCodes)")
        await Self.finish(transport, server)
    }

    @Test("cancelled after the whole request went out: may have reached APNs")
    func cancelAfterWholeRequest() async throws {
        let server = HostileHTTP2Server(.silentAfter(requests: 0))
        let transport = Self.transport(server)
        let error = try await Self.cancelInFlight(transport, server, received: 1)
        #expect(server.counters.requestsReceived == 1)
        #expect(error?.code == .cancelled, "\(String(reflecting: error))")
        #expect(error?.mayHaveReachedAPNs == true, "\(String(reflecting: error))")
        await Self.finish(transport, server)
    }

    @Test("a cancelled batch sends none of its queued requests on the streams its cancellation frees")
    func cancelledBatchSendsNothingMore() async throws {
        // 100 streams, no answers: 100 requests in flight, 1,900 queued behind them.
        let server = HostileHTTP2Server(.silentAfter(requests: 0))
        let transport = Self.transport(server)
        let requests = try (0..<2_000).map { try devicePush(token: $0, timeout: .seconds(60)) }
        let results = Mutex([Int: APNsTransportError](minimumCapacity: 2_000))
        let batch = Task {
            await transport.sendBatch(count: requests.count, maxConcurrency: requests.count, makeRequest: { requests[$0] }) { index, _, result in
                if case .failure(let error) = result { results.withLock { $0[index] = error } }
            }
        }
        #expect(await Self.eventually(within: .seconds(20)) { server.counters.headersReceived >= 100 })
        try await Task.sleep(for: .milliseconds(100))
        let beforeCancel = server.counters.headersReceived
        batch.cancel()
        await batch.value
        // Let anything sent after the cancellation reach the server.
        try await Task.sleep(for: .milliseconds(300))
        #expect(beforeCancel == 100)
        #expect(server.counters.headersReceived == beforeCancel, "sent after the cancellation: \(server.counters.headersReceived - beforeCancel)")
        let outcomes = results.withLock { $0 }
        #expect(outcomes.count == 2_000)
        #expect(outcomes.values.allSatisfy { $0.code == .cancelled })
        // Exactly the requests the server had may have reached APNs.
        #expect(outcomes.values.filter(\.mayHaveReachedAPNs).count == beforeCancel)
        await Self.finish(transport, server)
    }

    @Test("an answer whose body never comes: a timeout that keeps the status seen", arguments: [200, 400])
    func stalledBody(_ status: Int) async throws {
        let server = HostileHTTP2Server(.stalledBody(status: status))
        let transport = Self.transport(server)
        if let error = try await Self.failureOfOneRequest(transport) {
            #expect(error.code == .timeout && error.mayHaveReachedAPNs, "\(String(reflecting: error))")
            #expect(error.responseStatus == status, "\(String(reflecting: error))")
        }
        await Self.finish(transport, server)
    }

    /// RFC 9113 §8.1: a 1xx is an interim response, not the answer; RFC 9110 §15.2.
    @Test("an interim response (100, 103) and then silence: a timeout that may have reached APNs, with no status", arguments: [100, 103])
    func interimThenSilence(_ status: Int) async throws {
        let server = HostileHTTP2Server(.stalledBody(status: status))
        let transport = Self.transport(server)
        if let error = try await Self.failureOfOneRequest(transport) {
            #expect(error.code == .timeout && error.mayHaveReachedAPNs, "\(String(reflecting: error))")
            #expect(error.responseStatus == nil, "\(String(reflecting: error))")
            #expect(!(error.detail ?? "").contains("status \(status)"), "\(String(reflecting: error))")
        }
        await Self.finish(transport, server)
    }

    /// Found from outside: an attempt whose TLS completed but whose server never sent
    /// SETTINGS counted once as a success and once as a failure, so a dashboard read 50 %
    /// success during a total outage.
    @Test("no SETTINGS after connecting: apns_connection_attempts_total counts the attempt once, a failure")
    func noSettingsCountsOneFailedAttempt() async throws {
        let metrics = TestMetrics()
        let server = HostileHTTP2Server(.noSettings)
        let transport = makeTransport(connector: server.connector) {
            $0.connectTimeout = .seconds(2)
            $0.reconnectBackoffBase = .milliseconds(50)
            $0.reconnectBackoffMax = .milliseconds(200)
            $0.shutdownGracePeriod = .milliseconds(500)
            $0.metricsFactory = metrics
        }
        _ = try await Self.measure(transport, count: 1)
        #expect(await Self.eventually { server.counters.connectionsClosedByClient >= 1 })
        #expect(await Self.eventually { (try? metrics.expectCounter("apns_connection_attempts_total", [("result", "failure")]))?.totalValue == 1 })
        #expect((try? metrics.expectCounter("apns_connection_attempts_total", [("result", "success")]))?.totalValue ?? 0 == 0)
        // The server behaves: the next attempt gets its SETTINGS and counts as a success.
        try await Self.expectRecovery(transport, server)
        #expect(try metrics.expectCounter("apns_connection_attempts_total", [("result", "success")]).totalValue == 1)
        #expect(try metrics.expectCounter("apns_connection_attempts_total", [("result", "failure")]).totalValue == 1)
        await Self.finish(transport, server)
    }

    @Test("no SETTINGS after connecting: the request fails by its deadline, the connection is closed and not used again")
    func noSettings() async throws {
        let server = HostileHTTP2Server(.noSettings)
        let transport = Self.transport(server)
        let run = try await Self.measure(transport, count: 1)
        Self.report("noSettings", run)
        #expect(run.failures.count == 1, "\(Self.describe(run.results))")
        let written = server.counters.requestsReceived > 0
        if let error = run.failures.first {
            #expect([.timeout, .connectionClosed, .connectionFailed].contains(error.code), "\(String(reflecting: error))")
            // A request the server received may have reached APNs.
            if written { #expect(error.mayHaveReachedAPNs, "\(String(reflecting: error))") }
        }
        // The client closes the connection (within connectTimeout + slack of its opening).
        #expect(await Self.eventually { server.counters.connectionsClosedByClient >= 1 })
        try await Self.expectRecovery(transport, server)
        let counters = server.counters
        #expect(counters.connectionsAccepted == 2)
        #expect(counters.requestsPerConnection.first ?? 0 <= 1, "later requests went to the silent connection: \(counters.requestsPerConnection)")
        await Self.finish(transport, server)
    }

    @Test("a server that goes silent: the request in flight times out, a PING probe closes the connection, a new one works")
    func silentAfterRequests() async throws {
        let server = HostileHTTP2Server(.silentAfter(requests: 2))
        let transport = Self.transport(server)
        for token in 0..<2 {
            let response = try await transport.send(devicePush(token: token, timeout: Self.requestTimeout))
            #expect(response.status == 200)
        }
        let run = try await Self.measure(transport, count: 1, firstToken: 2)
        Self.report("silentAfter(2)", run)
        #expect(run.failures.count == 1, "\(Self.describe(run.results))")
        if let error = run.failures.first {
            #expect(error.code == .timeout, "\(String(reflecting: error))")
            #expect(error.mayHaveReachedAPNs)
            #expect(run.elapsed >= Self.requestTimeout - .milliseconds(100), "failed before its deadline")
        }
        // The silent connection stays silent; a new one (opened after it closed) behaves.
        try await Self.expectRecovery(transport, server)
        let counters = server.counters
        #expect(counters.pingsReceived >= 1, "no PING probe")
        #expect(counters.pingsAnswered == 0)
        #expect(counters.connectionsAccepted == 2)
        #expect(counters.requestsPerConnection.first == 3, "later requests went to the silent connection: \(counters.requestsPerConnection)")
        await Self.finish(transport, server)
    }

    // MARK: Protocol violations the client already handles

    @Test(
        "protocol violations fail the request in time, and the client recovers",
        arguments: [
            HostileHTTP2Server.Misbehaviour.garbage, .badStatus, .windowOverflow, .continuationFlood(),
        ]
    )
    func protocolViolation(_ misbehaviour: HostileHTTP2Server.Misbehaviour) async throws {
        let server = HostileHTTP2Server(misbehaviour)
        let transport = Self.transport(server)
        let run = try await Self.measure(transport, count: 1)
        Self.report(misbehaviour.name, run)
        #expect(run.failures.count == 1, "\(Self.describe(run.results))")
        if let error = run.failures.first {
            #expect([.protocolError, .connectionClosed, .streamReset].contains(error.code), "\(String(reflecting: error))")
            #expect(error.mayHaveReachedAPNs)
        }
        try await Self.expectRecovery(transport, server)
        await Self.finish(transport, server)
    }
}
