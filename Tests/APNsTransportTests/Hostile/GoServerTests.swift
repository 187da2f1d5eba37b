import Foundation
import TestTools
import Testing
@testable import APNsTransport

/// The client against Go's HTTP/2 server (`net/http`, `crypto/tls`): a third HTTP/2 and
/// TLS implementation besides nghttp2/OpenSSL and Python's h2/ssl, written by other
/// people to the same RFCs (`GoServer/main.go`, built with the `go` tool at test time).
///
/// What Go brings that the other servers do not:
/// - its stream limit as it ships, 250 per connection, below what the client keeps in
///   flight (600), so the pool queues and spreads;
/// - its graceful shutdown, as servers really restart: every 700 requests the next
///   generation listens on the same port (SO_REUSEPORT) and the current one is shut down;
///   Go sends GOAWAY, finishes the streams it read and ignores the ones opened after it;
/// - provider tokens checked with Go's `crypto/ecdsa` (ES256 over the token's first two
///   parts, `kid`, `iss`, `iat`), and each request checked as APNs would;
/// - its own HPACK encoder for the answers (it indexes response fields) and flow control.
///
/// The outcomes are held against the server's record as in ``IndependentServerFaultTests``,
/// and more strictly: this server never drops a connection or resets a stream, so no
/// notification may end in `failed` at all: a stream Go ignored after its GOAWAY must be
/// sent again on a new connection, and every answer must reach its notification.
///
/// The cases run one at a time: each keeps 600 sends in flight, and eight at once kept the
/// cooperative pool's queue so full that other suites' timed cases waited seconds for it.
@Suite("Go's HTTP/2 server, restarting gracefully", .serialized, .timeLimit(.minutes(10)))
struct GoServerTests {
    typealias Way = IndependentPeerClient.Way
    typealias Authentication = IndependentPeerClient.Authentication

    static let count = ProcessInfo.processInfo.environment["SWIFT_APNS_GO_COUNT"].flatMap { Int($0) }.map { max(100, $0) } ?? 3_000

    @Test("every outcome agrees with what Go's server did", arguments: Way.allCases, Authentication.allCases)
    func outcomesAgreeWithGo(way: Way, authentication: Authentication) async throws {
        let seed = UInt64.random(in: 1...1_000_000)
        let pki = try TestPKI.get()
        let server = try await PeerServerProcess("GoServer", name: "Go", seed: seed, arguments: [
            authentication == .certificate ? pki.path("ca.pem") : "", authentication == .token ? pki.path("client.key") : "",
            "700",
        ])
        defer { server.stop() }
        let notification = PushNotification(payload: .alert(title: "Go", body: "Hello"), topic: .bundleID("com.example.app"))
        var run = try await RestartingServerRun.run(
            against: server, name: "Go", seed: seed, way: way, authentication: authentication, notification: notification,
            deviceTokens: try IndependentPeerClient.deviceTokens(Self.count, fill: 0x60, indexAt: 24..<32))
        // Go logs a connection error it finds in what the client sent ("http2: ...").
        let goErrors = server.log.split(separator: "\n").filter { $0.contains("http2:") }
        run.findings += goErrors.prefix(4).map { "Go's server logged: \($0)" }
        run.expectShared()
        #expect(run.statistics.goAwaysReceived >= 2, "\(run.label): \(run.statistics.goAwaysReceived) GOAWAY frames received")
        // Streams Go ignored after its GOAWAY (above its last-stream-id), sent again.
        #expect(run.statistics.requestsRequeued > 0, "\(run.label): no request was sent again after a GOAWAY")
        print("go: \(run.summary); \(run.findings.count) findings")
    }
}
