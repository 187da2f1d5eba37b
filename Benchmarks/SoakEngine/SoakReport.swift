import APNsMockServer
import APNsTransport
import Foundation

/// What a soak run measured and whether every check held.
///
/// Per notification, the server side counts arrivals `A` (requests the server processed
/// with its `apns-id`), of which `R` were answered 429/500/503 ("not delivered, retry
/// later": the client's retry policy sends the same `apns-id` again), `OK` answered 200
/// and `D` dropped unanswered. The checks:
/// - every notification has exactly one client outcome, and they sum to the count sent;
/// - `A - R <= 1`: at most one arrival that could have been delivered. A second arrival
///   is legitimate only after a 429/5xx answer (counted separately as a retry), or after a
///   failure that said it may have reached APNs if the policy retries those (ours does not);
/// - accepted means exactly one 200 at the server; rejected means none;
/// - "failed, did not reach APNs" means no arrival that could have been delivered (`A == R`);
/// - the per-token `410` tokens end rejected; no foreign `apns-id` reaches the server;
/// - the transport ends with nothing in flight; end RSS is within the bound of the middle.
package struct SoakReport: Sendable {
    /// A progress sample.
    package struct Sample: Sendable {
        package var percent: Int
        package var completed: Int
        package var seconds: Double
        package var residentBytes: Int
    }

    package let configuration: SoakConfiguration
    package var seconds = 0.0
    package var samples: [Sample] = []
    package var residentStart = 0
    package var residentEnd = 0
    package var descriptorsStart = 0
    package var descriptorsEnd = 0
    package var threadsStart = 0
    package var threadsEnd = 0
    /// Faults injected, by kind.
    package var faults: [String: Int] = [:]
    /// Client outcomes, by kind.
    package var outcomes: [String: Int] = [:]
    /// Rejections by status and reason, failures by code and `mayHaveReachedAPNs`.
    package var outcomeDetails: [String: Int] = [:]
    /// Notifications that reached the server more than once, by classification.
    package var duplicates: [String: Int] = [:]
    /// Other per-notification figures (retries that ended accepted, failures the server saw…).
    package var figures: [String: Int] = [:]
    /// Server answers, by status.
    package var serverAnswers: [String: Int] = [:]
    package var server: MockAPNsServer.Statistics?
    package var transport: HTTP2Transport.Statistics?
    /// Every check that failed (empty when the run passed).
    package var violations: [String] = []

    init(configuration: SoakConfiguration) {
        self.configuration = configuration
    }

    /// Whether every check held.
    package var passed: Bool { violations.isEmpty }

    /// The number of notifications with an outcome.
    package var outcomeTotal: Int { outcomes.values.reduce(0, +) }

    /// The RSS sample at 50%.
    package var residentMiddle: Int? { samples.first { $0.percent == 50 }?.residentBytes }

    mutating func verify(outcomes ledger: OutcomeLedger, arrivals ledger2: ArrivalLedger) {
        let count = configuration.notifications
        let (kinds, secondOutcomes, details) = ledger.state.withLock { ($0.kinds, $0.secondOutcomes, $0.details) }
        let counts = ledger2.counts.withLock { $0 }
        outcomeDetails = details
        serverAnswers = counts.byAnswer
        var examples: [String: [Int]] = [:]
        func violation(_ what: String, _ sequence: Int) {
            if examples[what, default: []].count < 5 { examples[what, default: []].append(sequence) }
            figures["violation: " + what, default: 0] += 1
        }
        var byKind = [Int](repeating: 0, count: OutcomeLedger.Kind.allCases.count)
        var arrivalsTotal = 0
        for sequence in 0..<count {
            let kind = OutcomeLedger.Kind(rawValue: kinds[sequence]) ?? .none
            byKind[Int(kind.rawValue)] += 1
            let arrived = Int(counts.arrivals[sequence])
            let retryable = Int(counts.retryable[sequence])
            let accepted = Int(counts.accepted[sequence])
            let deliverable = arrived - retryable
            arrivalsTotal += arrived
            if arrived >= 2 {
                if deliverable <= 1 {
                    duplicates["re-sent after a 429/5xx answer (retry policy, same apns-id)", default: 0] += 1
                } else if kind == .failedMayHaveReached && configuration.retryPolicy.retriesFailuresThatMayHaveReachedAPNs {
                    duplicates["re-sent after a failure that may have reached APNs (policy allows)", default: 0] += 1
                } else {
                    duplicates["UNEXPLAINED: processed more than once without a 429/5xx answer", default: 0] += 1
                    violation("processed twice without a 429/5xx answer in between", sequence)
                }
            }
            let scripted = (sequence + 1) % configuration.rejectEvery == 0
            switch kind {
            case .none:
                violation("no outcome (lost)", sequence)
            case .accepted:
                if accepted != 1 { violation("accepted, but the server answered 200 \(accepted) times", sequence) }
                if retryable > 0 { figures["accepted after 429/5xx retries", default: 0] += 1 }
                if scripted { violation("a token scripted to 410 was accepted", sequence) }
            case .rejectedRetryable, .rejectedOther:
                if accepted != 0 { violation("rejected, but the server answered 200", sequence) }
                if kind == .rejectedOther && !scripted { figures["rejected other than by the 410 script", default: 0] += 1 }
            case .failedNotReached:
                if deliverable != 0 {
                    violation("failed with mayHaveReachedAPNs false, but the server processed it", sequence)
                }
                if retryable > 0 { figures["failed (not reached) after 429/5xx retries", default: 0] += 1 }
            case .failedMayHaveReached:
                figures[deliverable > 0 ? "failed (may have reached): the server did process it"
                                         : "failed (may have reached): the server never processed it", default: 0] += 1
            case .invalid:
                violation("invalid", sequence)
            }
        }
        for kind in OutcomeLedger.Kind.allCases where kind != .none && byKind[Int(kind.rawValue)] > 0 {
            outcomes[kind.label] = byKind[Int(kind.rawValue)]
        }
        figures["arrivals at the server (soak apns-ids)"] = arrivalsTotal
        if secondOutcomes > 0 { violations.append("\(secondOutcomes) notifications got a second outcome") }
        if outcomeTotal != count { violations.append("outcomes sum to \(outcomeTotal), not \(count)") }
        if counts.foreign > 0 { violations.append("\(counts.foreign) requests with a foreign apns-id reached the server") }
        if let server, server.requests != counts.total {
            violations.append("the observer saw \(counts.total) requests, the server counted \(server.requests)")
        }
        if let transport, transport.requestsInFlight != 0 {
            violations.append("the transport reports \(transport.requestsInFlight) requests still in flight")
        }
        for (what, sequences) in examples.sorted(by: { $0.key < $1.key }) {
            let total = figures["violation: " + what] ?? 0
            let shown = sequences.map { "#\($0) " + describe($0, counts) }.joined(separator: "; ")
            violations.append("\(total)× \(what), e.g. \(shown)")
        }
        if let middle = residentMiddle, residentEnd - middle > configuration.rssGrowthLimitBytes {
            violations.append("RSS grew from \(mebibytes(middle)) at 50% to \(mebibytes(residentEnd)) at the end, "
                              + "more than the bound of \(mebibytes(configuration.rssGrowthLimitBytes))")
        }
    }

    private func describe(_ sequence: Int, _ counts: ArrivalLedger.Counts) -> String {
        "(A \(counts.arrivals[sequence]), 200 \(counts.accepted[sequence]), 429/5xx \(counts.retryable[sequence]), "
            + "dropped \(counts.dropped[sequence]))"
    }
}

