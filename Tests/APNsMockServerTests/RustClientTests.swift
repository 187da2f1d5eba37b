import Foundation
import TestTools
import Testing

/// The mock server against a provider written on Rust's h2 crate (the HTTP/2 of hyper,
/// and so of a2, the Rust APNs client), rustls and ring (`RustClient/main.rs`, built by
/// ``PeerProgram``). What it does that Go's client does not: its authorization field is
/// marked sensitive, so h2's HPACK encoder sends the token as a literal never indexed
/// (RFC 7541 section 6.2.3) in every request, where Go's indexes it; and h2's own flow
/// control and frame scheduling. Each request's shape and Apple's answer for it are as in
/// ``IndependentProvider``; the key is made by OpenSSL and the token signed by ring.
///
/// The program works around two things h2 0.3 does at the server's stream limit (one
/// until a provider token is accepted, as APNs, then many), both seen in the server's
/// frames: with its default of 100 streams before the server's first SETTINGS, h2 sent
/// streams over the limit of one after acknowledging it, which nghttp2 (the mock
/// server's HTTP/2) ends the connection for; and streams h2 held back under the limit and
/// opened when it rose had their HEADERS sent and never their DATA. So the program starts
/// with one stream, as the SDK's client does, and sends its first request alone.

@Suite("A provider on Rust's h2 client")
struct RustClientTests {
    @Test("2,000 requests, 200 in flight on one connection: each answered once, as Apple documents its shape")
    func answersAsApple() async throws {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("RustClient").path
        let run = try await IndependentProvider.run(try await PeerProgram.command(in: directory), keyID: "RUSTKEY123", count: 2_000, concurrency: 200)
        print("rust client: 2,000 requests, \(run.description)")
    }
}
