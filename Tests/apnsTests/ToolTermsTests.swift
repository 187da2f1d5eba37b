import APNsMockServer
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The SDK's errors, as the tool prints them, name the tool's flags, not the SDK's API.
@Suite("apns: errors in the tool's terms")
struct ToolTermsTests {
    /// The names of the SDK's API that an error printed by the tool must not contain.
    static let apiNames = ["TLSConfiguration(", "TrustRoots.", "connectTimeout", "PushNotification.Body", "ProxyConfiguration(", "Payload.contentChanged"]

    /// Records an issue for each API name in `text`.
    static func expectToolTerms(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        for name in apiNames {
            #expect(!text.contains(name), "\(name) in: \(text)", sourceLocation: sourceLocation)
        }
    }

    @Test("an untrusted server certificate: check's line and send --json's detail say --ca-file")
    func untrustedServer() async throws {
        try await withMockAPNsServer(configuration: .init(bundleIDs: [Fixtures.topic])) { server in
            let target = ["--no-auth", "--host", "127.0.0.1", "--port", String(server.port)]
            let check = try await CLI.run(["check"] + target + ["--topic", Fixtures.topic])
            #expect(check.status == 1, "\(check)")
            #expect(check.stdout.contains("pass its CA with --ca-file"), "\(check)")
            Self.expectToolTerms(check.stdout + check.stderr)
            let send = try await CLI.run(["send", "--json"] + target + ["--topic", Fixtures.topic, "--body", "Hi", Fixtures.goodToken])
            #expect(send.status == 1, "\(send)")
            let line = try #require(send.lines.first)
            let detail = try #require(try CLI.jsonObject(line)["detail"] as? String)
            #expect(detail.contains("pass its CA with --ca-file"), "\(send)")
            Self.expectToolTerms(send.stdout + send.stderr)
        }
    }

    @Test("a server that never answers TLS: the connect timeout is named as --connect-timeout")
    func silentServer() async throws {
        // A socket that listens and never accepts: the kernel completes the TCP handshake,
        // and nothing ever answers the TLS ClientHello.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 && listen(fd, 16) == 0
            }
        }
        try #require(listening)
        let port = Int(UInt16(bigEndian: address.sin_port))
        let check = try await CLI.run(["check", "--no-auth", "--host", "127.0.0.1", "--port", String(port), "--connect-timeout", "0.5",
                                       "--request-timeout", "5", "--topic", Fixtures.topic])
        #expect(check.status == 1, "\(check)")
        #expect(check.stdout.contains("a longer --connect-timeout"), "\(check)")
        Self.expectToolTerms(check.stdout + check.stderr)
    }

    @Test("a payload file with an integer beyond 64 bits says to write it as a string, not to use an API")
    func hugeInteger() async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let payload = directory.appendingPathComponent("payload.json")
        try Data(#"{"aps":{"alert":"Hi"},"id":123456789012345678901234567890}"#.utf8).write(to: payload)
        let result = try await CLI.run(["send", "--no-auth", "--dry-run", "--topic", Fixtures.topic, "--payload-file", payload.path, Fixtures.goodToken])
        #expect(result.status == 1, "\(result)")
        #expect(result.stderr.contains("write the number as a string"), "\(result)")
        Self.expectToolTerms(result.stderr)
    }
}
