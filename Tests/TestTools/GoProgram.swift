import Foundation
import Synchronization

/// A test helper written in Go (standard library only), built once per test process
/// with the `go` tool from the `golang-go` package that `scripts/test.sh` installs.
///
/// Go's `net/http`, `crypto/tls` and `crypto/ecdsa` are implementations of HTTP/2, TLS
/// and ES256 that share no code with nghttp2, OpenSSL or Python's h2, so its programs
/// are independent peers for the SDK's client and mock server. The build needs no
/// network: no module, no dependency, its cache in a temporary directory removed when
/// the test process exits.
public enum GoProgram {
    private static let buildDirectory = FileManager.default.temporaryDirectory
        .appendingPathComponent("apns-go-build-\(UUID().uuidString)")
    private static let built = Mutex<[String: Result<String, GoBuildError>]>([:])

    /// Why a Go program could not be built.
    public struct GoBuildError: Error, CustomStringConvertible {
        public var description: String
    }

    /// The path of the executable built from `source` (a `main` package in one file),
    /// built on the first call for that source.
    public static func executable(for source: String) throws -> String {
        try built.withLock { cache in
            if let known = cache[source] { return known }
            let result = build(source)
            cache[source] = result
            return result
        }.get()
    }

    private static func build(_ source: String) -> Result<String, GoBuildError> {
        // Registered before anything is written, so a half-made build goes too.
        _ = registerRemoval
        let output = buildDirectory.appendingPathComponent(UUID().uuidString).path
        do {
            try FileManager.default.createDirectory(at: buildDirectory, withIntermediateDirectories: true)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [
                "GOCACHE=\(buildDirectory.path)/cache", "GOPATH=\(buildDirectory.path)/path", "GO111MODULE=off", "GOFLAGS=",
                "go", "build", "-o", output, source,
            ]
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = pipe
            try process.run()
            let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            let status = exitStatus(of: process, seconds: 120)
            guard status == 0 else {
                return .failure(GoBuildError(description: "go build \(source) exited \(status) (the golang-go package is needed): \(text)"))
            }
            return .success(output)
        } catch {
            return .failure(GoBuildError(description: "go build \(source) (the golang-go package is needed): \(error)"))
        }
    }

    private static let registerRemoval: Void = {
        atexit { try? FileManager.default.removeItem(at: GoProgram.buildDirectory) }
    }()
}
