import Foundation
import Synchronization
@testable import APNsTransport

#if canImport(Glibc)
import Glibc
#endif

/// An HTTP/2 server that breaks the rules on purpose, on the other end of socket pairs.
///
/// Unlike ``SocketPairHTTP2Server`` (nghttp2's server session, which refuses to misbehave)
/// it writes raw frames itself and HPACK-encodes its responses by hand, so it can send
/// what no conforming server would: header blocks that decode to megabytes, bodies that
/// never end, a stream limit of 0, no SETTINGS at all, silence, garbage.
///
/// It parses the client's frames only as far as it needs to (RFC 9113 §3.4 preface, then
/// 9-byte frame headers): it ACKs SETTINGS, answers PING (unless silent), counts a request
/// at END_STREAM on HEADERS or DATA, stops a body when the client resets its stream, and
/// never decodes the client's HPACK.
///
/// One thread per connection (a poll(2) loop with 10 ms waits), all joined by ``stop()``.
/// The ``Misbehaviour`` can be switched while connections are open (``behave(_:)``):
/// per-response behaviours apply from the next request; connection-level ones
/// (``Misbehaviour/noSettings``, ``Misbehaviour/silentAfter(requests:)``,
/// ``Misbehaviour/streamLimitZero``) are fixed when a connection opens, except that a
/// limit-0 connection raises its limit (a new SETTINGS) once the server behaves normally.
///
/// `@unchecked Sendable`: the shared state is in a Mutex; each connection's buffers are
/// used only by that connection's thread.
final class HostileHTTP2Server: @unchecked Sendable {
    /// What the server does wrong.
    enum Misbehaviour: Sendable, Equatable {
        /// SETTINGS (MAX_CONCURRENT_STREAMS 100), then `:status 200` to every request.
        case normal
        /// `:status` `status`, then on a connection's first such response one header
        /// inserted into the HPACK dynamic table (`x-a`, 4,000-byte value, literal with
        /// incremental indexing, RFC 7541 §6.2.1), then `references` one-byte references
        /// to it (0xBE, index 62) over HEADERS + CONTINUATION frames of at most 16,384
        /// bytes. Later responses only refer to the entry. Each reference decodes to a
        /// 4,035-byte field (RFC 9113 §6.5.2 size).
        case hpackAmplification(references: Int, status: Int = 200)
        /// HEADERS with `:status` `status` (no END_STREAM), then 16,384-byte DATA frames
        /// until `bytes` are written (clamped to the client's stream window; END_STREAM on
        /// the last) or the client resets the stream or closes.
        case endlessBody(status: Int, bytes: Int)
        /// SETTINGS with MAX_CONCURRENT_STREAMS 0, and nothing else until told to behave;
        /// a request that arrives anyway (sent before the SETTINGS reached the client) is
        /// refused with RST_STREAM REFUSED_STREAM, as RFC 9113 §5.1.2 allows.
        case streamLimitZero
        /// Reads everything, writes nothing at all (not even SETTINGS).
        case noSettings
        /// Normal for the first `requests` requests of a connection, then writes nothing
        /// more on it: no answers, no PING ACK, no SETTINGS ACK.
        case silentAfter(requests: Int)
        /// Answers a request with a frame header whose length (0xFFFFFF) exceeds any
        /// frame size, followed by junk: a connection error.
        case garbage
        /// Answers with a `:status` of "abc" (a literal).
        case badStatus
        /// Answers with two WINDOW_UPDATEs on stream 0 of 0x7FFFFFFF each: the client's
        /// send window overflows (RFC 9113 §6.9.1, FLOW_CONTROL_ERROR).
        case windowOverflow
        /// Answers with HEADERS without END_HEADERS, then `frames` empty CONTINUATION
        /// frames, never ending the header block.
        case continuationFlood(frames: Int = 10_000)
        /// Closes each connection as soon as it opens, before a byte of HTTP/2 (as a load
        /// balancer with no healthy backend does after the TLS handshake).
        case closeAtOnce
        /// Sends its SETTINGS, then closes the connection without reading anything.
        case settingsThenClose
        /// SETTINGS_INITIAL_WINDOW_SIZE 0 and no WINDOW_UPDATE ever: a request's HEADERS
        /// arrive, its body never can, and nothing is answered.
        case zeroWindow
        /// Answers each request's HEADERS (without END_STREAM) and never sends its body.
        case stalledBody(status: Int)