extension SoakReport: CustomStringConvertible {
    /// The report as printed by the `Soak` executable.
    package var description: String {
        var lines: [String] = []
        let count = configuration.notifications
        lines.append("seed \(configuration.seed); \(count) notifications, \(configuration.connections) connections, "
                     + "concurrency \(configuration.concurrency), round trip "
                     + (configuration.oneWayDelay.map { "\($0) (link emulation)" } ?? "loopback"))
        lines.append(String(format: "wall time %.1f s, %.0f notifications/s", seconds, Double(count) / max(seconds, 0.001)))
        func table(_ title: String, _ values: [String: Int]) {
            lines.append(title + (values.isEmpty ? " none" : ""))
            for (key, value) in values.sorted(by: { $0.value > $1.value || ($0.value == $1.value && $0.key < $1.key) }) {
                lines.append(String(format: "  %9d  %@", value, key))
            }
        }
        table("outcomes (sum \(outcomeTotal)):", outcomes)
        table("outcome details:", outcomeDetails)
        table("faults injected (\(faults.values.reduce(0, +))):", faults)
        table("server answers:", serverAnswers)
        table("notifications the server processed more than once:", duplicates)
        table("figures:", figures)
        if let server {
            lines.append("server: \(server.requests) requests, \(server.connections) connections accepted "
                         + "(peak \(server.peakOpenConnections) open), \(server.connectionsRefused) refused, "
                         + "\(server.goAways) GOAWAYs sent")
        }
        if let transport {
            lines.append("transport: \(transport.requestsSent) streams, \(transport.requestsRequeued) re-queued, "
                         + "\(transport.connectionsOpened) connections opened, \(transport.connectionFailures) failed "
                         + "attempts, \(transport.connectionsLost) lost, \(transport.goAwaysReceived) GOAWAYs received")
        }
        let rss = samples.map { "\($0.percent)%: \(mebibytes($0.residentBytes))" }.joined(separator: ", ")
        lines.append("RSS \(rss); end \(mebibytes(residentEnd)) (bound: end ≤ 50% + \(mebibytes(configuration.rssGrowthLimitBytes)))")
        lines.append("file descriptors: \(descriptorsStart) before, \(descriptorsEnd) after the run; "
                     + "threads: \(threadsStart) before, \(threadsEnd) after")
        if violations.isEmpty {
            lines.append("PASSED: every notification has exactly one outcome; no unexplained duplicate; memory flat")
        } else {
            lines.append("FAILED:")
            lines.append(contentsOf: violations.map { "  " + $0 })
        }
        return lines.joined(separator: "\n")
    }
}
