import APNsCore
import Foundation
import Testing
import TestTools
@testable import APNsTransport

// Seeded, model-based tests of ``HTTP2PoolStateMachine``: long random sequences of the
// events its connections and callers produce (requests queued, connections asking to
// connect, connecting or failing to, taking work, answers, REFUSED_STREAM, GOAWAY with a
// last-stream-id, stream-limit changes up and down, lost connections, retirement, the
// connection budget, cancellation, the clock moving past deadlines, shutdown with a grace
// period), with a simple model of the queue and of each connection alongside. Every seed
// is reproducible with `PoolSimulation(seed:).run(steps:)`.

/// A request as the pool sees it; `isFinished` is set by the model when it ends.
private final class SimRequest: PoolRequest {
    let id: Int
    let isBatched: Bool
    let deadline: UInt64
    var isFinished = false

    init(id: Int, isBatched: Bool, deadline: UInt64) {
        self.id = id
        self.isBatched = isBatched
        self.deadline = deadline
    }
}

private typealias PoolMachine = HTTP2PoolStateMachine<SimRequest>


/// What the model knows of one connection slot (its thread and its session).
private struct SimConnection {
    enum Phase: Equatable {
        /// The thread asks the pool whether to connect (again no sooner than `notBefore`).
        case asking(notBefore: UInt64)
        /// Parked until the pool wakes it (no demand, or the budget refused it).
        case idle
        case connecting
        case up
        case exited
    }

    struct Stream {
        var request: Int
        var streamID: Int32
        /// The request's last frame was written: the server may have processed it.
        var written: Bool
    }

    var phase: Phase
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS (1 until it says otherwise).
    var limit = 1
    var streams: [Stream] = []
    var nextStreamID: Int32 = 1
    /// A GOAWAY arrived: no new stream.
    var goAway = false
    /// Retired (given back to the budget): drains, takes nothing.
    var retiring = false
    /// An answer arrived on this session.
    var answered = false
    /// Asleep with no timer: nothing in flight and the queue was empty when it went to
    /// sleep, so only its socket or a wake-up from the pool brings it round again.
    var dozing = false

    /// What the connection offers the pool: what `takingStreams` gives in the real one.
    func free(shuttingDown: Bool) -> Int {
        guard phase == .up, !goAway, !retiring, !shuttingDown else { return 0 }
        return max(0, limit - streams.count)
    }
}

/// The life of one request, in the model.
private enum SimState: Equatable {
    case queued
    case inFlight(connection: Int)
    case ended(String)
}

/// One seed's run: the machine, the model, and the invariants checked after each event.
private struct PoolSimulation {
    let seed: UInt64
    var rng: SplitMix64
    let settings: PoolMachine.Settings
    var pool: PoolMachine
    var now: UInt64 = 1_000_000_000
    var requests: [SimRequest] = []
    var states: [SimState] = []
    var requeues: [Int] = []
    /// Whether the server may have processed the request: an attempt was written whole and
    /// the server did not say it left it unprocessed.
    var mayBeProcessed: [Bool] = []
    /// The pool's queue in the model, in order (cancelled requests stay until the pool drops them).
    var queue: [Int] = []
    var connections: [SimConnection] = []
    var shutDown = false
    var shutdownDeadline: UInt64 = 0
    var budgetBlocked = false
    var trace: [String] = []
    var violation: String?
    static let maxRequeues = 3
    static let ms: UInt64 = 1_000_000

    init(seed: UInt64) {
        self.seed = seed
        var rng = SplitMix64(seed: seed)
        let connectionCount = Int.random(in: 1...4, using: &rng)
        let stagger = Bool.random(using: &rng) ? UInt64.random(in: 1...30, using: &rng) * Self.ms : 0
        settings = .init(
            connectionCount: connectionCount,
            maxQueuedRequests: Int.random(in: 1...8, using: &rng),
            backoff: ReconnectBackoff(
                base: .milliseconds(Int64.random(in: 5...50, using: &rng)),
                maximum: .milliseconds(200)
            ),
            endpointDescription: "api.push.apple.com:443",
            connectStagger: stagger,
            unstaggeredConnections: Int.random(in: 1...2, using: &rng)
        )
        self.rng = rng
        pool = PoolMachine(settings: settings)
    }

    // MARK: Model helpers

