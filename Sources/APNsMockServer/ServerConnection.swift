import APNsOpenSSL
import APNsTransport
import CNGHTTP2
import COpenSSL
import Foundation
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// One client connection: TLS on a non-blocking socket, an nghttp2 server session fed
/// with `nghttp2_session_mem_recv` and drained with `nghttp2_session_mem_send`.
///
/// It does the I/O and the HTTP/2 glue: each complete request goes to the loop's
/// ``RequestHandler``, which decides the answer, and the connection performs the
/// ``RequestHandler/Reply`` (answer now or later, GOAWAY, drop, break, go silent). A valid
/// device push like the last one the handler accepted on this connection is answered
/// `200` on a fast path instead, from the bytes nghttp2 hands over (no `String` per
/// field, no handler, no lock per request), when that answer is certain: see
/// ``judgeHeaders(of:)`` and ``answerQuickly(_:streamID:session:)``. Anything else
/// (an error, a script, an observer, recording) takes the handler's path unchanged.
///
/// Lives on the server thread only. nghttp2 callbacks never close the connection or
/// flush; they set state that ``handle(revents:)`` acts on once `mem_recv` returns.
///
/// Its stored properties (and those of ``Stream``) are `@exclusivity(unchecked)`: they are
/// touched on the server thread only, never through overlapping accesses, and the dynamic
/// exclusivity checks cost about a tenth of the server's CPU per request (perf, h2load).
///
/// This file holds the TLS and HTTP/2 I/O, the connection's phases and the commands a
/// script sends it; the request streams' records are in `ServerConnection+Streams.swift`,
/// answering a complete request in `ServerConnection+Answers.swift`, and nghttp2's
/// callbacks in `ServerConnection+Callbacks.swift`. State those extensions share is
/// internal to the module rather than private; nothing outside this type touches it.
final class ServerConnection {
    private enum Phase {
        case handshaking
        case open
        /// GOAWAY submitted: answer the streams it covers, then drain.
        case goingAway(deadline: ContinuousClock.Instant)
        /// TLS close_notify and TCP FIN sent; wait for the client to close.
        case draining(deadline: ContinuousClock.Instant)
        /// ``MockAPNsServer/breakProtocol(atRequest:)`` wrote an invalid frame: write what
        /// was queued up to it and nothing after, keep reading (to see the client's GOAWAY)
        /// but process no request, until the client closes.
        case broken
        /// ``MockAPNsServer/blackHoleConnection(atRequest:)``: write nothing, read and
        /// discard everything (so the client's close is seen), until the client closes.
        case silent
        case closed
    }


    /// Closed streams kept for reuse, so a request costs no new object or buffers.
    @exclusivity(unchecked) var spareStreams: [Stream] = []
    /// Header names and values seen lately on this connection, reused when they repeat.
    @exclusivity(unchecked) var headerStrings = HeaderStringCache()
    /// Reused by ``submitResponse(streamID:_:)``: the fields' bytes and
    /// nghttp2's name-value array (nghttp2 copies both when a response is submitted).
    @exclusivity(unchecked) var responseFieldBytes: [UInt8] = []
    @exclusivity(unchecked) var responseFieldLengths: [(name: Int, value: Int)] = []
    @exclusivity(unchecked) var responseFields: [nghttp2_nv] = []

    /// What the last device push accepted on the full path carried, and the checks that
    /// let a request like it be answered without the full path (see ``FastAnswers``).
    @exclusivity(unchecked) var fast = FastAnswers()
    /// The shape's `authorization` bytes, which request streams refer to instead of
    /// copying them (see ``RequestFields``).
    var sharedAuthorization: UnsafeMutableBufferPointer<UInt8>? { fast.sharedAuthorization }
    /// The `apns-id` of a fast answer (its first 36 bytes) and, from a sandbox server, its
    /// `apns-unique-id` (the next 36), written here before nghttp2 copies them.
    @exclusivity(unchecked) var answerID = [UInt8](repeating: 0, count: 72)

