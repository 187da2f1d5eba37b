import APNsOpenSSL
import COpenSSL
import Foundation
import TestTools
import Testing

/// APNsOpenSSL, the one owner of OpenSSL handles, checked against the `openssl` tool: what
/// the wrappers write, the tool reads; what the tool writes, the wrappers read; and the
/// handles are usable from many tasks at once (they are `Sendable`).
@Suite("APNsOpenSSL handles against the openssl tool")
struct OpenSSLHandleTests {
    /// Runs `openssl` with `arguments` in `directory`; returns standard output.
    static func openssl(_ arguments: [String], in directory: URL) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.currentDirectoryURL = directory
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        #expect(exitStatus(of: process) == 0, "openssl \(arguments.joined(separator: " "))")
        return data
    }

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("apns-openssl-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test("a generated key's PEM is read by openssl pkey, which derives the same public key")
    func generatedKeyRoundTrip() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = try EVPKey.generateP256()
        #expect(key.algorithm.isP256)
        try key.privateKeyPEM().write(to: directory.appendingPathComponent("key.pem"), atomically: true, encoding: .utf8)
        let publicDER = try Self.openssl(["pkey", "-in", "key.pem", "-pubout", "-outform", "DER"], in: directory)
        #expect([UInt8](publicDER) == (try key.publicKeyDER()))
    }

    @Test("a certificate made by openssl req: subject, names, validity and PEM as the tool wrote them")
    func certificateFromTheTool() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        _ = try Self.openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "key.pem", "-out", "cert.pem", "-days", "2", "-subj", "/CN=handle.example",
            "-addext", "subjectAltName=DNS:handle.example,IP:127.0.0.1",
        ], in: directory)
        let pem = try String(contentsOf: directory.appendingPathComponent("cert.pem"), encoding: .utf8)
        let certificates = X509Certificate.all(pem: pem + pem)
        #expect(certificates.count == 2)
        let certificate = try #require(certificates.first)
        #expect(certificate.subjectCommonName == "handle.example")
        #expect(certificate.names == ["handle.example", "127.0.0.1"])
        let notBefore = try #require(certificate.notBefore)
        let notAfter = try #require(certificate.notAfter)
        #expect(notAfter.timeIntervalSince(notBefore) == 2 * 24 * 3600)
        // PEM_write_bio_X509 writes what the tool wrote, byte for byte.
        #expect(try certificate.pem() == pem)
        #expect(X509Certificate.all(pem: "no certificate here").isEmpty)
    }

    @Test("one context, sessions made from many tasks at once; sessions outlive the context")
    func sessionsFromManyTasks() async throws {
        let shared = try SSLContext(.client)
        let versions = await withTaskGroup(of: Int32.self) { group in
            for _ in 0..<16 {
                group.addTask {
                    guard let session = try? shared.makeSession() else { return -1 }
                    return session.withUnsafeHandle { SSL_is_server($0) }
                }
            }
            var results: [Int32] = []
            for await result in group { results.append(result) }
            return results
        }
        #expect(versions == Array(repeating: 0, count: 16))  // client sessions, all made
        // The session holds its own reference to the SSL_CTX: the context's wrapper is gone.
        let orphan = try Self.sessionOfAReleasedContext()
        #expect(orphan.withUnsafeHandle { SSL_get_SSL_CTX($0) != nil && SSL_is_server($0) == 0 })
    }

    static func sessionOfAReleasedContext() throws -> SSLSession {
        try SSLContext(.client).makeSession()
    }
}
