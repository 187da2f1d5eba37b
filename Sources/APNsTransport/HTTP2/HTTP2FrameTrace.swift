import CNGHTTP2

/// One HTTP/2 frame as a trace line: what a connection (the transport's, or the mock
/// server's) logs for every frame it sends and receives when its logger's level is `.trace` (as `nghttp -v` and Pushy's frame logger
/// do), for reading an exchange with APNs when something goes wrong.
///
/// Only the frame's header and its control fields are written (SETTINGS values, the
/// GOAWAY's last stream and error code and debug text, a reset's code, a window
/// increment, a PING's payload): never a header field or a body, so a trace holds no
/// device token, provider token or payload.
package struct HTTP2FrameTrace: Equatable {
    /// `send` or `recv`.
    var direction: String
    var type: UInt8
    var flags: UInt8
    var streamID: Int32
    var length: Int
    /// The type's control fields, each `NAME=value`.
    var fields: [String] = []

    /// The line: `send HEADERS stream=1 length=244 flags=END_STREAM|END_HEADERS`.
    package var text: String {
        var line = "\(direction) \(Self.typeName(type)) stream=\(streamID) length=\(length)"
        let flagNames = Self.flagNames(type: type, flags: flags)
        if !flagNames.isEmpty { line += " flags=" + flagNames.joined(separator: "|") }
        for field in fields { line += " " + field }
        return line
    }

    /// The frame nghttp2 sent or received (a client's or, in the mock server, a server's).
    package init(_ frame: UnsafePointer<nghttp2_frame>, sent: Bool) {
        let header = frame.pointee.hd
        self.init(direction: sent ? "send" : "recv", type: header.type, flags: header.flags, streamID: header.stream_id, length: header.length)
        switch Int(header.type) {
        case Int(NGHTTP2_SETTINGS.rawValue):
            let settings = frame.pointee.settings
            if let entries = settings.iv {
                for entry in UnsafeBufferPointer(start: entries, count: settings.niv) {
                    fields.append("\(Self.settingName(entry.settings_id))=\(entry.value)")
                }
            }
        case Int(NGHTTP2_GOAWAY.rawValue):
            let goaway = frame.pointee.goaway
            fields.append("last_stream=\(goaway.last_stream_id)")
            fields.append("error=\(HTTP2Connection.errorName(goaway.error_code))")
            if let opaque = goaway.opaque_data, goaway.opaque_data_len > 0 {
                fields.append("debug=" + Self.quoted(UnsafeBufferPointer(start: opaque, count: goaway.opaque_data_len)))
            }
        case Int(NGHTTP2_RST_STREAM.rawValue):
            fields.append("error=\(HTTP2Connection.errorName(frame.pointee.rst_stream.error_code))")
        case Int(NGHTTP2_WINDOW_UPDATE.rawValue):
            fields.append("increment=\(frame.pointee.window_update.window_size_increment)")
        case Int(NGHTTP2_PING.rawValue):
            let data = withUnsafeBytes(of: frame.pointee.ping.opaque_data) { Array($0) }
            fields.append("data=" + Hex.digits(data))
        default:
            break
        }
    }

    init(direction: String, type: UInt8, flags: UInt8, streamID: Int32, length: Int, fields: [String] = []) {
        self.direction = direction
        self.type = type
        self.flags = flags
        self.streamID = streamID
        self.length = length
        self.fields = fields
    }

    /// The frame type's name in RFC 9113 §6 (`type=0x..` for an extension).
    static func typeName(_ type: UInt8) -> String {
        switch type {
        case 0x0: "DATA"
        case 0x1: "HEADERS"
        case 0x2: "PRIORITY"
        case 0x3: "RST_STREAM"
        case 0x4: "SETTINGS"
        case 0x5: "PUSH_PROMISE"
        case 0x6: "PING"
        case 0x7: "GOAWAY"
        case 0x8: "WINDOW_UPDATE"
        case 0x9: "CONTINUATION"
        default: "type=0x" + Hex.digits([type])
        }
    }

    /// The names of the flags set, as RFC 9113 §6 defines them for `type`; a bit it does
    /// not define is written as `0x..`.
    static func flagNames(type: UInt8, flags: UInt8) -> [String] {
        let defined: [(UInt8, String)]
        switch type {
        case 0x0: defined = [(0x01, "END_STREAM"), (0x08, "PADDED")]
        case 0x1: defined = [(0x01, "END_STREAM"), (0x04, "END_HEADERS"), (0x08, "PADDED"), (0x20, "PRIORITY")]
        case 0x4, 0x6: defined = [(0x01, "ACK")]
        case 0x5: defined = [(0x04, "END_HEADERS"), (0x08, "PADDED")]
        case 0x9: defined = [(0x04, "END_HEADERS")]
        default: defined = []
        }
        var names: [String] = []
        var rest = flags
        for (bit, name) in defined where flags & bit != 0 {
            names.append(name)
            rest &= ~bit
        }
        if rest != 0 { names.append("0x" + Hex.digits([rest])) }
        return names
    }

    /// A setting's name in RFC 9113 §6.5.2 (and RFC 8441, RFC 9218), or its number.
    static func settingName(_ id: Int32) -> String {
        switch id {
        case 0x1: "HEADER_TABLE_SIZE"
        case 0x2: "ENABLE_PUSH"
        case 0x3: "MAX_CONCURRENT_STREAMS"
        case 0x4: "INITIAL_WINDOW_SIZE"
        case 0x5: "MAX_FRAME_SIZE"
        case 0x6: "MAX_HEADER_LIST_SIZE"
        case 0x8: "ENABLE_CONNECT_PROTOCOL"
        case 0x9: "NO_RFC7540_PRIORITIES"
        default: "SETTING_0x" + String(id, radix: 16)
        }
    }

    /// At most 128 bytes of `bytes` in quotes, printable ASCII as is, the rest as `\xNN`.
    static func quoted(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        var text = "\""
        for byte in bytes.prefix(128) {
            if (0x20...0x7E).contains(byte), byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") {
                text.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                text += "\\x" + Hex.digits([byte])
            }
        }
        return text + (bytes.count > 128 ? "…\"" : "\"")
    }
}
