import COpenSSL
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What the server loop is asked to do by other threads.
enum LoopCommand: Sendable {
    case stop
    case goAwayAll(reason: String?)
    case dropAll
    case applyStreamLimit(Int)
    /// Answers still waiting become due `delay` after their request arrived.
    case rescheduleDelayed(Duration)
    /// Connections send through this link emulation (`nil`: directly).
    case setLink(MockAPNsServer.LinkEmulation?)
    /// Hands over the bytes each open connection's nghttp2 session keeps cached for reuse
    /// (tests of ``ServerConnection``'s session memory).
    case inspectSessionMemory(@Sendable ([Int]) -> Void)
}

/// The part of a running server that test threads and the server thread share: the fault
/// script, the recorded requests, the counters and the command queue, all behind one
/// `Mutex`. The server thread takes the lock once per read, and once per request that
/// takes the full path (see ``countFastAnswers(_:)``).
final class ServerState: Sendable {
    struct Shared {
        var perToken: [String: ScriptedResponse] = [:]
        /// Answers for valid broadcasts, by `apns-channel-id`.
        var perChannel: [String: ScriptedResponse] = [:]
        var failures: [(remaining: Int, response: ScriptedResponse)] = []
        var goAwayAfter: (remaining: Int, reason: String)?
        var dropAfter: Int?
        /// Requests until ``MockAPNsServer/breakProtocol(atRequest:)`` fires.
        var breakProtocolAfter: Int?
        /// Requests until ``MockAPNsServer/blackHoleConnection(atRequest:)`` fires.
        var blackHoleAfter: Int?
        var delay: Duration = .zero
        /// The link emulation for new connections; see ``MockAPNsServer/setLinkEmulation(_:)``.
        var link: MockAPNsServer.LinkEmulation?
        var refuseUntil: ContinuousClock.Instant?
        var maxConcurrentStreams: Int
        var commands: [LoopCommand] = []
        var recordLimit: Int
        var records: [RecordedRequest] = []
        var recordStart = 0
        var statistics = MockAPNsServer.Statistics()
        var subscribers: [Int: AsyncStream<RecordedRequest>.Continuation] = [:]
        var nextSubscriber = 0
        var exited = false
        var exitWaiters: [CheckedContinuation<Void, Never>] = []
        /// The key identifiers each connection carried, in the order first seen; see
        /// ``MockAPNsServer/keyIDsByConnection``.
        var keyIDsByConnection: [Int: [String]] = [:]
        /// Told about every processed request; see ``MockAPNsServer/observeRequests(_:)``.
        var observer: (@Sendable (MockAPNsServer.ProcessedRequest) -> Void)?
    }

    /// What the server thread should do with a request it has validated.
    struct Decision {
        var response: ScriptedResponse?
        var delay: Duration
        var goAwayReason: String?
        var drop: Bool
        /// Write an invalid frame instead of the answer; see ``MockAPNsServer/breakProtocol(atRequest:)``.
        var breakProtocol: Bool
        /// Go silent instead of answering; see ``MockAPNsServer/blackHoleConnection(atRequest:)``.
        var blackHole: Bool
        /// The request's place among all requests the server processed, from 0.
        var sequenceNumber: Int
        /// Whom to tell about the request once its answer is known (outside the lock).
        var observer: (@Sendable (MockAPNsServer.ProcessedRequest) -> Void)?
    }

    let shared: Mutex<Shared>
    /// Whether anyone iterates ``MockAPNsServer/requests()`` (written under the lock, read
    /// without it by the server thread, which then keeps the raw header blocks it needs
    /// for records).
    let hasSubscribers = Atomic(false)
    /// The broadcast channels, with their own lock (see ``ChannelRegistry``).
    let channels = ChannelRegistry()
    /// The read end of a pipe the server thread polls; writing to ``wakeWriteFD`` wakes
    /// the thread. Both are closed only when the last reference goes, so a late wake
    /// never writes to a reused descriptor.
    let wakeFD: Int32
    private let wakeWriteFD: Int32

