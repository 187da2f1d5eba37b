import Foundation
import TestTools
import Testing
@testable import APNsTransport

/// The client against Rust's h2 crate (the HTTP/2 of hyper, and so of a2, the Rust APNs
/// client), with TLS from rustls and provider tokens checked by ring
/// (`RustServer/main.rs`, built with cargo from Debian's crates by `scripts/peers.sh`): a fourth
/// HTTP/2, TLS and ECDSA implementation beside nghttp2/OpenSSL, Python's h2/ssl and Go's
/// net/http, written by other people to the same RFCs.
///
/// What it brings that the other servers do not:
/// - flow control its application drives, with a stream window (500 bytes) smaller than
///   a notification's body (about 1,900 bytes): every request's body crosses in several
///   DATA frames, each let in by a WINDOW_UPDATE the server sends as its handler reads,
///   and the connection's window (65,535 bytes) is spent by the 100 streams h2 allows.
///   The small window comes in a second SETTINGS after the connection's first, so the
///   windows of streams the client opened before it shrink below zero (RFC 9113 section
///   6.9.2: the client must wait for WINDOW_UPDATEs before it sends more on them);
/// - early answers: a request whose fate is BadDeviceToken is answered 400 from its
///   headers alone, before its body is read (RFC 9113 section 8.1), and h2 then resets
///   the rest of the stream (RST_STREAM CANCEL); the answer must still reach the sender,
///   as a rejection with that reason;
/// - h2's graceful shutdown every 700 requests, in RFC 9113 section 6.8's two steps: a
///   GOAWAY with the highest stream id and a PING, then a GOAWAY with the last stream it
///   took; the next generation listens on the same port;
/// - TLS 1.3 from rustls, client certificates checked by webpki.
///
/// The outcomes are held against the server's record (``ChaosRecord``) and, as with Go's
/// server, strictly: this server never drops a connection, so no notification may end
/// in `failed`.
///
/// The cases run one at a time: each keeps 600 sends in flight, and eight at once kept the
/// cooperative pool's queue so full that other suites' timed cases waited seconds for it.
@Suite("Rust's h2 server: small windows, early answers, two-step GOAWAY", .serialized, .timeLimit(.minutes(10)))
struct RustServerTests {
    typealias Way = IndependentPeerClient.Way
    typealias Authentication = IndependentPeerClient.Authentication

    static let count = ProcessInfo.processInfo.environment["SWIFT_APNS_RUST_COUNT"].flatMap { Int($0) }.map { max(100, $0) } ?? 3_000

    @Test("every outcome agrees with what Rust's h2 server did", arguments: Way.allCases, Authentication.allCases)
    func outcomesAgreeWithRust(way: Way, authentication: Authentication) async throws {
        let seed = UInt64.random(in: 1...1_000_000)
        let pki = try TestPKI.get()
        // Restart every 700 requests, 100 streams per connection, a stream window of 500.
        let server = try await PeerServerProcess("RustServer", name: "Rust", seed: seed, arguments: [
            authentication == .certificate ? pki.path("ca.pem") : "", authentication == .token ? pki.path("client.key") : "",
            "700", "100", "500",
        ])
        defer { server.stop() }
        // A body of about 1,900 bytes: four windows of 500.
        let notification = PushNotification(
            payload: .alert(title: "Rust", body: String(repeating: "h2 ", count: 620)), topic: .bundleID("com.example.app"))
        let run = try await RestartingServerRun.run(
            against: server, name: "Rust", seed: seed, way: way, authentication: authentication, notification: notification,
            deviceTokens: try IndependentPeerClient.deviceTokens(Self.count, fill: 0x72, indexAt: 20..<28))
        run.expectShared()
        // Two GOAWAY frames per connection shut down (h2's two steps).
        #expect(run.statistics.goAwaysReceived >= 2 * run.restarts, "\(run.label): \(run.statistics.goAwaysReceived) GOAWAY frames received in \(run.restarts) shutdowns")
        // Early answers (BadDeviceToken from the headers alone, then RST_STREAM) reached
        // their senders as rejections.
        let rejectedEarly = run.outcomes.filter {
            if case .failure(.rejected(let rejection)) = $0.result { rejection.reason == .badDeviceToken } else { false }
        }.count
        #expect(rejectedEarly > 0, "\(run.label): no early answer reached its sender")
        print("rust: \(run.summary), \(rejectedEarly) answered early; \(run.findings.count) findings")
    }
}
