import APNsMockServer
import Foundation
import Testing

/// `stop()` as a client sees it, read by Python's ssl and h2 (`PythonClient/stop_watcher.py`):
/// a GOAWAY and a TLS close_notify before the connection closes, as the documentation
/// says. Found over a real network path: the stop sent neither (the GOAWAY was queued in
/// nghttp2 and the socket closed), so a client failed its requests in flight as "may have
/// reached APNs" although none had, instead of sending them again.
@Suite struct StopTests {
    @Test("stop() ends an open connection with GOAWAY (NO_ERROR, last stream 0) and close_notify")
    func stopSaysGoodbye() async throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("PythonClient/stop_watcher.py").path
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apns-stop-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let caFile = directory.appendingPathComponent("ca.pem").path
        let readyFile = directory.appendingPathComponent("ready").path
        let output = try await withMockAPNsServer { server in
            try server.writeCertificateAuthority(to: caFile)
            let watcher = Task {
                try await ExternalTool.run("python3", [script, String(server.port), caFile, readyFile], timeout: .seconds(240))
            }
            // Only a hang's bound: in a whole parallel run on 2 busy cores, starting the
            // Python process has taken over 30 s (it then found the server stopped).
            let deadline = ContinuousClock.now + .seconds(180)
            while !FileManager.default.fileExists(atPath: readyFile), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(5))
            }
            #expect(FileManager.default.fileExists(atPath: readyFile), "the Python client never saw the server's SETTINGS")
            await server.stop()
            return try await watcher.value
        }
        #expect(output.exitCode == 0, "\(output.stderr)")
        let line = try #require(output.stdout.split(separator: "\n").last.map(String.init))
        let result = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(output.stdout)")
        let goAway = result["goaway"] as? [String: Any]
        #expect(goAway?["error_code"] as? Int == 0, "\(line)")
        #expect(goAway?["last_stream_id"] as? Int == 0, "\(line)")
        #expect(result["end"] as? String == "close_notify", "\(line)")
    }
}
