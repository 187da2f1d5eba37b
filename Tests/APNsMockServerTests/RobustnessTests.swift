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
}
