import APNsCore
import APNsMockServer
import Foundation
import TestTools
import Testing
@testable import APNsTransport

#if canImport(Glibc)
import Glibc
#endif

/// A process that embeds the SDK may start child processes (an image converter, a shell
/// command) from any thread. A descriptor without close-on-exec is inherited by such a
/// child and stays open as long as it runs: an APNs connection that the SDK closed would
/// stay open in the child, and a listener of the mock server would keep listening. The
/// kernel is the witness here: a child started with `posix_spawn` (which, unlike
/// Foundation's `Process`, closes nothing itself) lists what it inherited, and
/// `/proc/net/tcp` says which sockets are the connections to and from the mock server.
@Suite(.blockingIO)
struct DescriptorInheritanceTests {
    /// The inode of every TCP socket whose local or remote port is `port`, from the
    /// kernel's tables (listeners, the client's connections and the server's).
    static func socketInodes(port: Int) -> Set<String> {
        Set(kernelTCPSockets().filter { $0.localPort == port || $0.remotePort == port }.map(\.inode)).subtracting(["0"])
    }

    /// What `/bin/ls -l /proc/self/fd` prints when started with `posix_spawn` from this
    /// process, its standard output a pipe: one line per descriptor the child holds.
    static func childDescriptorListing() throws -> String {
        var pipeEnds: [Int32] = [-1, -1]
        guard pipe(&pipeEnds) == 0 else { throw HarnessError(description: "pipe failed: \(errno)") }
        defer { close(pipeEnds[0]) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
        let words: [String] = ["ls", "-l", "/proc/self/fd"]
        let arguments: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
        defer { arguments.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, "/bin/ls", &actions, nil, arguments, environ)
        close(pipeEnds[1])
        guard spawned == 0 else { throw HarnessError(description: "posix_spawn failed: \(spawned)") }
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(pipeEnds[0], &buffer, buffer.count)
            if count <= 0 { break }
            output += buffer[0..<count]
        }
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
        return String(decoding: output, as: UTF8.self)
    }

    @Test("a child process started while the SDK's connections are open inherits none of them")
    func childInheritsNoConnection() async throws {
        try await withMockAPNsServer(configuration: .init(bundleIDs: ["com.example.app"])) { server in
            let transport = try server.makeTransport()
            let client = APNsClient(credentials: .certificate, transport: transport)
            let notification = PushNotification(payload: .alert(body: "Hello"), topic: "com.example.app")
            let token = try DeviceToken(hex: String(repeating: "ab", count: 32))
            _ = try await client.send(notification, to: token)

            let inodes = Self.socketInodes(port: server.port)
            // The server's listener(s), the client's connection and the server's side of it.
            #expect(inodes.count >= 3, "\(inodes)")
            let listing = try Self.childDescriptorListing()
            #expect(listing.contains("/proc/"), "the child listed nothing: \(listing)")
            let inherited = inodes.filter { listing.contains("socket:[\($0)]") }
            #expect(inherited.isEmpty, "the child inherited sockets \(inherited):\n\(listing)")
            await client.shutdown()
        }
    }
}
