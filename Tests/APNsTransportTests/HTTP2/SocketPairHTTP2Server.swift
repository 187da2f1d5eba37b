import CNGHTTP2
import Foundation
import Synchronization
@testable import APNsTransport

#if canImport(Glibc)
import Glibc
#endif

/// A byte stream over one end of a socket pair, non-blocking: the transport's I/O shell
/// runs on it exactly as on a TLS stream, without TLS.
final class PlainSocketStream: HTTP2ByteStream {
    let fileDescriptor: Int32
    private var closed = false

    init(fileDescriptor: Int32) {
        self.fileDescriptor = fileDescriptor
        _ = fcntl(fileDescriptor, F_SETFL, fcntl(fileDescriptor, F_GETFL) | O_NONBLOCK)
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws(APNsTransportError) -> TLSIOResult {
        let n = recv(fileDescriptor, buffer.baseAddress, buffer.count, 0)
        if n > 0 { return .done(n) }
        if n == 0 { return .closed }
        if errno == EAGAIN || errno == EWOULDBLOCK { return .wantRead }
        if errno == ECONNRESET { return .closed }
        throw .connectionClosed("recv failed: errno \(errno)")
    }

    func write(_ buffer: UnsafeRawBufferPointer) throws(APNsTransportError) -> TLSIOResult {
        let n = send(fileDescriptor, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
        if n >= 0 { return .done(n) }
        if errno == EAGAIN || errno == EWOULDBLOCK { return .wantWrite }
        if errno == EPIPE || errno == ECONNRESET { return .closed }
        throw .connectionClosed("send failed: errno \(errno)")
    }

    func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fileDescriptor)
    }
}

/// An HTTP/2 server on the other end of socket pairs, one thread per connection, each an
/// ``InMemoryHTTP2Server`` (nghttp2's server session). It behaves like APNs where the
/// tests need it (stream limit 1 until the first answer, then higher; an `apns-id` echo)
/// and can be told to misbehave. Every answered `apns-id` is counted, so a test can
/// check that nothing was processed twice.
///
/// `@unchecked Sendable`: the mutable state is in `state` (a Mutex); each connection's
/// nghttp2 session is used only by that connection's thread.
final class SocketPairHTTP2Server: @unchecked Sendable {
    struct Behaviour: Sendable {
        /// The stream limit in the first SETTINGS, and after the first answer.
        var initialStreamLimit: UInt32 = 1
        var raisedStreamLimit: UInt32 = 100
        /// Never answer (for timeouts and shutdown).
        var neverRespond = false
        /// On connection number `n` (1-based), send GOAWAY after this many requests arrived:
        /// requests up to the last-stream-id are answered, those above are not.
        var goAwayAfterRequests: (connection: Int, requests: Int)?
        /// With `goAwayAfterRequests`: hold the requests past that number unanswered, and
        /// send the GOAWAY only once this many have arrived, so that the requests above
        /// its last-stream-id are certainly in flight, however the tasks were scheduled.
        var goAwayOnceReceived: Int?
        /// Refuse (RST_STREAM REFUSED_STREAM) the first request of each of these numbers (1-based, global).
        var refuseRequests: Set<Int> = []
        /// On the first connection, close the socket after this many requests arrived, answering none.
        var dropAfterRequests: Int?
        /// Do not answer PINGs.
        var ignorePings = false
        /// Fail every connection attempt.
        var refuseConnections = false
        /// On the first connection, answer nothing (requests stay in flight) until
        /// ``goAwayOnFirstConnection()`` sends a GOAWAY that names none of them processed
        /// (last-stream-id 0); later connections answer as usual.
        var holdOnFirstConnection = false

        /// A server that takes `streams` requests at once and answers none (for timeouts,
        /// cancellation and shutdown).
        static func silent(streams: UInt32 = 10) -> Behaviour {
            var behaviour = Behaviour()
            behaviour.neverRespond = true
            behaviour.initialStreamLimit = streams
            return behaviour
        }
    }

    struct State {
        var behaviour: Behaviour
        var answeredIDs: [String: Int] = [:]
        var receivedRequests = 0
        var connections = 0
        var connectAttempts: [UInt64] = []
        var endpoints: [TLSEndpoint] = []
        var resetCodes: [UInt32] = []
        var goAwaysFromClient = 0
        var stopping = false
        var threads = 0
        /// Set by ``goAwayOnFirstConnection()``.
        var goAwayRequested = false
    }

    let state: Mutex<State>

    init(_ behaviour: Behaviour = Behaviour()) {
        state = Mutex(State(behaviour: behaviour))
    }

    var snapshot: State { state.withLock { $0 } }