    /// The stream opened last: its header fields, body and end arrive one after the other,
    /// so most look-ups need no hashing. Unretained: ``streams`` holds it, and it is
    /// cleared whenever it leaves ``streams``.
    @exclusivity(unchecked) var lastStreamID: Int32 = 0
    @exclusivity(unchecked) var lastStream: Unmanaged<Stream>?

    /// A body that came whole in one DATA frame with END_STREAM, still where nghttp2 read it
    /// (in ``ServerLoop/readBuffer``, valid until `nghttp2_session_mem_recv` returns): the
    /// request is decided right after it (``requestComplete(streamID:)``), so the fast path
    /// reads it in place and nothing is copied. Any other body, or this one if the request
    /// was not decided before the read ends, is copied into ``Stream/body``
    /// (``keepPendingBody()``). At most one at a time; the stream is held by ``streams``.
    @exclusivity(unchecked) var pendingBody: (stream: Unmanaged<Stream>, bytes: UnsafeBufferPointer<UInt8>)?

    struct Delayed {
        var due: ContinuousClock.Instant
        var received: ContinuousClock.Instant
        var streamID: Int32
        var response: RequestHandler.Response
        var goAwayReason: String?
    }

    let fd: Int32
    let number: Int
    /// The loop that owns this connection (it holds every connection it serves until the
    /// connection closes, and removes them all before it goes): unowned and unchecked, as
    /// the fast path reads it for every request.
    unowned(unsafe) let loop: ServerLoop
    /// The connection's TLS state (APNsOpenSSL owns the `SSL *`); `nil` once closed.
    @exclusivity(unchecked) private var tls: SSLSession?
    @exclusivity(unchecked) var session: OpaquePointer?
    /// The free lists nghttp2 allocates the session's blocks from (streams, outbound
    /// items, header copies), so that a request's blocks are the last one's: under h2load
    /// at 4 × 1,000 streams, 0.3 mallocs per request instead of 8.2 (fastmock, which uses
    /// malloc: 8.1). Outlives ``session``. Given back once the connection has had no
    /// request open, and opened none, for the configuration's `sessionMemoryIdleDelay`
    /// (``trimDue``), not at every pause: a client that keeps a hundred requests in flight
    /// leaves none open for a moment many times a second.
    @exclusivity(unchecked) private var sessionMemory: HTTP2SessionMemory?
    /// When the session's cached blocks are given back, if no request opens before.
    @exclusivity(unchecked) var trimDue: ContinuousClock.Instant?
    /// A request opened since ``handle(revents:)`` last looked: ``trimDue`` no longer holds.
    /// A flag, so that opening a request is a store of a byte rather than a call to the
    /// standard library's code for an optional `ContinuousClock.Instant` (whose layout it
    /// keeps to itself).
    @exclusivity(unchecked) var openedSinceLook = false
    /// The bytes the session keeps cached for reuse (`nil` without a session).
    var sessionCachedBytes: Int? { sessionMemory?.cachedBytes }
    @exclusivity(unchecked) private var phase = Phase.handshaking
    @exclusivity(unchecked) private var output: [UInt8] = []
    @exclusivity(unchecked) private var outputStart = 0
    @exclusivity(unchecked) private var sslWantsWrite = false
    @exclusivity(unchecked) var dropRequested = false
    /// ``MockAPNsServer/breakProtocol(atRequest:)`` fired: ``flush()`` writes the invalid
    /// frame once nghttp2's queued output is out (never from inside an nghttp2 callback).
    @exclusivity(unchecked) var breakRequested = false
    /// The request streams being received, or answered on the full path: one answered on
    /// the fast path leaves as soon as it is answered (see ``requestComplete(streamID:)``).
    @exclusivity(unchecked) var streams = StreamTable()
    @exclusivity(unchecked) var delayed: [Delayed] = []
    @exclusivity(unchecked) var headerBlockBytes = 0
    /// The stream identifiers the client has used (see ``ClientStreamIDs``).
    @exclusivity(unchecked) var clientStreamIDs = ClientStreamIDs()
    /// What the request handler keeps for this connection (token rules, certificate topics).
    @exclusivity(unchecked) var requestState: RequestHandler.ConnectionState
    /// The last-stream-id of the GOAWAY this connection sent, if any: streams above it are
    /// never processed (RFC 9113 §6.8), so a client may safely send them again elsewhere.
    @exclusivity(unchecked) var goAwayLastStreamID: Int32?
    /// How each header was represented on the wire, read beside nghttp2.
    @exclusivity(unchecked) var headerTap = HeaderBlockTap()
    /// The link emulation, when one is set (see ``MockAPNsServer/setLinkEmulation(_:)``).
    @exclusivity(unchecked) private var shaper: LinkShaper?
    /// Reused to gather nghttp2's output for the shaper.
    @exclusivity(unchecked) private var shapedChunk: [UInt8] = []
    /// Whether this connection authenticates with provider tokens (it starts at one stream).
    var tokenMode: Bool { requestState.authorizer != nil }

