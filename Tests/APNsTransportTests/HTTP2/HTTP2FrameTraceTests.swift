import APNsMockServer
import CNGHTTP2
import Logging
import Testing
@testable import APNsTransport

/// Frame traces: the names RFC 9113 §6 gives frame types, flags and settings, from frames
/// built by hand; then a whole exchange with the mock server traced at `.trace`.
@Suite("HTTP/2 frames traced at .trace")
struct HTTP2FrameTraceTests {
    private func trace(type: UInt8, flags: UInt8 = 0, stream: Int32 = 0, length: Int = 0, sent: Bool = false, _ fill: (inout nghttp2_frame) -> Void = { _ in }) -> String {
        var frame = nghttp2_frame()
        frame.hd = nghttp2_frame_hd(length: length, stream_id: stream, type: type, flags: flags, reserved: 0)
        fill(&frame)
        return withUnsafePointer(to: &frame) { HTTP2FrameTrace($0, sent: sent).text }
    }

    @Test("types, flags and control fields in RFC 9113's names")
    func names() {
        #expect(trace(type: 0x1, flags: 0x25, stream: 3, length: 244, sent: true) == "send HEADERS stream=3 length=244 flags=END_STREAM|END_HEADERS|PRIORITY")
        #expect(trace(type: 0x0, flags: 0x09, stream: 5, length: 128) == "recv DATA stream=5 length=128 flags=END_STREAM|PADDED")
        #expect(trace(type: 0x0, flags: 0x40, stream: 5, length: 1) == "recv DATA stream=5 length=1 flags=0x40")
        #expect(trace(type: 0x0b, flags: 0x01, length: 4) == "recv type=0x0b stream=0 length=4 flags=0x01")
        #expect(trace(type: 0x3, stream: 7, length: 4) { $0.rst_stream.error_code = 8 } == "recv RST_STREAM stream=7 length=4 error=CANCEL")
        #expect(trace(type: 0x8, length: 4) { $0.window_update.window_size_increment = 1_073_676_289 } == "recv WINDOW_UPDATE stream=0 length=4 increment=1073676289")
        let ping = trace(type: 0x6, flags: 0x01, length: 8, sent: true) { frame in
            withUnsafeMutableBytes(of: &frame.ping.opaque_data) { $0.copyBytes(from: [0, 1, 2, 3, 0xFC, 0xFD, 0xFE, 0xFF]) }
        }
        #expect(ping == "send PING stream=0 length=8 flags=ACK data=00010203fcfdfeff")
        var entries = [
            nghttp2_settings_entry(settings_id: 3, value: 1000),
            nghttp2_settings_entry(settings_id: 4, value: 65535),
            nghttp2_settings_entry(settings_id: 0x9, value: 1),
            nghttp2_settings_entry(settings_id: 0x42, value: 7),
        ]
        let settings = entries.withUnsafeMutableBufferPointer { buffer in
            trace(type: 0x4, length: 24) { frame in
                frame.settings.iv = buffer.baseAddress
                frame.settings.niv = buffer.count
            }
        }
        #expect(settings == "recv SETTINGS stream=0 length=24 MAX_CONCURRENT_STREAMS=1000 INITIAL_WINDOW_SIZE=65535 NO_RFC7540_PRIORITIES=1 SETTING_0x42=7")
        var debug = Array("Shutdown \"now\"\n".utf8)
        let goaway = debug.withUnsafeMutableBufferPointer { buffer in
            trace(type: 0x7, length: 23) { frame in
                frame.goaway.last_stream_id = 9
                frame.goaway.error_code = 0
                frame.goaway.opaque_data = buffer.baseAddress
                frame.goaway.opaque_data_len = buffer.count
            }
        }
        #expect(goaway == #"recv GOAWAY stream=0 length=23 last_stream=9 error=NO_ERROR debug="Shutdown \x22now\x22\x0a""#)
    }

    @Test("a send traced: the preface's SETTINGS both ways, HEADERS and DATA out, the answer in, GOAWAY at shutdown; nothing at .debug")
    func exchange() async throws {
        for level in [Logger.Level.trace, .debug] {
            let store = CapturingLogHandler.Store()
            var logger = Logger(label: "trace", factory: { label in CapturingLogHandler(store: store, label: label, logLevel: level) })
            logger.logLevel = level
            try await withMockAPNsServer(configuration: .init(maxConcurrentStreams: 7)) { server in
                let transport = try mockTransport(server) { $0.logger = logger }
                let request = try mockPush(1, port: server.port)
                let response = try await transport.send(request)
                #expect(response.status == 200)
                await transport.shutdown()
                let frames = store.events.withLock { $0 }.map(\.text).filter { $0.contains(" trace ") }
                guard level == .trace else {
                    #expect(frames.isEmpty)
                    return
                }
                func position(_ fragment: String) -> Int? { frames.firstIndex { $0.contains(fragment) && !$0.contains(" ACK") } }
                func acknowledgement() -> Int? { frames.firstIndex { $0.contains("send SETTINGS stream=0 length=0 flags=ACK") } }
                // Each side sends its SETTINGS without waiting for the other's (RFC 9113
                // §3.4); the client acknowledges the server's (§6.5.3), and its request and
                // the answer follow its preface (§8.1), GOAWAY last (§6.8).
                let preface = [position("recv SETTINGS stream=0"), acknowledgement()]
                let exchange = [
                    position("send SETTINGS stream=0"),
                    position("send HEADERS stream=1"),
                    position("send DATA stream=1 length=\(request.body.count) flags=END_STREAM"),
                    position("recv HEADERS stream=1"),
                    position("send GOAWAY stream=0"),
                ]
                for sequence in [preface, exchange] {
                    #expect(sequence.allSatisfy { $0 != nil }, "\(sequence) in \(frames)")
                    let found = sequence.compactMap { $0 }
                    #expect(found == found.sorted(), "\(frames)")
                }
                #expect(frames.contains { $0.contains("recv SETTINGS") && $0.contains("MAX_CONCURRENT_STREAMS=7") }, "\(frames)")
                #expect(frames.contains { $0.contains("send GOAWAY") && $0.contains("error=NO_ERROR") })
                // Frames, never fields: the device token in the :path is nowhere.
                #expect(!frames.contains { $0.contains(String(repeating: "0", count: 63) + "1") })
            }
        }
    }
}