    mutating func fail(_ message: String) {
        if violation == nil {
            violation = "seed \(seed), after \(trace.count) events: \(message)\nlast events: \(trace.suffix(25).joined(separator: "; "))"
        }
    }

    /// Ends `id` with `error` (`nil`: answered): what the server may have processed is
    /// never reported as not having reached APNs.
    mutating func end(_ id: Int, _ how: String, error: APNsTransportError?) {
        if let error, mayBeProcessed[id], !error.mayHaveReachedAPNs {
            fail("request \(id), which the server may have processed, ends with \(error) (\(how))")
        }
        end(id, how)
    }

    mutating func end(_ id: Int, _ how: String) {
        if case .ended(let before) = states[id] {
            fail("request \(id) ended twice: \(before), then \(how)")
            return
        }
        states[id] = .ended(how)
        requests[id].isFinished = true
    }

    var anyUpOrConnecting: Bool {
        connections.contains { $0.phase == .up || $0.phase == .connecting }
    }

    /// Requests the pool hands back to fail: each must be in the model's queue, once.
    mutating func poolFailed(_ list: [SimRequest], _ how: String) {
        for request in list {
            guard let index = queue.firstIndex(of: request.id) else {
                fail("the pool failed request \(request.id) (\(how)) that was not queued: \(states[request.id])")
                continue
            }
            queue.remove(at: index)
            if case .ended = states[request.id] { continue }  // cancelled while queued: its end stands
            end(request.id, how)
        }
    }

    /// After the pool chose whom to wake for new work: sleepers with free streams are woken
    /// for what the awake connections cannot take.
    mutating func checkSleepersWoken(_ context: String) {
        guard !shutDown else { return }
        let live = queue.filter { !requests[$0].isFinished }.count
        let awakeFree = connections.filter { $0.phase == .up && !$0.dozing }.map { $0.free(shuttingDown: false) }.reduce(0, +)
        let dozingFree = connections.indices.filter { connections[$0].phase == .up && connections[$0].dozing && connections[$0].free(shuttingDown: false) > 0 }
        if live > awakeFree, !dozingFree.isEmpty {
            fail("\(context): \(live) requests wait, awake connections have \(awakeFree) free streams, and slots \(dozingFree) sleep with free streams")
        }
    }

    mutating func apply(_ wakeups: PoolMachine.Wakeups, _ context: String) {
        if budgetBlocked, wakeups.start != nil || wakeups.wakeIdle != nil {
            fail("\(context): the pool opened a connection while the budget refused it one: \(wakeups)")
        }
        if let start = wakeups.start {
            if start != connections.count || connections.count >= settings.connectionCount {
                fail("\(context): started slot \(start) with \(connections.count) slots (limit \(settings.connectionCount))")
            } else {
                connections.append(SimConnection(phase: .asking(notBefore: now)))
            }
        }
        if let idle = wakeups.wakeIdle {
            if idle >= connections.count || connections[idle].phase != .idle {
                fail("\(context): woke slot \(idle) as idle, but it is \(idle < connections.count ? "\(connections[idle].phase)" : "absent")")
            } else {
                connections[idle].phase = .asking(notBefore: now)
            }
        }
        for sleeper in wakeups.sleepers {
            if sleeper >= connections.count {
                fail("\(context): woke absent slot \(sleeper)")
            } else {
                connections[sleeper].dozing = false
            }
        }
    }

    // MARK: Events