    init?(fd: Int32, number: Int, loop: ServerLoop) {
        guard let tls = try? loop.tls.sslContext.makeSession(), tls.attach(to: fd) else { return nil }
        tls.acceptHandshakes()
        self.tls = tls
        self.fd = fd
        self.number = number
        self.loop = loop
        self.requestState = loop.handler.makeConnectionState(number: number)
        fast.deviceTokenDigits = loop.configuration.deviceTokenDigits
    }

    deinit {
        close()
        fast.releaseSharedAuthorization()
    }

    /// A DATA frame (type 0x0) with no payload and no flags on stream 0: RFC 9113 §6.1
    /// makes it a connection error of type PROTOCOL_ERROR, as DATA belongs to a stream.
    static let dataFrameOnStreamZero: [UInt8] = [0, 0, 0, 0x0, 0x0, 0, 0, 0, 0]

    /// Whether a request that completes now is processed: not once the script dropped,
    /// broke or silenced this connection (requests later in the same read included).
    var processesRequests: Bool {
        switch phase {
        case .open, .goingAway: return !dropRequested && !breakRequested
        default: return false
        }
    }

    var isClosed: Bool {
        if case .closed = phase { return true }
        return false
    }

    var pollEvents: Int16 {
        if case .silent = phase { return Int16(POLLIN) }
        let wantsOutput = sslWantsWrite || outputStart < output.count
        return Int16(POLLIN) | (wantsOutput ? Int16(POLLOUT) : 0)
    }

    var nextDeadline: ContinuousClock.Instant? {
        var earliest = delayed.map(\.due).min()
        if let shaper, let release = shaper.nextRelease(after: .now) { earliest = min(earliest ?? release, release) }
        if let trimDue { earliest = min(earliest ?? trimDue, trimDue) }
        switch phase {
        case .goingAway(let deadline), .draining(let deadline):
            earliest = min(earliest ?? deadline, deadline)
        default: break
        }
        return earliest
    }

    // MARK: I/O

    func handle(revents: Int16) {
        switch phase {
        case .handshaking:
            handshake()
        case .open, .goingAway, .broken:
            readAvailable()
            flush()
            // Opening a request cancels `trimDue` (``openStream(_:)``), so the idle time
            // starts again from the first look that finds none open.
            if openedSinceLook {
                openedSinceLook = false
                trimDue = nil
            }
            if streams.isEmpty, trimDue == nil, let sessionMemory, sessionMemory.cachedBytes > 0 {
                trimDue = .now + loop.configuration.sessionMemoryIdleDelay
            }
        case .draining, .silent:
            discardInput()
        case .closed:
            return
        }
        if revents & Int16(POLLERR | POLLNVAL) != 0 { close() }
    }

    /// Makes each waiting answer due `delay` after its request arrived.
    func rescheduleDelayed(_ delay: Duration) {
        for index in delayed.indices { delayed[index].due = delayed[index].received + delay }
    }

