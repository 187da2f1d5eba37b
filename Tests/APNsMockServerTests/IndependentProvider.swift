import APNsCore
import Foundation
import TestTools
import Testing
@testable import APNsMockServer

/// A provider program written on another HTTP/2 stack (Go's, Rust's h2, Netty), run
/// against the mock server, and what it reported checked against what Apple documents.
///
/// Each program takes `PORT CA KEY KEYID TEAMID N CONC OUT`, signs its own provider token
/// with its own ES256 code from a key OpenSSL made, sends `N` requests with `CONC` in
/// flight (over one connection, unless its HTTP/2 client opens another), each of a shape set by its index, and writes one JSON
/// line per request to `OUT` (index, status, reason, apns_id, sent_id, proto, error).
/// The shapes and Apple's answers:
///
/// | index % 10 | the request | Apple's answer |
/// |---|---|---|
/// | 3 | a device token that is not hex | 400 BadDeviceToken |
/// | 5 | no `apns-topic` | 400 MissingTopic |
/// | 7 | an alert payload of 4,097 bytes | 413 PayloadTooLarge |
/// | 8 | `apns-priority` 7 | 400 BadPriority |
/// | otherwise | a valid alert | 200 |
///
/// Odd indices send an `apns-id` of their own (APNs echoes it); even ones send none
/// (APNs makes one).
enum IndependentProvider {
    /// A run in figures, for the report line.
    struct Run: Sendable {
        /// Requests answered 200.
        let accepted: Int
        /// Times the server refused a stream and the program sent it again (the `refused`
        /// field; `nil` when the program does not report it, as Go's re-sends by itself).
        let refused: Int?
        /// Connections the server recorded requests on.
        let connections: Int
        /// The highest stream id a request was recorded on.
        let highestStream: Int

        var description: String {
            "\(accepted) accepted, \(refused.map { "\($0) refused and sent again, " } ?? "")\(connections) connections, streams up to \(highestStream)"
        }
    }

    /// Runs `command` (an executable and its first arguments) against a mock server that verifies provider tokens with an
    /// independent key (key ID `keyID`), checks each reported answer against Apple's
    /// documentation, and that the server recorded each request once, on a stream of
    /// its own, with the program's token; returns the run for checks of the program's own.
    @discardableResult
    static func run(_ command: [String], keyID: String, count: Int, concurrency: Int) async throws -> Run {
        try await withIndependentKeys([keyID]) { keys, verifier in
            let configuration = MockAPNsServer.Configuration(
                bundleIDs: ["com.example.app"], authentication: .providerToken(.signature(verifier)))
            return try await withMockAPNsServer(configuration: configuration) { server in
                let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apns-provider-\(UUID().uuidString)")
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(at: directory) }
                let caFile = directory.appendingPathComponent("ca.pem").path
                let output = directory.appendingPathComponent("results.jsonl").path
                try server.writeCertificateAuthority(to: caFile)

                let run = try await ExternalTool.run(command[0], Array(command.dropFirst()) + [
                    String(server.port), caFile, keys[0].privateKeyPath, keys[0].keyID, "DEF123GHIJ",
                    String(count), String(concurrency), output,
                ], timeout: .seconds(120))
                try #require(run.exitCode == 0, "\(command.joined(separator: " ")): \(run.stderr)")

                let lines = try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n")
                var results: [Int: [String: Any]] = [:]
                for line in lines {
                    let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                    let index = try #require(object["index"] as? Int)
                    #expect(results[index] == nil, "request \(index) reported twice")
                    results[index] = object
                }
                #expect(results.count == count)
                let findings = answerFindings(results, count: count)
                #expect(findings.isEmpty, "\(findings.count) findings: \(findings.prefix(8).joined(separator: "\n"))")

                // The server saw each request once: a request the server refused before
                // reading it (sent again by the program) is not recorded.
                let recorded = server.recordedRequests
                #expect(recorded.count == count, "\(recorded.count) requests recorded for \(count)")
                // The program's token reached the server whole, with its claims.
                #expect(recorded.allSatisfy { $0.providerToken?.keyID == keyID && $0.providerToken?.teamID == "DEF123GHIJ" })
                // One request per stream. The programs ask for one connection, but Go's
                // client opens another when the server's stream limit is reached (as
                // APNs, one stream until a token is accepted) and it is busy enough.
                let streams = Set(recorded.map { "\($0.connectionNumber)/\($0.streamID)" })
                #expect(streams.count == count, "\(count - streams.count) streams carried two requests")
                return Run(
                    accepted: results.values.filter { $0["status"] as? Int == 200 }.count,
                    refused: results.values.contains { $0["refused"] != nil }
                        ? results.values.compactMap { $0["refused"] as? Int }.reduce(0, +) : nil,
                    connections: Set(recorded.map(\.connectionNumber)).count,
                    highestStream: recorded.map(\.streamID).max() ?? 0)
            }
        }
    }

    /// Each reported answer against what Apple documents for its shape, and the
    /// `apns-id`: echoed when sent, otherwise a canonical UUID of the server's.
    static func answerFindings(_ results: [Int: [String: Any]], count: Int) -> [String] {
        var findings: [String] = []
        for index in 0..<count {
            guard let result = results[index] else {
                findings.append("\(index): no result")
                continue
            }
            if let error = result["error"] as? String { findings.append("\(index): the client: \(error)") }
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
            let sent = result["sent_id"] as? String ?? ""
            let answered = result["apns_id"] as? String ?? ""
            if !sent.isEmpty, answered.lowercased() != sent.lowercased() {
                findings.append("\(index): apns-id \(answered) for \(sent)")
            }
            if sent.isEmpty, UUID(uuidString: answered) == nil {
                findings.append("\(index): apns-id '\(answered)' is not a UUID")
            }
        }
        return findings
    }
}
