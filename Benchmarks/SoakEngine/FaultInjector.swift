import APNsMockServer
import Synchronization

/// One fault the injector scripts on the mock server.
enum Fault: Sendable, CustomStringConvertible {
    /// `sendGoAway(afterRequests:)`.
    case goAwayAfter(requests: Int)
    /// `sendGoAwayNow()`.
    case goAwayNow
    /// `dropConnection(atRequest:)`.
    case dropAt(request: Int)
    /// `dropAllConnections()`.
    case dropAll
    /// `failNextRequests(_:with:)` with 429, 500 or 503.
    case fail(requests: Int, status: Int)
    /// `setResponseDelay(_:)` for a while, then back to zero.
    case delay(milliseconds: Int, forMilliseconds: Int)
    /// `setMaxConcurrentStreams(1)` for a while, then back to the configured limit.
    case streamLimitOne(forMilliseconds: Int)
    /// `refuseConnections(for:)`, then `dropAllConnections()` so that the reconnects meet it.
    case refuseAndDrop(milliseconds: Int)
    /// A response delay longer than the client's request timeout, from a moment on until
    /// the requests of that moment have waited past the timeout: what is in flight then
    /// times out at the client.
    case stall(forMilliseconds: Int)

    /// The kind, for counting.
    var kind: String {
        switch self {
        case .goAwayAfter: "GOAWAY after n requests"
        case .goAwayNow: "GOAWAY now"
        case .dropAt: "drop connection at request n"
        case .dropAll: "drop all connections"
        case .fail(_, let status): "fail next n with \(status)"
        case .delay: "response delay"
        case .streamLimitOne: "stream limit 1"
        case .refuseAndDrop: "refuse connections + drop all"
        case .stall: "stall past the request timeout"
        }
    }

    var description: String {
        switch self {
        case .goAwayAfter(let n): "goAwayAfter(\(n))"
        case .goAwayNow: "goAwayNow"
        case .dropAt(let n): "dropAt(\(n))"
        case .dropAll: "dropAll"
        case .fail(let n, let status): "fail(\(n), \(status))"
        case .delay(let ms, let span): "delay(\(ms) ms for \(span) ms)"
        case .streamLimitOne(let span): "streamLimitOne(\(span) ms)"
        case .refuseAndDrop(let ms): "refuseAndDrop(\(ms) ms)"
        case .stall(let span): "stall(\(span) ms)"
        }
    }

    /// A fault drawn from `generator`; `stalls` allows ``stall(forMilliseconds:)``.
    static func random(using generator: inout SeededGenerator, stalls: Bool) -> Fault {
        // Weights: connection-level faults and 5xx bursts most, the slow ones less.
        let roll = Int.random(in: 0..<100, using: &generator)
        switch roll {
        case 0..<14: return .goAwayAfter(requests: Int.random(in: 1...500, using: &generator))
        case 14..<22: return .goAwayNow
        case 22..<36: return .dropAt(request: Int.random(in: 1...500, using: &generator))
        case 36..<44: return .dropAll
        case 44..<68:
            let status = [429, 500, 503][Int.random(in: 0..<3, using: &generator)]
            return .fail(requests: Int.random(in: 1...100, using: &generator), status: status)
        case 68..<80:
            return .delay(milliseconds: Int.random(in: 1...200, using: &generator),
                          forMilliseconds: Int.random(in: 50...400, using: &generator))
        case 80..<90: return .streamLimitOne(forMilliseconds: Int.random(in: 50...400, using: &generator))
        case 90..<96: return .refuseAndDrop(milliseconds: Int.random(in: 20...200, using: &generator))
        default:
            if stalls { return .stall(forMilliseconds: Int.random(in: 10...50, using: &generator)) }
            return .goAwayNow
        }
    }
}

/// Scripts faults on the mock server: the next one after a seeded random number of
/// completed notifications (so the sequence of faults, not their timing, repeats with
/// the seed). Faults that last a while are undone before the next one starts.
final class FaultInjector: Sendable {
    let server: MockAPNsServer
    let ledger: OutcomeLedger
    let notifications: Int
    let meanGap: Int
    let streamLimit: Int
    let requestTimeout: Duration
    let stalls: Bool
    /// Faults injected so far, by kind.
    let counts = Mutex<[String: Int]>([:])

    init(server: MockAPNsServer, ledger: OutcomeLedger, notifications: Int, meanGap: Int, streamLimit: Int,
         requestTimeout: Duration, stalls: Bool) {
        self.server = server
        self.ledger = ledger
        self.notifications = notifications
        self.meanGap = meanGap
        self.streamLimit = streamLimit
        self.requestTimeout = requestTimeout
        self.stalls = stalls
    }

    /// Runs until cancelled or until every notification has an outcome.
    func run(seed: UInt64) async {
        var generator = SeededGenerator(seed: seed)
        var trigger = Int.random(in: 1...(2 * meanGap), using: &generator)
        while !Task.isCancelled {
            while ledger.completed.load(ordering: .relaxed) < trigger {
                if Task.isCancelled || ledger.completed.load(ordering: .relaxed) >= notifications { return }
                try? await Task.sleep(for: .milliseconds(2))
            }
            let fault = Fault.random(using: &generator, stalls: stalls)
            counts.withLock { $0[fault.kind, default: 0] += 1 }
            await apply(fault)
            // From the previous trigger, not from now: faults that last a while (delays,
            // stalls) do not thin out the sequence, so a run sees about count / meanGap faults.
            trigger += Int.random(in: 1...(2 * meanGap), using: &generator)
        }
    }

    private func apply(_ fault: Fault) async {
        switch fault {
        case .goAwayAfter(let n): server.sendGoAway(afterRequests: n, reason: "Shutdown")
        case .goAwayNow: server.sendGoAwayNow(reason: "Shutdown")
        case .dropAt(let n): server.dropConnection(atRequest: n)
        case .dropAll: server.dropAllConnections()
        case .fail(let n, let status):
            let response: ScriptedResponse = switch status {
            case 429: .tooManyRequests
            case 500: .internalServerError
            default: .serviceUnavailable
            }
            server.failNextRequests(n, with: response)
        case .delay(let ms, let span):
            server.setResponseDelay(.milliseconds(ms))
            try? await Task.sleep(for: .milliseconds(span))
            server.setResponseDelay(.zero)
        case .streamLimitOne(let span):
            server.setMaxConcurrentStreams(1)
            try? await Task.sleep(for: .milliseconds(span))
            server.setMaxConcurrentStreams(streamLimit)
        case .refuseAndDrop(let ms):
            server.refuseConnections(for: .milliseconds(ms))
            server.dropAllConnections()
            try? await Task.sleep(for: .milliseconds(ms))
        case .stall(let span):
            // Setting the delay back to zero releases the answers already waiting
            // (`setResponseDelay(_:)` applies to them too), so the delay stays until the
            // requests of the first `span` have waited past the timeout: the server
            // answers nothing for the timeout and a half second, and what was in flight
            // then times out at the client.
            let delay = requestTimeout + .milliseconds(500)
            server.setResponseDelay(delay)
            try? await Task.sleep(for: .milliseconds(span))
            try? await Task.sleep(for: delay)
            server.setResponseDelay(.zero)
        }
    }
}