    mutating func enqueue() {
        let id = requests.count
        let batched = Int.random(in: 0..<4, using: &rng) == 0
        let deadline = now + UInt64.random(in: 2...300, using: &rng) * Self.ms
        let request = SimRequest(id: id, isBatched: batched, deadline: deadline)
        requests.append(request)
        states.append(.queued)
        requeues.append(0)
        mayBeProcessed.append(false)
        let waitingBefore = pool.waitingRequests
        let nextAttempt = pool.nextConnectAttempt
        let failuresBefore = pool.consecutiveFailures
        let lastErrorPermanent = pool.lastConnectError?.isPermanent == true
        trace.append("enqueue(\(id)\(batched ? ",batch" : ""),dl+\((deadline - now) / Self.ms)ms)")
        switch pool.enqueue(request, now: now) {
        case .fail(let error):
            states[id] = .ended("never sent: \(error.code)")
            request.isFinished = true
            if error.mayHaveReachedAPNs { fail("enqueue failed request \(id) with \(error) claiming it may have reached APNs") }
            switch error.code {
            case .shutdown:
                if !shutDown { fail("enqueue failed with shutdown before shutdown") }
            case .queueFull:
                if batched || waitingBefore < settings.maxQueuedRequests {
                    fail("queueFull with \(waitingBefore) waiting (max \(settings.maxQueuedRequests)), batched \(batched)")
                }
            case .connectionFailed, .tlsFailure:
                if anyUpOrConnecting || failuresBefore == 0 || now >= nextAttempt {
                    fail("\(error.code) at enqueue while a connection is up/connecting or no backoff is due")
                }
                if !lastErrorPermanent && deadline > nextAttempt {
                    fail("request \(id) could wait for the next attempt (deadline after it) but failed with \(error.code)")
                }
                if lastErrorPermanent != error.isPermanent { fail("enqueue failure permanent=\(error.isPermanent), last connect error permanent=\(lastErrorPermanent)") }
            default:
                fail("enqueue failed with unexpected \(error)")
            }
        case .queued(let wakeups):
            if shutDown { fail("request \(id) queued after shutdown") }
            if !batched && waitingBefore >= settings.maxQueuedRequests {
                fail("single request queued with \(waitingBefore) waiting (max \(settings.maxQueuedRequests))")
            }
            queue.append(id)
            apply(wakeups, "enqueue(\(id))")
            checkSleepersWoken("enqueue(\(id))")
        }
    }

    /// The `index`th connection does what its phase allows next.
    mutating func step(connection index: Int, reliable: Bool) {
        switch connections[index].phase {
        case .asking(let notBefore):
            guard now >= notBefore else { return }
            askPermission(index)
        case .connecting:
            if reliable || Int.random(in: 0..<4, using: &rng) != 0 {
                connectSucceeded(index)
            } else {
                connectFailed(index)
            }
        case .up:
            if reliable {
                reliableRound(index)
            } else {
                randomUpEvent(index)
            }
        case .idle, .exited:
            break
        }
    }

    mutating func askPermission(_ index: Int) {
        let jitter = Double.random(in: 0...1, using: &rng)
        let othersUpOrOpening = connections.indices.filter {
            $0 != index && (connections[$0].phase == .up || connections[$0].phase == .connecting)
        }.count
        let lastStart = pool.lastConnectStart
        let nextAttempt = pool.nextConnectAttempt
        let permission = pool.connectPermission(for: index, now: now, jitter: jitter)
        trace.append("permission(\(index))=\(permission)")
        switch permission {
        case .exit:
            if !shutDown { fail("slot \(index) told to exit before shutdown") }
            let last = pool.threadExited(index)
            connections[index].phase = .exited
            let running = connections.filter { $0.phase != .exited }.count
            if last != (running == 0) { fail("threadExited(\(index)) said last=\(last) with \(running) threads running") }
        case .idle:
            if pool.queuedCount != 0 { fail("slot \(index) told idle with \(pool.queuedCount) queued") }
            if shutDown { fail("slot \(index) told idle after shutdown (should exit)") }
            connections[index].phase = .idle
            // The pool withdraws from the transport's budget here (nothing waits), so no
            // place will be offered to it: it must no longer count itself blocked, or
            // later requests would wait for an offer that never comes.
            budgetBlocked = false
        case .wait(let nanoseconds):
            if nanoseconds == 0 { fail("wait(0)") }
            connections[index].phase = .asking(notBefore: now + min(nanoseconds, 10 * Self.ms))
            expireQueued("wait")
        case .connect:
            if shutDown { fail("slot \(index) may connect after shutdown") }
            if now < nextAttempt { fail("slot \(index) connects at \(now) before the next attempt \(nextAttempt)") }
            if settings.connectStagger > 0, let lastStart, othersUpOrOpening >= max(1, settings.unstaggeredConnections),
                now < lastStart + settings.connectStagger
            {
                fail("slot \(index) connects \((now - lastStart) / Self.ms) ms after the last start with \(othersUpOrOpening) up/opening (stagger \(settings.connectStagger / Self.ms) ms)")
            }
            if !budgetBlocked, Int.random(in: 0..<12, using: &rng) == 0 {
                // The transport's connection budget has no place: the connection parks.
                pool.budgetRefused(index)
                budgetBlocked = true
                connections[index].phase = .idle
                trace.append("budgetRefused(\(index))")
            } else {
                connections[index].phase = .connecting
            }
        }
    }