        /// The case name, for reports.
        var name: String {
            switch self {
            case .normal: "normal"
            case .hpackAmplification: "hpackAmplification"
            case .endlessBody(let status, _): "endlessBody(\(status))"
            case .streamLimitZero: "streamLimitZero"
            case .noSettings: "noSettings"
            case .silentAfter: "silentAfter"
            case .garbage: "garbage"
            case .badStatus: "badStatus"
            case .windowOverflow: "windowOverflow"
            case .continuationFlood: "continuationFlood"
            case .closeAtOnce: "closeAtOnce"
            case .settingsThenClose: "settingsThenClose"
            case .zeroWindow: "zeroWindow"
            case .stalledBody(let status): "stalledBody(\(status))"
            }
        }
    }

    /// What the server has seen and done, for a test to read (``counters``).
    struct Counters: Sendable {
        /// Connections the connector handed out.
        var connectionsAccepted = 0
        /// Requests complete (END_STREAM from the client), over all connections.
        var requestsReceived = 0
        /// HEADERS frames the client sent (a request begun, complete or not).
        var headersReceived = 0
        /// Complete requests per connection, in the order the connections opened.
        var requestsPerConnection: [Int] = []
        /// Requests refused (RST_STREAM REFUSED_STREAM) on a connection whose limit is 0.
        var requestsRefused = 0
        /// The error code of every RST_STREAM the client sent.
        var resetCodes: [UInt32] = []
        /// GOAWAY frames the client sent.
        var goAwaysReceived = 0
        /// PINGs (not ACKs) the client sent, and those the server answered.
        var pingsReceived = 0
        var pingsAnswered = 0
        /// Bytes the server wrote, over all connections.
        var bytesWritten = 0
        /// SETTINGS_MAX_HEADER_LIST_SIZE in the client's last SETTINGS, if it sent one.
        var clientMaxHeaderListSize: UInt32?
        /// Connections that ended because the client closed them.
        var connectionsClosedByClient = 0
    }

    /// Everything the connection threads and the tests share.
    private struct State {
        var misbehaviour: Misbehaviour
        var counters = Counters()
        var stopping = false
        var threads: [pthread_t] = []
        var running = 0
    }

    private let state: Mutex<State>

    /// A server that starts out misbehaving as `misbehaviour`.
    init(_ misbehaviour: Misbehaviour = .normal) {
        state = Mutex(State(misbehaviour: misbehaviour))
    }

    /// Switches the behaviour for what comes next (see the type's documentation).
    func behave(_ misbehaviour: Misbehaviour) {
        state.withLock { $0.misbehaviour = misbehaviour }
    }

    /// The current behaviour.
    var misbehaviour: Misbehaviour { state.withLock { $0.misbehaviour } }

    /// A copy of the counters.
    var counters: Counters { state.withLock { $0.counters } }

