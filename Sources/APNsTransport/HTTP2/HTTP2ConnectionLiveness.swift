import APNsCore

/// When one connection sends a PING, stops taking requests, or is given up, as a value:
/// the time is an input, and the decisions come back as ``Action``s that
/// ``HTTP2Connection`` (the I/O shell) performs. The tests drive it with a fake clock.
///
/// The rules:
/// - **Preface.** The server's SETTINGS must arrive within the connect timeout of the
///   session's start; otherwise the connection is given up as a failed connection attempt.
/// - **Idle PING.** After `pingInterval` with nothing received, a PING (RFC 9113 §6.7);
///   unanswered for `pingTimeout`, the connection is dead.
/// - **Probe.** When a request times out in flight, or requests wait for answers and
///   nothing has arrived for `pingTimeout`, a PING goes out at once and the connection
///   takes no new request until it is answered (or the PING timeout gives it up).
struct HTTP2ConnectionLiveness: Sendable, Equatable {
    /// The timers, in nanoseconds.
    struct Settings: Sendable, Equatable {
        var pingInterval: UInt64
        var pingTimeout: UInt64
        var connectTimeout: UInt64
    }

    /// What the shell does after ``check(now:settingsReceived:requestsInFlight:)``.
    enum Action: Sendable, Equatable {
        /// Nothing.
        case none
        /// Send a PING now.
        case sendPing
        /// Stop taking requests until the PING out is answered; `sendPing`: send one now
        /// (none was out).
        case probe(reason: String, sendPing: Bool)
        /// Give the connection up with this error. `failedConnect`: the server never sent
        /// its SETTINGS, so the shell reports a failed connection attempt.
        case close(APNsTransportError, failedConnect: Bool)
    }

    let settings: Settings
    /// When the session began (TCP and TLS up).
    private(set) var sessionStart: UInt64
    /// When the last bytes arrived.
    private(set) var lastReceived: UInt64
    /// When the PING now out was sent.
    private(set) var pingSentAt: UInt64?
    /// A probe PING is out: no new request is taken until it is answered.
    private(set) var probing = false
    /// When the requests now in flight began waiting (the first one sent while none was).
    private(set) var awaitingSince: UInt64

    /// A session that began at `now`.
    init(settings: Settings, now: UInt64) {
        self.settings = settings
        self.sessionStart = now
        self.lastReceived = now
        self.awaitingSince = now
    }

    /// Whether the connection takes new requests (not while a probe is out).
    var takesRequests: Bool { !probing }

    /// Bytes arrived at `now`.
    mutating func received(now: UInt64) {
        lastReceived = now
    }

    /// Requests were sent at `now`; `firstInFlight`: none was in flight before.
    mutating func sent(now: UInt64, firstInFlight: Bool) {
        if firstInFlight { awaitingSince = now }
    }

    /// The server answered the PING; whether a probe ended (requests may be taken again).
    mutating func pingAcknowledged() -> Bool {
        pingSentAt = nil
        defer { probing = false }
        return probing
    }

    /// A request timed out in flight at `now`: probe the connection.
    mutating func requestTimedOut(now: UInt64) -> Action {
        probe(now: now, reason: "a request timed out in flight")
    }

    /// The timers at `now`, given whether the server's SETTINGS arrived and how many
    /// requests wait for answers.
    mutating func check(now: UInt64, settingsReceived: Bool, requestsInFlight: Int) -> Action {
        if !settingsReceived, now >= sessionStart &+ settings.connectTimeout {
            return .close(
                .connectionClosed(
                    "the server sent no HTTP/2 SETTINGS within the connect timeout "
                        + "(\(Duration.nanoseconds(Int64(clamping: settings.connectTimeout)))) after the connection opened"
                ),
                failedConnect: true
            )
        }
        if let sent = pingSentAt {
            if now >= sent &+ settings.pingTimeout {
                return .close(
                    .connectionClosed("no PING answer within the PING timeout; the connection is considered dead"),
                    failedConnect: false
                )
            }
            return .none
        }
        if now >= lastReceived &+ settings.pingInterval {
            pingSentAt = now
            return .sendPing
        }
        if requestsInFlight > 0, now >= max(lastReceived, awaitingSince) &+ settings.pingTimeout {
            // Requests wait for answers and the server has said nothing for a PING
            // timeout: find out now rather than at the idle PING.
            return probe(now: now, reason: "requests in flight and nothing received")
        }
        return .none
    }

    /// How long the shell may sleep from `now` before a timer is due: the PING timers, and
    /// before the server's SETTINGS (`settingsReceived` false) the connect timeout they
    /// must come within. (A request in flight is watched by the shell every 10 ms.)
    func nextDue(now: UInt64, settingsReceived: Bool = true) -> UInt64 {
        var due = pingSentAt.map { $0 &+ settings.pingTimeout } ?? (lastReceived &+ settings.pingInterval)
        if !settingsReceived { due = min(due, sessionStart &+ settings.connectTimeout) }
        return due > now ? due - now : 0
    }

    private mutating func probe(now: UInt64, reason: String) -> Action {
        guard !probing else { return .none }
        probing = true
        let sendPing = pingSentAt == nil
        if sendPing { pingSentAt = now }
        return .probe(reason: reason, sendPing: sendPing)
    }
}