    mutating func connectSucceeded(_ index: Int) {
        var connection = connections[index]
        connection.phase = .up
        connection.limit = 1
        connection.streams = []
        connection.goAway = false
        connection.retiring = false
        connection.answered = false
        connection.dozing = false
        connections[index] = connection
        trace.append("connected(\(index))")
        _ = pool.connectSucceeded(index, freeStreams: connections[index].free(shuttingDown: shutDown))
    }

    mutating func connectFailed(_ index: Int) {
        let permanent = Int.random(in: 0..<10, using: &rng) == 0
        let error: APNsTransportError = permanent ? APNsTransportError.tlsFailure("refused").permanent : .connectionFailed("refused")
        connections[index].phase = .asking(notBefore: now)  // set before `anyUpOrConnecting`
        let othersUp = anyUpOrConnecting
        let (failed, delay) = pool.connectFailed(index, error: error, now: now, jitter: Double.random(in: 0...1, using: &rng))
        trace.append("connectFailed(\(index)) -> fail \(failed.map(\.id))")
        if othersUp && !failed.isEmpty { fail("connectFailed failed \(failed.count) queued requests while another connection is up or connecting") }
        if !othersUp && failed.count != queue.count { fail("connectFailed with nothing else up failed \(failed.count) of \(queue.count) queued") }
        poolFailed(failed, "connect failed")
        connections[index].phase = .asking(notBefore: now + min(delay, 10 * Self.ms))
    }

    /// Takes what the connection's free streams allow, writes some of it, and prepares to sleep.
    mutating func takeWork(_ index: Int, writeAll: Bool) {
        let free = connections[index].free(shuttingDown: shutDown)
        var taken: [SimRequest] = []
        if free > 0 {
            pool.take(for: index, max: free, into: &taken)
        }
        if taken.count > free { fail("take(max: \(free)) gave \(taken.count)") }
        if shutDown && !taken.isEmpty { fail("slot \(index) took \(taken.map(\.id)) after shutdown") }
        let expected = Array(queue.prefix(taken.count))
        if taken.map(\.id) != expected { fail("take gave \(taken.map(\.id)), the queue's head is \(expected)") }
        if !taken.isEmpty { trace.append("take(\(index),max \(free))=\(taken.map(\.id))") }
        queue.removeFirst(min(taken.count, queue.count))
        for request in taken {
            if case .ended = states[request.id] { continue }  // cancelled while queued: not sent
            if connections[index].goAway || connections[index].retiring {
                fail("request \(request.id) sent on slot \(index) after GOAWAY or while retiring")
            }
            states[request.id] = .inFlight(connection: index)
            let written = writeAll || Int.random(in: 0..<5, using: &rng) != 0
            connections[index].streams.append(.init(request: request.id, streamID: connections[index].nextStreamID, written: written))
            connections[index].nextStreamID += 2
        }
        if !taken.isEmpty, connections[index].streams.count > connections[index].limit {
            fail("slot \(index) has \(connections[index].streams.count) open streams over its limit \(connections[index].limit)")
        }
        let after = connections[index].free(shuttingDown: shutDown)
        let (hasWork, queueNonEmpty) = pool.prepareToSleep(index, freeStreams: after)
        if queueNonEmpty != (pool.queuedCount > 0) { fail("prepareToSleep's queueNonEmpty is wrong") }
        if hasWork && after == 0 { fail("prepareToSleep says hasWork with no free stream") }
        // The real connection goes round again at once with work, in 10 ms with requests in
        // flight or queued, and otherwise sleeps until its socket or the pool wakes it.
        connections[index].dozing = !hasWork && !queueNonEmpty && connections[index].streams.isEmpty
    }

    mutating func publish(_ index: Int) {
        pool.publishFreeStreams(index, freeStreams: connections[index].free(shuttingDown: shutDown))
    }

