import APNsCore
import CNGHTTP2
import Logging
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The nghttp2 callbacks' target: turns frames into ``HTTP2ConnectionEvent``s and keeps
/// the per-stream records. Lives as long as its session (the state machine owns both).
final class HTTP2SessionSink {
    // Every stored property is `@exclusivity(unchecked)`: the sink is used by one thread at
    // a time (the connection's I/O thread, from nghttp2's callbacks), no access overlaps
    // another, and the runtime's dynamic checks were measurable per notification.
    let configuration: HTTP2ConnectionStateMachine.Configuration
    @exclusivity(unchecked) var records = StreamTable<HTTP2StreamRecord>()
    /// The stream whose record a callback looked up last, and that record (unretained:
    /// ``records`` holds it until ``onStreamClose`` takes it out, which clears these). The
    /// callbacks of one frame ask for the same stream in a row (a response's header fields,
    /// then its end; a request's HEADERS, its body, its DATA), and nghttp2's own look-up
    /// hashes the id into a table of every open stream: with a thousand streams open, a
    /// cache miss each time.
    @exclusivity(unchecked) var lastLookupID: Int32 = 0
    @exclusivity(unchecked) var lastLookupRecord: UnsafeMutableRawPointer?
    /// Body bytes of open streams not yet handed to nghttp2's DATA frames: what waits for
    /// the server's flow-control window.
    @exclusivity(unchecked) var unsentBodyBytes = 0
    @exclusivity(unchecked) var events: [HTTP2ConnectionEvent] = []
    @exclusivity(unchecked) var streamLimit: Int
    @exclusivity(unchecked) var headerTableSize = 4096
    @exclusivity(unchecked) var goAwayReceived = false
    @exclusivity(unchecked) var goAwayLastStreamID: Int32 = .max
    @exclusivity(unchecked) var goAwaySent = false
    /// Whether the server's first SETTINGS (its connection preface, RFC 9113 §3.4) arrived.
    @exclusivity(unchecked) var settingsReceived = false
    /// Streams opened since the session began.
    @exclusivity(unchecked) var streamsOpened = 0
    @exclusivity(unchecked) var framesSent = HTTP2FrameCounts()
    /// The APNs header policy. nghttp2 writes the bytes and keeps the table; the policy
    /// only decides the indexing, which depends on names, sizes and what was sent before,
    /// never on the table's contents, so it keeps no model of the table.
    @exclusivity(unchecked) var headerPolicy = APNsHeaderEncoder(usesHuffmanCoding: false, modelsTable: false)
    @exclusivity(unchecked) var headerScratch: [UInt8] = []
    @exclusivity(unchecked) var fieldScratch: [WrittenHeader] = []
    @exclusivity(unchecked) var nvScratch: [nghttp2_nv] = []
    @exclusivity(unchecked) var decisionScratch: [HPACKIndexing] = []
    /// The header blocks of the last notifications sent, for their next requests.
    @exclusivity(unchecked) var headerTemplates = HeaderTemplates()
    /// The error code of a GOAWAY nghttp2 sent because the peer broke the protocol.
    @exclusivity(unchecked) var connectionErrorCode: UInt32?

    init(configuration: HTTP2ConnectionStateMachine.Configuration) {
        self.configuration = configuration
        self.streamLimit = max(1, min(configuration.initialStreamLimit, configuration.maxStreamLimit))
        headerScratch.reserveCapacity(1024)
    }

    /// Records of closed streams, kept for the next streams: a stream then costs no
    /// allocation of its own in steady state (at most one per stream the limit allows).
    @exclusivity(unchecked) private var spareRecords: [HTTP2StreamRecord] = []

    /// A record for a new stream: a spare one, reset, or a new one.
    func makeRecord(body: [UInt8], maxBodySize: Int) -> HTTP2StreamRecord {
        if let record = spareRecords.popLast() {
            record.reset(body: body, maxBodySize: maxBodySize, maxHeaderListSize: configuration.maxHeaderListSize)
            return record
        }
        return HTTP2StreamRecord(body: body, maxBodySize: maxBodySize, maxHeaderListSize: configuration.maxHeaderListSize)
    }

    /// Keeps a closed stream's record for a later stream, up to the stream limit's worth.
    private func recycle(_ record: HTTP2StreamRecord) {
        guard spareRecords.count < max(streamLimit, 1) else { return }
        record.release()
        spareRecords.append(record)
    }

    /// `:status` as bytes, for comparing header names without going through `String`.
    static let statusName: [UInt8] = Array(":status".utf8)
    /// `apns-id` as bytes.
    static let apnsIDName: [UInt8] = Array("apns-id".utf8)

