import APNsCore
import CNGHTTP2
import COpenSSL
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The I/O shell of one connection, driven by an ``EventLoop`` (a thread shared with
/// other connections): while disconnected it asks the pool for permission to connect
/// and has a ``ConnectWorkers`` thread open the socket (resolution, TCP, proxy, TLS all
/// block); once connected it feeds an ``HTTP2ConnectionStateMachine`` from its socket
/// and acts on its events, called by the loop whenever the socket is ready, the pool
/// wakes it, or one of its timers is due. It never blocks.
///
/// One service round: apply stream resets asked for by cancelled tasks; take as many
/// queued requests as there are free streams and submit them; serialize every pending
/// frame into one buffer and write it with one call (many frames per TLS record); read
/// everything available; complete, re-queue or fail requests per event; check deadlines,
/// the PING timer and shutdown. Rounds repeat while there is more to do (a bounded
/// number, so that other connections of the loop get their turn); then the connection
/// tells the loop what to wait for: its socket (and writability when a write is
/// pending) and its next deadline.
///
/// Thread safety (why `@unchecked Sendable` is sound): the properties marked "loop
/// thread only" are read and written only on ``loop``'s thread (the handler calls, and
/// jobs the connection submits to its loop); other threads touch only the immutable
/// properties, ``wakePending`` (an atomic) and ``inbox`` (a `Mutex`).
final class HTTP2Connection: EventLoopHandler, @unchecked Sendable {
    /// This connection's slot in the pool.
    let index: Int
    let pool: HTTP2ConnectionPool
    /// The loop that drives this connection for its whole life (`nil`: the process has no
    /// descriptors left for one; the connection then fails its attempts).
    let loop: EventLoop?
    /// This connection's registration in ``loop``.
    let token: EventLoop.Token
    private let logger: Logger

    private struct Inbox {
        var resets: [(Int32, PendingRequest)] = []
    }
    private let inbox = Mutex(Inbox())
    /// A wake is queued at the loop and not yet handled: further wakes are not needed.
    private let wakePending = Atomic<Bool>(false)
    /// A connection attempt on a worker thread: ``ConnectAttempt`` values. The pool's
    /// shutdown gives a running attempt up (``abandonConnectAttempt()``) instead of
    /// waiting up to the connect timeout for a socket that carries no request.
    private let connectAttempt = Atomic<UInt8>(ConnectAttempt.none)

    private enum ConnectAttempt {
        static let none: UInt8 = 0
        static let running: UInt8 = 1
        static let abandoned: UInt8 = 2
    }

    /// Gives up the connection attempt running on a worker thread, if one is: the pool
    /// counts the connection as exited now (nothing is in flight on a connection still
    /// connecting), and when the attempt ends its socket is closed unused.
    ///
    /// - Returns: Whether an attempt was running (the caller then calls
    ///   ``HTTP2ConnectionPool/threadExited(_:)`` for this connection, once).
    func abandonConnectAttempt() -> Bool {
        connectAttempt.compareExchange(
            expected: ConnectAttempt.running, desired: ConnectAttempt.abandoned, ordering: .acquiringAndReleasing
        ).exchanged
    }

    /// Where the connection is in its life.
    private enum Phase {
        /// No session: the pool decides when to connect.
        case disconnected
        /// A ``ConnectWorkers`` thread is opening the socket.
        case connecting
        /// Connected; the session runs.
        case session(any HTTP2ByteStream, HTTP2ConnectionStateMachine)
        /// The pool let it go; the loop no longer calls it.
        case exited
    }

    // MARK: Loop thread only
    // `@exclusivity(unchecked)`: only the connection's I/O thread touches these, no access
    // overlaps another, and the runtime's dynamic checks were measurable per notification.
    @exclusivity(unchecked) private var phase = Phase.disconnected
    @exclusivity(unchecked) private var inFlight = StreamTable<PendingRequest>()
    @exclusivity(unchecked) private var output: [UInt8] = []
    @exclusivity(unchecked) private var outputOffset = 0
    @exclusivity(unchecked) private var events: [HTTP2ConnectionEvent] = []
    /// Answers read this round, handed to their requests once the round's writes are out
    /// (see ``finishAnswered()``).
    @exclusivity(unchecked) private var answered: [(PendingRequest, APNsResponse)?] = []
    @exclusivity(unchecked) private var taken: [PendingRequest] = []
    @exclusivity(unchecked) private var expired: [(Int32, PendingRequest)] = []
    /// The PING, preface and probe timers (a pure value; see its rules).
    @exclusivity(unchecked) private var liveness = HTTP2ConnectionLiveness(settings: .init(pingInterval: 0, pingTimeout: 0, connectTimeout: 0), now: 0)
    @exclusivity(unchecked) private var hadResponse = false
    /// The fastest answer this session has given: a request with less time left is not
    /// written (a pure value; see its rules).
    @exclusivity(unchecked) private var fastestAnswer = FastestAnswer()
    /// The attempt was counted a success (`apns_connection_attempts_total`): the server's
    /// SETTINGS arrived. Before them the attempt may still fail (a TLS 1.3 refusal of the
    /// client certificate, no SETTINGS at all) and count as a failure instead.
    @exclusivity(unchecked) private var attemptCounted = false
    @exclusivity(unchecked) private var nextDeadlineScan: UInt64 = 0
    /// No request in flight has an earlier deadline (a lower bound), so the scan for
    /// expired requests waits for it.
    @exclusivity(unchecked) private var earliestInFlightDeadline = UInt64.max
    @exclusivity(unchecked) private var publishedFree = 0
    @exclusivity(unchecked) private var framesReported = 0
    @exclusivity(unchecked) private var goAwayDetail: String?
    @exclusivity(unchecked) private var draining = false
    @exclusivity(unchecked) private var pollForWrite = false
    @exclusivity(unchecked) private var peerClosed = false
    /// The session's last write failed (the server had closed the connection): what the
    /// server sent before closing may still wait in the socket, unread.
    @exclusivity(unchecked) private var writeFailed = false
    /// The last read stopped at its iteration cap with data possibly still buffered in
    /// TLS (which the poller cannot see): read again without waiting.
    @exclusivity(unchecked) private var moreToRead = false
    @exclusivity(unchecked) private var submittedAny = false
    @exclusivity(unchecked) private var refusedResponseLogged = false
    /// The session ended because the server never sent its SETTINGS.
    @exclusivity(unchecked) private var prefaceTimedOut = false
    /// The provider token this session carries, and since when (APNs' 20-minute rule);
    /// when the slot last retired a connection for it.
    @exclusivity(unchecked) private var tokenUpdates = ConnectionTokenUpdates()

    /// The most service rounds per call before yielding the loop to other connections.
    private static let roundsPerTurn = 8
    /// A turn also ends after this long (nanoseconds) once a round is done: a busy
    /// connection must not hold its loop, and the other connections on it, for long.
    private static let turnBudget: UInt64 = 1_000_000
    /// The most reads (TLS records, up to 16 KiB) per round: the answers a record brings
    /// are acted on, and the requests they free written, before the next record is read.
    /// Over a long round trip that keeps requests flowing as answers trickle in, instead
    /// of answering a whole window's worth first (which delays the next requests by the
    /// time it takes); it also bounds the time a flooded connection holds its loop.
    private static let readsPerRound = 1
    /// The most queued requests submitted per round, for the same reason.
    private static let submitsPerRound = 128

    /// A connection of `pool` driven by `loop` (counted in its load by whoever chose it;
    /// `nil` when no loop could be made: the connection then fails what waits).
    init(index: Int, pool: HTTP2ConnectionPool, loop: EventLoop?) {
        self.index = index
        self.pool = pool
        self.loop = loop
        self.token = loop?.makeToken() ?? 0
        var logger = pool.settings.logger
        logger[metadataKey: "apns.connection"] = "\(index)"
        self.logger = logger
    }

    /// Attaches the connection to its loop and lets it ask the pool whether to connect.
    func start() {
        guard let loop else {
            // No loop could be created (no descriptors left): fail what waits, then end.
            pool.connectFailed(self, error: .connectionFailed("cannot create an I/O event loop (the process may be out of file descriptors)"))
            pool.threadExited(self)
            return
        }
        loop.execute { [self] in
            loop.attach(self, as: token)
            // A wake that came before the attach was dropped by the loop: take it now.
            wakePending.store(false, ordering: .sequentiallyConsistent)
            serviceDisconnected()
        }
    }

    /// Has the loop call the connection soon (new work, shutdown, a retirement). Any thread.
    func wake() {
        guard let loop, !wakePending.exchange(true, ordering: .sequentiallyConsistent) else { return }
        loop.wake(token)
    }

    /// Asks the connection to reset `streamID` of `pending` (its task was cancelled).
    func requestReset(of streamID: Int32, for pending: PendingRequest) {
        inbox.withLock { $0.resets.append((streamID, pending)) }
        wake()
    }

    // MARK: Loop calls

    func handleEvent(readable: Bool, writable: Bool) {
        // Cleared before the connection looks at the pool and its inbox: a wake from now
        // on queues another call.
        wakePending.store(false, ordering: .sequentiallyConsistent)
        switch phase {
        case .disconnected:
            serviceDisconnected()
        case .connecting, .exited:
            break
        case .session(let stream, let machine):
            serviceSession(stream, machine, readable: readable, writable: writable)
        }
    }

    /// The bytes its session's allocator keeps cached for reuse, read on the loop's
    /// thread; `nil` without a session (for tests).
    func sessionCachedMemory() async -> Int? {
        guard let loop else { return nil }
        return await withCheckedContinuation { continuation in
            loop.execute {
                if case .session(_, let machine) = self.phase {
                    continuation.resume(returning: machine.cachedMemoryBytes)
                } else {
                    continuation.resume(returning: nil)
                }
            }
        }
    }

    // MARK: Disconnected

    /// Acts on the pool's answer to "may I connect?".
    private func serviceDisconnected() {
        guard let loop else { return }
        switch pool.connectPermission(for: self) {
        case .exit:
            leaveLoop()
            pool.threadExited(self)
        case .idle:
            loop.setDeadline(token, at: nil)
        case .wait(let nanoseconds):
            let now = MonotonicTime.now()
            pool.expireQueued(now: now)
            loop.setDeadline(token, at: now + min(nanoseconds, 10_000_000))
        case .connect:
            phase = .connecting
            connectAttempt.store(ConnectAttempt.running, ordering: .releasing)
            loop.setDeadline(token, at: nil)
            let pool = pool
            ConnectWorkers.shared.run { [self] in
                let result: Result<any HTTP2ByteStream, APNsTransportError>
                do throws(APNsTransportError) {
                    result = .success(try pool.connector(pool.settings.endpoint, pool.settings.connectTimeout))
                } catch {
                    result = .failure(error)
                }
                let opened = ConnectResult(result)
                loop.execute { [self] in connectFinished(opened.result) }
            }
        }
    }

    /// The connection is done: the loop no longer calls it, and its place on the loop is
    /// free for the next connection.
    private func leaveLoop() {
        phase = .exited
        guard let loop else { return }
        loop.detach(token)
        pool.settings.threads.connectionEnded(on: loop)
    }

    /// A connection attempt's result, handed from a worker thread to the loop.
    private final class ConnectResult: @unchecked Sendable {
        // Written once before it is handed over, read once on the loop thread.
        let result: Result<any HTTP2ByteStream, APNsTransportError>
        init(_ result: Result<any HTTP2ByteStream, APNsTransportError>) { self.result = result }
    }

    private func connectFinished(_ result: Result<any HTTP2ByteStream, APNsTransportError>) {
        let ended = connectAttempt.compareExchange(
            expected: ConnectAttempt.running, desired: ConnectAttempt.none, ordering: .acquiringAndReleasing)
        guard ended.exchanged else {
            // The pool shut down meanwhile and already counted this connection as exited.
            if case .success(let opened) = result { opened.close() }
            connectAttempt.store(ConnectAttempt.none, ordering: .releasing)
            leaveLoop()
            return
        }
        phase = .disconnected
        switch result {
        case .failure(let error):
            pool.connectFailed(self, error: error)
        case .success(let opened):
            if let (stream, machine) = startSession(on: opened) {
                serviceSession(stream, machine, readable: true, writable: false)
                return
            }
        }
        serviceDisconnected()
    }

    // MARK: Session

    private func startSession(on opened: any HTTP2ByteStream) -> (any HTTP2ByteStream, HTTP2ConnectionStateMachine)? {
        guard let loop else { return nil }
        let machine: HTTP2ConnectionStateMachine
        do {
            var configuration = pool.settings.machine
            // Frames are traced only when asked for: the level is read once per session.
            if logger.logLevel <= .trace { configuration.frameLogger = logger }
            machine = try HTTP2ConnectionStateMachine(configuration: configuration)
        } catch {
            opened.close()
            pool.connectFailed(self, error: error)
            return nil
        }
        guard loop.watch(opened.fileDescriptor, token: token) else {
            let reason = TCPConnector.errorString(errno)
            opened.close()
            pool.connectFailed(self, error: .connectionFailed("cannot watch the connection's socket: \(reason)"))
            return nil
        }
        phase = .session(opened, machine)
        let now = MonotonicTime.now()
        tokenUpdates.newSession()
        liveness = HTTP2ConnectionLiveness(
            settings: .init(
                pingInterval: pool.settings.pingInterval,
                pingTimeout: pool.settings.pingTimeout,
                connectTimeout: MonotonicTime.nanoseconds(pool.settings.connectTimeout)
            ),
            now: now
        )
        hadResponse = false
        fastestAnswer = FastestAnswer()
        goAwayDetail = nil
        draining = false
        pollForWrite = false
        peerClosed = false
        writeFailed = false
        moreToRead = false
        submittedAny = false
        prefaceTimedOut = false
        attemptCounted = false
        output.removeAll(keepingCapacity: true)
        outputOffset = 0
        framesReported = 0
        publishedFree = machine.availableStreams
        pool.connectSucceeded(self, freeStreams: publishedFree)
        logger.debug("APNs connection established")
        return (opened, machine)
    }

    /// Runs service rounds until there is nothing to do without waiting, then tells the
    /// loop what to wait for.
    private func serviceSession(
        _ stream: any HTTP2ByteStream,
        _ machine: HTTP2ConnectionStateMachine,
        readable: Bool,
        writable: Bool
    ) {
        guard let loop else { return }
        // Whatever ends the turn (an error, the session's end), the answers read go out.
        defer { finishAnswered() }
        var read = readable || writable
        let turnStarted = MonotonicTime.now()
        for round in 0..<Self.roundsPerTurn {
            do throws(APNsTransportError) {
                let now = round == 0 ? turnStarted : MonotonicTime.now()
                if now &- turnStarted > Self.turnBudget { break }
                if read || moreToRead {
                    try readAvailable(machine, stream: stream, readBuffer: loop.readBuffer)
                }
                read = false
                try handleEvents(machine)
                if peerClosed {
                    if machine.goAwayReceived, inFlight.isEmpty {
                        endSession(machine, stream, reason: nil, lost: false)
                        return
                    }
                    throw APNsTransportError.connectionClosed(
                        goAwayDetail.map { "the server closed the connection after \($0)" }
                            ?? "the server closed the connection"
                    )
                }
                try checkTimers(machine)
                applyResets(machine)
                if let (deadline, shuttingDown) = pool.drainDeadline(for: self) {
                    if !draining {
                        draining = true
                        pool.connectionUnavailable(self, closed: false)
                    }
                    if inFlight.isEmpty || now >= deadline {
                        failInFlightAfterDraining(shuttingDown: shuttingDown)
                        machine.submitGoAway()
                        try flush(machine, stream: stream)
                        endSession(machine, stream, reason: nil, lost: false)
                        return
                    }
                }
                if machine.unsentBodyBytes > 0 {
                    // Bodies wait for the server's window: send what it allows now, ahead of
                    // the new requests' HEADERS, so the server receives and acknowledges
                    // them at once rather than behind a block of headers.
                    try flush(machine, stream: stream)
                }
                submitQueued(machine)
                // Everything the session has to send goes out now: requests, and what
                // reading produced (SETTINGS and PING acknowledgements, WINDOW_UPDATE)
                // or the timers asked for (a PING).
                try flush(machine, stream: stream)
                finishAnswered()
                if let failure = machine.connectionError { throw failure }
                if !draining, !machine.isClosing, takingStreams(machine) != publishedFree {
                    // Writing closed streams (a reset, say): publish the free streams
                    // and take queued work before waiting.
                    continue
                }
                if machine.isClosing, inFlight.isEmpty {
                    endSession(machine, stream, reason: nil, lost: false)
                    return
                }
                let free = draining || machine.isClosing ? 0 : takingStreams(machine)
                let (hasWork, queueNonEmpty) = pool.prepareToSleep(self, freeStreams: free)
                publishedFree = free
                if hasWork || moreToRead {
                    // More queued work for free streams, or TLS holds more to read: go
                    // round again, reading what may have arrived meanwhile.
                    read = true
                    continue
                }

                // Nothing to do until the socket, the pool or a timer says so.
                var timeout = UInt64.max
                if !inFlight.isEmpty || queueNonEmpty || draining {
                    timeout = 10_000_000
                } else {
                    // Idle: give back what a burst left cached for reuse.
                    machine.releaseCachedMemory()
                    if output.capacity > 64 * 1024, outputOffset >= output.count {
                        // Everything written: the burst's output buffer too.
                        output = []
                        outputOffset = 0
                    }
                }
                timeout = min(timeout, liveness.nextDue(now: now, settingsReceived: machine.settingsReceived))
                loop.setWriteInterest(token, pollForWrite)
                loop.setDeadline(token, at: timeout == UInt64.max ? nil : now &+ timeout)
                return
            } catch {
                if writeFailed {
                    drainAfterWriteFailure(machine, stream: stream, readBuffer: loop.readBuffer)
                    try? handleEvents(machine)
                    finishAnswered()
                    if machine.goAwayReceived, inFlight.isEmpty {
                        // The server said GOAWAY, answered everything it took, and closed
                        // before our last write: a graceful close, not a lost connection.
                        endSession(machine, stream, reason: nil, lost: false)
                        return
                    }
                }
                endSession(machine, stream, reason: error, lost: true)
                return
            }
        }
        // Still busy after a full turn: let the loop's other connections run first.
        loop.setWriteInterest(token, pollForWrite)
        wake()
    }

    /// Ends the session and goes back to asking the pool whether to connect.
    private func endSession(
        _ machine: HTTP2ConnectionStateMachine,
        _ stream: any HTTP2ByteStream,
        reason: APNsTransportError?,
        lost: Bool
    ) {
        loop?.unwatch(token)
        loop?.setDeadline(token, at: nil)
        phase = .disconnected
        teardown(machine, stream: stream, reason: reason, lost: lost)
        serviceDisconnected()
    }

    private func applyResets(_ machine: HTTP2ConnectionStateMachine) {
        let resets = inbox.withLock { inbox -> [(Int32, PendingRequest)] in
            if inbox.resets.isEmpty { return [] }
            defer { inbox.resets.removeAll(keepingCapacity: true) }
            return inbox.resets
        }
        for (streamID, pending) in resets where inFlight[streamID] === pending {
            inFlight.removeValue(forKey: streamID)
            // Asked before the reset: whether the request was whole at the server.
            let unsent = machine.isUnsent(streamID)
            let status = machine.responseStatus(of: streamID)
            machine.cancelStream(streamID)
            pending.cancelledInFlight(unsent: unsent, status: status)
        }
    }

    private func submitQueued(_ machine: HTTP2ConnectionStateMachine) {
        guard !draining, !machine.isClosing else { return }
        let free = takingStreams(machine)
        guard free > 0 || publishedFree > 0 else { return }
        taken.removeAll(keepingCapacity: true)
        // A bounded number per round: submitting a thousand requests at once would hold
        // the loop (and every other connection on it) for as long as that takes.
        let batch = min(free, Self.submitsPerRound)
        pool.take(for: self, max: batch, into: &taken)
        publishedFree = free - taken.count
        if batch < free, taken.count == batch {
            // The pool counted only `batch` streams; the rest are still free.
            pool.publishFreeStreams(self, freeStreams: publishedFree)
        }
        guard !taken.isEmpty else { return }
        let now = MonotonicTime.now()
        liveness.sent(now: now, firstInFlight: inFlight.isEmpty)
        var sent = 0
        fastestAnswer.dropSample { inFlight[$0] != nil }
        submitting: for (position, pending) in taken.enumerated() {
            if fastestAnswer.isTooLate(deadline: pending.deadline, now: now) {
                // Its time ran out while it waited (the queue's scan runs every 10 ms), or
                // what is left is shorter than any answer this connection has given:
                // written now it would be an answer nobody waits for, and a request whose
                // fate is unknown. It ends as never sent.
                if pending.deadline > now, let fastest = fastestAnswer.fastest {
                    pending.expire(waitingFor: "its deadline was \(Self.milliseconds(pending.deadline - now)) away, nearer than "
                        + "this connection's fastest answer (\(Self.milliseconds(fastest))), so it was not written")
                } else {
                    pending.expire()
                }
                continue
            }
            // Set only in the rare case below, so the common path copies nothing.
            var substitute: APNsRequest?
            switch tokenUpdates.admit(pending.request.providerToken, now: now, replaceable: pending.request.providerTokenIsReplaceable) {
            case .send:
                break
            case .sendCarrying(let current):
                // An older token of the same key than the connection's: the request goes
                // with the connection's (the answer still reaches it as its own request).
                substitute = pending.request.carrying(current)
            case .retire:
                // A new token this soon on this connection is refused by APNs: it and the
                // rest go back to the head of the queue, in order, for another connection
                // (or this slot's next one), and this one drains and closes.
                for rest in taken[position...].reversed() { pool.requeue(rest, sentBefore: false) }
                pool.retireForTokenUpdate(self)
                break submitting
            }
            do {
                let streamID = try pending.markInFlight(on: self) { () throws(APNsTransportError) -> Int32 in
                    if let substitute { return try machine.submit(substitute) }
                    return try machine.submit(pending.request)
                }
                if let streamID {
                    fastestAnswer.submitted(streamID: streamID, now: now)
                    earliestInFlightDeadline = inFlight.isEmpty ? pending.deadline : min(earliestInFlightDeadline, pending.deadline)
                    inFlight[streamID] = pending
                    sent += 1
                    submittedAny = true
                }
            } catch {
                perform(.submitFailed(error), on: pending)
            }
        }
        taken.removeAll(keepingCapacity: true)
        if sent > 0 {
            pool.statistics.update { $0.requestsSent += sent }
        }
    }

    /// Serializes everything nghttp2 has ready and writes it with as few calls as the
    /// socket allows (usually one).
    private func flush(_ machine: HTTP2ConnectionStateMachine, stream: any HTTP2ByteStream) throws(APNsTransportError) {
        if outputOffset >= output.count {
            output.removeAll(keepingCapacity: true)
            outputOffset = 0
            try machine.collectOutput(into: &output)
            let frames = machine.framesSent.total
            if frames != framesReported {
                let delta = frames - framesReported
                framesReported = frames
                pool.statistics.update { $0.framesSent += delta }
            }
        }
        pollForWrite = false
        while outputOffset < output.count {
            let offset = outputOffset
            let attempt = output.withUnsafeBytes { bytes -> Result<TLSIOResult, APNsTransportError> in
                do throws(APNsTransportError) {
                    return .success(try stream.write(UnsafeRawBufferPointer(rebasing: bytes[offset...])))
                } catch {
                    return .failure(error)
                }
            }
            let result: TLSIOResult
            do throws(APNsTransportError) {
                result = try attempt.get()
            } catch {
                writeFailed = true
                throw error
            }
            switch result {
            case .done(let count):
                outputOffset += count
            case .wantWrite, .wantRead:
                pollForWrite = true
                return
            case .closed:
                writeFailed = true
                throw .connectionClosed("the server closed the connection")
            }
        }
    }

    /// The most TLS records read after a failed write (64 KiB each at most): more than a
    /// socket's receive queue holds.
    private static let drainReadLimit = 1_024

    /// After a write failed because the server had closed the connection, reads what the
    /// server sent before it closed and hands it to the session, so that the answers (and
    /// a GOAWAY) in it reach their requests instead of failing them as possibly delivered.
    ///
    /// A write fails with EPIPE or ECONNRESET once the server has closed: its FIN, and
    /// everything it wrote before, are already in this socket's receive queue, which a
    /// reset does not empty. The read loop takes one TLS record per round (so that answers
    /// free streams for new requests as they come), so a connection closed after a burst
    /// of answers can hold many records unread when a write meets the close. Reads without
    /// waiting, until the queue is empty, the stream ends or fails, or the session refuses
    /// the bytes; what it yields is handed over by the teardown that follows.
    private func drainAfterWriteFailure(
        _ machine: HTTP2ConnectionStateMachine,
        stream: any HTTP2ByteStream,
        readBuffer: UnsafeMutableRawBufferPointer
    ) {
        for _ in 0..<Self.drainReadLimit {
            guard case .done(let count)? = try? stream.read(into: readBuffer), count > 0 else { return }
            do throws(APNsTransportError) {
                try machine.receive(UnsafeRawBufferPointer(rebasing: readBuffer[0..<count]))
            } catch {
                return
            }
        }
    }

    private func readAvailable(
        _ machine: HTTP2ConnectionStateMachine,
        stream: any HTTP2ByteStream,
        readBuffer: UnsafeMutableRawBufferPointer
    ) throws(APNsTransportError) {
        moreToRead = true
        for _ in 0..<Self.readsPerRound {
            switch try stream.read(into: readBuffer) {
            case .done(let count):
                liveness.received(now: MonotonicTime.now())
                try machine.receive(UnsafeRawBufferPointer(rebasing: readBuffer[0..<count]))
            case .wantRead:
                moreToRead = false
                return
            case .wantWrite:
                moreToRead = false
                pollForWrite = true
                return
            case .closed:
                moreToRead = false
                peerClosed = true
                return
            }
        }
    }

    private func handleEvents(_ machine: HTTP2ConnectionStateMachine) throws(APNsTransportError) {
        if !attemptCounted, machine.settingsReceived {
            attemptCounted = true
            pool.statistics.metrics.connectionsSucceeded.increment()
        }
        machine.takeEvents(into: &events)
        defer { events.removeAll(keepingCapacity: true) }
        if !events.isEmpty, !draining, !machine.isClosing, takingStreams(machine) > publishedFree {
            // Publish the streams these answers freed before handing the answers over, so a
            // caller that sends again at once finds a free stream rather than counting as
            // waiting for one (maxQueuedRequests). One lock per batch of events.
            publishedFree = takingStreams(machine)
            pool.publishFreeStreams(self, freeStreams: publishedFree)
        }
        // Each event is moved out of the array (swapped with a payload-free one), so its
        // response reaches `finish` without a copy and the array keeps its capacity. (The
        // standard library's reverse() swaps by copying: two retains per response.) The
        // bound is re-read: whatever a handler does, an element is taken once.
        var index = 0
        while index < events.count {
            var event = HTTP2ConnectionEvent.pingAcknowledged
            swap(&event, &events[index])
            index += 1
            switch consume event {
            case .response(let streamID, let response):
                if response.status == 403 { pool.checkKeyBinding(self, response: response) }
                if let pending = inFlight.removeValue(forKey: streamID) {
                    answered.append((pending, consume response))
                }
                fastestAnswer.answered(streamID: streamID, now: liveness.lastReceived)
                if !hadResponse {
                    hadResponse = true
                    pool.connectionProved()
                }
            case .responseRefused(let streamID, let error):
                if let pending = inFlight.removeValue(forKey: streamID) {
                    pending.finish(.failure(error))
                }
                if refusedResponseLogged == false {
                    refusedResponseLogged = true
                    logger.warning(
                        "APNs response refused: larger than the transport's limit (logged once per connection)",
                        metadata: ["apns.error": "\(error.debugDescription)"]
                    )
                }
            case .streamClosed(let streamID, let errorCode, let unprocessed, let status, let resetByClient):
                guard let pending = inFlight.removeValue(forKey: streamID) else { continue }
                let fate = RequestFate.streamClosed(
                    streamID: streamID, errorName: Self.errorName(errorCode), unprocessed: unprocessed, goAwayDetail: goAwayDetail,
                    status: status, resetByClient: resetByClient)
                perform(fate, on: pending)
            case .goAway(let lastStreamID, let errorCode, let debugData):
                let reason = APNsReason(errorBody: debugData)
                let detail = "GOAWAY \(Self.errorName(errorCode)), last-stream-id \(lastStreamID)"
                    + (reason.map { ", reason \($0)" } ?? "")
                goAwayDetail = detail
                pool.connectionUnavailable(self, closed: false)
                pool.statistics.update { $0.goAwaysReceived += 1 }
                pool.statistics.metrics.goAways.increment()
                // Routine (APNs rotates connections): handled by sending the unprocessed
                // requests elsewhere, so a debug message, not a warning.
                logger.debug(
                    "APNs sent GOAWAY; unprocessed requests go to another connection",
                    metadata: [
                        "apns.goaway.last-stream-id": "\(lastStreamID)",
                        "apns.goaway.error-code": "\(Self.errorName(errorCode))",
                        "apns.reason": "\(reason?.description ?? "none")",
                        "apns.in-flight": "\(inFlight.count)",
                    ]
                )
            case .settingsChanged(let maxConcurrentStreams, let headerTableSize):
                logger.debug(
                    "APNs SETTINGS",
                    metadata: [
                        "apns.settings.max-concurrent-streams": "\(maxConcurrentStreams)",
                        "apns.settings.header-table-size": "\(headerTableSize)",
                    ]
                )
            case .pingAcknowledged:
                if liveness.pingAcknowledged() {
                    logger.debug("APNs connection answered the probe PING; taking requests again")
                }
            }
        }
    }

    /// Hands the answers read this round to their requests, in the order they arrived.
    ///
    /// Done after the round's writes, in one burst, rather than as each answer is read:
    /// each hand-over resumes a task, and on a core shared with the caller's tasks the
    /// first resumption tends to wake a worker thread that preempts this loop. Handed over
    /// one at a time between reads and writes, the loop and that worker would then take
    /// turns after every few answers; handed over together, after the writes, the worker
    /// finds them all queued (1 × 100 streams, 100 sending tasks, client on one core:
    /// 5,000 to 11,000 context switches per 100,000 notifications instead of 5,000 to
    /// 49,000). Failures are still handed over as they are read.
    private func finishAnswered() {
        guard !answered.isEmpty else { return }
        // Moved out one by one (swapped with `nil`; the capacity stays), so a response
        // reaches `finish` without a copy. A finish that comes back here (a batch that
        // sends its next request) finds the taken ones empty.
        var index = 0
        while index < answered.count {
            var answer: (PendingRequest, APNsResponse)?
            swap(&answer, &answered[index])
            index += 1
            if case .some((let pending, let response)) = consume answer {
                pending.finish(.success(response))
            }
        }
        answered.removeAll(keepingCapacity: true)
    }

    /// The streams this connection offers the queue: none while a probe PING is out.
    private func takingStreams(_ machine: HTTP2ConnectionStateMachine) -> Int {
        liveness.takesRequests ? machine.availableStreams : 0
    }

    /// Performs what the liveness timers decided.
    private func perform(_ action: HTTP2ConnectionLiveness.Action, _ machine: HTTP2ConnectionStateMachine) throws(APNsTransportError) {
        switch action {
        case .none:
            break
        case .sendPing:
            machine.ping()
        case .probe(let reason, let sendPing):
            if sendPing { machine.ping() }
            pool.connectionUnavailable(self, closed: false)
            publishedFree = 0
            logger.debug("APNs connection probed with a PING", metadata: ["apns.reason": "\(reason)"])
        case .close(let error, let failedConnect):
            prefaceTimedOut = failedConnect
            throw error
        }
    }

    private func checkTimers(_ machine: HTTP2ConnectionStateMachine) throws(APNsTransportError) {
        let now = MonotonicTime.now()
        try perform(liveness.check(now: now, settingsReceived: machine.settingsReceived, requestsInFlight: inFlight.count), machine)
        guard now >= nextDeadlineScan else { return }
        nextDeadlineScan = now + 10_000_000
        pool.expireQueued(now: now)
        guard !inFlight.isEmpty, now >= earliestInFlightDeadline else { return }
        expired.removeAll(keepingCapacity: true)
        var earliest = UInt64.max
        for (streamID, pending) in inFlight {
            if pending.deadline <= now {
                expired.append((streamID, pending))
            } else {
                earliest = min(earliest, pending.deadline)
            }
        }
        earliestInFlightDeadline = earliest
        for (streamID, pending) in expired {
            inFlight.removeValue(forKey: streamID)
            // Asked before the reset: whether the frame ending the request ever went out.
            let incomplete = machine.isUnsent(streamID)
            let status = machine.responseStatus(of: streamID)
            machine.cancelStream(streamID)
            perform(RequestFate.deadlinePassedInFlight(incomplete: incomplete, status: status), on: pending)
        }
        if !expired.isEmpty {
            // The server let a request's deadline pass: it may have stopped answering. Stop
            // sending it new requests until a PING proves it alive.
            try perform(liveness.requestTimedOut(now: now), machine)
        }
        expired.removeAll(keepingCapacity: true)
    }

    /// Does what ``RequestFate`` decided for `pending`.
    private func perform(_ fate: RequestFate, on pending: PendingRequest) {
        switch fate {
        case .fail(let error):
            pending.finish(.failure(error))
        case .expire:
            pending.expire()
        case .requeue(let failure):
            // Marked first: a request that finished meanwhile (cancelled, say) is left alone.
            guard let count = pending.markRequeued() else { return }
            if let error = RequestFate.requeued(count, maxRequeues: pool.settings.maxRequeues, failure: failure) {
                pending.finish(.failure(error))
            } else {
                pool.requeue(pending)
            }
        }
    }

    /// Fails what is still in flight when the connection's drain period has passed:
    /// `shutdown` when the transport is shutting down; otherwise the connection (or its
    /// credential's pool) alone was retired — given back to the connection budget, closed
    /// by `closeConnections(for:)` or as idle, or replaced for a provider token — while the
    /// transport goes on, and its requests end as `connectionClosed`. Either may have
    /// reached APNs.
    private func failInFlightAfterDraining(shuttingDown: Bool) {
        guard !inFlight.isEmpty else { return }
        let error = shuttingDown
            ? APNsTransportError(code: .shutdown, mayHaveReachedAPNs: true, detail: "the transport shut down before the response arrived")
            : APNsTransportError(
                code: .connectionClosed, mayHaveReachedAPNs: true,
                detail: "the connection was retired (given back to the transport's connection budget, closed by closeConnections(for:), "
                    + "or replaced for a provider token) and no response arrived within its drain period (shutdownGracePeriod)")
        for (_, pending) in inFlight { pending.finish(.failure(error)) }
        inFlight.removeAll()
    }

    private func teardown(
        _ machine: HTTP2ConnectionStateMachine,
        stream: any HTTP2ByteStream,
        reason: APNsTransportError?,
        lost: Bool
    ) {
        // Events the session produced that the loop did not get to, because the read that
        // brought them then failed (answers followed by a TCP reset, say): hand them over
        // first. An answer that arrived is the request's outcome; its stream has closed and
        // its record is gone, so it must not be mistaken below for a request never sent.
        try? handleEvents(machine)
        finishAnswered()
        pool.connectionUnavailable(self, closed: true)
        let refused = reason.flatMap(RequestFate.refusal(closingWith:))
        let now = MonotonicTime.now()
        for (streamID, pending) in inFlight {
            let fate = RequestFate.sessionEnded(
                reason: reason, unsent: machine.isUnsent(streamID), deadlinePassed: pending.deadline <= now,
                status: machine.responseStatus(of: streamID))
            perform(fate, on: pending)
        }
        inFlight.removeAll()
        stream.close()
        output.removeAll(keepingCapacity: true)
        outputOffset = 0
        if let refused {
            // The handshake failed late (TLS 1.3 sends the certificate refusal after the
            // client's side is done): treat it as the failed connection attempt it is. The
            // pool backs off and, with no other connection up, fails the queued requests
            // with the same error instead of connecting again only to be refused again.
            pool.connectFailed(self, error: refused)
            let level: Logger.Level = pool.conditions.begins("tls-refused") ? .warning : .debug
            logger.log(level: level, "APNs refused the TLS session", metadata: ["apns.error": "\(refused.debugDescription)"])
            return
        }
        if let reason, prefaceTimedOut || !machine.settingsReceived {
            // Not an HTTP/2 server, a stuck one, or one that closes before its SETTINGS (a
            // load balancer with no backend closes right after the TLS handshake): a failed
            // connection attempt. The pool backs off and fails what waits (never sent) if
            // no other connection is up, rather than reconnecting at once, again and again.
            pool.connectFailed(self, error: .connectionFailed(
                prefaceTimedOut ? reason.detail : "the server closed the connection before its HTTP/2 SETTINGS (\(reason.detail ?? reason.code.description))"))
            return
        }
        if !hadResponse, submittedAny || pool.hasQueuedRequests {
            // Nothing came back, while requests went out or waited: count it against the
            // endpoint, so a server that drops every connection is not hammered with
            // reconnects. (A connection that only sat idle and closed counts for nothing.)
            pool.sessionFailedWithoutResponse(reason ?? .connectionClosed("the connection closed before any answer"))
        }
        if lost {
            pool.statistics.update { $0.connectionsLost += 1 }
            // Once until the endpoint answers again: a flapping network warns once.
            let level: Logger.Level = pool.conditions.begins("connection-lost") ? .warning : .debug
            logger.log(level: level, "APNs connection lost", metadata: ["apns.error": "\(reason?.debugDescription ?? "")"])
        } else {
            logger.debug("APNs connection closed")
        }
    }

    /// `nanoseconds` as a person reads it: "12 ms", or "0.4 ms" under one millisecond.
    static func milliseconds(_ nanoseconds: UInt64) -> String {
        nanoseconds >= 1_000_000 ? "\(nanoseconds / 1_000_000) ms" : "0.\(nanoseconds / 100_000) ms"
    }

    static func errorName(_ code: UInt32) -> String {
        guard let name = nghttp2_http2_strerror(code) else { return "\(code)" }
        return String(cString: name)
    }
}
