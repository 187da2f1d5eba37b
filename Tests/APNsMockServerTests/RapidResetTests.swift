import Foundation
import Testing

@testable import APNsMockServer

/// A client that resets thousands of streams at once (as mass cancellation does) trips
/// libnghttp2's rapid-reset guard, which ends the connection with a GOAWAY of its own
/// (INTERNAL_ERROR). The mock server notes that GOAWAY as it notes its own: it counts it
/// (an outside cancellation audit saw `goAways` stay 0), and answers no stream above its
/// last-stream-id. The client is Python's h2
/// (`PythonClient/rapid_reset.py`).
@Suite("A client resetting thousands of streams at once")
struct RapidResetTests {
    struct Report: Decodable {
        typealias GoAway = PythonGoAway
        let goaway: GoAway?
        let answers: [String: Int]
        let sent: [Int]
    }

    @Test("nghttp2's own GOAWAY is counted, and no stream above its last-stream-id is answered")
    func rapidResetGoAwayHolds() async throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("PythonClient/rapid_reset.py").path
        try await withMockAPNsServer(configuration: .init(bundleIDs: ["com.example.app"])) { server in
            let ca = FileManager.default.temporaryDirectory.appendingPathComponent("rapid-reset-ca-\(UUID().uuidString).pem").path
            try server.writeCertificateAuthority(to: ca)
            defer { try? FileManager.default.removeItem(atPath: ca) }
            let run = try await ExternalTool.run("python3", [script, "\(server.port)", ca, "3000", "50"], timeout: .seconds(60))
            #expect(run.exitCode == 0, "\(run.stderr)")
            let report = try JSONDecoder().decode(Report.self, from: Data(run.stdout.utf8))
            let goAway = try #require(report.goaway, "no GOAWAY after 3,000 resets: \(run.stdout.prefix(300))")
            #expect(goAway.error_code != 0)
            #expect(server.statistics.goAways >= 1, "the GOAWAY nghttp2 sent went uncounted")
            let answeredAbove = report.answers.keys.compactMap(Int.init).filter { $0 > goAway.last_stream_id }
            #expect(answeredAbove.isEmpty, "answered above the GOAWAY's last-stream-id \(goAway.last_stream_id): \(answeredAbove.sorted().prefix(10))")
            // Requests nghttp2 handed over in the same read, after its guard tripped and
            // before its GOAWAY left, are still recorded (never answered): the mock learns
            // of the GOAWAY only when it is sent. Known, documented in the article.
            let recordedAbove = server.recordedRequests.filter { $0.streamID > goAway.last_stream_id }
            withKnownIssue("requests read in the same burst before nghttp2's GOAWAY left are recorded", isIntermittent: true) {
                #expect(recordedAbove.isEmpty, "processed above \(goAway.last_stream_id): \(recordedAbove.map(\.streamID).prefix(10))")
            }
        }
    }
}

/// A GOAWAY as the Python clients (`PythonClient/*.py`) report it in their JSON.
struct PythonGoAway: Decodable {
    let last_stream_id: Int
    let error_code: Int
}