    /// Calls `body` with the sink of nghttp2's `userData`, borrowed: the session's owner
    /// keeps the sink alive for as long as nghttp2 can call back, so the callbacks (several
    /// per request) need no retain and release of it.
    @inline(__always)
    static func withSink<Result>(_ userData: UnsafeMutableRawPointer?, _ body: (HTTP2SessionSink) -> Result) -> Result? {
        guard let userData else { return nil }
        return Unmanaged<HTTP2SessionSink>.fromOpaque(userData)._withUnsafeGuaranteedRef(body)
    }

    /// Calls `body` with stream `streamID`'s record, borrowed: ``records`` holds it until
    /// the stream closes (``onStreamClose``, the one callback that lets it go, takes it out
    /// of ``records`` instead).
    /// `userData` is the sink, whose last look-up is tried first.
    @inline(__always)
    static func withRecord<Result>(
        _ session: OpaquePointer?,
        _ streamID: Int32,
        _ userData: UnsafeMutableRawPointer?,
        _ body: (HTTP2StreamRecord) -> Result
    ) -> Result? {
        guard let userData else { return nil }
        let pointer: UnsafeMutableRawPointer? = Unmanaged<HTTP2SessionSink>.fromOpaque(userData)._withUnsafeGuaranteedRef { sink in
            if streamID == sink.lastLookupID, let cached = sink.lastLookupRecord { return cached }
            guard let found = nghttp2_session_get_stream_user_data(session, streamID) else { return nil }
            sink.lastLookupID = streamID
            sink.lastLookupRecord = found
            return found
        }
        guard let pointer else { return nil }
        return Unmanaged<HTTP2StreamRecord>.fromOpaque(pointer)._withUnsafeGuaranteedRef(body)
    }