    /// Does what ``RequestFate`` decided for in-flight request `id`, as
    /// ``HTTP2Connection``'s `perform` does; `processed`: the server may have processed
    /// this attempt.
    mutating func perform(_ fate: RequestFate, on id: Int, processed: Bool, _ how: String) {
        if processed { mayBeProcessed[id] = true }
        switch fate {
        case .fail(let error):
            end(id, how, error: error)
        case .expire:
            // PendingRequest.expire for a request in flight.
            end(id, how, error: .timeout(mayHaveReachedAPNs: true, "no response before the request's timeout"))
        case .requeue(let failure):
            if mayBeProcessed[id] {
                fail("request \(id), which the server may have processed, goes again (\(how)): it could be delivered twice")
            }
            requeues[id] += 1
            if let error = RequestFate.requeued(requeues[id], maxRequeues: Self.maxRequeues, failure: failure) {
                end(id, "failed after requeues: \(how)", error: error)
                return
            }
            requeue(id, because: how)
        }
    }

    /// A request the server did not process goes back to the queue (or fails: shut down).
    mutating func requeue(_ id: Int, because: String) {
        states[id] = .queued
        trace.append("requeue(\(id))")
        if let wakeups = pool.requeue(requests[id]) {
            if shutDown { fail("requeue(\(id)) accepted after shutdown") }
            queue.insert(id, at: 0)
            apply(wakeups, "requeue(\(id))")
            checkSleepersWoken("requeue(\(id))")
        } else {
            if !shutDown { fail("requeue(\(id)) refused before shutdown") }
            end(id, "shutdown before it could go again", error: .shutdown("the transport shut down before the request could be sent again"))
        }
    }

    mutating func removeStream(_ index: Int, at position: Int) -> SimConnection.Stream {
        connections[index].streams.remove(at: position)
    }

    /// The session ends (`lost`: the connection broke; else a graceful end after GOAWAY,
    /// retirement or shutdown).
    mutating func closeSession(_ index: Int, lost: Bool) {
        trace.append("close(\(index),lost \(lost))")
        let streams = connections[index].streams
        connections[index].streams = []
        // As the connection's teardown: the pool hears of the close first, then the fates.
        let wasUp = pool.connectionUnavailable(index, closed: true)
        if !wasUp { fail("connectionUnavailable(\(index), closed) said it was not up") }
        connections[index].phase = .asking(notBefore: now)
        let reason: APNsTransportError? = lost ? .connectionClosed("lost") : nil
        for stream in streams {
            let fate = RequestFate.sessionEnded(reason: reason, unsent: !stream.written, deadlinePassed: false)
            perform(fate, on: stream.request, processed: stream.written, "session ended, written \(stream.written)")
        }
        if lost && !connections[index].answered && !streams.isEmpty {
            pool.sessionFailedWithoutResponse(.connectionClosed("lost"), now: now, jitter: Double.random(in: 0...1, using: &rng))
        }
    }

    /// HTTP2Connection.failInFlightForShutdown.
    mutating func failForShutdown(_ stream: SimConnection.Stream) {
        if stream.written { mayBeProcessed[stream.request] = true }
        end(stream.request, "shutdown before the answer",
            error: APNsTransportError(code: .shutdown, mayHaveReachedAPNs: true, detail: "the transport shut down before the response arrived"))
    }

    mutating func answer(_ index: Int, at position: Int) {
        let stream = removeStream(index, at: position)
        end(stream.request, "answered", error: nil)
        connections[index].answered = true
        pool.connectionProved()
        publish(index)
    }

