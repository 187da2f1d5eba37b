import Testing
@testable import APNsTransport

private let s: UInt64 = 1_000_000_000

/// The connection's timers with a fake clock: PING after the idle interval (RFC 9113
/// §6.7), dead after an unanswered PING, the server's preface (SETTINGS, RFC 9113 §3.4)
/// due within the connect timeout, and the probe that stops a silent connection from
/// taking requests.
@Suite("HTTP/2 connection liveness timers")
struct HTTP2ConnectionLivenessTests {
    private func liveness(start: UInt64 = 100 * s) -> HTTP2ConnectionLiveness {
        HTTP2ConnectionLiveness(settings: .init(pingInterval: 60 * s, pingTimeout: 10 * s, connectTimeout: 10 * s), now: start)
    }

    @Test("idle: a PING after 60 s of silence, the connection given up 10 s later if unanswered")
    func idlePing() {
        var timers = liveness()
        #expect(timers.check(now: 159 * s, settingsReceived: true, requestsInFlight: 0) == .none)
        #expect(timers.nextDue(now: 159 * s) == 1 * s)
        #expect(timers.check(now: 160 * s, settingsReceived: true, requestsInFlight: 0) == .sendPing)
        #expect(timers.takesRequests)
        #expect(timers.check(now: 169 * s, settingsReceived: true, requestsInFlight: 0) == .none)
        guard case .close(let error, let failedConnect) = timers.check(now: 170 * s, settingsReceived: true, requestsInFlight: 0) else {
            Issue.record("not closed")
            return
        }
        #expect(error.code == .connectionClosed)
        #expect(!failedConnect)
    }

    @Test("an answered PING resets the timer; received bytes push the idle PING back")
    func answered() {
        var timers = liveness()
        timers.received(now: 130 * s)
        #expect(timers.check(now: 160 * s, settingsReceived: true, requestsInFlight: 0) == .none)
        #expect(timers.check(now: 190 * s, settingsReceived: true, requestsInFlight: 0) == .sendPing)
        #expect(timers.pingAcknowledged() == false)
        timers.received(now: 191 * s)
        #expect(timers.check(now: 240 * s, settingsReceived: true, requestsInFlight: 0) == .none)
    }

    @Test("no SETTINGS within the connect timeout: a failed connection attempt")
    func preface() {
        var timers = liveness()
        #expect(timers.check(now: 109 * s, settingsReceived: false, requestsInFlight: 1) == .none)
        guard case .close(let error, let failedConnect) = timers.check(now: 110 * s, settingsReceived: false, requestsInFlight: 1) else {
            Issue.record("not closed")
            return
        }
        #expect(failedConnect)
        #expect(error.detail?.contains("SETTINGS") == true)
        // With the SETTINGS in, the same moment is fine.
        var ok = liveness()
        #expect(ok.check(now: 110 * s, settingsReceived: true, requestsInFlight: 0) == .none)
    }

    @Test("a request timing out in flight probes: PING now, no new request until it is answered")
    func probeOnTimeout() {
        var timers = liveness()
        timers.sent(now: 101 * s, firstInFlight: true)
        #expect(timers.requestTimedOut(now: 104 * s) == .probe(reason: "a request timed out in flight", sendPing: true))
        #expect(!timers.takesRequests)
        // A second timeout while probing changes nothing.
        #expect(timers.requestTimedOut(now: 105 * s) == .none)
        // Answered: requests again.
        #expect(timers.pingAcknowledged() == true)
        #expect(timers.takesRequests)
    }

    @Test("requests in flight and silence for a PING timeout probe without waiting for the idle PING")
    func probeOnSilence() {
        var timers = liveness()
        // Idle for 30 s, then a request: silence counts from when it was sent, not from
        // the last bytes received (the idle PING would be due only at 160 s).
        timers.sent(now: 130 * s, firstInFlight: true)
        #expect(timers.check(now: 139 * s, settingsReceived: true, requestsInFlight: 1) == .none)
        #expect(
            timers.check(now: 140 * s, settingsReceived: true, requestsInFlight: 1)
                == .probe(reason: "requests in flight and nothing received", sendPing: true)
        )
        #expect(!timers.takesRequests)
        // Unanswered for the PING timeout: given up.
        guard case .close = timers.check(now: 150 * s, settingsReceived: true, requestsInFlight: 1) else {
            Issue.record("not closed")
            return
        }
    }

    @Test("a probe while the idle PING is out sends no second PING")
    func probeDuringIdlePing() {
        var timers = liveness()
        #expect(timers.check(now: 160 * s, settingsReceived: true, requestsInFlight: 0) == .sendPing)
        #expect(timers.requestTimedOut(now: 161 * s) == .probe(reason: "a request timed out in flight", sendPing: false))
    }
}
