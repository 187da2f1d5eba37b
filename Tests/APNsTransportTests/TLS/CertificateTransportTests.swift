import APNsMockServer
import Foundation
import Logging
import Testing
@testable import APNsTransport

/// Certificate-based authentication and the CONNECT proxy through the whole transport:
/// ``HTTP2Transport`` (connection thread, HTTP/2 state machine, ``TLSStream``) against
/// ``APNsMockServer`` in `.certificate(trustedCAPEM:)` mode on loopback, with client
/// certificates made by the `openssl` tool (``TestPKI``).
@Suite("HTTP2Transport with client certificates and a proxy, against APNsMockServer")
struct CertificateTransportTests {
    /// A transport with `identity` that trusts the mock server's CA, one connection.
    static func transport(
        _ server: MockAPNsServer,
        identity: ClientIdentity?,
        proxy: ProxyConfiguration? = nil
    ) throws -> HTTP2Transport {
        let pem = try #require(server.certificateAuthorityPEM)
        var configuration = HTTP2Transport.Configuration(
            environment: .custom(host: "127.0.0.1", port: server.port),
            tls: TLSConfiguration(trustRoots: .certificates(pem), clientIdentity: identity, proxy: proxy),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        )
        configuration.connectionCount = 1
        return HTTP2Transport(configuration: configuration)
    }

    /// The test client certificate (issued by ``TestPKI``'s "ca", topics
    /// `com.example.app` and `com.example.app.voip`).
    static func clientIdentity() throws -> ClientIdentity {
        let pki = try TestPKI.get()
        return try ClientIdentity(certificatePEM: pki.text("client.pem"), privateKeyPEM: pki.text("client.key"))
    }

    /// Sends `count` pushes at once and returns every outcome.
    /// Records an issue for every result that is not a 200.
    static func expectAllAccepted(_ results: [Result<APNsResponse, APNsTransportError>]) {
        for result in results {
            switch result {
            case .success(let response): #expect(response.status == 200)
            case .failure(let error): Issue.record("\(error.debugDescription)")
            }
        }
    }

    static func send(_ transport: HTTP2Transport, port: Int, count: Int) async throws -> [Result<APNsResponse, APNsTransportError>] {
        try await sendToMock(transport, port: port, indices: 0..<count, timeout: .seconds(30))
    }

    @Test("a client certificate the server trusts: pushes are accepted end to end")
    func certificateAccepted() async throws {
        let pki = try TestPKI.get()
        let configuration = MockAPNsServer.Configuration(authentication: .certificate(trustedCAPEM: try pki.text("ca.pem")))
        try await withMockAPNsServer(configuration: configuration) { server in
            let transport = try Self.transport(server, identity: try Self.clientIdentity())
            let results = try await Self.send(transport, port: server.port, count: 3)
            await transport.shutdown()
            Self.expectAllAccepted(results)
            #expect(server.recordedRequests.count == 3)
            #expect(server.statistics.accepted == 3)
        }
    }

    /// The regression test for the teardown bug: with TLS 1.3 the server refuses the
    /// client certificate after the client's handshake has finished, so the refusal
    /// arrives on the first read, after the requests were written. The caller must get
    /// the TLS error with `mayHaveReachedAPNs == false` (nothing was processed), not
    /// `connectionClosed` with `true`.
    @Test("a client certificate from a CA the server does not trust: tlsFailure, never reached APNs")
    func certificateFromUntrustedCARefused() async throws {
        let pki = try TestPKI.get()
        // The server trusts only "otherca"; the client's certificate is from "ca".
        let configuration = MockAPNsServer.Configuration(authentication: .certificate(trustedCAPEM: try pki.text("otherca.pem")))
        try await withMockAPNsServer(configuration: configuration) { server in
            let transport = try Self.transport(server, identity: try Self.clientIdentity())
            let results = try await Self.send(transport, port: server.port, count: 3)
            let statistics = transport.statistics
            await transport.shutdown()
            expectRefusedHandshake(results, count: 3, detailContains: ["rejected the client certificate"])
            #expect(server.recordedRequests.isEmpty)
            #expect(statistics.requestsInFlight == 0)
        }
    }

    @Test(
        "a push through an authenticating CONNECT proxy (tinyproxy) reaches the mock server",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/tinyproxy"), "needs tinyproxy: apt-get install tinyproxy")
    )
    func pushThroughProxy() async throws {
        let (proxy, proxyPort) = try ProxyTests.startProxy()
        defer { proxy.stop() }
        let pki = try TestPKI.get()
        let configuration = MockAPNsServer.Configuration(authentication: .certificate(trustedCAPEM: try pki.text("ca.pem")))
        try await withMockAPNsServer(configuration: configuration) { server in
            let transport = try Self.transport(
                server, identity: try Self.clientIdentity(),
                proxy: ProxyConfiguration(host: "127.0.0.1", port: proxyPort, username: ProxyTests.user, password: ProxyTests.password))
            let results = try await Self.send(transport, port: server.port, count: 2)
            await transport.shutdown()
            Self.expectAllAccepted(results)
            #expect(server.recordedRequests.count == 2)
            #expect(proxy.log.contains("CONNECT 127.0.0.1:\(server.port)"), "\(proxy.log)")
        }
    }
}