    /// One of the things that happen to a connection that is up, at random.
    mutating func randomUpEvent(_ index: Int) {
        let connection = connections[index]
        if shutDown || connection.retiring {
            // Draining: answers come; at the deadline (or empty) the session ends.
            if let written = connection.streams.firstIndex(where: \.written), Bool.random(using: &rng) {
                answer(index, at: written)
            } else if connection.streams.isEmpty || (shutDown && now >= shutdownDeadline) {
                for stream in connections[index].streams { failForShutdown(stream) }
                connections[index].streams = []
                closeSession(index, lost: false)
            } else if let unwritten = connection.streams.firstIndex(where: { !$0.written }) {
                connections[index].streams[unwritten].written = true
            }
            return
        }
        if connection.goAway && connection.streams.isEmpty {
            closeSession(index, lost: false)
            return
        }
        let roll = Int.random(in: 0..<100, using: &rng)
        if connection.dozing {
            // Only the socket (SETTINGS, GOAWAY, a close) or the pool wakes it.
            guard (70..<90).contains(roll) else { return }
            connections[index].dozing = false
        }
        switch roll {
        case 0..<35:
            takeWork(index, writeAll: false)
        case 35..<60:
            if let written = connection.streams.indices.filter({ connection.streams[$0].written }).randomElement(using: &rng) {
                trace.append("answer(\(connection.streams[written].request))")
                answer(index, at: written)
            }
        case 60..<66:
            // REFUSED_STREAM: not processed, goes again.
            if let position = connection.streams.indices.randomElement(using: &rng) {
                let stream = removeStream(index, at: position)
                trace.append("refused(\(stream.request))")
                let fate = RequestFate.streamClosed(streamID: stream.streamID, errorName: "REFUSED_STREAM", unprocessed: true, goAwayDetail: nil)
                perform(fate, on: stream.request, processed: false, "REFUSED_STREAM")
                publish(index)
            }
        case 66..<70:
            // RST_STREAM with another code on a written request: may have reached APNs.
            if let position = connection.streams.indices.filter({ connection.streams[$0].written }).randomElement(using: &rng) {
                let stream = removeStream(index, at: position)
                trace.append("reset(\(stream.request))")
                let fate = RequestFate.streamClosed(streamID: stream.streamID, errorName: "INTERNAL_ERROR", unprocessed: false, goAwayDetail: nil)
                perform(fate, on: stream.request, processed: true, "stream reset")
                publish(index)
            }
        case 70..<80:
            // SETTINGS: the stream limit goes up or down (0 included).
            let limit = Int.random(in: 0...6, using: &rng)
            trace.append("settings(\(index),max \(limit))")
            connections[index].limit = limit
            publish(index)
        case 80..<85:
            // GOAWAY: streams above last-stream-id go again; the rest may still be answered.
            let ids = connection.streams.map(\.streamID)
            let last = ([0] + ids).randomElement(using: &rng)!
            trace.append("goaway(\(index),last \(last))")
            connections[index].goAway = true
            pool.connectionUnavailable(index, closed: false)
            for stream in connection.streams where stream.streamID > last {
                connections[index].streams.removeAll { $0.streamID == stream.streamID }
                let fate = RequestFate.streamClosed(streamID: stream.streamID, errorName: "NO_ERROR", unprocessed: true, goAwayDetail: "GOAWAY")
                perform(fate, on: stream.request, processed: false, "above GOAWAY's last-stream-id")
            }
        case 85..<88:
            closeSession(index, lost: true)
        case 88..<90:
            if pool.retire(index) != true { fail("retire(\(index)) of a connection up refused") }
            // The pool wakes a connection it retires.
            trace.append("retire(\(index))")
            connections[index].retiring = true
        case 90..<95:
            for position in connections[index].streams.indices { connections[index].streams[position].written = true }
        default:
            // The connection comes round with nothing new to read.
            takeWork(index, writeAll: false)
        }
    }

    /// A connection on a good day: everything written is answered, then it takes more.
    mutating func reliableRound(_ index: Int) {
        if connections[index].dozing && !shutDown && !connections[index].retiring { return }
        if shutDown || connections[index].retiring || connections[index].goAway {
            while let position = connections[index].streams.firstIndex(where: \.written) { answer(index, at: position) }
            for position in connections[index].streams.indices { connections[index].streams[position].written = true }
            if connections[index].streams.isEmpty || (shutDown && now >= shutdownDeadline) {
                for stream in connections[index].streams { failForShutdown(stream) }
                connections[index].streams = []
                closeSession(index, lost: false)
            }
            return
        }
        while let position = connections[index].streams.firstIndex(where: \.written) { answer(index, at: position) }
        for position in connections[index].streams.indices { connections[index].streams[position].written = true }
        if connections[index].limit == 0 {
            connections[index].limit = 3
            publish(index)
        }
        takeWork(index, writeAll: true)
    }

    mutating func expireQueued(_ context: String) {
        let finishedQueued = queue.filter { requests[$0].isFinished }.count
        let countBefore = pool.queuedCount
        let expired = pool.expireQueued(now: now)
        for request in expired {
            if request.deadline > now { fail("expired request \(request.id) before its deadline") }
            if request.isFinished { fail("expired request \(request.id), which had already finished") }
        }
        if !expired.isEmpty { trace.append("expired\(expired.map(\.id))") }
        poolFailed(expired, "timed out in the queue (never sent)")
        // A scan drops the finished requests silently.
        if pool.queuedCount == countBefore - expired.count - finishedQueued, finishedQueued > 0 {
            queue.removeAll { requests[$0].isFinished }
        }
        // At most one scan per 10 ms: nothing still queued passed its deadline longer ago.
        for id in queue where !requests[id].isFinished && requests[id].deadline + 10 * Self.ms <= now {
            fail("request \(id) still queued \((now - requests[id].deadline) / Self.ms) ms after its deadline (\(context))")
        }
    }

