import APNsCore
import CNGHTTP2
import Logging

/// One HTTP/2 client connection as a pure state machine over an nghttp2 client session:
/// bytes in (``receive(_:)``), bytes out (``collectOutput(into:)``), events out
/// (``takeEvents(into:)``). It never touches a socket, a thread or a clock, so the tests
/// drive it against an nghttp2 server session in memory.
///
/// What it does for APNs:
/// - honours the server's SETTINGS: the stream limit starts at 1 (APNs raises it after the
///   first answered request with token authentication) and ``availableStreams`` follows
///   every change; the header table size goes to the ``APNsCore/APNsHeaderEncoder`` policy;
/// - opens large flow-control windows (stream and connection) so responses never stall;
/// - sends each request as one HEADERS frame and, when it has a body, one DATA frame with
///   END_STREAM (nghttp2 splits the body only above the 16,384-octet maximum frame size);
/// - applies the header policy's indexing decisions as `NGHTTP2_NV_FLAG_NO_INDEX`;
/// - never sends PRIORITY (Apple asks providers not to): requests carry no priority and
///   the initial SETTINGS include `SETTINGS_NO_RFC7540_PRIORITIES = 1` (RFC 9218 §2.1).
///
/// Not thread-safe: one I/O thread owns it.
final class HTTP2ConnectionStateMachine {
    /// Flow-control and limit knobs.
    struct Configuration: Sendable {
        /// SETTINGS_INITIAL_WINDOW_SIZE we announce, per stream (RFC 9113 §6.9.2).
        var streamWindowSize: Int32 = 1 << 24
        /// The connection-level receive window we open with WINDOW_UPDATE.
        var connectionWindowSize: Int32 = 1 << 30
        /// The stream limit assumed before the server's first SETTINGS arrives.
        var initialStreamLimit = 1
        /// A cap on streams, whatever the server allows.
        var maxStreamLimit = 1000
        /// SETTINGS_MAX_HEADER_LIST_SIZE we announce and enforce on responses (RFC 9113 §6.5.2).
        var maxHeaderListSize = 16_384
        /// The largest response body of a push.
        var maxBodySize = 16_384
        /// The largest response body of a channel management request (`/1/…`).
        var maxChannelBodySize = 4 << 20
        /// Where every frame sent and received is logged at `.trace` (see
        /// ``HTTP2FrameTrace``); `nil`, the usual case, logs none.
        var frameLogger: Logger?
    }

    private let session: OpaquePointer
    private let sink: HTTP2SessionSink
    /// The session's allocator's free lists; released after the session (see `deinit`).
    private let memory: HTTP2SessionMemory