    static func install(on callbacks: OpaquePointer) {
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, onFrameRecv)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, onDataChunk)
        nghttp2_session_callbacks_set_on_header_callback(callbacks, onHeader)
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, onStreamClose)
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, onFrameSend)
    }

    // MARK: Callbacks (C entry points)

    static let readBody: nghttp2_data_source_read_callback = { session, streamID, buffer, length, flags, _, userData in
        guard let buffer, let flags else { return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue) }
        return withRecord(session, streamID, userData) { record -> Int in
            let remaining = record.body.count - record.bodyOffset
            // Whatever the flow-control window allows now, even part of a body: the window
            // is then used to its last byte. Holding a body back whole until it fits leaves
            // a remainder smaller than one body unsent, so a server that grants more window
            // once half of it is consumed (nghttp2's rule, and the usual one) grants only half
            // per round trip, which halves throughput whenever the window, not the stream
            // limit, is what holds requests back (any round trip longer than a LAN's).
            let count = min(length, remaining)
            if count > 0 {
                record.body.withUnsafeBufferPointer { body in
                    if let base = body.baseAddress {
                        buffer.update(from: base + record.bodyOffset, count: count)
                    }
                }
                record.bodyOffset += count
                withSink(userData) { $0.unsentBodyBytes -= count }
            }
            if record.bodyOffset >= record.body.count {
                flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            }
            return count
        } ?? Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
    }

    static let onFrameSend: nghttp2_on_frame_send_callback = { session, frame, userData in
        guard let frame else { return 0 }
        return withSink(userData) { sink -> Int32 in
            if let log = sink.configuration.frameLogger { log.trace("\(HTTP2FrameTrace(frame, sent: true).text)") }
            switch Int(frame.pointee.hd.type) {
            case Int(NGHTTP2_HEADERS.rawValue):
                sink.framesSent.headers += 1
                withRecord(session, frame.pointee.hd.stream_id, userData) { record in
                    record.headersSent = true
                    if frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0 { record.endStreamSent = true }
                }
            case Int(NGHTTP2_DATA.rawValue):
                sink.framesSent.data += 1
                if frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0 {
                    withRecord(session, frame.pointee.hd.stream_id, userData) { $0.endStreamSent = true }
                }
            case Int(NGHTTP2_RST_STREAM.rawValue):
                sink.framesSent.other += 1
                withRecord(session, frame.pointee.hd.stream_id, userData) { $0.resetSent = true }
            case Int(NGHTTP2_GOAWAY.rawValue):
                sink.framesSent.other += 1
                let code = frame.pointee.goaway.error_code
                if code != NGHTTP2_NO_ERROR.rawValue { sink.connectionErrorCode = code }
            default:
                sink.framesSent.other += 1
            }
            return 0
        } ?? 0
    }

    static let onHeader: nghttp2_on_header_callback = { session, frame, name, nameLength, value, valueLength, _, userData in
        guard let frame, let name, let value, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
        return withRecord(session, frame.pointee.hd.stream_id, userData) { record -> Int32 in
            guard !record.responded, !record.cancelled else { return 0 }
            // RFC 9113 §6.5.2: a field counts its name and value plus 32 octets. The limit is
            // checked before anything is kept, so indexed references to one large table entry
            // (HPACK amplification) cost a counter, not memory.
            record.headerListSize += nameLength + valueLength + 32
            // The limit sits in the record: no look-up of the sink per header field.
            if record.headerListSize > record.maxHeaderListSize, let refused = withSink(userData, { sink -> Int32 in
                sink.refuse(
                    record,
                    session: session,
                    detail: "the response's header list passed \(sink.configuration.maxHeaderListSize) octets "
                        + "(maxResponseHeaderListSize)",
                    resetStream: false
                )
                // nghttp2 resets the stream (INTERNAL_ERROR) and calls no callback for the rest
                // of the block: an amplified block costs its decoding, not a call per field.
                return Int32(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
            }) {
                return refused
            }
            let nameBytes = UnsafeBufferPointer(start: name, count: nameLength)
            let valueBytes = UnsafeBufferPointer(start: value, count: valueLength)
            if nameLength == 7, memcmp(name, HTTP2SessionSink.statusName, 7) == 0 {
                var status = 0
                for byte in valueBytes.prefix(4) where byte >= 0x30 && byte <= 0x39 {
                    status = status * 10 + Int(byte - 0x30)
                }
                // An interim response (1xx, RFC 9113 §8.1; RFC 9110 §15.2) is followed by the
                // final one: neither its status nor its fields are the answer's, and it does
                // not show that the answer began.
                record.interim = (100...199).contains(status)
                if !record.interim { record.status = status }
                return 0
            }
            if record.interim { return 0 }
            // The apns-id stays 128 bits (no String) when it is a canonical lowercase UUID,
            // which is what `APNsResponse.headers` writes back.
            if nameLength == 7, record.apnsID == nil, memcmp(name, HTTP2SessionSink.apnsIDName, 7) == 0 {
                // Usually the echo of the request's own id, as it was sent: one comparison.
                var id: APNsID?
                if let sent = record.sentAPNsID, valueLength == APNsID.textLength,
                    withUnsafeBytes(of: record.sentAPNsIDText, { text in text.baseAddress.map { memcmp($0, value, valueLength) } ?? 1 }) == 0
                {
                    id = sent
                } else {
                    id = APNsID.parse(valueBytes, lowercaseOnly: true)
                }
                if let id {
                    record.apnsID = id
                    record.apnsIDIndex = record.headers.count
                    return 0
                }
            }
            record.headers.append(
                HeaderField(name: String(decoding: nameBytes, as: UTF8.self), value: String(decoding: valueBytes, as: UTF8.self))
            )
            return 0
        } ?? 0
    }

    static let onDataChunk: nghttp2_on_data_chunk_recv_callback = { session, _, streamID, data, length, userData in
        guard let data else { return 0 }
        return withRecord(session, streamID, userData) { record -> Int32 in
            guard !record.responded, !record.cancelled else { return 0 }
            if record.responseBody.count + length > record.maxBodySize {
                withSink(userData) { sink in
                    sink.refuse(
                        record,
                        session: session,
                        detail: "the response body passed \(record.maxBodySize) bytes "
                            + (record.maxBodySize == sink.configuration.maxBodySize
                                ? "(maxResponseBodySize)" : "(maxChannelResponseBodySize)")
                    )
                }
                return 0
            }
            record.responseBody.append(contentsOf: UnsafeBufferPointer(start: data, count: length))
            return 0
        } ?? 0
    }

    /// Ends `record`'s response early: resets the stream with CANCEL (RFC 9113 §8.4; what
    /// was kept is dropped; unless nghttp2 resets it, `resetStream == false`) and reports ``HTTP2ConnectionEvent/responseRefused(streamID:_:)``.
    /// The stream's close then produces no other event.
    func refuse(_ record: HTTP2StreamRecord, session: OpaquePointer?, detail: String, resetStream: Bool = true) {
        record.responded = true
        let status = record.status == 0 ? nil : record.status
        let outcome = status.map { $0 == 200 ? "APNs accepted the notification (status 200), but " : "status \($0); " } ?? ""
        record.headers = []
        record.responseBody = []
        if resetStream {
            _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), record.streamID, NGHTTP2_CANCEL.rawValue)
        }
        events.append(.responseRefused(streamID: record.streamID, .responseTooLarge(outcome + detail, status: status)))
    }

    static let onFrameRecv: nghttp2_on_frame_recv_callback = { session, frame, userData in
        guard let frame else { return 0 }
        return withSink(userData) { sink -> Int32 in
            if let log = sink.configuration.frameLogger { log.trace("\(HTTP2FrameTrace(frame, sent: false).text)") }
            let header = frame.pointee.hd
            let endStream = header.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
            switch Int(header.type) {
            case Int(NGHTTP2_HEADERS.rawValue), Int(NGHTTP2_DATA.rawValue):
                guard endStream else { return 0 }
                withRecord(session, header.stream_id, userData) { record in
                    guard !record.responded, !record.cancelled else { return }
                    record.responded = true
                    sink.events.append(
                        .response(
                            streamID: header.stream_id,
                            APNsResponse(
                                status: record.status,
                                apnsID: record.apnsID,
                                apnsIDIndex: record.apnsIDIndex,
                                otherHeaders: record.headers,
                                body: record.responseBody
                            )
                        )
                    )
                }
            case Int(NGHTTP2_SETTINGS.rawValue):
                guard header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0 else { return 0 }
                sink.settingsReceived = true
                sink.applySettings(session)
            case Int(NGHTTP2_GOAWAY.rawValue):
                let goaway = frame.pointee.goaway
                var debug: [UInt8] = []
                if let opaque = goaway.opaque_data, goaway.opaque_data_len > 0 {
                    debug = Array(UnsafeBufferPointer(start: opaque, count: goaway.opaque_data_len))
                }
                sink.goAwayReceived = true
                sink.goAwayLastStreamID = min(sink.goAwayLastStreamID, goaway.last_stream_id)
                sink.events.append(.goAway(lastStreamID: goaway.last_stream_id, errorCode: goaway.error_code, debugData: debug))
            case Int(NGHTTP2_PING.rawValue):
                if header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0 {
                    sink.events.append(.pingAcknowledged)
                }
            default:
                break
            }
            return 0
        } ?? 0
    }

    static let onStreamClose: nghttp2_on_stream_close_callback = { _, streamID, errorCode, userData in
        withSink(userData) { sink -> Int32 in
            // Taken out of `records` (owned here, not borrowed): the stream ends.
            if streamID == sink.lastLookupID {
                sink.lastLookupID = 0
                sink.lastLookupRecord = nil
            }
            guard let record = sink.records.removeValue(forKey: streamID) else { return 0 }
            // nghttp2 forgets the stream's user data once this returns; nothing else holds the record.
            defer { sink.recycle(record) }
            // A stream closed before its body went out (a reset, a GOAWAY) waits for no window.
            sink.unsentBodyBytes -= record.body.count - record.bodyOffset
            if record.responded || record.cancelled { return 0 }
            // An answer had begun (its :status arrived): the server processed the request,
            // whatever the reset or a GOAWAY says of the stream, so it must not go again (a
            // REFUSED_STREAM after a 200 would deliver it twice).
            let status = record.status > 0 ? record.status : nil
            // A request whose END_STREAM never went out was never whole at the server: it
            // cannot have been processed (its body may be waiting for the server's window).
            let unprocessed = status == nil
                && (!record.endStreamSent
                    || errorCode == NGHTTP2_REFUSED_STREAM.rawValue
                    || (sink.goAwayReceived && streamID > sink.goAwayLastStreamID))
            sink.events.append(.streamClosed(
                streamID: streamID, errorCode: errorCode, unprocessed: unprocessed, status: status, resetByClient: record.resetSent))
            return 0
        } ?? 0
    }

    /// Reads the server's settings as nghttp2 applied them and reports a change.
    func applySettings(_ session: OpaquePointer?) {
        let limit = Int(nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS))
        let tableSize = Int(nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_HEADER_TABLE_SIZE))
        let newLimit = max(0, min(limit, configuration.maxStreamLimit))
        guard newLimit != streamLimit || tableSize != headerTableSize else { return }
        if tableSize != headerTableSize {
            headerTableSize = tableSize
            headerPolicy.setPeerHeaderTableSize(tableSize)
            // The policy's decisions depend on the table's size.
            headerTemplates.removeAll()
        }
        streamLimit = newLimit
        events.append(.settingsChanged(maxConcurrentStreams: newLimit, headerTableSize: tableSize))
    }
}
