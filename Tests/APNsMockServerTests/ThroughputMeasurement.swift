import Foundation
import Testing
@testable import APNsMockServer

/// Not a unit assertion (timing is noisy on shared machines): with `APNS_MOCK_BENCH=1`,
/// drives the server with h2load on 1 and 4 connections and prints requests per second
/// and the process's CPU time per request (the server thread does nearly all the work).
/// `APNS_MOCK_BENCH_RECORD=1` keeps the request record on (it is off for the base figure).
/// Release figures: `swift test -c release -Xswiftc -enable-testing --filter h2loadThroughput`.
@Test(.enabled(if: ProcessInfo.processInfo.environment["APNS_MOCK_BENCH"] != nil))
func h2loadThroughput() async throws {
    let token = makeJWT(issuedAt: Int(Date().timeIntervalSince1970))
    let recording = ProcessInfo.processInfo.environment["APNS_MOCK_BENCH_RECORD"] != nil
    let configuration = MockAPNsServer.Configuration(
        bundleIDs: ["com.example.app"], authentication: .providerToken(.accepting([token])),
        recordedRequestLimit: recording ? 100_000 : 0)
    let requests = Int(ProcessInfo.processInfo.environment["APNS_MOCK_BENCH_REQUESTS"] ?? "") ?? 100_000
    try await withMockAPNsServer(configuration: configuration) { server in
        let bodyFile = FileManager.default.temporaryDirectory.appendingPathComponent("bench-body-\(UUID().uuidString)").path
        try Data(samplePayload.utf8).write(to: URL(fileURLWithPath: bodyFile))
        defer { try? FileManager.default.removeItem(atPath: bodyFile) }
        for clients in [1, 4] {
            let before = cpuMicroseconds()
            let result = try await ExternalTool.run("h2load", [
                "-n", String(requests), "-c", String(clients), "-m", "100",
                "-H", "apns-topic: com.example.app", "-H", "apns-push-type: alert",
                "-H", "authorization: bearer \(token)", "-d", bodyFile,
                "https://127.0.0.1:\(server.port)/3/device/\(sampleDeviceToken)",
            ], timeout: .seconds(300))
            let cpu = cpuMicroseconds() - before
            let summary = result.stdout.split(separator: "\n").filter {
                $0.hasPrefix("finished in") || $0.hasPrefix("status codes") || $0.hasPrefix("requests:")
            }
            print("h2load -c \(clients): \(summary.joined(separator: " | ")); server process CPU \(cpu / Double(requests)) µs/request")
            // In token mode a connection starts with one stream, as on APNs; h2load may open
            // more before it sees that SETTINGS, and nghttp2 refuses those (REFUSED_STREAM).
            // Every answer that did arrive must be a 200.
            #expect(result.stdout.contains(" 0 4xx, 0 5xx"), "\(result.stdout)")
        }
    }
}

/// User plus system CPU time of this process, in microseconds.
func cpuMicroseconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1_000_000
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec)
}
