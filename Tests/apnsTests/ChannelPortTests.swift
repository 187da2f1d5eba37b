import Foundation
import Testing

/// `--port` without `--host` for `apns channel` and `apns broadcast`, seen through a local
/// HTTP proxy that refuses every CONNECT: the tool's error names the endpoint it asked
/// for, and nothing leaves the machine.
@Suite("apns channel and broadcast: --port without --host")
struct ChannelPortTests {
    /// An HTTP proxy on loopback that answers every CONNECT with 403 (Python's socket
    /// module); prints its port first.
    static let refusingProxy = #"""
    import socket, sys
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    print("port:", server.getsockname()[1], flush=True)
    while True:
        client, _ = server.accept()
        client.settimeout(10)
        head = b""
        try:
            while b"\r\n\r\n" not in head:
                chunk = client.recv(4096)
                if not chunk:
                    break
                head += chunk
            client.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
        except OSError:
            pass
        client.close()
    """#

    @Test("channel calls go to APNs' channel host on --port; a broadcast with a --port other than 443 and no --host is a usage error")
    func portAlone() async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let script = directory.appendingPathComponent("proxy.py")
        try Data(Self.refusingProxy.utf8).write(to: script)
        let proxy = try CLI.launch("/usr/bin/python3", [script.path])
        defer { proxy.cleanUp() }
        let proxyPort = try await proxy.waitForLine(startingWith: "port: ")
        let common = ["--no-auth", "--port", "4321", "--proxy", "http://127.0.0.1:\(proxyPort)", "--request-timeout", "10",
                      "--bundle-id", Fixtures.topic]
        let list = try await CLI.run(["channel", "list"] + common)
        #expect(list.status == 1, "\(list)")
        #expect(list.stderr.contains("CONNECT api-manage-broadcast.sandbox.push.apple.com:4321"), "\(list)")

        let broadcast = try await CLI.run(["broadcast", "--channel", "dHN0LTEyMzQ1Njc4OTA=", "--content-state", "{}"] + common)
        #expect(broadcast.status == 2, "\(broadcast)")
        #expect(broadcast.errorLines.count == 1 && broadcast.stderr.contains("--port 4321 without --host"), "\(broadcast)")
    }
}
