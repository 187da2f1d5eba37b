import APNsCore
import Testing
import TestTools
@testable import APNsTransport

/// Seeded random lives of one request through ``RequestFate``: attempts on connections
/// that end in every way a connection can end one (answer begun or not, REFUSED_STREAM,
/// other resets, above a GOAWAY's last-stream-id, a session that ends with or without an
/// error or a refused TLS session, deadlines passing, never written or written), performed
/// as ``HTTP2Connection`` performs them (``RequestFate/requeued(_:maxRequeues:failure:)``
/// for what goes again), with a model of whether the server may have processed it.
@Suite("RequestFate: seeded random request lives against mayHaveReachedAPNs")
struct RequestFatePropertyTests {
    /// How one attempt ends.
    enum AttemptEnd: CaseIterable {
        case refusedStream, otherReset, aboveGoAway, sessionEnded, deadlineInFlight
    }

    struct Life {
        /// Whether any attempt may have been processed by the server: it was written
        /// whole, and the server did not say it left it unprocessed.
        var mayBeProcessed = false
        var final: APNsTransportError?
        var expired = false
        var trace: [String] = []
    }

    /// One request's life: attempts until an outcome. `maxRequeues` as the transport's.
    static func live(seed: UInt64, maxRequeues: Int) -> Life {
        var rng = SplitMix64(seed: seed)
        var life = Life()
        var requeues = 0
        let reasons: [APNsTransportError?] = [
            nil, .connectionClosed("TLS read failed"), .protocolError("bad frame"),
            APNsTransportError(code: .tlsFailure, mayHaveReachedAPNs: true, detail: "alert certificate revoked"),
        ]
        while life.final == nil && !life.expired {
            // The attempt: written whole (END_STREAM out) or not; an answer begun or not.
            let written = Bool.random(using: &rng)
            let status: Int? = written && Int.random(in: 0..<4, using: &rng) == 0 ? [200, 410, 503].randomElement(using: &rng) : nil
            let end = AttemptEnd.allCases.randomElement(using: &rng)!
            let fate: RequestFate
            var processedThisTime = false
            switch end {
            case .refusedStream, .aboveGoAway:
                // The server says it did not process it, unless its answer had begun.
                let unprocessed = status == nil
                fate = RequestFate.streamClosed(
                    streamID: 1, errorName: end == .refusedStream ? "REFUSED_STREAM" : "NO_ERROR", unprocessed: unprocessed,
                    goAwayDetail: end == .aboveGoAway ? "GOAWAY" : nil, status: status)
                processedThisTime = !unprocessed
            case .otherReset:
                // A reset of a stream never whole at the server is unprocessed (the machine's
                // rule: END_STREAM never went out).
                let unprocessed = !written && status == nil
                fate = RequestFate.streamClosed(streamID: 1, errorName: "INTERNAL_ERROR", unprocessed: unprocessed, goAwayDetail: nil, status: status)
                processedThisTime = written
            case .sessionEnded:
                let reason = reasons.randomElement(using: &rng)!
                let deadlinePassed = Int.random(in: 0..<5, using: &rng) == 0
                fate = RequestFate.sessionEnded(reason: reason, unsent: !written, deadlinePassed: deadlinePassed, status: status)
                // A refused TLS session processed nothing (RequestFate.refusal).
                processedThisTime = written && (reason?.code != .tlsFailure || status != nil)
            case .deadlineInFlight:
                fate = RequestFate.deadlinePassedInFlight(incomplete: !written, status: status)
                processedThisTime = written
            }
            if processedThisTime { life.mayBeProcessed = true }
            life.trace.append("\(end) written \(written) status \(status.map(String.init) ?? "-") -> \(fate)")
            switch fate {
            case .fail(let error):
                life.final = error
            case .expire:
                life.expired = true
            case .requeue(let failure):
                requeues += 1
                if let error = RequestFate.requeued(requeues, maxRequeues: maxRequeues, failure: failure) {
                    life.final = error
                }
            }
        }
        return life
    }

    @Test("a request the server may have processed is never reported as not having reached APNs; one that goes again was unprocessed (2,000 lives)")
    func processedIsNeverReportedUnsent() {
        var failures: [String] = []
        for seed in PropertySeeds.range(2_000) {
            let life = Self.live(seed: seed, maxRequeues: Int(seed % 4))
            if let final = life.final {
                if life.mayBeProcessed && !final.mayHaveReachedAPNs {
                    failures.append("seed \(seed): \(final) after \(life.trace)")
                }
            } else if !life.expired {
                failures.append("seed \(seed): no outcome after \(life.trace)")
            }
            // `.expire` is a timeout that may have reached APNs (PendingRequest.expire), only
            // decided for a request written whole.
            if life.expired, life.trace.last.map({ $0.contains("written false") }) == true {
                failures.append("seed \(seed): expire for a request never written whole: \(life.trace)")
            }
        }
        #expect(failures.isEmpty, "\(failures.count) lives failed; first: \(failures.prefix(3).joined(separator: "\n"))")
    }

    @Test("a request the server cannot have processed ends with mayHaveReachedAPNs == false, sent again too often included (2,000 lives)")
    func unprocessedIsReportedUnsent() {
        var failures: [String] = []
        for seed in PropertySeeds.range(2_000) {
            let life = Self.live(seed: seed, maxRequeues: Int(seed % 4))
            if let final = life.final, !life.mayBeProcessed, final.mayHaveReachedAPNs,
                final.code != .shutdown  // failInFlightForShutdown is conservative on purpose
            {
                failures.append("seed \(seed): \(final) after \(life.trace)")
            }
        }
        #expect(failures.isEmpty, "\(failures.count) lives failed; first: \(failures.prefix(3).joined(separator: "\n"))")
    }

    @Test("the smallest case: a request never written, its connection lost maxRequeues + 1 times")
    func neverWrittenLostTooOften() {
        let maxRequeues = 0
        let fate = RequestFate.sessionEnded(reason: .connectionClosed("reset by peer"), unsent: true, deadlinePassed: false)
        guard case .requeue(let failure) = fate else {
            Issue.record("a never-written request did not go again: \(fate)")
            return
        }
        let final = RequestFate.requeued(1, maxRequeues: maxRequeues, failure: failure)
        #expect(final?.mayHaveReachedAPNs == false, "\(String(describing: final))")
    }
}
