import Foundation
import TestTools
import Testing

/// The mock server against a provider written on Netty's HTTP/2 codec (the stack of
/// Pushy, the Java APNs client) with the JDK's TLS and ES256 (`NettyClient/NettyClient.java`,
/// compiled by `scripts/peers.sh` against Debian's Netty jars; `scripts/bootstrap.sh
/// --test` installs `openjdk-17-jdk-headless` and `libnetty-java`). Netty brings its own HPACK
/// encoder, flow controller and stream bookkeeping, which refuses locally to open a
/// stream over the server's limit; each request on a child stream channel of
/// `Http2MultiplexHandler`, as Pushy sends. Shapes and Apple's answers as in
/// ``IndependentProvider``; the key is made by OpenSSL and the token signed by SunEC.
@Suite("A provider on Netty's HTTP/2 client")
struct NettyClientTests {
    @Test("2,000 requests, 200 in flight on one connection: each answered once, as Apple documents its shape")
    func answersAsApple() async throws {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("NettyClient").path
        let run = try await IndependentProvider.run(
            try await PeerProgram.command(in: directory), keyID: "NETTYKEY12", count: 2_000, concurrency: 200)
        print("netty client: 2,000 requests, \(run.description)")
    }
}
