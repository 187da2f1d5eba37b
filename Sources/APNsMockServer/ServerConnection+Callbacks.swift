import APNsTransport
import CNGHTTP2
import Logging

// The nghttp2 glue of ``ServerConnection``: one callback table for every session of a
// server thread; each callback finds its connection through `user_data`, records what
// arrived on the stream, and hands a complete request to ``ServerConnection/requestComplete(streamID:)``.
// Callbacks never close the connection or flush (see ``ServerConnection``).

fileprivate func connection(_ userData: UnsafeMutableRawPointer?) -> ServerConnection? {
    userData.map { Unmanaged<ServerConnection>.fromOpaque($0).takeUnretainedValue() }
}

/// Calls `body` with the connection behind `user_data` without retaining it (the server
/// loop holds every connection while nghttp2 runs); `nil` without one.
@inline(__always)
fileprivate func withConnection<Result>(_ userData: UnsafeMutableRawPointer?, _ body: (ServerConnection) -> Result) -> Result? {
    guard let userData else { return nil }
    return Unmanaged<ServerConnection>.fromOpaque(userData)._withUnsafeGuaranteedRef(body)
}

/// Hands nghttp2 a response body, from the stream's `responseBody`.
let readResponseBody: nghttp2_data_source_read_callback = { _, streamID, buffer, length, flags, _, userData in
    guard let connection = connection(userData), let stream = connection.stream(streamID), let buffer, let flags else {
        return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue)
    }
    let count = min(length, stream.responseBody.count - stream.responseOffset)
    stream.responseBody.withUnsafeBufferPointer { bytes in
        guard let base = bytes.baseAddress, count > 0 else { return }
        buffer.update(from: base + stream.responseOffset, count: count)
    }
    stream.responseOffset += count
    if stream.responseOffset == stream.responseBody.count {
        flags.pointee |= UInt32(NGHTTP2_DATA_FLAG_EOF.rawValue)
    }
    return count
}

