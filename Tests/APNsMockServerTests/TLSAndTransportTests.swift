import Foundation
import TestTools
import Testing
@testable import APNsMockServer

@Suite("TLS, ALPN and lifecycle, checked with curl and openssl")
struct TLSAndTransportTests {
    @Test("curl verifies the generated certificate for each loopback name and speaks HTTP/2",
          arguments: ["127.0.0.1", "localhost"])
    func verifiedHTTP2(host: String) async throws {
        try await withServerAndCurl { server, curl in
            let response = try await curl.send(
                host: host, port: server.port, path: "/3/device/\(sampleDeviceToken)",
                headers: ["apns-topic: com.example.app", "apns-push-type: alert"])
            #expect(response.exitCode == 0, "\(response.stderr)")
            #expect(response.status == 200)
            #expect(response.httpVersion == "2")
            #expect(response.body.isEmpty)
        }
    }

    /// The frames nghttp says it received on `stream` (`recv TYPE frame <…, flags=0xNN,
    /// stream_id=N>` lines), in order, and the response fields it printed for it (those it
    /// received never-indexed prefixed `sensitive `).
    static func received(_ output: String, stream: Int) -> (frames: [(type: String, flags: UInt8)], fields: [String]) {
        var frames: [(type: String, flags: UInt8)] = []
        var fields: [String] = []
        for line in output.split(separator: "\n") {
            // A field sent never-indexed (RFC 7541 §6.2.3) is printed `(stream_id=N, sensitive)`.
            if line.contains("] recv (stream_id=\(stream)) ") || line.contains("] recv (stream_id=\(stream), sensitive) "),
               let range = line.range(of: ") ") {
                let sensitive = line.contains(", sensitive) ") ? "sensitive " : ""
                fields.append(sensitive + String(line[range.upperBound...]))
            }
            guard line.contains("] recv "), line.contains(" frame <"), line.hasSuffix("stream_id=\(stream)>"),
                  let type = line.range(of: "recv ").map({ line[$0.upperBound...].prefix { $0 != " " } }),
                  let flags = line.range(of: "flags=0x").map({ UInt8(line[$0.upperBound...].prefix(2), radix: 16) }) ?? nil
            else { continue }
            frames.append((String(type), flags))
        }
        return (frames, fields)
    }

    @Test("a success is one HEADERS frame with END_STREAM and no DATA; a failure adds a DATA frame (nghttp -v)")
    func successFrames() async throws {
        try await withServerAndCurl { server, curl in
            let endStream: UInt8 = 0x1, endHeaders: UInt8 = 0x4  // RFC 9113 §6.2
            let success = try await nghttpVerbose(server: server, curl: curl)
            #expect(success.exitCode == 0, "\(success.stderr)")
            let stream = try #require(respondedStreamID(success.stdout), "\(success.stdout)")
            let answer = Self.received(success.stdout, stream: stream)
            try #require(answer.frames.count == 1, "\(success.stdout)")
            #expect(answer.frames[0].type == "HEADERS")
            #expect(answer.frames[0].flags & endStream != 0)
            #expect(answer.frames[0].flags & endHeaders != 0)
            #expect(!answer.frames.contains { $0.type == "DATA" })
            #expect(answer.fields.first == ":status: 200")
            // No content-type or content-length; from a sandbox server, apns-unique-id after
            // apns-id; both, different in every answer, never indexed.
            #expect(answer.fields.count == 3, "\(answer.fields)")
            #expect(answer.fields.dropFirst().first?.hasPrefix("sensitive apns-id: ") == true, "\(answer.fields)")
            #expect(answer.fields.last?.hasPrefix("sensitive apns-unique-id: ") == true, "\(answer.fields)")

            // The same reading of a failure finds its body: HEADERS without END_STREAM,
            // then DATA with it.
            let failure = try await nghttpVerbose(server: server, curl: curl, token: "not-hex")
            let failed = try #require(respondedStreamID(failure.stdout), "\(failure.stdout)")
            let refusal = Self.received(failure.stdout, stream: failed)
            #expect(refusal.frames.map(\.type) == ["HEADERS", "DATA"], "\(failure.stdout)")
            #expect(refusal.frames.first.map { $0.flags & endStream == 0 } == true)
            #expect(refusal.frames.last.map { $0.flags & endStream != 0 } == true)
            #expect(refusal.fields.first == ":status: 400")
        }
    }

    @Test("curl verifies the certificate over IPv6 loopback when available")
    func verifiedIPv6() async throws {
        try await withServerAndCurl { server, curl in
            guard server.addresses.contains("::1") else { return }
            let response = try await curl.send(host: "::1", port: server.port, path: "/3/device/\(sampleDeviceToken)",
                                               headers: ["apns-topic: com.example.app"])
            #expect(response.status == 200, "\(response.stderr)")
        }
    }

