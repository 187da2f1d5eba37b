import APNsCore
import APNsMockServer
import APNsTransport
import Foundation
import Logging
import Synchronization

/// The soak of issue #8: a bounded run of many notifications through `APNsClient` and
/// `HTTP2Transport` to `APNsMockServer` in the same process, while a seeded fault
/// injector scripts GOAWAYs, dropped and refused connections, 429/500/503 bursts,
/// response delays, stalls and stream-limit drops on the server.
///
/// It checks that every notification ends in exactly one outcome, that none reaches the
/// server more often than its outcome allows, that nothing hangs (a watchdog) and that
/// resident memory stays flat. See ``SoakReport`` for what is checked and reported.
package enum Soak {
    /// The stream limit the mock server announces (and returns to after a stream-limit fault).
    static let streamLimit = 1_000
    static let topic = "com.example.soak"
    static let payload = Array(#"{"aps":{"alert":{"title":"Soak","body":"One of many notifications sent while the server misbehaves."}}}"#.utf8)

    private enum Ending: Sendable {
        case finished
        case stalled(String)
    }

    /// Runs the soak; returns the report (``SoakReport/passed`` says whether every check held).
    /// - Throws: Only if the mock server cannot start.
    package static func run(_ configuration: SoakConfiguration) async throws -> SoakReport {
        // Descriptors and threads before anything starts and after everything is released:
        // what a run leaves behind.
        // (The concurrency runtime opens its epoll, eventfd and timer descriptors on first
        // use of a sleep on each clock; let it do so first.)
        try? await Task.sleep(for: .milliseconds(1))
        try? await SuspendingClock().sleep(for: .milliseconds(1))
        let descriptors = ProcessMetrics.openDescriptors()
        let threads = ProcessMetrics.threads()
        var report = try await soak(configuration)
        report.descriptorsStart = descriptors
        report.threadsStart = threads
        for _ in 0..<50 where ProcessMetrics.openDescriptors() > descriptors || ProcessMetrics.threads() > threads {
            try? await Task.sleep(for: .milliseconds(20))
        }
        report.descriptorsEnd = ProcessMetrics.openDescriptors()
        report.threadsEnd = ProcessMetrics.threads()
        return report
    }

    private static func soak(_ configuration: SoakConfiguration) async throws -> SoakReport {
        let log = configuration.log
        let count = configuration.notifications
        let server = MockAPNsServer(configuration: .init(
            maxConcurrentStreams: streamLimit, listensOnIPv6: false, recordedRequestLimit: 0))
        try await server.start()
        if let delay = configuration.oneWayDelay {
            // Before the first connection, so that every connection is behind it.
            server.setLinkEmulation(.init(oneWayDelay: delay))
        }
        let arrivals = ArrivalLedger(notifications: count)
        server.observeRequests { arrivals.record($0) }
        let unregisteredSince = Date(timeIntervalSince1970: 1_700_000_000)
        for sequence in stride(from: configuration.rejectEvery - 1, to: count, by: configuration.rejectEvery) {
            server.respond(toDeviceToken: SoakIDs.deviceToken(sequence), with: .unregistered(since: unregisteredSince))
        }

        guard let caPEM = server.certificateAuthorityPEM else {
            await server.stop()
            throw SoakError("the mock server has no CA certificate")
        }
        let environment = APNsEnvironment.custom(host: "127.0.0.1", port: server.port)
        let transport = HTTP2Transport(configuration: .init(
            environment: environment,
            tls: TLSConfiguration(trustRoots: .certificates(caPEM)),
            connectionCount: configuration.connections,
            maxQueuedRequests: max(10_000, configuration.concurrency * 2),
            connectTimeout: .seconds(5),
            reconnectBackoffBase: .milliseconds(20),
            reconnectBackoffMax: .seconds(1),
            shutdownGracePeriod: .seconds(5)
        ))
        let client = APNsClient(
            environment: environment, credentials: .certificate, transport: transport,
            retryPolicy: configuration.retryPolicy, requestTimeout: configuration.requestTimeout)

        let outcomes = OutcomeLedger(notifications: count, workers: configuration.concurrency)
        let injector = FaultInjector(
            server: server, ledger: outcomes, notifications: count, meanGap: configuration.meanFaultGap,
            streamLimit: streamLimit, requestTimeout: configuration.requestTimeout, stalls: configuration.stalls)
        let samples = Mutex<[SoakReport.Sample]>([])
        let rssStart = ProcessMetrics.residentBytes()
        samples.withLock { $0.append(.init(percent: 0, completed: 0, seconds: 0, residentBytes: rssStart)) }
        log("soak: \(count) notifications, seed \(configuration.seed), \(configuration.connections) connections, "
            + "concurrency \(configuration.concurrency), a fault every ~\(configuration.meanFaultGap) notifications, "
            + "round trip \(configuration.oneWayDelay.map { "\($0) (link emulation)" } ?? "loopback"), "
            + "RSS at start \(mebibytes(rssStart))")

        let clock = ContinuousClock()
        let start = clock.now
        let (endings, ending) = AsyncStream.makeStream(of: Ending.self)

        // The senders: each takes the next sequence number until none is left; or batch
        // calls, one after another, each over the next `batchSize` sequence numbers.
        let body = PushNotification.Body.raw(payload)
        _ = Task {
            if configuration.streamed {
                await sendStreamed(count: count, window: configuration.concurrency, body: body, client: client, outcomes: outcomes)
                ending.yield(.finished)
                return
            }
            if let batchSize = configuration.batchSize {
                await sendInBatches(count: count, batchSize: batchSize, window: configuration.concurrency,
                                    body: body, client: client, outcomes: outcomes)
                ending.yield(.finished)
                return
            }
            await withTaskGroup(of: Void.self) { group in
                for worker in 0..<configuration.concurrency {
                    group.addTask {
                        while true {
                            let sequence = outcomes.next.add(1, ordering: .relaxed).oldValue
                            if sequence >= count { return }
                            outcomes.begin(worker: worker, sequence: sequence)
                            let (kind, detail) = await sendOne(sequence, body: body, client: client)
                            outcomes.finish(worker: worker, sequence: sequence, kind: kind, detail: detail)
                        }
                    }
                }
            }
            ending.yield(.finished)
        }
        let faults = Task { await injector.run(seed: configuration.seed) }

        // Progress every 10% and the watchdog.
        let monitor = Task {
            var lastCompleted = -1
            var lastProgress = clock.now
            var nextPercent = 10
            var lastAnswered = -1
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(100))
                let completed = outcomes.completed.load(ordering: .relaxed)
                // A batch records its outcomes when the whole call returns: the transport's
                // answers and failures show progress in between.
                let transportStatistics = transport.statistics
                let answered = transportStatistics.responsesByStatus.values.reduce(0, +)
                    + transportStatistics.failuresByCode.values.reduce(0, +)
                let now = clock.now
                if completed != lastCompleted || answered != lastAnswered {
                    lastCompleted = completed
                    lastAnswered = answered
                    lastProgress = now
                } else if now - lastProgress > configuration.watchdog {
                    ending.yield(.stalled(describeStall(
                        outcomes: outcomes, arrivals: arrivals, transport: transport, server: server,
                        injector: injector, stalledFor: now - lastProgress)))
                    return
                }
                while nextPercent <= 100, completed * 100 >= nextPercent * count {
                    let rss = ProcessMetrics.residentBytes()
                    let seconds = (now - start).seconds
                    samples.withLock {
                        $0.append(.init(percent: nextPercent, completed: completed, seconds: seconds, residentBytes: rss))
                    }
                    let statistics = server.statistics
                    let faultCount = injector.counts.withLock { $0.values.reduce(0, +) }
                    log(String(format: "[%3d%%] %d done in %.1f s (%.0f /s), RSS %@, open connections %d, faults %d",
                               nextPercent, completed, seconds, Double(completed) / max(seconds, 0.001),
                               mebibytes(rss), statistics.openConnections, faultCount))
                    nextPercent += 10
                }
            }
        }

        var iterator = endings.makeAsyncIterator()
        let result = await iterator.next() ?? .finished
        let elapsed = clock.now - start
        faults.cancel()
        monitor.cancel()
        await faults.value
        let rssEnd = ProcessMetrics.residentBytes()

        var report = SoakReport(configuration: configuration)
        report.seconds = elapsed.seconds
        report.samples = samples.withLock { $0 }
        report.residentStart = rssStart
        report.residentEnd = rssEnd
        report.faults = injector.counts.withLock { $0 }

        if case .stalled(let description) = result {
            report.violations.append("no progress for \(configuration.watchdog): \(description)")
            log("soak: STALLED\n" + description)
            _ = await withDeadline(.seconds(10)) { await client.shutdown() }
            await server.stop()
            return report
        }
        await monitor.value

        // Let the server settle: nothing more is sent, so every connection closes.
        server.resetScript()
        server.setMaxConcurrentStreams(streamLimit)
        if await withDeadline(.seconds(30), { await client.shutdown() }) == nil {
            report.violations.append("the transport's shutdown did not return within 30 s")
        }
        for _ in 0..<100 where server.statistics.openConnections > 0 {
            try? await Task.sleep(for: .milliseconds(50))
        }
        server.observeRequests(nil)
        report.server = server.statistics
        report.transport = transport.statistics
        await server.stop()
        report.verify(outcomes: outcomes, arrivals: arrivals)
        return report
    }

    /// Sends every notification with `APNsClient`'s batch send, `batchSize` device tokens
    /// per call, and records each outcome (worker 0 stands for the batch in progress).
    private static func sendInBatches(
        count: Int, batchSize: Int, window: Int, body: PushNotification.Body, client: APNsClient,
        outcomes: OutcomeLedger
    ) async {
        let notification = PushNotification(body: body, topic: .bundleID(topic))
        var first = 0
        while first < count {
            let range = first..<min(count, first + batchSize)
            first = range.upperBound
            outcomes.next.store(range.upperBound, ordering: .relaxed)
            outcomes.begin(worker: 0, sequence: range.lowerBound)
            let tokens = range.compactMap { try? DeviceToken(hex: SoakIDs.deviceToken($0)) }
            guard tokens.count == range.count else {
                for sequence in range { outcomes.finish(worker: 0, sequence: sequence, kind: .invalid, detail: "invalid token") }
                continue
            }
            let results = await client.send(notification, to: tokens, maxConcurrency: window)
            for (sequence, outcome) in zip(range, results) {
                let (kind, detail) = classify(outcome.result.map { _ in () })
                outcomes.finish(worker: 0, sequence: sequence, kind: kind, detail: detail)
            }
        }
    }

    /// Sends every notification with one streamed batch: the device tokens come from an
    /// `AsyncSequence` read as the window frees room, and each outcome is recorded as it
    /// is handed over (worker 0 stands for the batch).
    private static func sendStreamed(
        count: Int, window: Int, body: PushNotification.Body, client: APNsClient, outcomes: OutcomeLedger
    ) async {
        let notification = PushNotification(body: body, topic: .bundleID(topic))
        outcomes.begin(worker: 0, sequence: 0)
        await client.send(notification, to: SoakDeviceTokens(count: count, ledger: outcomes), maxConcurrency: window) { index, outcome in
            let (kind, detail) = classify(outcome.result.map { _ in () })
            outcomes.finish(worker: 0, sequence: index, kind: kind, detail: detail)
        }
    }

    /// The ledger's kind (and detail) for a notification's outcome.
    private static func classify(_ result: Result<Void, APNsError>) -> (OutcomeLedger.Kind, String?) {
        switch result {
        case .success:
            return (.accepted, nil)
        case .failure(.rejected(let rejection)):
            let detail = "rejected \(rejection.status) \(rejection.reason.map { "\($0)" } ?? "-")"
            return (rejection.remedy == .retryLater ? .rejectedRetryable : .rejectedOther, detail)
        case .failure(.failed(let failure)):
            let detail = "failed \(failure.code) (mayHaveReachedAPNs: \(failure.mayHaveReachedAPNs))"
            return (failure.mayHaveReachedAPNs ? .failedMayHaveReached : .failedNotReached, detail)
        case .failure(.invalid(let invalid)):
            return (.invalid, "invalid: \(invalid)")
        }
    }

    /// Sends notification `sequence` through the client and classifies its outcome.
    private static func sendOne(
        _ sequence: Int, body: PushNotification.Body, client: APNsClient
    ) async -> (OutcomeLedger.Kind, String?) {
        let token: DeviceToken
        let notification: PushNotification
        do {
            token = try DeviceToken(hex: SoakIDs.deviceToken(sequence))
            notification = PushNotification(
                body: body, topic: .bundleID(topic), apnsID: try APNsID(SoakIDs.apnsID(sequence)))
        } catch {
            return (.invalid, "invalid: \(error)")
        }
        do {
            _ = try await client.send(notification, to: token)
            return classify(.success(()))
        } catch {
            return classify(.failure(error))
        }
    }

    /// What is outstanding when the watchdog fires.
    private static func describeStall(
        outcomes: OutcomeLedger, arrivals: ArrivalLedger, transport: HTTP2Transport, server: MockAPNsServer,
        injector: FaultInjector, stalledFor: Duration
    ) -> String {
        let now = ContinuousClock.now
        let (current, started) = outcomes.state.withLock { ($0.current, $0.startedAt) }
        var lines = ["stalled for \(stalledFor); completed \(outcomes.completed.load(ordering: .relaxed))"]
        let busy = current.indices.filter { current[$0] >= 0 }
        lines.append("\(busy.count) notifications outstanding; the first 20:")
        for worker in busy.prefix(20) {
            let sequence = current[worker]
            let seen = arrivals.counters(of: sequence)
            lines.append("  #\(sequence) (apns-id \(SoakIDs.apnsID(sequence))) sending for \(now - started[worker]); "
                         + "at the server: \(seen.arrivals) arrivals, \(seen.accepted) answered 200, "
                         + "\(seen.retryable) answered 429/5xx, \(seen.dropped) dropped")
        }
        lines.append("transport: \(transport.statistics)")
        lines.append("server: \(server.statistics)")
        lines.append("faults so far: \(injector.counts.withLock { $0 })")
        return lines.joined(separator: "\n")
    }
}

