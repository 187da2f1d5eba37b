import APNsCore
import APNsMockServer
import Foundation
import Testing

/// `apns send` with a client certificate against a mock server in certificate mode.
@Suite("apns send with a certificate")
struct CertificateSendTests {
    func withCertificateServer(_ body: (URL, [String], MockAPNsServer) async throws -> Void) async throws {
        try await Fixtures.withCertificateServer(body)
    }

    @Test("a .p12 with its password, and a PEM certificate with its key: accepted, no authorization header")
    func certificates() async throws {
        try await withCertificateServer { directory, target, server in
            let p12 = try await CLI.run(["send", "--cert-file", directory.appendingPathComponent("client.p12").path,
                                         "--cert-password", Fixtures.p12Password] + target
                                        + ["--topic", Fixtures.topic, "--body", "Hi", Fixtures.goodToken])
            #expect(p12.status == 0, "\(p12)")
            let pem = try await CLI.run(["send", "--cert-file", directory.appendingPathComponent("client.pem").path,
                                         "--cert-key-file", directory.appendingPathComponent("client.key").path] + target
                                        + ["--topic", Fixtures.topic, "--body", "Hi", Fixtures.otherToken])
            #expect(pem.status == 0, "\(pem)")
            let requests = server.recordedRequests
            #expect(requests.count == 2)
            #expect(requests.allSatisfy { $0.value(of: "authorization") == nil && $0.status == 200 })
        }
    }

    @Test("a .p12 for another topic draws a TopicDisallowed warning before sending")
    func otherTopicWarning() async throws {
        try await withCertificateServer { directory, target, _ in
            let result = try await CLI.run(["send", "--cert-file", directory.appendingPathComponent("client.p12").path,
                                            "--cert-password", Fixtures.p12Password] + target
                                           + ["--topic", "com.example.other", "--body", "Hi", Fixtures.goodToken])
            #expect(result.stderr.contains("covers the topics com.example.app, not com.example.other"), "\(result)")
            // The mock server reads the topics from the certificate as APNs does.
            #expect(result.stdout.contains("TopicDisallowed"), "\(result)")
            #expect(result.status == 1)
        }
    }

    @Test("a wrong .p12 password exits 1 with one line naming the file")
    func wrongPassword() async throws {
        try await withCertificateServer { directory, target, server in
            let path = directory.appendingPathComponent("client.p12").path
            let result = try await CLI.run(["send", "--cert-file", path, "--cert-password", "wrong"] + target
                                           + ["--topic", Fixtures.topic, "--body", "Hi", Fixtures.goodToken])
            #expect(result.status == 1, "\(result)")
            #expect(result.errorLines.count == 1, "\(result)")
            #expect(result.stderr.contains(path), "\(result)")
            #expect(!result.stderr.contains("wrong"), "the password must not be echoed: \(result)")
            #expect(server.statistics.requests == 0)
        }
    }

    @Test("APNS_CONNECTIONS sets the pool when --connections is not given; a bad value is named")
    func connectionsFromTheEnvironment() async throws {
        try await Fixtures.withCertificateServer(maxConcurrentStreams: 4) { directory, target, server in
            let tokens = (0..<64).map { String(format: "%064x", $0 + 1) }
            let file = directory.appendingPathComponent("tokens.txt")
            try tokens.joined(separator: "\n").write(to: file, atomically: true, encoding: .utf8)
            let send = ["send", "--cert-file", directory.appendingPathComponent("client.p12").path, "--cert-password", Fixtures.p12Password]
                + target + ["--topic", Fixtures.topic, "--body", "Hi", "--tokens-file", file.path]
            // 64 notifications over connections of 4 streams: the pool opens all it may.
            let three = try await CLI.run(send, environment: ["APNS_CONNECTIONS": "3"])
            #expect(three.status == 0, "\(three)")
            #expect(server.statistics.connections == 3)
            let flag = try await CLI.run(send + ["--connections", "1"], environment: ["APNS_CONNECTIONS": "3"])
            #expect(flag.status == 0, "\(flag)")
            #expect(server.statistics.connections == 4)
            let bad = try await CLI.run(send, environment: ["APNS_CONNECTIONS": "lots"])
            #expect(bad.status != 0)
            #expect(bad.stderr.contains("APNS_CONNECTIONS is 'lots'"), "\(bad)")
        }
    }

    @Test("--trace logs every HTTP/2 frame of the exchange to standard error, and no device token")
    func traceFrames() async throws {
        try await Fixtures.withCertificateServer(maxConcurrentStreams: 5) { directory, target, _ in
            let result = try await CLI.run(["send", "--trace", "--cert-file", directory.appendingPathComponent("client.p12").path,
                                            "--cert-password", Fixtures.p12Password] + target
                                           + ["--topic", Fixtures.topic, "--body", "Hi", Fixtures.goodToken])
            #expect(result.status == 0, "\(result)")
            for line in ["recv SETTINGS stream=0", "MAX_CONCURRENT_STREAMS=5", "send HEADERS stream=1", "flags=END_STREAM", "recv HEADERS stream=1", "send GOAWAY stream=0"] {
                #expect(result.stderr.contains(line), "\(line) not in \(result.stderr)")
            }
            #expect(!result.stderr.contains(Fixtures.goodToken))
            let quiet = try await CLI.run(["send", "--cert-file", directory.appendingPathComponent("client.p12").path,
                                           "--cert-password", Fixtures.p12Password] + target
                                          + ["--topic", Fixtures.topic, "--body", "Hi", Fixtures.otherToken])
            #expect(quiet.status == 0)
            #expect(!quiet.stderr.contains("HEADERS"))
        }
    }

    @Test("--request-timeout, or APNS_REQUEST_TIMEOUT, bounds each attempt; a bad value is a usage error naming it")
    func requestTimeout() async throws {
        try await Fixtures.withCertificateServer { directory, target, server in
            let send = ["send", "--cert-file", directory.appendingPathComponent("client.p12").path, "--cert-password", Fixtures.p12Password]
                + target + ["--topic", Fixtures.topic, "--body", "Hi"]
            // A warm connection, then answers held 3 s: a 0.5 s attempt times out; a 30 s one would wait.
            let warm = try await CLI.run(send + [Fixtures.goodToken])
            #expect(warm.status == 0, "\(warm)")
            server.setResponseDelay(.seconds(3))
            for (extra, environment) in [(["--request-timeout", "0.5"], [String: String]()), ([], ["APNS_REQUEST_TIMEOUT": "0.5"])] {
                let start = ContinuousClock.now
                let result = try await CLI.run(send + extra + [Fixtures.otherToken], environment: environment)
                #expect(result.status == 1, "\(result)")
                #expect(result.stdout.contains("timeout") || result.stderr.contains("timeout"), "\(result)")
                #expect(ContinuousClock.now - start < .seconds(30))
            }
            server.setResponseDelay(.zero)
            for (extra, environment, named) in [
                (["--request-timeout", "soon"], [String: String](), "--request-timeout is 'soon'"),
                ([], ["APNS_CONNECT_TIMEOUT": "-1"], "APNS_CONNECT_TIMEOUT is '-1'"),
            ] {
                let bad = try await CLI.run(send + extra + [Fixtures.goodToken], environment: environment)
                #expect(bad.status == 2, "\(bad)")
                #expect(bad.stderr.contains(named), "\(bad)")
            }
        }
    }
}
