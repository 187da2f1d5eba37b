import Foundation
import Testing
@testable import APNsMockServer

@Suite("Robustness under load and bad input")
struct RobustnessTests {
    static func bodyFile() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("robust-body-\(UUID().uuidString)").path
        try Data(samplePayload.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test("many concurrent error answers (with JSON bodies) all arrive intact (h2load)")
    func errorAnswersUnderLoad() async throws {
        try await withServerAndCurl { server, _ in
            let body = try Self.bodyFile()
            defer { try? FileManager.default.removeItem(atPath: body) }
            let result = try await ExternalTool.run("h2load", [
                "-n", "4000", "-c", "2", "-m", "50", "-H", "apns-topic: com.example.app", "-d", body,
                "https://127.0.0.1:\(server.port)/3/device/nothex",
            ], timeout: .seconds(120))
            #expect(result.stdout.contains("status codes: 0 2xx, 0 3xx, 4000 4xx, 0 5xx"), "\(result.stdout)")
            #expect(server.statistics.rejected == 4000)
            #expect(server.recordedRequests.allSatisfy { $0.reason == "BadDeviceToken" })
        }
    }

    @Test("stop() while h2load is sending ends cleanly, and the port is closed")
    func stopUnderLoad() async throws {
        let server = MockAPNsServer(configuration: .init(bundleIDs: ["com.example.app"], recordedRequestLimit: 0))
        try await server.start()
        let port = server.port
        let body = try Self.bodyFile()
        defer { try? FileManager.default.removeItem(atPath: body) }
        async let load = ExternalTool.run("h2load", [
            "-n", "2000000", "-c", "4", "-m", "100", "-H", "apns-topic: com.example.app", "-d", body,
            "https://127.0.0.1:\(port)/3/device/\(sampleDeviceToken)",
        ], timeout: .seconds(120))
        try await waitForRequests(server, count: 2000)
        await server.stop()
        let result = try await load
        #expect(!result.stdout.contains("2000000 succeeded"))
        #expect(try TLSAndTransportTests.listeningSockets(port: port) == 0)
        #expect(server.statistics.requests >= 2000)
    }

    @Test("garbage instead of the HTTP/2 preface closes that connection; the server goes on")
    func garbagePreface() async throws {
        try await withServerAndCurl { server, curl in
            let result = try await ExternalTool.run("sh", [
                "-c", "printf 'GET / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n' | openssl s_client -quiet -alpn h2 -connect 127.0.0.1:\(server.port)",
            ], timeout: .seconds(15))
            _ = result
            let after = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)", headers: ["apns-topic: com.example.app"])
            #expect(after.status == 200)
            #expect(server.statistics.connections == 2)
        }
    }

    /// What `PythonClient/raw_frames.py` saw the server do.
    struct RawFramesReport: Decodable {
        typealias GoAway = PythonGoAway
        let goaway: GoAway?
        let answers: [String: Int]
        let resets: [String: Int]
        let closed: Bool
    }

    /// Runs one case of `PythonClient/raw_frames.py` (hand-made frames) against `server`.
    static func rawFrames(_ server: MockAPNsServer, _ testCase: String) async throws -> RawFramesReport {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("PythonClient/raw_frames.py").path
        let ca = FileManager.default.temporaryDirectory.appendingPathComponent("raw-frames-ca-\(UUID().uuidString).pem").path
        try server.writeCertificateAuthority(to: ca)
        defer { try? FileManager.default.removeItem(atPath: ca) }
        let run = try await ExternalTool.run("python3", [script, "\(server.port)", ca, testCase], timeout: .seconds(60))
        #expect(run.exitCode == 0, "\(run.stderr)")
        return try JSONDecoder().decode(RawFramesReport.self, from: Data(run.stdout.utf8))
    }

    @Test("HEADERS on a stream identifier the client skipped (5, then 3) ends the connection with GOAWAY PROTOCOL_ERROR instead of going unanswered; the server goes on")
    func reusedStreamIdentifier() async throws {
        try await withServerAndCurl { server, curl in
            let report = try await Self.rawFrames(server, "reused-id")
            #expect(report.answers["5"] == 200, "\(report)")
            // RFC 9113 §5.1.1: an unexpected stream identifier is a connection error of
            // type PROTOCOL_ERROR (1); libnghttp2 alone ignored the HEADERS, and the
            // client waited for an answer on stream 3 that never came.
            let goAway = try #require(report.goaway, "no GOAWAY: \(report)")
            #expect(goAway.error_code == 1)
            #expect(goAway.last_stream_id == 5)
            #expect(report.answers["3"] == nil)
            let after = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)", headers: ["apns-topic: com.example.app"])
            #expect(after.status == 200)
        }
    }

    @Test("a header block over more CONTINUATION frames than libnghttp2 takes ends the connection with GOAWAY ENHANCE_YOUR_CALM, not a bare close")
    func tooManyContinuations() async throws {
        try await withServerAndCurl { server, curl in
            let report = try await Self.rawFrames(server, "continuations")
            // A libnghttp2 without the limit (before 1.61, unpatched) answers the request.
            if report.answers["1"] != 200 {
                // RFC 9113 §5.4.1: a connection error SHOULD be signalled with GOAWAY.
                let goAway = try #require(report.goaway, "the connection ended without a GOAWAY: \(report)")
                #expect(goAway.error_code == 11, "\(report)")
                #expect(server.statistics.goAways == 1)
            }
            let after = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)", headers: ["apns-topic: com.example.app"])
            #expect(after.status == 200)
        }
    }
}