    init(maxConcurrentStreams: Int, recordLimit: Int) throws {
        var ends: [Int32] = [-1, -1]
        guard capns_pipe_nonblocking_cloexec(&ends) == 0 else {
            throw MockAPNsServerError("pipe() failed: \(String(cString: strerror(errno)))")
        }
        wakeFD = ends[0]
        wakeWriteFD = ends[1]
        shared = Mutex(Shared(maxConcurrentStreams: maxConcurrentStreams, recordLimit: max(0, recordLimit)))
    }

    private init(invalidWithMaxConcurrentStreams limit: Int) {
        wakeFD = -1
        wakeWriteFD = -1
        shared = Mutex(Shared(maxConcurrentStreams: limit, recordLimit: 0))
    }

    deinit {
        if wakeFD >= 0 { close(wakeFD) }
        if wakeWriteFD >= 0 { close(wakeWriteFD) }
    }

    func wake() {
        var one: UInt8 = 1
        _ = write(wakeWriteFD, &one, 1)
    }

    func send(_ command: LoopCommand) {
        // Once the loop has ended nothing reads the queue: the command is dropped.
        _ = sendUnlessExited(command)
    }

    /// Applies the script to a request whose validation gave `validation`, records it and
    /// returns what to answer, under the lock: for a request on the full path (an error,
    /// a script, a record; valid device pushes otherwise take the fast path, see
    /// ``countFastAnswers(_:)``).
    /// `makeRecord` is called (under the lock) only when records are wanted, and what it
    /// returns is filled in with the final outcome.
    func decide(
        validation: RequestValidator.Rejection?, deviceToken: Substring?, apnsID: String,
        successStatus: Int = 200, broadcastChannel: String? = nil,
        record makeRecord: () -> RecordedRequest?
    ) -> Decision {
        shared.withLock { shared in
            var response: ScriptedResponse?
            // A queued failure (a 503, a 429 burst) is the service's answer before it looks
            // at the token, as on APNs: it comes before the per-token and per-channel rules.
            if let validation {
                response = ScriptedResponse(status: validation.status, reason: validation.reason)
            } else if !shared.failures.isEmpty {
                response = shared.failures[0].response
                shared.failures[0].remaining -= 1
                if shared.failures[0].remaining <= 0 { shared.failures.removeFirst() }
            } else if !shared.perToken.isEmpty, let deviceToken, let scripted = shared.perToken[deviceToken.lowercased()] {
                response = scripted
            } else if !shared.perChannel.isEmpty, let broadcastChannel, let scripted = shared.perChannel[broadcastChannel] {
                response = scripted
            }
            var goAwayReason: String?
            if var goAway = shared.goAwayAfter {
                goAway.remaining -= 1
                if goAway.remaining <= 0 {
                    goAwayReason = goAway.reason
                    shared.goAwayAfter = nil
                } else {
                    shared.goAwayAfter = goAway
                }
            }
            let drop = Self.countDown(&shared.dropAfter)
            let breakProtocol = Self.countDown(&shared.breakProtocolAfter)
            let blackHole = Self.countDown(&shared.blackHoleAfter)
            let sequenceNumber = shared.statistics.requests
            shared.statistics.requests += 1
            if response == nil { shared.statistics.accepted += 1 } else { shared.statistics.rejected += 1 }
            if shared.recordLimit > 0 || !shared.subscribers.isEmpty, var record = makeRecord() {
                record.sequenceNumber = sequenceNumber
                record.status = response?.status ?? successStatus
                record.reason = response?.reason
                record.apnsID = apnsID
                if shared.recordLimit > 0 {
                    if shared.records.count < shared.recordLimit {
                        shared.records.append(record)
                    } else {
                        shared.records[shared.recordStart] = record
                        shared.recordStart = (shared.recordStart + 1) % shared.recordLimit
                    }
                }
                for subscriber in shared.subscribers.values { subscriber.yield(record) }
            }
            return Decision(response: response, delay: shared.delay, goAwayReason: goAwayReason, drop: drop,
                            breakProtocol: breakProtocol, blackHole: blackHole,
                            sequenceNumber: sequenceNumber, observer: shared.observer)
        }
    }

