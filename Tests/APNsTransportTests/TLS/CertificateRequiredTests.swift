import Foundation
import Logging
import Testing
@testable import APNsTransport

/// Token credentials pointed at a server that requires a client certificate (issue #18 §4):
/// the whole transport (``HTTP2Transport``: pool, connection thread, HTTP/2 state machine,
/// ``TLSStream``) against servers other than the SDK's own, over TLS 1.3 and TLS 1.2.
///
/// What must hold, from the protocols: with TLS 1.3 (RFC 8446 §4.4.2.4) the client's
/// handshake is over before the server has read the client's (empty) Certificate, so the
/// server's `certificate_required` alert (116) arrives on the first read, after the
/// requests were written; with TLS 1.2 (RFC 5246 §7.4.6) the server refuses inside the
/// handshake (`handshake_failure`, 40). Either way the server processed no request, so every
/// request fails with `tlsFailure` and `mayHaveReachedAPNs == false`, and the detail names
/// the missing client certificate.
@Suite("Token credentials against a server that requires a client certificate", .blockingIO)
struct CertificateRequiredTests {
    enum Server: String, CaseIterable, CustomTestStringConvertible {
        case openSSL = "openssl s_server -Verify 1"
        case python = "Python ssl CERT_REQUIRED"
        var testDescription: String { rawValue }
    }

    enum Version: String, CaseIterable, CustomTestStringConvertible {
        case tls13 = "TLS 1.3"
        case tls12 = "TLS 1.2"
        var testDescription: String { rawValue }
    }

    /// Starts `server` speaking only `version`, requiring a client certificate from the
    /// test CA; returns the process and its OS-chosen port.
    static func start(_ server: Server, _ version: Version) throws -> (BackgroundProcess, Int) {
        let pki = try TestPKI.get()
        switch server {
        case .openSSL:
            // -www answers HTTP/1 GET requests; the refusal comes before any of that.
            let process = try OpenSSLServer(
                options: ["-alpn", "h2", "-www", "-Verify", "1", "-verify_return_error", "-CAfile", pki.path("ca.pem"),
                          version == .tls13 ? "-tls1_3" : "-tls1_2"],
                accepts: 8)
            return (process.background, process.port)
        case .python:
            let process = try BackgroundProcess("/usr/bin/python3", ["-c", pythonTLSServerScript(
                context: """
                    ctx.load_cert_chain("\(pki.path("server.pem"))", "\(pki.path("server.key"))")
                    ctx.load_verify_locations("\(pki.path("ca.pem"))")
                    ctx.verify_mode = ssl.CERT_REQUIRED
                    ctx.set_alpn_protocols(["h2"])
                    v = ssl.TLSVersion.\(version == .tls13 ? "TLSv1_3" : "TLSv1_2")
                    ctx.minimum_version = v; ctx.maximum_version = v
                    """,
                connection: """
                    try:
                        t = ctx.wrap_socket(c, server_side=True)
                        print("ACCEPTED", t.version(), flush=True)
                        t.recv(65536)
                        t.close()
                    except Exception as e:
                        print("REFUSED", e, flush=True)
                        c.close()
                    """)], log: "python-cert-required")
            var port = 0
            _ = process.waitForLog { log in
                port = log.split(separator: "\n").first { $0.hasPrefix("PORT ") }.flatMap { Int($0.dropFirst(5)) } ?? 0
                return port > 0
            }
            guard port > 0 else {
                process.stop()
                throw HarnessError(description: "the Python server did not start: \(process.log)")
            }
            return (process, port)
        }
    }

    @Test(arguments: Server.allCases, Version.allCases)
    func everyRequestFailsAsNeverSent(server kind: Server, version: Version) async throws {
        let (server, port) = try Self.start(kind, version)
        defer { server.stop() }
        let transport = try HTTP2Transport.oneConnectionTrustingTestCA(port: port)
        let results = try await sendToMock(transport, port: port, indices: 0..<3, timeout: .seconds(30))
        let statistics = transport.statistics
        await transport.shutdown()

        expectRefusedHandshake(results, count: 3, detailContains: ["client certificate", "TLSConfiguration(clientIdentity:)"])
        #expect(statistics.requestsInFlight == 0)
        // The server refused: nothing was accepted.
        #expect(!server.log.contains("ACCEPTED"), "\(server.log)")
    }
}