extension ServerLoop {
    /// The callbacks every connection's session uses; `user_data` is the connection. With
    /// `tracingFrames`, every frame sent is logged too (received ones are logged by the
    /// receiving callback when the loop has a ``ServerLoop/frameLog``). Every GOAWAY sent is
    /// noted, also one nghttp2 sends by itself (its flood protections: thousands of stream
    /// resets at once), so that no stream above its last-stream-id is processed after it.
    static func makeCallbacks(tracingFrames: Bool = false) -> OpaquePointer? {
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else { return nil }
        if tracingFrames {
            nghttp2_session_callbacks_set_on_frame_send_callback(callbacks) { _, frame, userData in
                guard let frame else { return 0 }
                withConnection(userData) { connection in
                    connection.loop.frameLog?.trace("\(HTTP2FrameTrace(frame, sent: true).text)", metadata: ["connection": "\(connection.number)"])
                    if frame.pointee.hd.type == UInt8(NGHTTP2_GOAWAY.rawValue) {
                        connection.goAwaySent(lastStreamID: frame.pointee.goaway.last_stream_id)
                    }
                }
                return 0
            }
        } else {
            nghttp2_session_callbacks_set_on_frame_send_callback(callbacks) { _, frame, userData in
                guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_GOAWAY.rawValue) else { return 0 }
                withConnection(userData) { connection in
                    connection.goAwaySent(lastStreamID: frame.pointee.goaway.last_stream_id)
                }
                return 0
            }
        }
        nghttp2_session_callbacks_set_on_begin_frame_callback(callbacks) { session, header, userData in
            guard let header else { return 0 }
            let type = Int(header.pointee.type), length = header.pointee.length
            withConnection(userData) { connection in
                switch type {
                case Int(NGHTTP2_HEADERS.rawValue):
                    connection.headerBlockBytes = length
                    if !connection.clientStreamIDs.admitHeaders(on: header.pointee.stream_id), let session {
                        // A reused identifier (RFC 9113 §5.1.1): GOAWAY PROTOCOL_ERROR, and
                        // nghttp2 ignores the rest of the input; it would ignore this HEADERS
                        // alone and leave the client waiting (see ``ClientStreamIDs``).
                        _ = nghttp2_session_terminate_session(session, NGHTTP2_PROTOCOL_ERROR.rawValue)
                    }
                case Int(NGHTTP2_CONTINUATION.rawValue): connection.headerBlockBytes += length
                default: break
                }
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, userData in
            guard let frame else { return 0 }
            if frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue), frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST {
                let streamID = frame.pointee.hd.stream_id
                withConnection(userData) { $0.openStream(streamID) }
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_header_callback2(callbacks) { _, frame, name, value, flags, userData in
            guard let frame, let name, let value, frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST else { return 0 }
            let streamID = frame.pointee.hd.stream_id
            withConnection(userData) { connection in
                connection.withStream(streamID) { stream in
                    let nameBuffer = nghttp2_rcbuf_get_buf(name)
                    let valueBuffer = nghttp2_rcbuf_get_buf(value)
                    stream.headerListSize += nameBuffer.len + valueBuffer.len + 32
                    if stream.headersTooLarge || stream.headerListSize > ServerConnection.maxHeaderListSize {
                        stream.headersTooLarge = true
                        return
                    }
                    // The bytes only: a `String` per field is made only for a request the fast
                    // path does not answer (see ``ServerConnection/requestComplete(streamID:)``).
                    stream.fields.append(name: nameBuffer.base.map { UnsafePointer($0) }, nameLength: nameBuffer.len,
                                         value: valueBuffer.base.map { UnsafePointer($0) }, valueLength: valueBuffer.len,
                                         neverIndexed: flags & UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue) != 0,
                                         sharedAuthorization: connection.sharedAuthorization.map { UnsafeBufferPointer($0) })
                }
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, flags, streamID, data, length, userData in
            guard let data else { return 0 }
            let endsStream = flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
            withConnection(userData) { connection in
                connection.withStream(streamID) { stream in
                    connection.receiveBody(UnsafeBufferPointer(start: data, count: length), endsStream: endsStream, of: stream)
                }
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { session, frame, userData in
            guard let frame else { return 0 }
            let streamID = frame.pointee.hd.stream_id
            let type = Int(frame.pointee.hd.type)
            let flags = frame.pointee.hd.flags
            withConnection(userData) { connection in
                if let log = connection.loop.frameLog {
                    log.trace("\(HTTP2FrameTrace(frame, sent: false).text)", metadata: ["connection": "\(connection.number)"])
                }
                if type == Int(NGHTTP2_HEADERS.rawValue) {
                    connection.withStream(streamID) { stream in
                        guard stream.headerBlockLength == 0 else { return }
                        stream.headerBlockLength = connection.headerBlockBytes
                        // The whole block (HEADERS and any CONTINUATION) has been inflated by now.
                        stream.inflaterTableSize = session.map { Int(nghttp2_session_get_hd_inflate_dynamic_table_size($0)) } ?? 0
                        // The request's fields are all here, and still in the cache.
                        connection.judgeHeaders(of: stream)
                    }
                }
                if type == Int(NGHTTP2_GOAWAY.rawValue) {
                    let code = frame.pointee.goaway.error_code
                    connection.loop.state.shared.withLock { $0.statistics.goAwaysReceived[code, default: 0] += 1 }
                }
                if type == Int(NGHTTP2_HEADERS.rawValue) || type == Int(NGHTTP2_DATA.rawValue),
                   flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0 {
                    connection.requestComplete(streamID: streamID)
                }
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, streamID, _, userData in
            withConnection(userData) { connection in
                connection.closeStream(streamID)
                _ = connection.headerTap.take(stream: streamID)
            }
            return 0
        }
        return callbacks
    }
}
