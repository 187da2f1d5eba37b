import APNsCore
import Testing
import TestTools
@testable import APNsTransport

/// Seeded random timelines of one connection's liveness timers (``HTTP2ConnectionLiveness``):
/// bytes arriving, requests sent, requests timing out in flight, PING answers, and the
/// timer checks, against its documented rules, with a model of the PING out alongside.
@Suite("Connection liveness: seeded random timelines against its rules")
struct HTTP2ConnectionLivenessPropertyTests {
    static let ms: UInt64 = 1_000_000

    /// One seed. `prefaceMayBeMissing`: SETTINGS may never arrive, and `nextDue` is then
    /// held to the preface timer too. Returns the first broken rule.
    static func run(seed: UInt64, steps: Int, prefaceMayBeMissing: Bool) -> String? {
        var rng = SplitMix64(seed: seed)
        let settings = HTTP2ConnectionLiveness.Settings(
            pingInterval: UInt64.random(in: 5...200, using: &rng) * ms,
            pingTimeout: UInt64.random(in: 1...100, using: &rng) * ms,
            connectTimeout: UInt64.random(in: 1...300, using: &rng) * ms
        )
        var now: UInt64 = 1_000 * ms
        let start = now
        var liveness = HTTP2ConnectionLiveness(settings: settings, now: now)
        var pingOutSince: UInt64?
        var probing = false
        var lastReceived = now
        var inFlight = 0
        var settingsReceived = prefaceMayBeMissing ? false : true
        var trace: [String] = ["\(settings)"]
        func broken(_ message: String) -> String { "seed \(seed): \(message)\n  \(trace.suffix(20).joined(separator: "; "))" }

        for _ in 0..<steps {
            switch Int.random(in: 0..<7, using: &rng) {
            case 0:
                liveness.received(now: now)
                lastReceived = now
                if prefaceMayBeMissing, !settingsReceived, Int.random(in: 0..<6, using: &rng) == 0 { settingsReceived = true }
                trace.append("received")
            case 1:
                if liveness.takesRequests {
                    let count = Int.random(in: 1...3, using: &rng)
                    liveness.sent(now: now, firstInFlight: inFlight == 0)
                    inFlight += count
                    trace.append("sent \(count)")
                }
            case 2:
                if inFlight > 0 {
                    inFlight -= 1
                    liveness.received(now: now)
                    lastReceived = now
                    trace.append("answer")
                }
            case 3:
                if pingOutSince != nil {
                    // The answer to the PING: bytes arrived too.
                    liveness.received(now: now)
                    lastReceived = now
                    let ended = liveness.pingAcknowledged()
                    if ended != probing { return broken("pingAcknowledged said a probe ended: \(ended), probing \(probing)") }
                    pingOutSince = nil
                    probing = false
                    trace.append("pong")
                }
            case 4:
                if inFlight > 0 {
                    inFlight -= 1
                    let action = liveness.requestTimedOut(now: now)
                    trace.append("timedOut -> \(action)")
                    switch action {
                    case .probe(_, let sendPing):
                        if probing { return broken("a second probe while one is out") }
                        if sendPing == (pingOutSince != nil) { return broken("probe sendPing \(sendPing) with a PING out: \(pingOutSince != nil)") }
                        probing = true
                        if sendPing { pingOutSince = now }
                    case .none:
                        if !probing { return broken("a request timed out and no probe began") }
                    default:
                        return broken("requestTimedOut gave \(action)")
                    }
                }
            case 5:
                // The shell sleeps as long as nextDue says (the case it relies on it: nothing
                // in flight), and no timer may come due meanwhile.
                if inFlight == 0 {
                    let due = liveness.nextDue(now: now, settingsReceived: settingsReceived)
                    for fraction in [0.0, 0.25, 0.5, 0.75, 0.999] {
                        let t = now + UInt64(Double(due) * fraction)
                        guard t < now + due else { continue }
                        var copy = liveness
                        let action = copy.check(now: t, settingsReceived: settingsReceived, requestsInFlight: 0)
                        if action != .none {
                            return broken("nextDue said \(due / ms) ms, but at +\((t - now) / ms) ms check gives \(action)")
                        }
                    }
                }
                fallthrough
            default:
                now += UInt64.random(in: 0...60, using: &rng) * ms
                let action = liveness.check(now: now, settingsReceived: settingsReceived, requestsInFlight: inFlight)
                trace.append("+check -> \(action)")
                switch action {
                case .none:
                    if let sent = pingOutSince, now >= sent + settings.pingTimeout {
                        return broken("a PING unanswered for \((now - sent) / ms) ms (timeout \(settings.pingTimeout / ms)) did not close")
                    }
                    if !settingsReceived, now >= start + settings.connectTimeout {
                        return broken("no SETTINGS after \((now - start) / ms) ms, connect timeout \(settings.connectTimeout / ms) ms, and no close")
                    }
                    if pingOutSince == nil, now >= lastReceived + settings.pingInterval {
                        return broken("idle for \((now - lastReceived) / ms) ms and no PING")
                    }
                case .sendPing:
                    if pingOutSince != nil { return broken("a second PING while one is out") }
                    if now < lastReceived + settings.pingInterval { return broken("a PING \((now - lastReceived) / ms) ms after the last bytes (interval \(settings.pingInterval / ms) ms)") }
                    pingOutSince = now
                case .probe(_, let sendPing):
                    if probing { return broken("a second probe") }
                    if inFlight == 0 { return broken("a probe with nothing in flight") }
                    if sendPing == (pingOutSince != nil) { return broken("probe sendPing \(sendPing) with a PING out: \(pingOutSince != nil)") }
                    probing = true
                    if sendPing { pingOutSince = now }
                case .close(_, let failedConnect):
                    if failedConnect {
                        if settingsReceived || now < start + settings.connectTimeout { return broken("closed as a failed connect") }
                    } else if pingOutSince.map({ now < $0 + settings.pingTimeout }) ?? true {
                        return broken("closed with no PING out for the PING timeout")
                    }
                    return nil  // the connection is given up: the timeline ends
                }
            }
            if liveness.takesRequests == probing { return broken("takesRequests \(liveness.takesRequests) while probing \(probing)") }
        }
        return nil
    }

    @Test("one PING out at most, closes only when due and always when due, a probe stops new requests until its answer, nextDue never oversleeps a PING timer (1,000 seeds × 200 steps)")
    func randomTimelines() {
        var failures: [String] = []
        for seed in PropertySeeds.range(1_000) {
            if let failure = Self.run(seed: seed, steps: 200, prefaceMayBeMissing: false) { failures.append(failure) }
        }
        #expect(failures.isEmpty, "\(failures.count) seeds failed; first: \(failures.prefix(3).joined(separator: "\n"))")
    }

    @Test("before the server's SETTINGS, nextDue does not oversleep the preface's connect timeout")
    func prefaceTimerIsHonouredByNextDue() {
        var failures: [String] = []
        for seed in PropertySeeds.range(1_000) {
            if let failure = Self.run(seed: seed, steps: 200, prefaceMayBeMissing: true) { failures.append(failure) }
        }
        #expect(failures.isEmpty, "\(failures.count) seeds failed; first: \(failures.prefix(3).joined(separator: "\n"))")
    }
}
