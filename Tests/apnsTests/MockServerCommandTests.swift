import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `apns mock-server` as a separate process, spoken to with curl (nghttp2 + OpenSSL, not our code).
@Suite("apns mock-server")
struct MockServerCommandTests {
    @Test("prints its port and CA file, answers curl like APNs, and stops cleanly", arguments: [SIGTERM, SIGINT])
    func answersCurlAndStops(signal: Int32) async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let caPath = directory.appendingPathComponent("ca.pem").path
        let server = try CLI.start(["mock-server", "--ca-file", caPath, "--unregistered", Fixtures.unregisteredToken, "--verbose"])
        defer { server.cleanUp() }
        let port = try #require(Int(try await server.waitForLine(startingWith: "port: ")))
        #expect(try await server.waitForLine(startingWith: "ca-file: ") == caPath)
        #expect(try String(contentsOfFile: caPath, encoding: .utf8).contains("-----BEGIN CERTIFICATE-----"))

        func post(_ token: String) async throws -> (status: Int, body: String) {
            let result = try await CLI.tool("/usr/bin/curl", [
                "--silent", "--http2", "--cacert", caPath, "--max-time", "20",
                "--header", "apns-topic: \(Fixtures.topic)", "--header", "apns-push-type: alert",
                "--data", #"{"aps":{"alert":"Hello"}}"#, "--write-out", "\n%{http_code} %{http_version}",
                "https://localhost:\(port)/3/device/\(token)",
            ])
            #expect(result.status == 0, "\(result)")
            let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false)
            let statusLine = lines.last.map(String.init) ?? ""
            #expect(statusLine.hasSuffix(" 2"), "curl did not speak HTTP/2: \(statusLine)")
            return (Int(statusLine.split(separator: " ").first ?? "") ?? 0, lines.dropLast().joined(separator: "\n"))
        }

        let accepted = try await post(Fixtures.goodToken)
        #expect(accepted.status == 200)
        let unregistered = try await post(Fixtures.unregisteredToken)
        #expect(unregistered.status == 410)
        let body = try CLI.jsonObject(unregistered.body)
        #expect(body["reason"] as? String == "Unregistered")
        #expect(body["timestamp"] is NSNumber)

        _ = try await server.waitForLine(startingWith: "#1 ")
        kill(server.pid, signal)
        let status = try await server.wait(timeout: .seconds(20))
        #expect(status == 0, "\(server.stdout)\(server.stderr)")
        let output = server.stdout
        #expect(output.contains("received \(signal == SIGINT ? "SIGINT" : "SIGTERM"): stopping"))
        #expect(output.contains("stopped after 2 requests (1 accepted, 1 rejected)"), "\(output)")
        #expect(output.contains("→ 410 Unregistered"), "\(output)")
        // The per-request lines show only the start of a device token.
        #expect(!output.contains(Fixtures.unregisteredToken), "\(output)")
        #expect(server.stderr.isEmpty, "\(server.stderr)")
    }

    @Test("with --token-key, a request without a provider token is refused 403 MissingProviderToken")
    func requiresProviderToken() async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = try await Fixtures.makeKey(in: directory)
        let publicPath = directory.appendingPathComponent("public.pem").path
        let caPath = directory.appendingPathComponent("ca.pem").path
        let server = try CLI.start(["mock-server", "--ca-file", caPath, "--token-key", publicPath, "--key-id", Fixtures.keyID])
        defer { server.cleanUp() }
        #expect(key.publicKeyPEM.contains("PUBLIC KEY"))
        let port = try #require(Int(try await server.waitForLine(startingWith: "port: ")))
        let result = try await CLI.tool("/usr/bin/curl", [
            "--silent", "--http2", "--cacert", caPath, "--max-time", "20",
            "--header", "apns-topic: \(Fixtures.topic)", "--data", #"{"aps":{"alert":"Hello"}}"#,
            "--write-out", "\n%{http_code}", "https://localhost:\(port)/3/device/\(Fixtures.goodToken)",
        ])
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.last == "403", "\(result)")
        #expect(try CLI.jsonObject(String(lines.first ?? ""))["reason"] as? String == "MissingProviderToken")
        kill(server.pid, SIGTERM)
        #expect(try await server.wait(timeout: .seconds(20)) == 0)
    }
}
