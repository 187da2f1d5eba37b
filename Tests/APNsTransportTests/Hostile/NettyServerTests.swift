import Foundation
import TestTools
import Testing
@testable import APNsTransport

/// The client against a server on Netty's HTTP/2 codec (the stack of Pushy, the Java APNs
/// client, and of its mock server) with the JDK's TLS (`NettyServer/NettyServer.java`,
/// compiled by `scripts/peers.sh` against Debian's Netty jars): a fifth HTTP/2, TLS and
/// ECDSA implementation beside nghttp2/OpenSSL, Python's h2/ssl, Go's net/http and Rust's
/// h2/rustls.
///
/// What it brings that the others do not:
/// - Netty's close every 450 requests, while the next generation listens on the same
///   port: a GOAWAY with the last stream it knows, then the connection closed, in this
///   Netty version without waiting for the streams whose answers were still being made
///   (the delayed ones), and with the client's later requests unread the close is a reset
///   that can discard answers not yet sent: requests read and never answered, which the
///   client must fail as ones that may have reached APNs, sending again nothing it may
///   have delivered, while it sends again the streams Netty ignored after its GOAWAY;
/// - the JDK's TLS (JSSE), client certificates checked by its PKIX validator, ALPN set on
///   the engine;
/// - Netty's flow control and HPACK encoder for the answers, and a limit of 50 streams per
///   connection against the 600 the client keeps in flight;
/// - provider tokens verified with SunEC (the signature as r || s).
///
/// The outcomes are held against the server's record (``RestartingServerRun``), which
/// names the connections Netty closed with requests open. The cases run one at a time, as
/// the Go and Rust suites' do.
@Suite("Netty's HTTP/2 server, closing gracefully", .serialized, .timeLimit(.minutes(10)))
struct NettyServerTests {
    typealias Way = IndependentPeerClient.Way
    typealias Authentication = IndependentPeerClient.Authentication

    static let count = ProcessInfo.processInfo.environment["SWIFT_APNS_NETTY_COUNT"].flatMap { Int($0) }.map { max(100, $0) } ?? 2_000

    @Test("every outcome agrees with what Netty's server did", arguments: Way.allCases, Authentication.allCases)
    func outcomesAgreeWithNetty(way: Way, authentication: Authentication) async throws {
        let seed = UInt64.random(in: 1...1_000_000)
        let pki = try TestPKI.get()
        // The JDK reads the public half of the signing key (OpenSSL writes it).
        var publicKey = ""
        if authentication == .token {
            publicKey = FileManager.default.temporaryDirectory.appendingPathComponent("apns-netty-\(UUID().uuidString).pub.pem").path
            let openssl = Process()
            openssl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            openssl.arguments = ["openssl", "pkey", "-in", pki.path("client.key"), "-pubout", "-out", publicKey]
            try openssl.run()
            try #require(exitStatus(of: openssl, seconds: 30) == 0, "openssl pkey -pubout failed")
        }
        // Restart every 450 requests, 50 streams per connection.
        let server = try await PeerServerProcess("NettyServer", name: "Netty", seed: seed, arguments: [
            authentication == .certificate ? pki.path("ca.pem") : "", publicKey, "450", "50",
        ], files: publicKey.isEmpty ? [] : [publicKey])
        defer { server.stop() }
        let notification = PushNotification(payload: .alert(title: "Netty", body: "Hello"), topic: .bundleID("com.example.app"))
        let run = try await RestartingServerRun.run(
            against: server, name: "Netty", seed: seed, way: way, authentication: authentication, notification: notification,
            deviceTokens: try IndependentPeerClient.deviceTokens(Self.count, fill: 0x4E, indexAt: 16..<24),
            dropsConnections: true)
        run.expectShared()
        // Streams opened after Netty's GOAWAY (above its last-stream-id), sent again.
        #expect(run.statistics.requestsRequeued > 0, "\(run.label): no request was sent again after a GOAWAY")
        // Every failure is a request on a connection Netty closed before answering it,
        // failed as one that may have reached APNs (ChaosRecord holds each against the
        // record; here, that none says otherwise).
        for outcome in run.outcomes {
            if case .failure(.failed(let failure)) = outcome.result {
                #expect(failure.mayHaveReachedAPNs, "\(run.label): \(outcome.deviceToken.hexString) failed \(failure)")
            }
        }
        #expect(run.statistics.goAwaysReceived >= run.restarts, "\(run.label): \(run.statistics.goAwaysReceived) GOAWAY frames received in \(run.restarts) shutdowns")
        print("netty: \(run.summary); \(run.findings.count) findings")
    }
}