    /// The transport's connector: a socket pair whose server half a new thread serves.
    var connector: HTTP2Connector {
        { [self] (_, _) throws(APNsTransportError) -> any HTTP2ByteStream in
            var fds: [Int32] = [0, 0]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else {
                throw .connectionFailed("socketpair failed: errno \(errno)")
            }
            let number = state.withLock { state -> Int? in
                if state.stopping { return nil }
                state.counters.connectionsAccepted += 1
                state.counters.requestsPerConnection.append(0)
                state.running += 1
                return state.counters.connectionsAccepted
            }
            guard let number else {
                Glibc.close(fds[0])
                Glibc.close(fds[1])
                throw .connectionFailed("the hostile server is stopping")
            }
            let serverFD = fds[1]
            let body = Unmanaged.passRetained(ThreadBody { [self] in
                HostileConnection(server: self, fd: serverFD, number: number).run()
                state.withLock { $0.running -= 1 }
            }).toOpaque()
            var thread = pthread_t()
            let rc = pthread_create(&thread, nil, { argument in
                Unmanaged<ThreadBody>.fromOpaque(argument!).takeRetainedValue().run()
                return nil
            }, body)
            if rc != 0 {
                Unmanaged<ThreadBody>.fromOpaque(body).release()
                Glibc.close(fds[0])
                Glibc.close(serverFD)
                state.withLock { $0.running -= 1 }
                throw .connectionFailed("pthread_create failed: \(rc)")
            }
            state.withLock { $0.threads.append(thread) }
            return PlainSocketStream(fileDescriptor: fds[0])
        }
    }

    /// Stops every connection thread and joins them; `false` if some did not end within
    /// `timeout` (those are left detached rather than waited for without bound).
    @discardableResult
    func stop(timeout: Duration = .seconds(5)) async -> Bool {
        state.withLock { $0.stopping = true }
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while state.withLock({ $0.running }) > 0, clock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        let (threads, finished) = state.withLock { state in
            let threads = state.threads
            state.threads = []
            return (threads, state.running == 0)
        }
        for thread in threads {
            // Every thread has run its body to the end; joining waits only for its return.
            if finished { pthread_join(thread, nil) } else { pthread_detach(thread) }
        }
        return finished
    }

    // MARK: For the connection threads

    fileprivate var stopping: Bool { state.withLock { $0.stopping } }

    fileprivate func update(_ body: (inout Counters) -> Void) {
        state.withLock { body(&$0.counters) }
    }

    /// Counts a complete request and returns the current behaviour.
    fileprivate func requestArrived(connection: Int) -> Misbehaviour {
        state.withLock { state in
            state.counters.requestsReceived += 1
            state.counters.requestsPerConnection[connection - 1] += 1
            return state.misbehaviour
        }
    }
}

/// A thread's body, passed through `pthread_create`'s argument.
private final class ThreadBody {
    let run: () -> Void
    init(_ run: @escaping () -> Void) { self.run = run }
}

/// HTTP/2 frame types and flags (RFC 9113 §6) the hostile server writes or reads.
private enum Frame {
    static let data: UInt8 = 0x0, headers: UInt8 = 0x1, rstStream: UInt8 = 0x3, settings: UInt8 = 0x4
    static let ping: UInt8 = 0x6, goAway: UInt8 = 0x7, windowUpdate: UInt8 = 0x8, continuation: UInt8 = 0x9
    static let endStream: UInt8 = 0x1, ack: UInt8 = 0x1, endHeaders: UInt8 = 0x4
    static let maxSize = 16_384
}

/// Hand-made HPACK (RFC 7541): integers, literals, and the static-table `:status` values.
enum HandHPACK {
    /// An integer with an `prefixBits`-bit prefix (§5.1), the high bits of the first byte from `pattern`.
    static func integer(_ value: Int, prefixBits: Int, pattern: UInt8 = 0) -> [UInt8] {
        let limit = (1 << prefixBits) - 1
        if value < limit { return [pattern | UInt8(value)] }
        var bytes = [pattern | UInt8(limit)]
        var rest = value - limit
        while rest >= 128 {
            bytes.append(UInt8(rest % 128) | 0x80)
            rest /= 128
        }
        bytes.append(UInt8(rest))
        return bytes
    }

    /// A string literal without Huffman coding (§5.2).
    static func string(_ bytes: [UInt8]) -> [UInt8] {
        integer(bytes.count, prefixBits: 7) + bytes
    }

    /// `:status` `code`: indexed (§6.1) when the static table has it, else a literal
    /// without indexing whose name is static entry 8 (§6.2.2).
    static func status(_ code: Int) -> [UInt8] {
        switch code {
        case 200: [0x88]
        case 204: [0x89]
        case 206: [0x8A]
        case 304: [0x8B]
        case 400: [0x8C]
        case 404: [0x8D]
        case 500: [0x8E]
        default: status(literal: String(code))
        }
    }

