import Foundation
import Logging
import Synchronization
import Testing
@testable import APNsMockServer

/// The mock server's frame trace at `.trace`, with curl (nghttp2 inside, not our client) as
/// the peer: what curl sends is what the server says it received.
@Suite("Mock server frames traced at .trace")
struct FrameTraceTests {
    /// Keeps every message at or above its level.
    struct Lines: LogHandler {
        let store: Store
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            store.lines.withLock { $0.append("\(event.level) \(event.message)") }
        }
    }

    final class Store: Sendable {
        let lines = Mutex<[String]>([])
    }

    @Test("curl's request frames in, the server's SETTINGS and answer out; nothing at .debug", arguments: [Logger.Level.trace, .debug])
    func traced(level: Logger.Level) async throws {
        let store = Store()
        var logger = Logger(label: "mock", factory: { _ in Lines(store: store, logLevel: level) })
        logger.logLevel = level
        var configuration = MockAPNsServer.Configuration(bundleIDs: ["com.example.app"], maxConcurrentStreams: 9)
        configuration.logger = logger
        try await withServerAndCurl(configuration) { server, curl in
            let response = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)", headers: ["apns-topic: com.example.app"])
            #expect(response.status == 200, "\(response)")
            await server.stop()
        }
        let frames = store.lines.withLock { $0 }.filter { $0.hasPrefix("trace ") }
        guard level == .trace else {
            #expect(frames.isEmpty, "\(frames)")
            return
        }
        func position(_ fragment: String) -> Int? { frames.firstIndex { $0.contains(fragment) } }
        // The server's preface carries its limit; curl's request is HEADERS then DATA with
        // END_STREAM (a POST with a body); the answer goes out on the same stream.
        let sent = [position("send SETTINGS stream=0"), position("send HEADERS stream=1")]
        let received = [position("recv SETTINGS stream=0"), position("recv HEADERS stream=1"), position("recv DATA stream=1")]
        #expect((sent + received).allSatisfy { $0 != nil }, "\(frames)")
        #expect(frames.contains { $0.contains("send SETTINGS stream=0") && $0.contains("MAX_CONCURRENT_STREAMS=9") }, "\(frames)")
        #expect(frames.contains { $0.contains("recv DATA stream=1") && $0.contains("END_STREAM") }, "\(frames)")
        if let request = received[2], let answer = sent[1] { #expect(request < answer) }
        #expect(!frames.contains { $0.contains(sampleDeviceToken) })
    }
}
