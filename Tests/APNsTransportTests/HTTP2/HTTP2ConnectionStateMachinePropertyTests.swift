import APNsCore
import CNGHTTP2
import Testing
import TestTools
@testable import APNsTransport

/// Seeded random conversations between ``HTTP2ConnectionStateMachine`` and an nghttp2
/// server session in memory (``InMemoryHTTP2Server``): requests submitted whenever the
/// machine says a stream is free, answers, answers begun and then reset, REFUSED_STREAM and
/// other resets, SETTINGS_MAX_CONCURRENT_STREAMS going up and down (0 included), GOAWAY
/// with a last-stream-id (never increasing, RFC 9113 §6.8), client cancellations; a model
/// of each stream alongside.
@Suite("HTTP/2 connection state machine: seeded random conversations with an nghttp2 server")
struct HTTP2ConnectionStateMachinePropertyTests {
    enum StreamState: Equatable {
        case open
        case cancelled
        case ended(String)
    }

    /// One seed's conversation; returns the first broken rule.
    static func run(seed: UInt64, steps: Int) throws -> (problem: String?, trace: [String]) {
        var rng = SplitMix64(seed: seed)
        var serverLimit = UInt32.random(in: 1...6, using: &rng)
        let client = try HTTP2ConnectionStateMachine()
        let server = InMemoryHTTP2Server(maxConcurrentStreams: serverLimit)
        var streams: [Int32: StreamState] = [:]
        var order: [Int32] = []
        /// Streams the server reset, with the code, and those it began answering.
        var serverResets: [Int32: UInt32] = [:]
        var begun: Set<Int32> = []
        var answered: Set<Int32> = []
        var goAwayLast: Int32?
        var token = 0
        var trace: [String] = ["server limit \(serverLimit)"]
        var problem: String?
        func broken(_ message: String) {
            if problem == nil { problem = "seed \(seed), step \(trace.count): \(message)\n  \(trace.suffix(30).joined(separator: "; "))" }
        }
        func isAboveGoAway(_ id: Int32) -> Bool { goAwayLast.map { id > $0 } ?? false }
        func openIDs() -> [Int32] { order.filter { streams[$0] == .open } }

        /// Moves bytes both ways and checks every event against the model.
        func pump() throws {
            let events = try exchange(client, server)
            for event in events {
                switch event {
                case .response(let id, let response):
                    trace.append("response(\(id),\(response.status))")
                    guard streams[id] == .open else { broken("a response for stream \(id), which is \(String(describing: streams[id]))"); continue }
                    if !answered.contains(id) { broken("a response for stream \(id) the server did not answer") }
                    streams[id] = .ended("response")
                case .responseRefused(let id, let error):
                    trace.append("responseRefused(\(id))")
                    guard streams[id] == .open else { broken("responseRefused for stream \(id), which is \(String(describing: streams[id]))"); continue }
                    streams[id] = .ended("refused: \(error)")
                case .streamClosed(let id, let code, let unprocessed, let status, _):
                    trace.append("closed(\(id),code \(code),unprocessed \(unprocessed),status \(status.map(String.init) ?? "-"))")
                    guard streams[id] == .open else {
                        broken("streamClosed for stream \(id), which is \(String(describing: streams[id]))")
                        continue
                    }
                    streams[id] = .ended("closed \(code)")
                    let whole = server.completedStreams.contains(id)
                    let refused = serverResets[id] == NGHTTP2_REFUSED_STREAM.rawValue
                    let aboveGoAway = goAwayLast.map { id > $0 } ?? false
                    if begun.contains(id) {
                        if unprocessed { broken("stream \(id) reported unprocessed after its answer began") }
                        if status == nil { broken("stream \(id)'s begun answer lost its status") }
                    } else if unprocessed != (!whole || refused || aboveGoAway) {
                        broken("stream \(id): unprocessed \(unprocessed), but whole at the server \(whole), refused \(refused), above GOAWAY \(aboveGoAway)")
                    }
                    if let serverCode = serverResets[id], serverCode != code, !aboveGoAway {
                        broken("stream \(id) closed with \(code), the server reset it with \(serverCode)")
                    }
                    if serverResets[id] == nil, !aboveGoAway, !begun.contains(id) {
                        // Nothing of ours closes a stream without an answer: a refusal we did not
                        // script means the client broke the server's limit.
                        broken("stream \(id) closed (code \(code)) though the server neither reset it nor sent GOAWAY")
                    }
                case .goAway(let last, _, _):
                    trace.append("goaway event(\(last))")
                    // What the client heard decides which streams are above it.
                    goAwayLast = min(goAwayLast ?? .max, last)
                case .settingsChanged(let limit, _):
                    trace.append("settings event(\(limit))")
                case .pingAcknowledged:
                    break
                }
            }
            // After a full exchange the client knows everything the server said.
            let live = openIDs()
            if client.openStreams != live.count {
                broken("the machine has \(client.openStreams) open streams, the model \(live.count) (\(live))")
            }
            if client.streamLimit != Int(serverLimit) { broken("stream limit \(client.streamLimit), the server's is \(serverLimit)") }
            let expectedFree = goAwayLast != nil ? 0 : max(0, Int(serverLimit) - live.count)
            if client.unsentBodyBytes == 0, client.availableStreams != expectedFree {
                broken("availableStreams \(client.availableStreams), expected \(expectedFree) (limit \(serverLimit), open \(live.count), GOAWAY \(goAwayLast.map(String.init) ?? "none"))")
            }
            if client.goAwayReceived != (goAwayLast != nil) { broken("goAwayReceived \(client.goAwayReceived)") }
            for id in live where client.isUnsent(id) && server.completedStreams.contains(id) {
                broken("stream \(id) is reported unsent, but the server has the whole request")
            }
        }

        /// The client's bytes reach the server, and nothing comes back yet: no
        /// WINDOW_UPDATE, so bodies beyond the server's window wait in the client.
        func oneWay() throws {
            var bytes: [UInt8] = []
            try client.collectOutput(into: &bytes)
            if server.receive(bytes) < 0 { broken("the server rejected the client's bytes") }
            trace.append("oneWay")
        }

        try pump()
        for step in 0..<steps where problem == nil {
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<35:
                // Submit as many as the machine says are free (at most 3 at once).
                let free = client.availableStreams
                // Half the time the server's answer (and its WINDOW_UPDATE) waits.
                let holdWindow = Bool.random(using: &rng)
                for _ in 0..<min(free, Int.random(in: 1...3, using: &rng)) {
                    if openIDs().count + 1 > Int(serverLimit) { broken("a free stream beyond the server's limit \(serverLimit)") }
                    token += 1
                    let size = holdWindow || Int.random(in: 0..<10, using: &rng) == 0
                        ? Int.random(in: 16_000...30_000, using: &rng) : Int.random(in: 1...3000, using: &rng)
                    let id = try client.submit(devicePush(token: token, body: [UInt8](repeating: UInt8(ascii: "a"), count: size)))
                    if streams[id] != nil { broken("stream id \(id) reused") }
                    if let last = order.last, id <= last { broken("stream id \(id) after \(last)") }
                    streams[id] = .open
                    order.append(id)
                    trace.append("submit(\(id),\(size)B)")
                }
                if free == 0, goAwayLast != nil {
                    do {
                        _ = try client.submit(devicePush(token: 0))
                        broken("submit succeeded after GOAWAY")
                    } catch let error as APNsTransportError {
                        if error.code != .streamRefused { broken("submit after GOAWAY threw \(error)") }
                    }
                }
                if holdWindow { try oneWay() } else { try pump() }
            case 35..<60:
                // The server answers a request it has whole.
                let candidates = openIDs().filter { server.completedStreams.contains($0) && serverResets[$0] == nil && !answered.contains($0) && !begun.contains($0) }
                if let id = candidates.randomElement(using: &rng) {
                    answered.insert(id)
                    server.respond(id, status: Bool.random(using: &rng) ? 200 : 400, body: [])
                    trace.append("respond(\(id))")
                    try pump()
                }
            case 60..<66:
                // The server resets a stream: REFUSED_STREAM (not processed) or another code.
                let candidates = openIDs().filter { serverResets[$0] == nil && !answered.contains($0) && !isAboveGoAway($0) }
                if let id = candidates.randomElement(using: &rng) {
                    let code = Bool.random(using: &rng) ? NGHTTP2_REFUSED_STREAM.rawValue : NGHTTP2_INTERNAL_ERROR.rawValue
                    serverResets[id] = code
                    server.reset(id, errorCode: code)
                    trace.append("reset(\(id),\(code))")
                    try pump()
                }
            case 66..<70:
                // An answer begins (its header block) and is then reset.
                let candidates = openIDs().filter { server.completedStreams.contains($0) && serverResets[$0] == nil && !answered.contains($0) && !begun.contains($0) }
                if let id = candidates.randomElement(using: &rng) {
                    begun.insert(id)
                    server.beginResponse(id, status: 200)
                    try pump()
                    let code = Bool.random(using: &rng) ? NGHTTP2_REFUSED_STREAM.rawValue : NGHTTP2_CANCEL.rawValue
                    serverResets[id] = code
                    server.reset(id, errorCode: code)
                    trace.append("begin+reset(\(id),\(code))")
                    try pump()
                }
            case 70..<82 where goAwayLast == nil:
                // (After its GOAWAY the server changes no setting.)
                serverLimit = UInt32.random(in: 0...8, using: &rng)
                server.submitSettings(maxConcurrentStreams: serverLimit)
                trace.append("settings(\(serverLimit))")
                try pump()
            case 82..<85 where step >= steps / 3:
                // GOAWAY: the last-stream-id never grows (RFC 9113 §6.8).
                let known = [0] + order.filter { $0 <= (goAwayLast ?? .max) }
                let last = known.randomElement(using: &rng)!
                server.goAway(lastStreamID: last, debugData: #"{"reason":"Shutdown"}"#)
                trace.append("goaway(\(last))")
                try pump()
            case 85..<90:
                if let id = openIDs().randomElement(using: &rng) {
                    client.cancelStream(id)
                    streams[id] = .cancelled
                    trace.append("cancel(\(id))")
                    try pump()
                }
            default:
                try pump()
            }
        }
        // The end: the server answers everything it has whole, and resets the rest.
        for _ in 0..<4 where problem == nil {
            for id in openIDs() where serverResets[id] == nil && !begun.contains(id) {
                if server.completedStreams.contains(id), !answered.contains(id) {
                    answered.insert(id)
                    server.respond(id, status: 200, body: [])
                }
            }
            try pump()
        }
        for id in openIDs() where serverResets[id] == nil && problem == nil {
            serverResets[id] = NGHTTP2_REFUSED_STREAM.rawValue
            server.reset(id, errorCode: NGHTTP2_REFUSED_STREAM.rawValue)
            try pump()
        }
        if problem == nil, !openIDs().isEmpty { broken("streams \(openIDs()) never ended") }
        return (problem, trace)
    }

    @Test("every stream ends exactly once with the right processed/unprocessed verdict, within the server's limit (200 seeds × 150 steps)")
    func randomConversations() throws {
        var failures: [String] = []
        var seen: [String: Int] = [:]
        for seed in PropertySeeds.range(200) {
            let (failure, trace) = try Self.run(seed: seed, steps: 150)
            if let failure { failures.append(failure) }
            for event in trace {
                let kind = String(event.prefix { $0 != "(" })
                seen[kind, default: 0] += 1
            }
        }
        // The runs reach every kind of event (a guard against a model that stopped exploring).
        for kind in ["submit", "respond", "response", "reset", "begin+reset", "settings", "goaway", "goaway event", "cancel", "closed"] {
            #expect(seen[kind, default: 0] >= 20, "only \(seen[kind, default: 0]) \(kind) events")
        }
        print("connection property runs, events by kind: \(seen.sorted { $0.key < $1.key })")
        #expect(failures.isEmpty, "\(failures.count) seeds failed; first: \(failures.prefix(3).joined(separator: "\n"))")
    }
}