    @Test("without the CA, curl refuses the certificate (exit 60)")
    func untrusted() async throws {
        try await withServerAndCurl { server, curl in
            let response = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)",
                                               headers: ["apns-topic: com.example.app"], trust: false)
            #expect(response.exitCode == 60)
            #expect(server.statistics.requests == 0)
        }
    }

    @Test("a client that does not offer ALPN h2 gets no connection",
          arguments: [["--http1.1"], ["--no-alpn"]])
    func refusesHTTP1(flags: [String]) async throws {
        try await withServerAndCurl { server, curl in
            let response = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)",
                                               headers: ["apns-topic: com.example.app"], extra: flags)
            #expect(response.exitCode != 0)
            #expect(response.status != 200)
            #expect(server.statistics.requests == 0)
        }
    }

    @Test("TLS 1.1 is refused (openssl s_client)")
    func tls11Refused() async throws {
        try await withServerAndCurl { server, curl in
            let result = try await ExternalTool.run("openssl", [
                "s_client", "-connect", "127.0.0.1:\(server.port)", "-tls1_1", "-alpn", "h2", "-CAfile", curl.caFile,
            ], timeout: .seconds(15))
            #expect(result.exitCode != 0)
        }
    }

    @Test("TLS 1.2 and TLS 1.3 are accepted with HTTP/2 (curl)",
          arguments: [["--tlsv1.2", "--tls-max", "1.2"], ["--tlsv1.3"]])
    func tlsVersions(flags: [String]) async throws {
        try await withServerAndCurl { server, curl in
            let response = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)",
                                               headers: ["apns-topic: com.example.app"], extra: flags)
            #expect(response.status == 200, "\(response.stderr)")
            #expect(response.httpVersion == "2")
        }
    }

    @Test("the CA file is a CA certificate openssl can read, for a P-256 key")
    func caCertificate() async throws {
        try await withServerAndCurl { _, curl in
            let result = try await ExternalTool.run("openssl", ["x509", "-in", curl.caFile, "-noout", "-text"])
            #expect(result.exitCode == 0)
            #expect(result.stdout.contains("CA:TRUE"))
            #expect(result.stdout.contains("prime256v1") || result.stdout.contains("P-256"))
            #expect(result.stdout.contains("ecdsa-with-SHA256"))
        }
    }

    /// Sockets in LISTEN state on `127.0.0.1:port` or `[::1]:port` (where the server
    /// listens), in the kernel's TCP tables. Other loopback addresses are left out: a test
    /// running beside this one may listen on 127.0.0.2 with the same port number, which the
    /// kernel allows.
    static func listeningSockets(port: Int) throws -> Int {
        let hexPort = String(format: "%04X", port)
        let loopback: Set<String> = ["0100007F:" + hexPort, "00000000000000000000000001000000:" + hexPort]
        return kernelTCPSockets().filter { loopback.contains($0.local) && $0.state == "0A" }.count
    }

    @Test("stop() while start() is under way (a teardown racing its setup) stops the server start() brings up; start() throws")
    func stopWhileStarting() async throws {
        var caught = 0
        for _ in 0..<10 {
            let server = MockAPNsServer(configuration: .init(bundleIDs: ["com.example.app"]))
            let starting = Task { try await server.start() }
            // start() generates a certificate first: milliseconds in which it is under way.
            let deadline = ContinuousClock.now + .seconds(20)
            while !server.isStarting, server.port == 0, ContinuousClock.now < deadline { await Task.yield() }
            let caughtStarting = server.isStarting
            await server.stop()
            let started = await starting.result
            #expect(server.port == 0, "still listening on \(server.port) after stop()")
            if server.port != 0 { await server.stop() }
            guard caughtStarting else { continue }
            caught += 1
            #expect(throws: MockAPNsServerError.self) { try started.get() }
        }
        #expect(caught > 0, "start() was never seen under way")
    }

    @Test("start reports a port; stop closes the listener and connections")
    func stopReleasesEverything() async throws {
        let server = MockAPNsServer(configuration: .init(bundleIDs: ["com.example.app"]))
        try await server.start()
        let port = server.port
        #expect(port > 0)
        let listening = try Self.listeningSockets(port: port)
        #expect(listening == server.addresses.count)
        let curl = try CurlClient(server: server)
        defer { curl.remove() }
        let first = try await curl.send(port: port, path: "/3/device/\(sampleDeviceToken)", headers: ["apns-topic: com.example.app"])
        #expect(first.status == 200)
        await server.stop()
        await server.stop()  // idempotent
        #expect(server.port == 0)
        let after = try await curl.send(port: port, path: "/3/device/\(sampleDeviceToken)", headers: ["apns-topic: com.example.app"])
        #expect(after.exitCode == 7)  // curl: couldn't connect
        // A child process another test starts at that moment holds a copy of every
        // descriptor from fork until its exec closes them (all of the server's are
        // close-on-exec): the kernel's socket lives until that copy is gone too.
        var listeningAfter = try Self.listeningSockets(port: port)
        for _ in 0..<200 where listeningAfter != 0 {  // 20 s at least: a loaded machine can hold the child back
            try await Task.sleep(for: .milliseconds(100))
            listeningAfter = try Self.listeningSockets(port: port)
        }
        #expect(listeningAfter == 0)
    }
}
