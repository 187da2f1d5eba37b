import Foundation
import Synchronization

/// A test helper written in Rust, built with `cargo` from the crates Debian packages
/// (`librust-*-dev`, which `scripts/bootstrap.sh --test` installs), offline, by
/// `scripts/rust-peers.sh`.
///
/// The h2 crate (the HTTP/2 of hyper, and so of a2, the Rust APNs client), rustls (with
/// webpki) and ring share no code with nghttp2, OpenSSL, Python's h2 or Go's standard
/// library, so its programs are a fourth independent peer for the SDK's client and mock
/// server. A program is a directory holding `Cargo.toml` and `main.rs`; the script
/// builds it in the package's `.build/apns-rust-programs` (ignored by git).
/// `scripts/test.sh` runs the script before the tests, so here it finds the program up
/// to date; run alone, `swift test` builds it on first use (about a minute).
public enum RustProgram {
    /// The package root, from this file's place in it (`Tests/TestTools/`).
    private static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    private static let built = Mutex<[String: Result<String, RustBuildError>]>([:])

    /// Why a Rust program could not be built.
    public struct RustBuildError: Error, CustomStringConvertible {
        public var description: String
    }

    /// The path of the executable `binary` built from the program in `directory`, built
    /// (or found up to date) on the first call for that directory in this process.
    public static func executable(in directory: String, binary: String) throws -> String {
        try built.withLock { cache in
            if let known = cache[directory] { return known }
            let result = build(directory, binary: binary)
            cache[directory] = result
            return result
        }.get()
    }

    private static func build(_ directory: String, binary: String) -> Result<String, RustBuildError> {
        let script = packageRoot.appendingPathComponent("scripts/rust-peers.sh").path
        do {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["bash", script, directory]
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = pipe
            try process.run()
            let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            let status = exitStatus(of: process, seconds: 900)
            guard status == 0 else {
                return .failure(RustBuildError(description: "scripts/rust-peers.sh \(directory) exited \(status) (cargo and the librust-*-dev packages scripts/bootstrap.sh --test names are needed): \(text)"))
            }
            return .success(packageRoot.appendingPathComponent(".build/apns-rust-programs/target/release/\(binary)").path)
        } catch {
            return .failure(RustBuildError(description: "scripts/rust-peers.sh \(directory): \(error)"))
        }
    }
}