    /// The transport's connector: a socket pair, the server half served by a new thread.
    var connector: HTTP2Connector {
        { [self] (endpoint, _) throws(APNsTransportError) -> any HTTP2ByteStream in
            let (refuse, number) = state.withLock { state -> (Bool, Int) in
                state.connectAttempts.append(MonotonicTime.now())
                state.endpoints.append(endpoint)
                if state.behaviour.refuseConnections || state.stopping { return (true, 0) }
                state.connections += 1
                state.threads += 1
                return (false, state.connections)
            }
            if refuse { throw .connectionFailed("connection refused by the test server") }
            var fds: [Int32] = [0, 0]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else {
                state.withLock { $0.threads -= 1 }
                throw .connectionFailed("socketpair failed")
            }
            let serverFD = fds[1]
            let thread = Thread { [self] in self.serve(fd: serverFD, connection: number) }
            thread.start()
            return PlainSocketStream(fileDescriptor: fds[0])
        }
    }

    /// With ``Behaviour/holdOnFirstConnection``: the first connection sends GOAWAY with
    /// last-stream-id 0 (RFC 9113 §6.8: none of its requests was processed) at its next
    /// turn (within about 10 ms).
    func goAwayOnFirstConnection() {
        state.withLock { $0.goAwayRequested = true }
    }

    /// Stops every server thread and waits for them.
    func stop() async {
        state.withLock { $0.stopping = true }
        for _ in 0..<500 {
            if state.withLock({ $0.threads }) == 0 { return }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    private func serve(fd: Int32, connection: Int) {
        defer {
            Glibc.close(fd)
            state.withLock { $0.threads -= 1 }
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        let behaviour = state.withLock { $0.behaviour }
        let server = InMemoryHTTP2Server(maxConcurrentStreams: behaviour.initialStreamLimit, ignorePings: behaviour.ignorePings)
        var handled = 0
        var handledFrames = 0
        var raised = false
        var goAwaySent = false
        var lastProcessed: Int32 = 0
        var requestsHere = 0
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        // A connection nobody has written to for a minute belongs to a test that ended
        // without stopping this server or closing the transport's end: its thread ends
        // rather than keeping the test process alive after the run.
        var idleUntil = ContinuousClock.now + .seconds(60)
        while true {
            if state.withLock({ $0.stopping }) || ContinuousClock.now > idleUntil { return }
            // Write what the server has.
            pending += server.output()
            while !pending.isEmpty {
                let n = pending.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n > 0 { pending.removeFirst(n) } else { break }
            }
            if behaviour.holdOnFirstConnection, connection == 1, !goAwaySent, state.withLock({ $0.goAwayRequested }) {
                goAwaySent = true
                server.goAway(lastStreamID: 0, debugData: #"{"reason":"Shutdown"}"#)
                continue
            }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN) | (pending.isEmpty ? 0 : Int16(POLLOUT)), revents: 0)
            _ = poll(&pfd, 1, 10)
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return }
            if n < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK { continue }
                return
            }
            idleUntil = ContinuousClock.now + .seconds(60)
            if server.receive(Array(buffer[0..<n])) < 0 { return }
            while handledFrames < server.frames.count {
                let frame = server.frames[handledFrames]
                handledFrames += 1
                if frame.type == UInt8(NGHTTP2_RST_STREAM.rawValue) {
                    state.withLock { $0.resetCodes.append(frame.errorCode) }
                } else if frame.type == UInt8(NGHTTP2_GOAWAY.rawValue) {
                    state.withLock { $0.goAwaysFromClient += 1 }
                }
            }
            while handled < server.completedStreams.count {
                let streamID = server.completedStreams[handled]
                handled += 1
                requestsHere += 1
                let number = state.withLock { state -> Int in
                    state.receivedRequests += 1
                    return state.receivedRequests
                }
                if let drop = behaviour.dropAfterRequests, connection == 1, requestsHere >= drop {
                    return
                }
                if behaviour.refuseRequests.contains(number) {
                    server.reset(streamID, errorCode: NGHTTP2_REFUSED_STREAM.rawValue)
                    continue
                }
                if let rule = behaviour.goAwayAfterRequests, rule.connection == connection {
                    if goAwaySent { continue }
                    if requestsHere == rule.requests { lastProcessed = streamID }
                    if let hold = behaviour.goAwayOnceReceived, requestsHere > rule.requests {
                        // Held: above the last-stream-id the GOAWAY will name.
                        if requestsHere >= hold {
                            goAwaySent = true
                            server.goAway(lastStreamID: lastProcessed, debugData: #"{"reason":"Shutdown"}"#)
                        }
                        continue
                    }
                    if behaviour.goAwayOnceReceived == nil, requestsHere >= rule.requests {
                        goAwaySent = true
                        // Streams above this one were not processed (RFC 9113 §6.8).
                        server.goAway(lastStreamID: streamID, debugData: #"{"reason":"Shutdown"}"#)
                    }
                }
                if behaviour.neverRespond || (behaviour.holdOnFirstConnection && connection == 1) { continue }
                let apnsID = server.headers[streamID]?.first { $0.name == "apns-id" }?.value ?? ""
                state.withLock { $0.answeredIDs[apnsID, default: 0] += 1 }
                server.respond(streamID, status: 200, headers: [("apns-id", apnsID)])
                if !raised {
                    raised = true
                    server.submitSettings(maxConcurrentStreams: behaviour.raisedStreamLimit)
                }
            }
        }
    }
}
