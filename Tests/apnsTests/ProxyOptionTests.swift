import APNsMockServer
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `apns send --proxy <url>` and `APNS_PROXY` through Debian's `microsocks`, an
/// independent SOCKS5 server (RFC 1928, RFC 1929), to the mock server with a client
/// certificate.
@Suite("apns send through a proxy", .serialized)
struct ProxyOptionTests {
    /// microsocks on a free loopback port with username/password authentication; stopped by `body`'s end.
    func withSOCKSProxy(_ body: (Int) async throws -> Void) async throws {
        for _ in 0..<5 {
            let port = try freePort()
            let proxy = Process()
            proxy.executableURL = URL(fileURLWithPath: "/usr/bin/microsocks")
            proxy.arguments = ["-i", "127.0.0.1", "-p", "\(port)", "-u", "alice", "-P", "s3cret"]
            proxy.standardOutput = FileHandle.nullDevice
            proxy.standardError = FileHandle.nullDevice
            try proxy.run()
            defer {
                kill(proxy.processIdentifier, SIGKILL)
                proxy.waitUntilExit()
            }
            // microsocks says nothing when it listens: it is ready when it accepts.
            var ready = false
            for _ in 0..<250 where proxy.isRunning {
                if accepts(port) {
                    ready = true
                    break
                }
                usleep(20_000)
            }
            if ready {
                try await body(port)
                return
            }
        }
        throw CLI.Failure(description: "microsocks did not start")
    }

    @Test(
        "--proxy socks5://… and APNS_PROXY carry the notification; a wrong password and a malformed URL are errors that say so",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/microsocks"), "needs microsocks: apt-get install microsocks"))
    func sendsThroughSOCKS5() async throws {
        try await Fixtures.withCertificateServer { directory, target, server in
            let send = ["send", "--cert-file", directory.appendingPathComponent("client.p12").path, "--cert-password", Fixtures.p12Password]
                + target + ["--topic", Fixtures.topic, "--body", "Hi"]
            try await withSOCKSProxy { port in
                let flag = try await CLI.run(send + ["--proxy", "socks5://alice:s3cret@127.0.0.1:\(port)", Fixtures.goodToken])
                #expect(flag.status == 0, "\(flag)")
                let variable = try await CLI.run(send + [Fixtures.otherToken], environment: ["APNS_PROXY": "socks5://alice:s3cret@127.0.0.1:\(port)"])
                #expect(variable.status == 0, "\(variable)")
                #expect(server.statistics.accepted == 2)

                // apns check through the same proxy, which it names without its password.
                server.respond(toDeviceToken: String(repeating: "0", count: 64), with: ScriptedResponse(status: 400, reason: "BadDeviceToken"))
                let check = try await CLI.run(
                    ["check", "--cert-file", directory.appendingPathComponent("client.p12").path, "--cert-password", Fixtures.p12Password]
                        + target + ["--topic", Fixtures.topic, "--proxy", "socks5://alice:s3cret@127.0.0.1:\(port)"])
                #expect(check.status == 0, "\(check)")
                #expect(check.stdout.contains("via socks5://alice:***@127.0.0.1:\(port)"), "\(check)")
                #expect(!check.stdout.contains("s3cret"))

                let wrong = try await CLI.run(send + ["--proxy", "socks5://alice:nope@127.0.0.1:\(port)", Fixtures.goodToken])
                #expect(wrong.status != 0)
                // The notification's line says why (no log line without --verbose).
                #expect(wrong.stdout.contains("refused the credentials of user 'alice'"), "\(wrong)")
                #expect(wrong.stdout.contains("check the proxy's user name and password"), "\(wrong)")
                #expect(!wrong.stdout.contains("nope") && !wrong.stderr.contains("nope"))
                // A proxy address where nothing listens: named as the proxy, with advice
                // about the proxy, not about --host.
                let nowhere = try freePort()
                let unreachable = try await CLI.run(send + ["--proxy", "socks5://alice:s3cret@127.0.0.1:\(nowhere)", Fixtures.goodToken])
                #expect(unreachable.status != 0)
                #expect(unreachable.stdout.contains("cannot reach the proxy 127.0.0.1:\(nowhere)"), "\(unreachable)")
                #expect(unreachable.stdout.contains("check the proxy's address"), "\(unreachable)")
                #expect(!unreachable.stdout.contains("--host"), "\(unreachable)")
                #expect(server.statistics.accepted == 2)
            }
            let malformed = try await CLI.run(send + ["--proxy", "socks4://alice:hunter2@127.0.0.1:1080", Fixtures.goodToken])
            #expect(malformed.status == 2, "a malformed proxy URL is a usage error: \(malformed)")
            #expect(malformed.stderr.contains("unsupported scheme 'socks4'"), "\(malformed)")
            #expect(!malformed.stderr.contains("hunter2"))
            // The same URL from APNS_PROXY is the same usage error (as a malformed
            // APNS_CONNECTIONS or APNS_ENVIRONMENT is), not a run-time failure.
            let variable = try await CLI.run(send + [Fixtures.goodToken], environment: ["APNS_PROXY": "socks4://alice:hunter2@127.0.0.1:1080"])
            #expect(variable.status == 2, "\(variable)")
            #expect(variable.stderr.contains("APNS_PROXY"), "\(variable)")
            #expect(variable.stderr.contains("unsupported scheme 'socks4'"), "\(variable)")
            #expect(!variable.stderr.contains("hunter2"))
        }
    }

    private func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw CLI.Failure(description: "socket failed") }
        defer { close(fd) }
        var address = loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw CLI.Failure(description: "bind failed") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = loopback(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    private func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        return address
    }
}