    func runTimers(now: ContinuousClock.Instant) {
        switch phase {
        case .goingAway(let deadline) where deadline <= now, .draining(let deadline) where deadline <= now:
            close()
            return
        default: break
        }
        if let shaper, let release = shaper.nextRelease(after: now), release <= now { flush() }
        if !openedSinceLook, let due = trimDue, due <= now {
            trimDue = nil
            // No request has opened since it was set, when none was open.
            sessionMemory?.releaseCached()
        }
        guard !delayed.isEmpty, session != nil else { return }
        var due: [Delayed] = []
        delayed.removeAll { entry in
            if entry.due <= now {
                due.append(entry)
                return true
            }
            return false
        }
        guard !due.isEmpty else { return }
        for entry in due {
            // GOAWAY first: its last-stream-id already covers this stream, and a client
            // that stops reading after its last answer still sees it.
            if let reason = entry.goAwayReason { goAway(reason: reason) }
            submitResponse(streamID: entry.streamID, entry.response)
        }
        flush()
    }

    private func handshake() {
        guard let tls else { return }
        let result = tls.handshake()
        if result == 1 {
            guard tls.selectedH2 else {
                loop.logger.debug("refusing a client that did not offer ALPN h2", metadata: ["connection": "\(number)"])
                close()
                return
            }
            sslWantsWrite = false
            switch loop.configuration.authentication {
            case .certificate:
                // The handshake required and verified a certificate (SSL_VERIFY_FAIL_IF_NO_PEER_CERT).
                guard let certificate = tls.peerCertificate() else {
                    close()
                    return
                }
                requestState.certificateTopics = CertificateTopics.topics(of: certificate)
            case .providerTokenOrCertificate:
                // A verified certificate makes a certificate connection; none, a token one.
                if let certificate = tls.peerCertificate() {
                    requestState.certificateTopics = CertificateTopics.topics(of: certificate)
                    requestState.authorizer = nil
                }
            case .none, .providerToken:
                break
            }
            guard startSession() else {
                close()
                return
            }
            phase = .open
            readAvailable()
            flush()
            return
        }
        switch tls.error(for: result) {
        case SSL_ERROR_WANT_READ: sslWantsWrite = false
        case SSL_ERROR_WANT_WRITE: sslWantsWrite = true
        default:
            loop.logger.debug("TLS handshake failed", metadata: ["connection": "\(number)"])
            ERR_clear_error()
            close()
        }
    }