    /// Counts `accepted` requests the server thread answered on its fast path (each
    /// accepted, none scripted or recorded), and returns whether the fast path may go on:
    /// nothing is scripted, delayed, observed or recorded, so a valid device push gets
    /// exactly the plain `200` that ``decide(validation:deviceToken:apnsID:successStatus:broadcastChannel:record:)``
    /// would give it, and the sequence numbers it would take only need counting.
    ///
    /// The server thread calls it after each read that returned bytes and before it
    /// processes them, so a script set before a client sent a request is always seen.
    func countFastAnswers(_ accepted: Int) -> Bool {
        shared.withLock { shared in
            if accepted > 0 {
                shared.statistics.requests += accepted
                shared.statistics.accepted += accepted
                shared.statistics.fastAnswers += accepted
            }
            return shared.perToken.isEmpty && shared.failures.isEmpty && shared.goAwayAfter == nil
                && shared.dropAfter == nil && shared.breakProtocolAfter == nil && shared.blackHoleAfter == nil
                && shared.delay == .zero && shared.recordLimit == 0 && shared.subscribers.isEmpty && shared.observer == nil
        }
    }

    /// Records that `connection` carried a provider token of `keyID` for the first time.
    func noteKey(_ keyID: String, connection: Int) {
        shared.withLock { $0.keyIDsByConnection[connection, default: []].append(keyID) }
    }

    /// Counts one request against a "at the N-th request" trigger: whether it fires now
    /// (and is then removed).
    private static func countDown(_ remaining: inout Int?) -> Bool {
        guard let count = remaining else { return false }
        if count <= 1 {
            remaining = nil
            return true
        }
        remaining = count - 1
        return false
    }

    func snapshot() -> [RecordedRequest] {
        shared.withLock { shared in
            Array(shared.records[shared.recordStart...] + shared.records[..<shared.recordStart])
        }
    }
}

extension ServerState {
    /// A state whose eventfd could not be made; ``MockAPNsServer/start()`` refuses it.
    static func unusable(configuration: MockAPNsServer.Configuration) -> ServerState {
        ServerState(invalidWithMaxConcurrentStreams: configuration.maxConcurrentStreams)
    }

    /// Records that the server thread has ended and wakes whoever waits in ``waitForExit()``.
    func markExited() {
        let (waiters, subscribers, commands) = shared.withLock { shared in
            shared.exited = true
            defer {
                shared.subscribers.removeAll()
                hasSubscribers.store(false, ordering: .relaxed)
                shared.exitWaiters.removeAll()
                shared.commands.removeAll()
            }
            return (shared.exitWaiters, Array(shared.subscribers.values), shared.commands)
        }
        // Outside the lock: finishing a stream runs its onTermination, which takes the lock.
        for subscriber in subscribers { subscriber.finish() }
        for waiter in waiters { waiter.resume() }
        // A question the loop will never answer: no connection is open any more.
        for case .inspectSessionMemory(let report) in commands { report([]) }
    }

    /// Queues `command` for the server loop unless the loop has ended (then returns false).
    func sendUnlessExited(_ command: LoopCommand) -> Bool {
        let queued = shared.withLock { shared -> Bool in
            guard !shared.exited else { return false }
            shared.commands.append(command)
            return true
        }
        if queued { wake() }
        return queued
    }

    /// Returns once the server thread has ended.
    func waitForExit() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = shared.withLock { shared -> Bool in
                if shared.exited { return true }
                shared.exitWaiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }
}
