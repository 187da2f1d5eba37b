import CNGHTTP2
@testable import APNsTransport

/// An nghttp2 SERVER session driven in memory: the independent peer the state machine's
/// tests talk to. It records every frame and header it receives (with nghttp2's own
/// flags) and answers only when a test tells it to. Owns its C handle.
final class InMemoryHTTP2Server {
    struct ReceivedHeader: Equatable {
        var name: String
        var value: String
        var neverIndexed: Bool
    }

    struct ReceivedFrame: Equatable {
        var type: UInt8
        var streamID: Int32
        var flags: UInt8
        var length: Int
        /// RST_STREAM / GOAWAY error code.
        var errorCode: UInt32 = 0
    }

    private(set) var session: OpaquePointer?
    var frames: [ReceivedFrame] = []
    var headers: [Int32: [ReceivedHeader]] = [:]
    var bodies: [Int32: [UInt8]] = [:]
    /// Streams whose request is complete (END_STREAM received), in order.
    var completedStreams: [Int32] = []
    var receivedSettings: [Int32: UInt32] = [:]

    init(maxConcurrentStreams: UInt32 = 1, headerTableSize: UInt32? = nil, ignorePings: Bool = false) {
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, userData in
            guard let frame, let server = InMemoryHTTP2Server.from(userData) else { return 0 }
            let hd = frame.pointee.hd
            var record = ReceivedFrame(type: hd.type, streamID: hd.stream_id, flags: hd.flags, length: hd.length)
            switch Int(hd.type) {
            case Int(NGHTTP2_RST_STREAM.rawValue):
                record.errorCode = frame.pointee.rst_stream.error_code
            case Int(NGHTTP2_GOAWAY.rawValue):
                record.errorCode = frame.pointee.goaway.error_code
            case Int(NGHTTP2_SETTINGS.rawValue):
                let settings = frame.pointee.settings
                for index in 0..<settings.niv {
                    let entry = settings.iv[index]
                    server.receivedSettings[entry.settings_id] = entry.value
                }
            default:
                break
            }
            server.frames.append(record)
            if (hd.type == UInt8(NGHTTP2_HEADERS.rawValue) || hd.type == UInt8(NGHTTP2_DATA.rawValue)),
                hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
            {
                server.completedStreams.append(hd.stream_id)
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, flags, userData in
            guard let frame, let name, let value, let server = InMemoryHTTP2Server.from(userData) else { return 0 }
            let header = ReceivedHeader(
                name: String(decoding: UnsafeBufferPointer(start: name, count: nameLength), as: UTF8.self),
                value: String(decoding: UnsafeBufferPointer(start: value, count: valueLength), as: UTF8.self),
                neverIndexed: flags & UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue) != 0
            )
            server.headers[frame.pointee.hd.stream_id, default: []].append(header)
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, streamID, data, length, userData in
            guard let data, let server = InMemoryHTTP2Server.from(userData) else { return 0 }
            server.bodies[streamID, default: []].append(contentsOf: UnsafeBufferPointer(start: data, count: length))
            return 0
        }
        var option: OpaquePointer?
        nghttp2_option_new(&option)
        if ignorePings { nghttp2_option_set_no_auto_ping_ack(option, 1) }
        var created: OpaquePointer?
        nghttp2_session_server_new2(&created, callbacks, Unmanaged.passUnretained(self).toOpaque(), option)
        nghttp2_session_callbacks_del(callbacks)
        nghttp2_option_del(option)
        session = created
        var settings = [
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue),
                value: maxConcurrentStreams
            )
        ]
        if let headerTableSize {
            settings.append(
                nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_HEADER_TABLE_SIZE.rawValue), value: headerTableSize)
            )
        }
        nghttp2_submit_settings(created, 0, &settings, settings.count)
    }

    deinit { nghttp2_session_del(session) }

    static func from(_ userData: UnsafeMutableRawPointer?) -> InMemoryHTTP2Server? {
        userData.map { Unmanaged<InMemoryHTTP2Server>.fromOpaque($0).takeUnretainedValue() }
    }

    /// Feeds the client's bytes; returns nghttp2's result (negative on a protocol error).
    @discardableResult
    func receive(_ bytes: [UInt8]) -> Int {
        bytes.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return 0 }
            return nghttp2_session_mem_recv(session, base, buffer.count)
        }
    }

    /// Everything the server has to send.
    func output() -> [UInt8] {
        var bytes: [UInt8] = []
        while true {
            var data: UnsafePointer<UInt8>?
            let n = nghttp2_session_mem_send(session, &data)
            guard n > 0, let data else { return bytes }
            bytes.append(contentsOf: UnsafeBufferPointer(start: data, count: n))
        }
    }

    func submitSettings(maxConcurrentStreams: UInt32? = nil, headerTableSize: UInt32? = nil) {
        var settings: [nghttp2_settings_entry] = []
        if let maxConcurrentStreams {
            settings.append(.init(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: maxConcurrentStreams))
        }
        if let headerTableSize {
            settings.append(.init(settings_id: Int32(NGHTTP2_SETTINGS_HEADER_TABLE_SIZE.rawValue), value: headerTableSize))
        }
        nghttp2_submit_settings(session, 0, &settings, settings.count)
    }

    /// Answers `streamID` with `status` and an optional body (held until sent).
    func respond(_ streamID: Int32, status: Int, headers extra: [(String, String)] = [], body: [UInt8] = []) {
        var fields = [(":status", String(status))] + extra
        let names = fields.map { Array($0.0.utf8) }
        let values = fields.map { Array($0.1.utf8) }
        fields.removeAll()
        let box = ResponseBody(body)
        responseBodies[streamID] = box
        var nva: [nghttp2_nv] = []
        var storage: [[UInt8]] = []
        for index in names.indices {
            storage.append(names[index])
            storage.append(values[index])
        }
        let pointers = storage.map { bytes -> UnsafeMutablePointer<UInt8> in
            let pointer = UnsafeMutablePointer<UInt8>.allocate(capacity: max(1, bytes.count))
            pointer.initialize(from: bytes, count: bytes.count)
            return pointer
        }
        defer { pointers.forEach { $0.deallocate() } }
        for index in names.indices {
            nva.append(
                nghttp2_nv(
                    name: pointers[2 * index],
                    value: pointers[2 * index + 1],
                    namelen: names[index].count,
                    valuelen: values[index].count,
                    flags: 0
                )
            )
        }
        if body.isEmpty {
            nghttp2_submit_response(session, streamID, nva, nva.count, nil)
        } else {
            var provider = nghttp2_data_provider(
                source: nghttp2_data_source(ptr: Unmanaged.passUnretained(box).toOpaque()),
                read_callback: { _, _, buffer, length, flags, source, _ in
                    guard let buffer, let flags, let pointer = source?.pointee.ptr else { return 0 }
                    let box = Unmanaged<ResponseBody>.fromOpaque(pointer).takeUnretainedValue()
                    let count = min(length, box.bytes.count - box.offset)
                    box.bytes.withUnsafeBufferPointer { bytes in
                        if let base = bytes.baseAddress { buffer.update(from: base + box.offset, count: count) }
                    }
                    box.offset += count
                    if box.offset == box.bytes.count { flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
                    return count
                }
            )
            nghttp2_submit_response(session, streamID, nva, nva.count, &provider)
        }
    }

    /// Sends only the header block of an answer to `streamID` (no END_STREAM): the answer
    /// has begun and not ended.
    func beginResponse(_ streamID: Int32, status: Int) {
        let name = Array(":status".utf8)
        let value = Array(String(status).utf8)
        name.withUnsafeBufferPointer { name in
            value.withUnsafeBufferPointer { value in
                var field = nghttp2_nv(
                    name: UnsafeMutablePointer(mutating: name.baseAddress!), value: UnsafeMutablePointer(mutating: value.baseAddress!),
                    namelen: name.count, valuelen: value.count, flags: UInt8(NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue | NGHTTP2_NV_FLAG_NO_COPY_VALUE.rawValue) & 0
                )
                _ = nghttp2_submit_headers(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, nil, &field, 1, nil)
            }
        }
    }

    private var responseBodies: [Int32: ResponseBody] = [:]

    final class ResponseBody {
        let bytes: [UInt8]
        var offset = 0
        init(_ bytes: [UInt8]) { self.bytes = bytes }
    }

    func goAway(lastStreamID: Int32, errorCode: UInt32 = NGHTTP2_NO_ERROR.rawValue, debugData: String) {
        let bytes = Array(debugData.utf8)
        nghttp2_submit_goaway(session, 0, lastStreamID, errorCode, bytes, bytes.count)
    }

    func reset(_ streamID: Int32, errorCode: UInt32) {
        nghttp2_submit_rst_stream(session, 0, streamID, errorCode)
    }

    func frames(ofType type: nghttp2_frame_type) -> [ReceivedFrame] {
        frames.filter { $0.type == UInt8(type.rawValue) }
    }
}

/// Moves bytes both ways between `client` and `server` until neither has anything to
/// send, and returns the client's events.
@discardableResult
func exchange(_ client: HTTP2ConnectionStateMachine, _ server: InMemoryHTTP2Server) throws -> [HTTP2ConnectionEvent] {
    var events: [HTTP2ConnectionEvent] = []
    for _ in 0..<100 {
        var clientBytes: [UInt8] = []
        try client.collectOutput(into: &clientBytes)
        if !clientBytes.isEmpty {
            let rc = server.receive(clientBytes)
            if rc < 0 { throw HTTP2TestError("the server rejected the client's bytes: \(rc)") }
        }
        let serverBytes = server.output()
        if !serverBytes.isEmpty {
            try serverBytes.withUnsafeBytes { try client.receive($0) }
        }
        client.takeEvents(into: &events)
        if clientBytes.isEmpty && serverBytes.isEmpty { return events }
    }
    throw HTTP2TestError("the exchange did not settle")
}

struct HTTP2TestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
