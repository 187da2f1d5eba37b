import Foundation
import Synchronization

/// The test suite's independent peers: programs on other HTTP/2, TLS and ECDSA
/// implementations (Go's standard library; Rust's h2, rustls and ring; Netty and the
/// JDK), built by `scripts/peers.sh` from a directory under `Tests/`.
///
/// None of them shares code with nghttp2, OpenSSL or each other, so each is an
/// independent peer for the SDK's client and mock server. Their builds need no network
/// (Go's standard library, Debian's Rust crates and Netty jars; `scripts/bootstrap.sh
/// --test` installs them) and go to `.build/apns-peers/`. `scripts/test.sh` builds every
/// peer before the tests run; here the script finds them up to date in well under a
/// second (run alone, `swift test` builds a peer on first use: about a minute for the
/// Rust ones).
public enum PeerProgram {
    /// The package root, from this file's place in it (`Tests/TestTools/`).
    private static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    private static let builds = Mutex<[String: Task<[String], any Error>]>([:])

    /// Why a peer could not be built.
    public struct BuildError: Error, CustomStringConvertible {
        public var description: String
    }

    /// The command (executable and first arguments) that runs the peer in `directory`,
    /// built on the first call for it in this process.
    ///
    /// The build runs on a thread of its own, not on Swift's cooperative pool: with the
    /// script (or a compiler) run from pool threads, parallel cases waiting for the same
    /// build held both threads of a 2-core machine's pool, and every other suite's tasks
    /// waited.
    public static func command(in directory: String) async throws -> [String] {
        let task = builds.withLock { builds in
            if let known = builds[directory] { return known }
            let made = Task<[String], any Error> { try await offThePool { try build(directory) } }
            builds[directory] = made
            return made
        }
        return try await task.value
    }

    private static func build(_ directory: String) throws -> [String] {
        let script = packageRoot.appendingPathComponent("scripts/peers.sh").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["bash", script, "--command", directory]
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        do {
            try process.run()
        } catch {
            throw BuildError(description: "scripts/peers.sh --command \(directory): \(error)")
        }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let problems = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let status = exitStatus(of: process, seconds: 900)
        let command = text.split(separator: "\n").map(String.init)
        guard status == 0, !command.isEmpty else {
            throw BuildError(description: "scripts/peers.sh --command \(directory) exited \(status) (the packages scripts/bootstrap.sh --test installs are needed): \(problems)")
        }
        return command
    }
}