    mutating func advanceClock(by nanoseconds: UInt64) {
        now += nanoseconds
        trace.append("+\(nanoseconds / Self.ms)ms")
        // Requests whose deadline passed in flight: each connection's timer ends them.
        for index in connections.indices {
            let (late, onTime) = (
                connections[index].streams.filter { requests[$0.request].deadline <= now },
                connections[index].streams.filter { requests[$0.request].deadline > now }
            )
            connections[index].streams = onTime
            for stream in late {
                let fate = RequestFate.deadlinePassedInFlight(incomplete: !stream.written)
                perform(fate, on: stream.request, processed: stream.written, "deadline passed in flight")
            }
            if !late.isEmpty, connections[index].phase == .up { publish(index) }
        }
        expireQueued("clock")
    }

    mutating func cancel() {
        let live = requests.indices.filter {
            if case .ended = states[$0] { return false }
            return true
        }
        guard let id = live.randomElement(using: &rng) else { return }
        trace.append("cancel(\(id))")
        switch states[id] {
        case .queued:
            end(id, "cancelled while queued")
            pool.queuedRequestFinished()
        case .inFlight(let index):
            // The connection resets the stream; the request ends cancelled.
            let written = connections[index].streams.first { $0.request == id }?.written ?? false
            connections[index].streams.removeAll { $0.request == id }
            // PendingRequest.cancelledInFlight
            if written { mayBeProcessed[id] = true }
            end(id, "cancelled in flight", error: .cancelled(mayHaveReachedAPNs: written, "cancelled"))
            if connections[index].phase == .up { publish(index) }
        case .ended:
            break
        }
    }

    mutating func shutdown() {
        let grace = UInt64.random(in: 0...100, using: &rng) * Self.ms
        trace.append("shutdown(grace \(grace / Self.ms)ms)")
        let (failed, signal) = pool.shutdown(deadline: now + grace)
        if !shutDown {
            shutDown = true
            shutdownDeadline = now + grace
        }
        if failed.count != queue.count { fail("shutdown failed \(failed.count) of \(queue.count) queued") }
        poolFailed(failed, "shut down while queued (never sent)")
        if signal != Array(connections.indices) { fail("shutdown signals \(signal), slots are \(connections.indices)") }
        for index in connections.indices {
            // Every connection is signalled.
            if connections[index].phase == .idle { connections[index].phase = .asking(notBefore: now) }
            connections[index].dozing = false
        }
    }

    mutating func budgetAvailable() {
        guard budgetBlocked else { return }
        trace.append("budgetAvailable")
        budgetBlocked = false
        if let wakeups = pool.budgetAvailable() {
            if shutDown { fail("budgetAvailable woke connections after shutdown") }
            apply(wakeups, "budgetAvailable")
        }
    }

    // MARK: Invariants

    mutating func checkInvariants() {
        if pool.queuedCount != queue.count {
            fail("the pool holds \(pool.queuedCount) queued, the model \(queue.count)")
        }
        if pool.connectionSlots != connections.count || connections.count > settings.connectionCount {
            fail("\(pool.connectionSlots) slots in the pool, \(connections.count) in the model, limit \(settings.connectionCount)")
        }
        let running = connections.filter { $0.phase != .exited }.count
        if pool.runningThreads != running { fail("the pool counts \(pool.runningThreads) threads, the model \(running)") }
        let up = connections.filter { $0.phase == .up }.count
        if pool.readyCount != up { fail("the pool counts \(pool.readyCount) connections up, the model \(up)") }
        if pool.budgetBlocked != budgetBlocked { fail("budgetBlocked \(pool.budgetBlocked), model \(budgetBlocked)") }
        for (index, connection) in connections.enumerated() where connection.phase == .up {
            if pool.isRetiring(index) != connection.retiring { fail("slot \(index) retiring \(pool.isRetiring(index)), model \(connection.retiring)") }
        }
        // Liveness: live requests wait, and no connection will ever look at them (every
        // thread parked idle, none up, asking or connecting), while the budget allows one.
        let liveQueued = queue.contains { !requests[$0].isFinished }
        let canAct = connections.contains {
            switch $0.phase {
            case .asking, .connecting: true
            case .up: !$0.dozing
            case .idle, .exited: false
            }
        }
        if liveQueued, !canAct, !budgetBlocked, !shutDown {
            let detail = connections.enumerated().map { "\($0.offset): \($0.element.phase)\($0.element.dozing ? " dozing" : ""), free \($0.element.free(shuttingDown: shutDown))" }
            fail("requests \(queue) wait and no connection will look at them: \(detail)")
        }
    }

