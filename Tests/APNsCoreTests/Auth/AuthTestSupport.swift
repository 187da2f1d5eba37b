import Foundation
import TestTools
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import APNsCore

/// Files under `Tests/APNsCoreTests/Fixtures/auth` (see `generate.sh` there).
enum AuthFixture {
    /// The fixture directory: the copy SwiftPM puts in the test bundle, or the source tree.
    static let directory: URL = {
        if let url = Bundle.module.url(forResource: "Fixtures", withExtension: nil)?
            .appendingPathComponent("auth"),
           FileManager.default.fileExists(atPath: url.path) {
            return url
        }
        return URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/auth")
    }()

    static func path(_ name: String) -> String {
        directory.appendingPathComponent(name).path
    }

    static func text(_ name: String) throws -> String {
        try String(contentsOfFile: path(name), encoding: .utf8)
    }

    static func bytes(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: directory.appendingPathComponent(name)))
    }
}

/// A clock the test moves by hand.
final class FakeClock: Sendable {
    private let current: Mutex<Date>

    init(_ start: Date = Date(timeIntervalSince1970: 1_437_179_036)) {
        current = Mutex(start)
    }

    var now: Date { current.withLock { $0 } }

    /// Time that does not step: what a forward advance also moves.
    private let monotonic = Mutex(Duration.zero)

    /// Moves the wall clock; a forward move is time passing (the monotonic clock moves
    /// too), a backward one a step of the wall clock alone (NTP, an operator).
    func advance(seconds: Double) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
        if seconds > 0 { monotonic.withLock { $0 += .milliseconds(Int64(seconds * 1000)) } }
    }

    /// Time passing without the wall clock moving (it was set back meanwhile).
    func pass(seconds: Double) {
        monotonic.withLock { $0 += .milliseconds(Int64(seconds * 1000)) }
    }

    var clock: ProviderTokenClock {
        ProviderTokenClock(now: { self.now }, elapsed: { self.monotonic.withLock { $0 } })
    }
}

/// Runs the system `openssl` CLI: an ES256 implementation that is not ours.
enum OpenSSLCLI {
    static let path = "/usr/bin/openssl"

    struct Result {
        var status: Int32
        var output: String
    }

    /// Runs `openssl arguments…`; records a failing issue if the CLI is missing.
    static func run(_ arguments: [String]) throws -> Result {
        guard FileManager.default.isExecutableFile(atPath: path) else {
            Issue.record("the openssl CLI is missing at \(path): install the Debian package `openssl`; these tests need an independent verifier")
            throw CLIMissing()
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        let status = exitStatus(of: process)
        return Result(status: status, output: String(decoding: data, as: UTF8.self))
    }

    struct CLIMissing: Error {}
}

/// A fresh temporary directory, removed by `body`'s end.
func withTemporaryDirectory<R>(_ body: (URL) throws -> R) throws -> R {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("swift-apns-auth-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: url) }
    return try body(url)
}