    /// `:status` with any value, as a literal without indexing.
    static func status(literal value: String) -> [UInt8] {
        integer(8, prefixBits: 4) + string(Array(value.utf8))
    }

    /// A literal header field without indexing, with a new name (§6.2.2).
    static func literal(name: String, value: String) -> [UInt8] {
        [0x00] + string(Array(name.utf8)) + string(Array(value.utf8))
    }

    /// The amplifier: `x-a` with a 4,000-byte value, literal with incremental indexing
    /// (§6.2.1), so it becomes dynamic-table entry 62 (4,035 octets of the default 4,096).
    static let amplifierEntry: [UInt8] = [0x40] + string(Array("x-a".utf8)) + string([UInt8](repeating: 0x61, count: 4000))

    /// A reference to dynamic-table entry 62 (§6.1).
    static let amplifierReference: UInt8 = 0xBE
}

/// One connection's thread: reads the client's frames, writes what the behaviour says.
private final class HostileConnection {
    let server: HostileHTTP2Server
    let fd: Int32
    let number: Int
    /// The behaviour when the connection opened (for the connection-level cases).
    let opening: HostileHTTP2Server.Misbehaviour

    private var input: [UInt8] = []
    private var inputStart = 0
    private var prefaceSeen = false
    private var output: [UInt8] = []
    private var outputStart = 0
    /// Writes nothing more (``HostileHTTP2Server/Misbehaviour/noSettings``, or silence reached).
    private var silent = false
    private var requestsHere = 0
    /// Whether the amplifier entry is in the client's dynamic table.
    private var amplifierInserted = false
    /// Bodies being written: stream and bytes left, in turn.
    private var bodies: [(stream: UInt32, remaining: Int)] = []
    private var nextBody = 0
    private var limitRaised = false
    /// Streams whose request HEADERS had END_STREAM but no END_HEADERS yet.
    private var headersAwaitingEnd: Set<UInt32> = []
    /// The client's SETTINGS_INITIAL_WINDOW_SIZE (RFC 9113 §6.5.2 default until it says).
    private var clientStreamWindow = 65_535
    private static let zeros = [UInt8](repeating: 0, count: Frame.maxSize)

    init(server: HostileHTTP2Server, fd: Int32, number: Int) {
        self.server = server
        self.fd = fd
        self.number = number
        self.opening = server.misbehaviour
    }

