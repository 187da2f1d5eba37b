import Foundation
import Logging
import Testing
@testable import APNsTransport

/// A TLS session that fails after requests were written, before the server sent anything
/// (no SETTINGS, no answer). RFC 9113 §3.4 lets a client send requests before it has the
/// server's preface, and a server may process one before its own SETTINGS leave (or
/// arrive: a record cut or forged on the way can be the one that carried them), so only a
/// refusal of the session itself (the client certificate's, see
/// `CertificateRequiredTests`) proves that nothing was processed. Found by an outside
/// audit: a server that read a request, sent nothing, then wrote a corrupt record was
/// reported "the server processed nothing", and the default retry policy sent the
/// notification five times.
@Suite("A TLS failure after the request was written", .blockingIO)
struct TLSFailureAfterRequestTests {
    /// Python's ssl server: completes the handshake (ALPN h2), reads the client's bytes
    /// until a frame with END_STREAM has come (a whole request, which it logs),
    /// sends no HTTP/2 byte, then writes a bogus application-data record on the TCP
    /// socket beneath the TLS session, which the client cannot decrypt.
    static let server = pythonTLSServerScript(
        modules: "struct, sys, os",
        context: """
            ctx.load_cert_chain(sys.argv[1], sys.argv[2])
            ctx.set_alpn_protocols(["h2"])
            """,
        connection: """
            t = ctx.wrap_socket(c, server_side=True)
            data = b""
            try:
                while len(data) < 24:
                    data += t.recv(65536)
                data = data[24:]
                done = False
                while not done:
                    while len(data) < 9:
                        data += t.recv(65536)
                    length = struct.unpack(">I", b"\\0" + data[:3])[0]
                    kind, flags = data[3], data[4]
                    while len(data) < 9 + length:
                        data += t.recv(65536)
                    data = data[9 + length:]
                    done = kind in (0, 1) and flags & 1 == 1
                print("REQUEST", flush=True)
                os.write(t.fileno(), b"\\x17\\x03\\x03\\x00\\x20" + b"\\x00" * 32)
            except Exception as e:
                print("ERROR", e, flush=True)
            t.close()
            """)

    @Test("the request fails as 'may have reached APNs' and is not sent again by the transport")
    func corruptRecordBeforeAnyData() async throws {
        let pki = try TestPKI.get()
        let process = try BackgroundProcess(
            "/usr/bin/python3", ["-c", Self.server, pki.path("server.pem"), pki.path("server.key")], log: "python-tls-garbage")
        defer { process.stop() }
        guard let port = process.waitForPortLine() else {
            throw HarnessError(description: "the Python server did not start: \(process.log)")
        }
        let transport = try HTTP2Transport.oneConnectionTrustingTestCA(port: port)
        let request = try mockPush(1, port: port, timeout: .seconds(20))
        let outcome: Result<APNsResponse, APNsTransportError>
        do throws(APNsTransportError) {
            outcome = .success(try await transport.send(request))
        } catch {
            outcome = .failure(error)
        }
        await transport.shutdown()
        guard case .failure(let error) = outcome else {
            Issue.record("the server answers nothing, yet the request succeeded: \(outcome)")
            return
        }
        #expect(process.log.components(separatedBy: "REQUEST").count == 2, "the server read the request once: \(process.log)")
        #expect(error.mayHaveReachedAPNs, "the server read the whole request: \(error)")
        #expect(error.code == .connectionClosed, "\(error)")
        #expect(error.detail?.contains("processed nothing") != true, "\(error)")
    }
}
