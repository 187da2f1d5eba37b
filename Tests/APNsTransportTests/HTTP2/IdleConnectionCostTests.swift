import APNsMockServer
import Foundation
import Logging
import Testing
@testable import APNsTransport

/// What idle connections cost the client process: threads and resident memory with 1, 50
/// and 200 credentials holding one open, idle connection each, against a mock server in
/// another process (`apns mock-server`, whose port and CA file the environment names).
/// A measurement, not a check: it runs only when `APNS_IDLE_COST_PORT` is set and prints
/// its figures (see Benchmarks/README.md, "Idle connections").
@Suite("Idle connection cost (measurement)")
struct IdleConnectionCostTests {
    static let port = ProcessInfo.processInfo.environment["APNS_IDLE_COST_PORT"].flatMap(Int.init)
    static let caFile = ProcessInfo.processInfo.environment["APNS_IDLE_COST_CA"] ?? "/tmp/apns-mock-ca.pem"

    /// `Threads` and `VmRSS` (KiB) of this process, from /proc/self/status.
    static func threadsAndRSS() throws -> (threads: Int, rssKiB: Int) {
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        func field(_ name: String) -> Int {
            let line = status.split(separator: "\n").first { $0.hasPrefix(name + ":") } ?? ""
            return Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? "") ?? -1
        }
        return (field("Threads"), field("VmRSS"))
    }

    /// An unsigned JWT naming team `index` and its key: enough for the transport to keep
    /// it on connections of its own (the server in this measurement checks no tokens).
    static func token(_ index: Int) -> String {
        func part(_ json: String) -> String {
            Data(json.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        }
        return part(#"{"alg":"ES256","kid":"KEY\#(index)"}"#) + "." + part(#"{"iss":"TEAM\#(index)","iat":1}"#) + ".c2ln"
    }

    @Test(.enabled(if: port != nil))
    func idleConnections() async throws {
        let port = try #require(Self.port)
        let ca = try String(contentsOfFile: Self.caFile, encoding: .utf8)
        var configuration = HTTP2Transport.Configuration(
            environment: .custom(host: "127.0.0.1", port: port),
            tls: TLSConfiguration(trustRoots: .certificates(ca))
        )
        configuration.maxConnections = 1_000
        configuration.credentialIdleTimeout = nil
        let transport = HTTP2Transport(configuration: configuration)
        var opened = 0
        func open(upTo count: Int) async throws {
            while opened < count {
                let request = try mockPush(opened, port: port)
                let headers = request.headers.dropFirst(4) + [HeaderField(name: "authorization", value: "bearer " + Self.token(opened))]
                let signed = try APNsRequest(method: .post, authority: request.authority, path: request.path, headers: Array(headers), body: request.body)
                _ = try await transport.send(signed)
                opened += 1
            }
            try await Task.sleep(for: .seconds(1))  // let the connections settle idle
        }
        try await open(upTo: 1)
        let one = try Self.threadsAndRSS()
        try await open(upTo: 50)
        let fifty = try Self.threadsAndRSS()
        try await open(upTo: 200)
        let twoHundred = try Self.threadsAndRSS()
        #expect(transport.connectionBudget.held == 200)
        await transport.shutdown()
        print("idle-cost: 1 connection: \(one.threads) threads, \(one.rssKiB) KiB; 50: \(fifty.threads) threads, \(fifty.rssKiB) KiB; 200: \(twoHundred.threads) threads, \(twoHundred.rssKiB) KiB")
        print("idle-cost: per connection (1→200): \(Double(twoHundred.threads - one.threads) / 199) threads, \(Double(twoHundred.rssKiB - one.rssKiB) / 199) KiB")
    }
}
