import APNsCore
import Foundation
import TestTools
import Testing
@testable import APNsMockServer

/// The mock server against a provider written on Go's HTTP/2 client and ES256 signer
/// (`GoClient/main.go`, built by ``GoProgram``): HPACK from Go's encoder (which indexes
/// request fields, the provider token among them), Go's flow control and Go's stream
/// scheduling against the server's limit (one stream until a token is accepted, as APNs,
/// then many). Each request's shape and the answer Apple
/// documents for it are set by its index (see main.go); the key is made by OpenSSL and
/// the token signed by Go, so no part of the request comes from our code.
@Suite("A provider on Go's HTTP/2 client")
struct GoClientTests {
    @Test("2,000 requests, 200 in flight on one connection: each answered once, as Apple documents its shape")
    func answersAsApple() async throws {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("GoClient/main.go").path
        let goClient = try GoProgram.executable(for: source)
        let count = 2_000
        try await withIndependentKeys(["GOKEY12345"]) { keys, verifier in
            let configuration = MockAPNsServer.Configuration(
                bundleIDs: ["com.example.app"], authentication: .providerToken(.signature(verifier)))
            try await withMockAPNsServer(configuration: configuration) { server in
                let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apns-goclient-\(UUID().uuidString)")
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(at: directory) }
                let caFile = directory.appendingPathComponent("ca.pem").path
                let output = directory.appendingPathComponent("results.jsonl").path
                try server.writeCertificateAuthority(to: caFile)

                let run = try await ExternalTool.run(goClient, [
                    String(server.port), caFile, keys[0].privateKeyPath, keys[0].keyID, "DEF123GHIJ",
                    String(count), "200", output,
                ], timeout: .seconds(120))
                try #require(run.exitCode == 0, "the Go client: \(run.stderr)")

                let lines = try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n")
                var results: [Int: [String: Any]] = [:]
                for line in lines {
                    let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                    let index = try #require(object["index"] as? Int)
                    #expect(results[index] == nil, "request \(index) reported twice")
                    results[index] = object
                }
                #expect(results.count == count)

                var findings: [String] = []
                for index in 0..<count {
                    guard let result = results[index] else {
                        findings.append("\(index): no result")
                        continue
                    }
                    if let error = result["error"] as? String { findings.append("\(index): Go's client: \(error)") }
                    // What Apple's documentation says of each shape.
                    let (status, reason): (Int, String?) = switch index % 10 {
                    case 3: (400, "BadDeviceToken")
                    case 5: (400, "MissingTopic")
                    case 7: (413, "PayloadTooLarge")
                    case 8: (400, "BadPriority")
                    default: (200, nil)
                    }
                    let gotReason = (result["reason"] as? String).flatMap { $0.isEmpty ? nil : $0 }
                    if result["status"] as? Int != status || gotReason != reason {
                        findings.append("\(index): \(result["status"] ?? "no status") \(gotReason ?? "-"), Apple: \(status) \(reason ?? "-")")
                    }
                    if result["proto"] as? String != "HTTP/2.0" { findings.append("\(index): \(result["proto"] ?? "no protocol")") }
                    // apns-id: echoed when sent; otherwise a canonical UUID of the server's.
                    let sent = result["sent_id"] as? String ?? ""
                    let answered = result["apns_id"] as? String ?? ""
                    if !sent.isEmpty, answered.lowercased() != sent.lowercased() {
                        findings.append("\(index): apns-id \(answered) for \(sent)")
                    }
                    if sent.isEmpty, UUID(uuidString: answered) == nil {
                        findings.append("\(index): apns-id '\(answered)' is not a UUID")
                    }
                }
                #expect(findings.isEmpty, "\(findings.count) findings: \(findings.prefix(8).joined(separator: "\n"))")

                // The server saw each request once: Go re-sends only what the server
                // refused before reading it, and those are not recorded.
                let recorded = server.recordedRequests
                #expect(recorded.count == count, "\(recorded.count) requests recorded for \(count)")
                #expect(Set(recorded.map(\.connectionNumber)).count == 1, "connections: \(Set(recorded.map(\.connectionNumber)))")
                // Go's token reached the server whole, and its claims as Go wrote them.
                #expect(recorded.allSatisfy { $0.providerToken?.keyID == "GOKEY12345" && $0.providerToken?.teamID == "DEF123GHIJ" })
                let streams = recorded.map(\.streamID)
                #expect(Set(streams).count == count, "stream ids reused")
                print("go client: \(count) requests, \(results.values.filter { $0["status"] as? Int == 200 }.count) accepted, streams up to \(streams.max() ?? 0)")
            }
        }
    }
}