    // MARK: Running

    /// `steps` random events, then a quiet end: connections that work, answers for all,
    /// the clock past every deadline. Returns the first invariant that failed.
    mutating func run(steps: Int) -> String? {
        let shutsDown = Int.random(in: 0..<3, using: &rng) == 0
        let shutdownStep = shutsDown ? Int.random(in: 0..<steps, using: &rng) : -1
        for event in 0..<steps {
            if event == shutdownStep { shutdown() }
            let roll = Int.random(in: 0..<100, using: &rng)
            switch roll {
            case 0..<30:
                enqueue()
            case 30..<75:
                if let index = connections.indices.randomElement(using: &rng) { step(connection: index, reliable: false) }
            case 75..<88:
                advanceClock(by: UInt64.random(in: 1...40, using: &rng) * Self.ms)
            case 88..<93:
                cancel()
            case 93..<96:
                budgetAvailable()
            default:
                // A connection's timer round on one that is asking (backoff waits).
                if let index = connections.indices.randomElement(using: &rng) { step(connection: index, reliable: false) }
            }
            checkInvariants()
            if violation != nil { return violation }
        }
        // The quiet end: no new request; everything works; the clock moves 10 ms a round.
        budgetAvailable()
        let lastDeadline = requests.map(\.deadline).max() ?? now
        var rounds = 0
        while now <= lastDeadline + 50 * Self.ms || rounds < 5 {
            budgetAvailable()
            for index in connections.indices { step(connection: index, reliable: true) }
            checkInvariants()
            advanceClock(by: 10 * Self.ms)
            checkInvariants()
            if violation != nil { return violation }
            rounds += 1
        }
        for (id, state) in states.enumerated() {
            if case .ended = state { continue }
            fail("request \(id) never ended: \(state)")
        }
        if pool.queuedCount != 0 { fail("\(pool.queuedCount) requests left in the queue after every deadline") }
        if shutDown {
            // Every thread exits once asked.
            for _ in 0..<3 {
                for index in connections.indices { step(connection: index, reliable: true) }
            }
            if pool.runningThreads != 0 { fail("\(pool.runningThreads) threads still run after shutdown") }
        }
        return violation
    }
}

@Suite("HTTP/2 pool state machine: seeded random event sequences against a model")
struct HTTP2PoolStateMachinePropertyTests {
    static let steps = 300

    @Test("every request ends exactly once, in order, within the limits, and nothing waits past its deadline (300 seeds × 300 events)")
    func randomSequences() {
        var violations: [String] = []
        var seen: [String: Int] = [:]
        for seed in PropertySeeds.range(300) {
            var simulation = PoolSimulation(seed: seed)
            if let violation = simulation.run(steps: Self.steps) { violations.append(violation) }
            for event in simulation.trace {
                let kind = String(event.prefix { $0 != "(" && $0 != "[" && $0 != "=" })
                seen[kind, default: 0] += 1
            }
        }
        // The runs reach every kind of event (a guard against a model that stopped exploring).
        let kinds = [
            "enqueue", "permission", "connected", "connectFailed", "take", "answer", "refused", "reset", "settings",
            "goaway", "close", "retire", "requeue", "expired", "cancel", "shutdown", "budgetRefused", "budgetAvailable",
        ]
        for kind in kinds {
            #expect(seen[kind, default: 0] >= 20, "only \(seen[kind, default: 0]) \(kind) events")
        }
        print("pool property runs, events by kind: \(seen.sorted { $0.key < $1.key }.filter { !$0.key.hasPrefix("+") })")
        #expect(violations.isEmpty, "\(violations.count) seeds failed; first: \(violations.prefix(3).joined(separator: "\n"))")
    }
}
