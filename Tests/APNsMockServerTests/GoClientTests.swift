import Foundation
import TestTools
import Testing

/// The mock server against a provider written on Go's HTTP/2 client and ES256 signer
/// (`GoClient/main.go`, built by ``PeerProgram``): HPACK from Go's encoder (which indexes
/// request fields, the provider token among them), Go's flow control and Go's stream
/// scheduling against the server's limit (one stream until a token is accepted, as APNs,
/// then many). Each request's shape and the answer Apple documents for it are set by its
/// index (see ``IndependentProvider``); the key is made by OpenSSL and the token signed
/// by Go, so no part of the request comes from our code.
@Suite("A provider on Go's HTTP/2 client")
struct GoClientTests {
    @Test("2,000 requests, 200 in flight on one connection: each answered once, as Apple documents its shape")
    func answersAsApple() async throws {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("GoClient").path
        let run = try await IndependentProvider.run(
            try await PeerProgram.command(in: directory), keyID: "GOKEY12345", count: 2_000, concurrency: 200)
        print("go client: 2,000 requests, \(run.description)")
    }
}