/// Runs `body`, giving up on waiting after `limit`: `nil` if it did not return in time
/// (it keeps running unobserved).
func withDeadline<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async -> T) async -> T? {
    let (stream, continuation) = AsyncStream.makeStream(of: T?.self)
    let work = Task {
        continuation.yield(await body())
    }
    let timer = Task {
        try? await Task.sleep(for: limit)
        continuation.yield(nil)
    }
    var iterator = stream.makeAsyncIterator()
    let first = await iterator.next() ?? nil
    timer.cancel()
    _ = work
    return first
}

/// A soak setup failure.
struct SoakError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The soak's device tokens, in sequence order, as an `AsyncSequence` (the streamed
/// batch's input): each read moves the ledger's `next`, which the fault injector and the
/// watchdog read. It ends early only if a token could not be made, which the report's
/// outcome count then shows.
struct SoakDeviceTokens: AsyncSequence, Sendable {
    let count: Int
    let ledger: OutcomeLedger

    struct AsyncIterator: AsyncIteratorProtocol {
        let count: Int
        let ledger: OutcomeLedger
        var sequence = 0

        mutating func next() async -> DeviceToken? { take() }

        mutating func next(isolation actor: isolated (any Actor)?) async -> DeviceToken? { take() }

        private mutating func take() -> DeviceToken? {
            guard sequence < count, let token = try? DeviceToken(hex: SoakIDs.deviceToken(sequence)) else { return nil }
            sequence += 1
            ledger.next.store(sequence, ordering: .relaxed)
            return token
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(count: count, ledger: ledger) }
}