    func run() {
        defer { Glibc.close(fd) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        switch opening {
        case .noSettings: silent = true
        case .streamLimitZero: settings(maxConcurrentStreams: 0)
        case .closeAtOnce: return
        case .zeroWindow: frame(Frame.settings, [0x00, 0x03] + Self.bigEndian(100) + [0x00, 0x04] + Self.bigEndian(0))
        case .settingsThenClose:
            settings(maxConcurrentStreams: 100)
            _ = flush()
            return
        default: settings(maxConcurrentStreams: 100)
        }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while !server.stopping {
            if case .streamLimitZero = opening, !limitRaised, server.misbehaviour == .normal {
                limitRaised = true
                settings(maxConcurrentStreams: 100)
            }
            fillBodies()
            guard flush() else { return }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN) | (hasOutput ? Int16(POLLOUT) : 0), revents: 0)
            _ = poll(&pfd, 1, 10)
            for _ in 0..<16 {
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n == 0 {
                    server.update { $0.connectionsClosedByClient += 1 }
                    return
                }
                if n < 0 {
                    if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { break }
                    server.update { $0.connectionsClosedByClient += 1 }
                    return
                }
                input.append(contentsOf: buffer[0..<n])
            }
            parse()
        }
    }

    // MARK: Writing

    private var hasOutput: Bool { outputStart < output.count }

    /// Writes what the socket takes; `false` when the client is gone.
    private func flush() -> Bool {
        var written = 0
        defer { if written > 0 { server.update { $0.bytesWritten += written } } }
        while hasOutput {
            let n = output.withUnsafeBytes {
                send(fd, $0.baseAddress! + outputStart, $0.count - outputStart, Int32(MSG_NOSIGNAL))
            }
            if n > 0 {
                outputStart += n
                written += n
                continue
            }
            if n < 0, errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { break }
            server.update { $0.connectionsClosedByClient += 1 }
            return false
        }
        if outputStart == output.count {
            output.removeAll(keepingCapacity: output.capacity <= 1 << 20)
            outputStart = 0
        } else if outputStart > 1 << 20 {
            output.removeFirst(outputStart)
            outputStart = 0
        }
        return true
    }

    private func frame(_ type: UInt8, flags: UInt8 = 0, stream: UInt32 = 0, _ payload: some Collection<UInt8>) {
        guard !silent else { return }
        let length = payload.count
        output += [UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), type, flags]
        output += Self.bigEndian(stream & 0x7FFF_FFFF)
        output += payload
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    private func settings(maxConcurrentStreams: UInt32) {
        frame(Frame.settings, [0x00, 0x03] + Self.bigEndian(maxConcurrentStreams))
    }

    /// A header block as HEADERS plus CONTINUATION frames of at most 16,384 bytes.
    private func headerBlock(stream: UInt32, _ block: [UInt8], endStream: Bool) {
        var start = 0
        repeat {
            let end = min(block.count, start + Frame.maxSize)
            let last = end == block.count
            let flags = (start == 0 && endStream ? Frame.endStream : 0) | (last ? Frame.endHeaders : 0)
            frame(start == 0 ? Frame.headers : Frame.continuation, flags: flags, stream: stream, block[start..<end])
            start = end
        } while start < block.count
    }

    /// Adds DATA frames of the bodies in progress, in turn, while less than 256 KiB waits.
    private func fillBodies() {
        while !silent, !bodies.isEmpty, output.count - outputStart < 1 << 18 {
            nextBody %= bodies.count
            let size = min(Frame.maxSize, bodies[nextBody].remaining)
            bodies[nextBody].remaining -= size
            let done = bodies[nextBody].remaining == 0
            frame(Frame.data, flags: done ? Frame.endStream : 0, stream: bodies[nextBody].stream, Self.zeros[0..<size])
            if done { bodies.remove(at: nextBody) } else { nextBody += 1 }
        }
    }

    // MARK: Reading

    private func parse() {
        if !prefaceSeen {
            guard input.count - inputStart >= 24 else { return }
            inputStart += 24
            prefaceSeen = true
        }
        while input.count - inputStart >= 9 {
            let h = inputStart
            let length = Int(input[h]) << 16 | Int(input[h + 1]) << 8 | Int(input[h + 2])
            guard input.count - inputStart >= 9 + length else { break }
            let type = input[h + 3], flags = input[h + 4]
            let stream = UInt32(input[h + 5] & 0x7F) << 24 | UInt32(input[h + 6]) << 16 | UInt32(input[h + 7]) << 8 | UInt32(input[h + 8])
            let payload = input[(h + 9)..<(h + 9 + length)]
            inputStart += 9 + length
            handle(type: type, flags: flags, stream: stream, payload: payload)
        }
        if inputStart == input.count {
            input.removeAll(keepingCapacity: true)
            inputStart = 0
        } else if inputStart > 1 << 16 {
            input.removeFirst(inputStart)
            inputStart = 0
        }
    }

    private func handle(type: UInt8, flags: UInt8, stream: UInt32, payload: ArraySlice<UInt8>) {
        switch type {
        case Frame.settings where flags & Frame.ack == 0:
            var index = payload.startIndex
            while index + 6 <= payload.endIndex {
                let id = UInt16(payload[index]) << 8 | UInt16(payload[index + 1])
                let value = payload[(index + 2)..<(index + 6)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                if id == 0x6 { server.update { $0.clientMaxHeaderListSize = value } }
                if id == 0x4 { clientStreamWindow = Int(value) }
                index += 6
            }
            frame(Frame.settings, flags: Frame.ack, [UInt8]())
        case Frame.ping where flags & Frame.ack == 0:
            server.update { $0.pingsReceived += 1 }
            if !silent {
                server.update { $0.pingsAnswered += 1 }
                frame(Frame.ping, flags: Frame.ack, payload)
            }
        case Frame.headers:
            server.update { $0.headersReceived += 1 }
            if flags & Frame.endStream != 0 {
                if flags & Frame.endHeaders != 0 { requestArrived(stream: stream) } else { headersAwaitingEnd.insert(stream) }
            }
        case Frame.continuation where flags & Frame.endHeaders != 0:
            if headersAwaitingEnd.remove(stream) != nil { requestArrived(stream: stream) }
        case Frame.data:
            if !payload.isEmpty {
                // Keep the client's connection window open (its bodies are small anyway).
                frame(Frame.windowUpdate, Self.bigEndian(UInt32(payload.count)))
            }
            if flags & Frame.endStream != 0 { requestArrived(stream: stream) }
        case Frame.rstStream:
            let code = payload.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            server.update { $0.resetCodes.append(code) }
            bodies.removeAll { $0.stream == stream }
        case Frame.goAway:
            server.update { $0.goAwaysReceived += 1 }
        default:
            break
        }
    }

    // MARK: Answering

    private func requestArrived(stream: UInt32) {
        let current = server.requestArrived(connection: number)
        requestsHere += 1
        if case .silentAfter(let requests) = opening, requestsHere > requests { silent = true }
        guard !silent else { return }
        if case .streamLimitZero = opening, !limitRaised {
            server.update { $0.requestsRefused += 1 }
            frame(Frame.rstStream, stream: stream, Self.bigEndian(0x7))
            return
        }
        let apnsID = HandHPACK.literal(name: "apns-id", value: String(format: "00000000-0000-4000-8000-%012X", stream))
        switch current {
        case .normal, .streamLimitZero, .noSettings, .silentAfter, .closeAtOnce, .settingsThenClose, .zeroWindow:
            headerBlock(stream: stream, HandHPACK.status(200) + apnsID, endStream: true)
        case .hpackAmplification(let references, let status):
            var block = HandHPACK.status(status) + apnsID
            if !amplifierInserted {
                amplifierInserted = true
                block += HandHPACK.amplifierEntry
            }
            block += [UInt8](repeating: HandHPACK.amplifierReference, count: references)
            headerBlock(stream: stream, block, endStream: true)
        case .stalledBody(let status):
            headerBlock(stream: stream, HandHPACK.status(status) + apnsID, endStream: false)
        case .endlessBody(let status, let bytes):
            headerBlock(stream: stream, HandHPACK.status(status) + apnsID, endStream: false)
            bodies.append((stream, max(1, min(bytes, clientStreamWindow))))
        case .garbage:
            // A DATA frame header on stream 0 claiming 16 MiB - 1 bytes (beyond any
            // SETTINGS_MAX_FRAME_SIZE), then junk: no valid frame boundary follows.
            output += [0xFF, 0xFF, 0xFF, Frame.data, 0x00, 0x00, 0x00, 0x00, 0x00]
            output += [UInt8](repeating: 0xEE, count: 64)
        case .badStatus:
            headerBlock(stream: stream, HandHPACK.status(literal: "abc") + apnsID, endStream: true)
        case .windowOverflow:
            frame(Frame.windowUpdate, Self.bigEndian(0x7FFF_FFFF))
            frame(Frame.windowUpdate, Self.bigEndian(0x7FFF_FFFF))
        case .continuationFlood(let frames):
            frame(Frame.headers, flags: Frame.endStream, stream: stream, HandHPACK.status(200))
            for _ in 0..<frames { frame(Frame.continuation, stream: stream, [UInt8]()) }
        }
    }
}
