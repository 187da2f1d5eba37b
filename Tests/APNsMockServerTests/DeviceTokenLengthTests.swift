import Foundation
import Testing
@testable import APNsMockServer

/// APNs answers 400 BadDeviceToken for a token no device has; a token cut short in
/// storage is one. Apple: device tokens vary in length, never hard-code it; they have
/// been 32 bytes, and 80-byte ones exist. curl (not our client) sends the requests, each
/// list on one connection, so the fast path (a request shaped like the last accepted
/// one) is judged by the same rule as the full one.
@Suite("The mock server's device token lengths")
struct DeviceTokenLengthTests {
    /// The statuses and reasons of requests to `tokens`, in order, on one connection.
    static func answers(_ tokens: [String], server: MockAPNsServer, curl: CurlClient) async throws -> [String] {
        var arguments: [String] = []
        for (index, token) in tokens.enumerated() {
            if index > 0 { arguments.append("--next") }
            arguments += ["-sS", "--http2", "--cacert", curl.caFile, "-w", " %{http_code}\n",
                          "-H", "apns-topic: com.example.app", "--data-binary", samplePayload,
                          "https://127.0.0.1:\(server.port)/3/device/\(token)"]
        }
        let result = try await curl.raw(arguments)
        #expect(result.exitCode == 0, "\(result.stderr)")
        // Each answer is its body (empty for a 200, {"reason":…} otherwise) then the status.
        return result.stdout.split(separator: "\n").map { line in
            let status = line.split(separator: " ").last.map(String.init) ?? ""
            if let start = line.firstIndex(of: "{"), let end = line.lastIndex(of: "}"),
               let object = try? JSONSerialization.jsonObject(with: Data(line[start...end].utf8)) as? [String: Any],
               let text = object["reason"] as? String {
                return "\(status) \(text)"
            }
            return status
        }
    }

    static func token(bytes: Int) -> String { String(repeating: "a1", count: bytes) }

    /// `fastPath`: nothing recorded, so a request shaped like the last accepted one is
    /// answered on the connection's fast path, which must judge the length too.
    @Test("by default 32 to 100 bytes: shorter or longer is BadDeviceToken, after an accepted request too", arguments: [false, true])
    func defaultLengths(fastPath: Bool) async throws {
        let configuration = MockAPNsServer.Configuration(bundleIDs: ["com.example.app"], recordedRequestLimit: fastPath ? 0 : 100)
        try await withServerAndCurl(configuration) { server, curl in
            let tokens = [32, 3, 31, 80, 100, 101, 32].map(Self.token(bytes:))
            let answers = try await Self.answers(tokens, server: server, curl: curl)
            #expect(answers == ["200", "400 BadDeviceToken", "400 BadDeviceToken", "200", "200", "400 BadDeviceToken", "200"])
            if fastPath { #expect(server.statistics.fastAnswers >= 1, "\(server.statistics)") }
        }
    }

    @Test("a test that sends short made-up tokens widens the range")
    func widenedLengths() async throws {
        var configuration = MockAPNsServer.Configuration(bundleIDs: ["com.example.app"])
        configuration.deviceTokenLengths = 2...100
        try await withServerAndCurl(configuration) { server, curl in
            let answers = try await Self.answers([32, 3, 2, 1].map(Self.token(bytes:)), server: server, curl: curl)
            #expect(answers == ["200", "200", "200", "400 BadDeviceToken"])
        }
    }
}