    private func startSession() -> Bool {
        var session: OpaquePointer?
        let memory = HTTP2SessionMemory()
        var allocator = memory.allocator
        guard nghttp2_session_server_new3(&session, loop.callbacks, Unmanaged.passUnretained(self).toOpaque(), nil, &allocator) == 0,
              let session
        else { return false }
        self.session = session
        sessionMemory = memory
        shaper = loop.state.shared.withLock { $0.link }.map { LinkShaper(link: $0, start: .now) }
        let limit = tokenMode ? 1 : loop.state.shared.withLock { $0.maxConcurrentStreams }
        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: UInt32(clamping: limit)),
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue),
                value: UInt32(ServerConnection.maxHeaderListSize)
            ),
        ]
        return nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count) == 0
    }

    private func readAvailable() {
        while let tls, let session {
            let count = loop.readBuffer.withUnsafeMutableBytes { tls.read(into: $0) }
            if count > 0 {
                // After the read, before its requests: a script set before the client sent
                // them is seen (one lock per read).
                loop.refreshFastPath()
                headerTap.keepsBlocks = loop.recordsRequests
                let consumed = loop.readBuffer.withUnsafeBytes {
                    headerTap.feed(UnsafeRawBufferPointer(rebasing: $0[0..<Int(count)]))
                    return nghttp2_session_mem_recv(session, $0.baseAddress?.assumingMemoryBound(to: UInt8.self), Int(count))
                }
                // The read buffer is about to be reused.
                keepPendingBody()
                if consumed < 0 || dropRequested {
                    if consumed < 0 { writeGoAway(afterFatalError: consumed) }
                    close()
                    return
                }
                if case .silent = phase { return }
                // Nothing left in OpenSSL's buffer: what else arrives, poll(2) reports;
                // reading on now would mostly end in EAGAIN, a system call for nothing.
                if !tls.hasPendingBytes { return }
                continue
            }
            switch tls.error(for: count) {
            case SSL_ERROR_WANT_READ:
                return
            case SSL_ERROR_WANT_WRITE:
                sslWantsWrite = true
                return
            default:  // close_notify, EOF, reset
                ERR_clear_error()
                close()
                return
            }
        }
    }

    func flush() {
        // Fast answers are counted before any answer leaves.
        loop.countFastAnswers()
        if case .silent = phase { return }
        while let tls, let session {
            if outputStart < output.count {
                let written = output.withUnsafeBytes { bytes -> Int32 in
                    tls.write(UnsafeRawBufferPointer(rebasing: bytes[outputStart...]))
                }
                if written > 0 {
                    outputStart += Int(written)
                    if outputStart == output.count {
                        output.removeAll(keepingCapacity: true)
                        outputStart = 0
                    }
                    continue
                }
                switch tls.error(for: written) {
                case SSL_ERROR_WANT_WRITE:
                    sslWantsWrite = true
                    return
                case SSL_ERROR_WANT_READ:
                    return
                default:
                    ERR_clear_error()
                    close()
                    return
                }
            }
            sslWantsWrite = false
            if shaper != nil {
                guard shapeOutput() else { return }
                if outputStart < output.count { continue }
                break
            }
            // A broken connection ends its output with the invalid frame.
            if case .broken = phase { break }
            var produced = false
            while output.count < 64 * 1024 {
                var chunk: UnsafePointer<UInt8>?
                let length = nghttp2_session_mem_send(session, &chunk)
                if length < 0 {
                    close()
                    return
                }
                guard length > 0, let chunk else { break }
                output.append(contentsOf: UnsafeBufferPointer(start: chunk, count: length))
                produced = true
            }
            if !produced {
                guard breakRequested else { break }
                // Everything nghttp2 had queued is out (each chunk is whole frames), so the
                // invalid frame starts on a frame boundary; nothing follows it.
                breakRequested = false
                phase = .broken
                output.append(contentsOf: Self.dataFrameOnStreamZero)
            }
        }
        guard let session else { return }
        if dropRequested {
            close()
            return
        }
        let shaperIdle = shaper?.isEmpty ?? true
        if case .goingAway = phase, streams.isEmpty, delayed.isEmpty, outputStart == output.count, shaperIdle {
            startDraining()
        } else if nghttp2_session_want_read(session) == 0, nghttp2_session_want_write(session) == 0,
                  outputStart == output.count, shaperIdle {
            close()
        }
    }

    /// With a link emulation: moves nghttp2's output (and, for
    /// ``MockAPNsServer/breakProtocol(atRequest:)``, the invalid frame after it) into the
    /// shaper, then what may leave now into `output`. Returns `false` if the connection closed.
    private func shapeOutput() -> Bool {
        guard let session, shaper != nil else { return true }
        let now = ContinuousClock.now
        if case .broken = phase {} else {
            shapedChunk.removeAll(keepingCapacity: true)
            while shapedChunk.count < 64 * 1024 {
                var chunk: UnsafePointer<UInt8>?
                let length = nghttp2_session_mem_send(session, &chunk)
                if length < 0 {
                    close()
                    return false
                }
                guard length > 0, let chunk else { break }
                shapedChunk.append(contentsOf: UnsafeBufferPointer(start: chunk, count: length))
            }
            if shapedChunk.isEmpty, breakRequested {
                // Whole frames only were queued before it, so it starts on a frame boundary.
                breakRequested = false
                phase = .broken
                shapedChunk.append(contentsOf: Self.dataFrameOnStreamZero)
            }
            shaper?.enqueue(shapedChunk, at: now)
        }
        shaper?.release(at: now, into: &output)
        return true
    }

    /// Puts the connection behind `link`, or (`nil`) sends what waits at once and stops shaping.
    func setLink(_ link: MockAPNsServer.LinkEmulation?) {
        if case .silent = phase { return }
        shaper?.releaseAll(into: &output)
        shaper = link.map { LinkShaper(link: $0, start: .now) }
        flush()
    }

    private func startDraining() {
        guard let tls else { return }
        tls.sendCloseNotify()
        ERR_clear_error()
        shutdown(fd, Int32(SHUT_WR))
        phase = .draining(deadline: .now + .seconds(1))
    }

    private func discardInput() {
        guard let tls else { return }
        while true {
            let count = loop.readBuffer.withUnsafeMutableBytes { tls.read(into: $0) }
            if count > 0 { continue }
            let error = tls.error(for: count)
            if error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE { return }
            ERR_clear_error()
            close()
            return
        }
    }

    /// Writes what nghttp2 has queued (a GOAWAY just submitted, answers not yet written)
    /// and close_notify, as far as the socket takes them without waiting, then closes: the
    /// client sees the server go away, not a connection cut (``MockAPNsServer/stop()``).
    /// Never call it from inside an nghttp2 callback.
    func flushAndClose() {
        defer { close() }
        guard let tls, let session else { return }
        switch phase {
        case .silent, .broken, .draining, .closed: return
        case .handshaking, .open, .goingAway: break
        }
        // What a link emulation holds back leaves now: the server is going.
        shaper?.releaseAll(into: &output)
        shaper = nil
        while true {
            var chunk: UnsafePointer<UInt8>?
            let length = nghttp2_session_mem_send(session, &chunk)
            guard length > 0, let chunk else { break }
            output.append(contentsOf: UnsafeBufferPointer(start: chunk, count: length))
        }
        writeWithoutWaiting(tls)
    }

    /// Writes the output as far as the socket takes it without waiting, then close_notify
    /// if all of it went: the last words of a connection about to close.
    private func writeWithoutWaiting(_ tls: SSLSession) {
        while outputStart < output.count {
            let written = output.withUnsafeBytes { bytes -> Int32 in
                tls.write(UnsafeRawBufferPointer(rebasing: bytes[outputStart...]))
            }
            guard written > 0 else { break }
            outputStart += Int(written)
        }
        if outputStart == output.count { tls.sendCloseNotify() }
        ERR_clear_error()
    }

    /// nghttp2's fatal errors with a GOAWAY code of their own: a flood of frames
    /// (`NGHTTP2_ERR_FLOODED`) and more CONTINUATION frames after one HEADERS than it takes
    /// (`NGHTTP2_ERR_TOO_MANY_CONTINUATIONS`, -905 in libnghttp2 1.61 and in the distributions'
    /// patched older ones; a number, so that the server builds against a libnghttp2 without it).
    private static let fatalErrorsToCalm: Set<Int> = [Int(NGHTTP2_ERR_FLOODED.rawValue), -905]

    /// After `nghttp2_session_mem_recv` failed with a fatal `error`, nghttp2 sends nothing
    /// more on the session, not even the GOAWAY it would send for a connection error: the
    /// connection would end in a bare close, which a client cannot tell from a crash. RFC 9113
    /// §5.4.1 asks for a GOAWAY first, so one is written here, after whatever answers were
    /// already queued (whole frames), without waiting for the socket, then close_notify:
    /// ENHANCE_YOUR_CALM for nghttp2's flood guards, INTERNAL_ERROR otherwise, and none for
    /// a client that did not send the HTTP/2 preface (§3.4: it does not speak HTTP/2).
    private func writeGoAway(afterFatalError error: Int) {
        guard let tls, let session, error != Int(NGHTTP2_ERR_BAD_CLIENT_MAGIC.rawValue) else { return }
        switch phase {
        case .open, .goingAway: break
        default: return
        }
        let code = Self.fatalErrorsToCalm.contains(error) ? NGHTTP2_ENHANCE_YOUR_CALM.rawValue : NGHTTP2_INTERNAL_ERROR.rawValue
        let lastStreamID = UInt32(bitPattern: min(nghttp2_session_get_last_proc_stream_id(session), goAwayLastStreamID ?? .max))
        // RFC 9113 §6.8: length 8, type 0x7, no flags, stream 0; last-stream-id; error code.
        var frame: [UInt8] = [0, 0, 8, 0x7, 0, 0, 0, 0, 0]
        for value in [lastStreamID, code] { frame += [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) } }
        shaper?.releaseAll(into: &output)
        output.append(contentsOf: frame)
        writeWithoutWaiting(tls)
        goAwaySent(lastStreamID: Int32(bitPattern: lastStreamID))
    }

    /// Closes at once: no GOAWAY, no close_notify. Safe to call twice; never call it
    /// from inside an nghttp2 callback.
    func close() {
        if case .closed = phase { return }
        phase = .closed
        if let session { nghttp2_session_del(session) }
        session = nil
        // After the session: it gave its blocks back to these free lists as it went.
        sessionMemory = nil
        trimDue = nil
        // SSL_free (and the BIOs on the socket) as the last reference goes; the socket next.
        tls = nil
        Glibc.close(fd)
        pendingBody = nil
        lastStream = nil
        streams.removeAll()
        shaper = nil
        delayed.removeAll()
    }

    // MARK: Commands

    /// Submits GOAWAY with the last stream this connection processed and, when `reason`
    /// is given, `{"reason": …}` as debug data (RFC 9113 §6.8); does not flush.
    func goAway(reason: String?) {
        guard let session else {
            close()
            return
        }
        switch phase {
        case .open, .handshaking: break
        default: return
        }
        let lastStreamID = nghttp2_session_get_last_proc_stream_id(session)
        goAwayLastStreamID = lastStreamID
        let debugData = reason.flatMap { $0.isEmpty ? nil : Array(ScriptedResponse(status: 0, reason: $0).jsonBody.utf8) } ?? []
        _ = nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), lastStreamID,
                                  NGHTTP2_NO_ERROR.rawValue, debugData, debugData.count)
        phase = .goingAway(deadline: .now + .seconds(5))
        loop.state.shared.withLock { $0.statistics.goAways += 1 }
    }

    /// A GOAWAY left: ours (``goAway(reason:)`` noted it already) or one nghttp2 sent by
    /// itself, which is counted and whose last-stream-id then holds like ours.
    func goAwaySent(lastStreamID: Int32) {
        if goAwayLastStreamID == nil {
            loop.state.shared.withLock { $0.statistics.goAways += 1 }
        }
        goAwayLastStreamID = min(goAwayLastStreamID ?? .max, lastStreamID)
    }

    /// Stops writing and processing for good (``MockAPNsServer/blackHoleConnection(atRequest:)``):
    /// output not yet written and answers still waiting are dropped; from now on the
    /// connection only reads and discards, so it closes when the client does.
    func goSilent() {
        phase = .silent
        shaper?.removeAll()
        delayed.removeAll()
        output.removeAll()
        outputStart = 0
        sslWantsWrite = false
    }

    /// Announces a new SETTINGS_MAX_CONCURRENT_STREAMS.
    func applyStreamLimit(_ limit: Int) {
        submitStreamLimit(limit)
        requestState.streamLimitRaised = true
        flush()
    }

    /// Queues a SETTINGS frame with SETTINGS_MAX_CONCURRENT_STREAMS = `limit`.
    func submitStreamLimit(_ limit: Int) {
        guard let session else { return }
        var settings = [nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: UInt32(clamping: limit))]
        _ = nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, 1)
    }
}