    /// Creates the session and queues the client preface's SETTINGS and WINDOW_UPDATE.
    ///
    /// - Throws: ``APNsCore/APNsTransportError/Code/protocolError`` if nghttp2 cannot allocate.
    init(configuration: Configuration = Configuration()) throws(APNsTransportError) {
        let sink = HTTP2SessionSink(configuration: configuration)
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else {
            throw .protocolError("nghttp2_session_callbacks_new failed")
        }
        defer { nghttp2_session_callbacks_del(callbacks) }
        HTTP2SessionSink.install(on: callbacks)

        var option: OpaquePointer?
        guard nghttp2_option_new(&option) == 0, let option else {
            throw .protocolError("nghttp2_option_new failed")
        }
        defer { nghttp2_option_del(option) }
        nghttp2_option_set_peer_max_concurrent_streams(option, UInt32(max(1, configuration.initialStreamLimit)))
        nghttp2_option_set_no_closed_streams(option, 1)

        let memory = HTTP2SessionMemory()
        var allocator = memory.allocator
        var created: OpaquePointer?
        let rc = nghttp2_session_client_new3(&created, callbacks, Unmanaged.passUnretained(sink).toOpaque(), option, &allocator)
        guard rc == 0, let created else {
            throw .protocolError("nghttp2_session_client_new3 failed: \(HTTP2ConnectionStateMachine.describe(rc))")
        }
        self.session = created
        self.sink = sink
        self.memory = memory

        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue),
                value: UInt32(configuration.streamWindowSize)
            ),
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue),
                value: UInt32(clamping: configuration.maxHeaderListSize)
            ),
        ]
        let noPriorities = capns_settings_no_rfc7540_priorities()
        if noPriorities >= 0 {
            settings.append(nghttp2_settings_entry(settings_id: noPriorities, value: 1))
        }
        let settingsRC = nghttp2_submit_settings(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
        let windowRC = nghttp2_session_set_local_window_size(
            created,
            UInt8(NGHTTP2_FLAG_NONE.rawValue),
            0,
            configuration.connectionWindowSize
        )
        guard settingsRC == 0, windowRC == 0 else {
            nghttp2_session_del(created)
            throw .protocolError("cannot queue the client SETTINGS: \(Self.describe(settingsRC != 0 ? settingsRC : windowRC))")
        }
    }

    deinit {
        // The session frees its blocks into `memory`, which is released after this body.
        nghttp2_session_del(session)
    }

    /// Gives back the blocks the session's allocator keeps for reuse: for an idle
    /// connection, which may stay open for hours with nothing in flight.
    func releaseCachedMemory() {
        memory.releaseCached()
    }

    /// The bytes the session's allocator keeps for reuse (for tests).
    var cachedMemoryBytes: Int { memory.cachedBytes }

    // MARK: State

    /// How many more streams may be opened now: the server's limit (capped) minus the
    /// streams open; 0 once a GOAWAY arrived or after ``submitGoAway()``.
    ///
    /// Until the server's SETTINGS arrive, the assumed limit counts every stream opened,
    /// not only the open ones: a server that never sends its preface gets one request,
    /// not a new one each time the last times out.
    ///
    /// The server's flow-control window counts too (RFC 9113 §6.9): once the bodies already
    /// submitted fill the connection's window and ``waitingBodyAllowance`` more, the
    /// connection takes no new request. A request taken then would only wait inside this
    /// connection for a WINDOW_UPDATE; left in the pool's queue it can go to another
    /// connection (which the pool opens when requests wait), and if its deadline passes
    /// first it fails as never sent.
    var availableStreams: Int {
        if sink.goAwayReceived || sink.goAwaySent { return 0 }
        if !sink.settingsReceived { return max(0, sink.streamLimit - sink.streamsOpened) }
        if sink.unsentBodyBytes > 0,
            sink.unsentBodyBytes >= Int(nghttp2_session_get_remote_window_size(session)) + Self.waitingBodyAllowance
        {
            return 0
        }
        return max(0, sink.streamLimit - sink.records.count)
    }

    /// Body bytes that may wait for the server's window beyond what the window holds now:
    /// one connection window (65,535 bytes, RFC 9113 §6.9.2). With a grant's worth of
    /// bodies already waiting, a WINDOW_UPDATE is answered with DATA frames alone, at once,
    /// and the server grants again as soon as it has read them. With none waiting, each
    /// grant was answered with new requests' HEADERS and bodies interleaved, and over a
    /// long round trip one connection settled now and then into a pattern of one grant per
    /// round trip instead of two (7,200–8,000 notifications/s at 50 ms where h2load, which
    /// keeps its bodies waiting, carries 9,100; 9,300–9,400 with the allowance).
    static let waitingBodyAllowance = 65_535

    /// Body bytes submitted and not yet sent: what waits for the server's window.
    var unsentBodyBytes: Int { sink.unsentBodyBytes }

    /// Whether the server's SETTINGS (its connection preface) have arrived.
    var settingsReceived: Bool { sink.settingsReceived }

    /// The number of streams opened and not yet closed.
    var openStreams: Int { sink.records.count }

    /// The server's current SETTINGS_MAX_CONCURRENT_STREAMS, capped by the configuration.
    var streamLimit: Int { sink.streamLimit }

    /// Whether a GOAWAY has arrived from the server.
    var goAwayReceived: Bool { sink.goAwayReceived }

    /// Whether the connection takes no new stream: a GOAWAY was received or sent.
    var isClosing: Bool { sink.goAwayReceived || sink.goAwaySent }

    /// Frames serialized so far, by type: what the benchmark divides by requests.
    var framesSent: HTTP2FrameCounts { sink.framesSent }

    /// Whether the session has nothing left to do (both directions finished, as after a
    /// GOAWAY exchange with no stream left).
    var isFinished: Bool {
        nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0
    }

    /// Whether `streamID` is certainly unprocessed: its stream is still open and the frame
    /// ending the request (END_STREAM) has not been serialized, so the server never had the
    /// whole request (its HEADERS may have gone out while its body waited for the window).
    /// A stream that has closed (its record is gone) may have reached the server, so it is
    /// not unsent.
    func isUnsent(_ streamID: Int32) -> Bool {
        sink.records[streamID].map { !$0.endStreamSent } ?? false
    }

    /// The `:status` of `streamID`'s response, once its header block has arrived.
    func responseStatus(of streamID: Int32) -> Int? {
        sink.records[streamID].flatMap { $0.status > 0 ? $0.status : nil }
    }

    // MARK: Input

    /// Feeds bytes read from the socket. Events go to ``takeEvents(into:)``.
    ///
    /// - Throws: ``APNsCore/APNsTransportError/Code/protocolError`` when the peer broke HTTP/2;
    ///   nghttp2 has then queued a GOAWAY, and the connection must be closed.
    func receive(_ bytes: UnsafeRawBufferPointer) throws(APNsTransportError) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        let rc = nghttp2_session_mem_recv(session, base.assumingMemoryBound(to: UInt8.self), bytes.count)
        if rc < 0 {
            throw .protocolError("HTTP/2 input rejected: \(Self.describe(Int32(truncatingIfNeeded: rc)))")
        }
    }

    /// Set once nghttp2 has written a GOAWAY with an error code because the server broke
    /// HTTP/2 (RFC 9113 §5.4.1): the connection must be closed after that output is written.
    var connectionError: APNsTransportError? {
        sink.connectionErrorCode.map {
            .protocolError("the server broke HTTP/2; the client ended the connection with GOAWAY \(HTTP2Connection.errorName($0))")
        }
    }

    /// Moves the events produced so far into `events` (appended).
    func takeEvents(into events: inout [HTTP2ConnectionEvent]) {
        if events.isEmpty {
            // The usual case: the buffers trade places (the sink keeps an empty one with
            // capacity), so no event is copied and released.
            swap(&events, &sink.events)
        } else {
            events.append(contentsOf: sink.events)
            sink.events.removeAll(keepingCapacity: true)
        }
    }

    // MARK: Output

    /// Serializes every frame nghttp2 has ready into `buffer` (appended), so that one
    /// socket write carries them all.
    ///
    /// - Throws: ``APNsCore/APNsTransportError/Code/protocolError`` on a fatal nghttp2 error.
    func collectOutput(into buffer: inout [UInt8]) throws(APNsTransportError) {
        while true {
            var data: UnsafePointer<UInt8>?
            let n = nghttp2_session_mem_send(session, &data)
            if n < 0 {
                throw .protocolError("HTTP/2 output failed: \(Self.describe(Int32(truncatingIfNeeded: n)))")
            }
            guard n > 0, let data else { return }
            buffer.append(contentsOf: UnsafeBufferPointer(start: data, count: n))
        }
    }

    // MARK: Commands

    /// Opens a stream for `request`: HEADERS (in the request's order, with the header
    /// policy's flags) and, for a non-empty body, one DATA frame with END_STREAM.
    ///
    /// - Returns: The stream id.
    /// - Throws: ``APNsCore/APNsTransportError/Code/streamRefused`` (not sent) when nghttp2 cannot
    ///   open a stream (ids exhausted, GOAWAY); ``APNsCore/APNsTransportError/Code/protocolError``
    ///   for a header nghttp2 refuses.
    func submit(_ request: APNsRequest) throws(APNsTransportError) -> Int32 {
        if sink.goAwayReceived || sink.goAwaySent {
            throw .streamRefused("the connection is closing (GOAWAY)")
        }
        let record = sink.makeRecord(
            body: request.body,
            maxBodySize: request.isChannelManagement ? sink.configuration.maxChannelBodySize : sink.configuration.maxBodySize
        )
        let userData = Unmanaged.passUnretained(record).toOpaque()
        let streamID: Int32
        if let template = sink.headerTemplates.template(for: request) {
            // The notification's block was written before: only the token's digits and
            // the apns-id change, in place, and nghttp2 reads the same list again.
            request.writeTemplateValues(tokenDigits: template.tokenDigits, apnsID: template.apnsID)
            if let apnsID = request.apnsID, let text = template.apnsID {
                record.sentAPNsID = apnsID
                withUnsafeMutableBytes(of: &record.sentAPNsIDText) { $0.copyMemory(from: UnsafeRawBufferPointer(text)) }
            }
            streamID = submit(list: UnsafeBufferPointer(template.list), hasBody: !request.body.isEmpty, userData: userData)
        } else {
            streamID = submitWritten(request, record: record, userData: userData)
        }
        guard streamID > 0 else {
            if streamID == Int32(NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE.rawValue) {
                // 2^30 requests on one connection: close it gracefully; a new one takes over.
                submitGoAway()
                throw .streamRefused("no stream id left on this connection")
            }
            // The header policy has already counted these headers into its model of
            // the server's table, and nghttp2 encoded none of them: close gracefully, so
            // no later request on this connection relies on a model that is now wrong.
            submitGoAway()
            throw .protocolError("nghttp2 refused the request: \(Self.describe(streamID))")
        }
        record.streamID = streamID
        sink.records[streamID] = record
        sink.unsentBodyBytes += record.body.count - record.bodyOffset
        sink.streamsOpened += 1
        return streamID
    }

    /// Writes `request`'s whole header block, submits it, and keeps it as a template
    /// when it is a device push (see ``HeaderTemplates``).
    private func submitWritten(_ request: APNsRequest, record: HTTP2StreamRecord, userData: UnsafeMutableRawPointer) -> Int32 {
        // The scratch buffers are moved out of the sink (not copied): a copy would share
        // the storage, and `removeAll(keepingCapacity:)` would then allocate afresh.
        // The request writes every name and value once into one buffer, which nghttp2
        // reads (and copies into one allocation of its own while submitting, so it need
        // not outlive the call); the policy decides from the names and the values' sizes.
        var scratch = sink.headerScratch
        sink.headerScratch = []
        var fields = sink.fieldScratch
        sink.fieldScratch = []
        request.writeHeaders(into: &scratch, fields: &fields)
        var decisions = sink.decisionScratch
        sink.decisionScratch = []
        sink.headerPolicy.decisions(for: fields, into: &decisions)
        if let apnsID = request.apnsID, let last = fields.last, last.name == "apns-id", last.valueLength == APNsID.textLength {
            // Keep the text as sent: APNs echoes it, and the echo is then one comparison.
            record.sentAPNsID = apnsID
            scratch.withUnsafeBytes { bytes in
                withUnsafeMutableBytes(of: &record.sentAPNsIDText) { text in
                    text.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[last.valueStart..<last.valueEnd]))
                }
            }
        }
        let hasBody = !request.body.isEmpty
        var nva = sink.nvScratch
        sink.nvScratch = []
        nva.removeAll(keepingCapacity: true)
        let streamID: Int32 = scratch.withUnsafeMutableBufferPointer { bytes -> Int32 in
            guard let base = bytes.baseAddress else { return Int32(NGHTTP2_ERR_INVALID_ARGUMENT.rawValue) }
            for (index, field) in fields.enumerated() {
                let flags = index < decisions.count && decisions[index].requiresNoIndexFlag
                    ? UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue) : UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)
                nva.append(
                    nghttp2_nv(
                        name: base + field.nameStart,
                        value: base + field.valueStart,
                        namelen: field.valueStart - field.nameStart,
                        valuelen: field.valueLength,
                        flags: flags
                    )
                )
            }
            return nva.withUnsafeBufferPointer { submit(list: $0, hasBody: hasBody, userData: userData) }
        }
        if streamID > 0, let key = request.headerTemplateKey {
            // The policy's decisions for the next request of this notification: a name
            // introduced by this request is not indexed again (`decisions` may differ).
            var steady: [HPACKIndexing] = []
            sink.headerPolicy.decisions(for: fields, into: &steady)
            if let template = HeaderTemplates.Template(key: key, written: scratch, fields: fields, decisions: steady) {
                sink.headerTemplates.keep(template)
            }
        }
        sink.nvScratch = nva
        sink.headerScratch = scratch
        sink.fieldScratch = fields
        sink.decisionScratch = decisions
        return streamID
    }

    /// `nghttp2_submit_request` with `list`, and the record's body as its data source
    /// when it has one.
    private func submit(list: UnsafeBufferPointer<nghttp2_nv>, hasBody: Bool, userData: UnsafeMutableRawPointer) -> Int32 {
        guard let listBase = list.baseAddress else { return Int32(NGHTTP2_ERR_INVALID_ARGUMENT.rawValue) }
        if hasBody {
            var provider = nghttp2_data_provider(
                source: nghttp2_data_source(ptr: nil),
                read_callback: HTTP2SessionSink.readBody
            )
            return nghttp2_submit_request(session, nil, listBase, list.count, &provider, userData)
        } else {
            return nghttp2_submit_request(session, nil, listBase, list.count, nil, userData)
        }
    }

    /// Resets `streamID` with CANCEL (RFC 9113 §8.4); its close produces no event.
    func cancelStream(_ streamID: Int32) {
        guard let record = sink.records[streamID] else { return }
        record.cancelled = true
        _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, NGHTTP2_CANCEL.rawValue)
    }

    /// Queues a PING (RFC 9113 §6.7); the answer produces ``HTTP2ConnectionEvent/pingAcknowledged``.
    func ping() {
        _ = nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
    }

    /// Queues a GOAWAY with NO_ERROR: no new stream opens; open streams may finish.
    func submitGoAway() {
        guard !sink.goAwaySent else { return }
        sink.goAwaySent = true
        _ = nghttp2_submit_goaway(
            session,
            UInt8(NGHTTP2_FLAG_NONE.rawValue),
            nghttp2_session_get_last_proc_stream_id(session),
            NGHTTP2_NO_ERROR.rawValue,
            nil,
            0
        )
    }

    /// The stream ids still open, for failing them when the connection dies.
    var openStreamIDs: [Int32] { Array(sink.records.keys) }

    static func describe(_ code: Int32) -> String {
        guard let text = nghttp2_strerror(code) else { return "error \(code)" }
        return String(cString: text) + " (\(code))"
    }
}
