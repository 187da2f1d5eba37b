import Foundation
import Synchronization

/// Runs outside programs (curl, nghttp, h2load, openssl) with a bounded time, their output
/// captured in files so a full pipe can never block them.
enum ExternalTool {
    struct Result {
        var exitCode: Int32
        var stdout: String
        var stderr: String
    }

    struct Timeout: Error, CustomStringConvertible {
        var command: String
        var description: String { "timed out: \(command)" }
    }

    static func path(of tool: String) -> String? {
        if tool.hasPrefix("/") { return FileManager.default.isExecutableFile(atPath: tool) ? tool : nil }
        for directory in ["/usr/bin", "/usr/local/bin", "/bin"] {
            let candidate = directory + "/" + tool
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    static func run(_ tool: String, _ arguments: [String], timeout: Duration = .seconds(30)) async throws -> Result {
        guard let executable = path(of: tool) else { throw Timeout(command: "\(tool) is not installed") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apns-mock-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let outURL = directory.appendingPathComponent("out")
        let errURL = directory.appendingPathComponent("err")
        // The shell does the redirections, so no descriptor of ours is handed to the child
        // (concurrent Process launches could otherwise cross their standard outputs).
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", #"out=$1; err=$2; shift 2; exec "$@" >"$out" 2>"$err" </dev/null"#,
                             "sh", outURL.path, errURL.path, executable] + arguments
        let finished = Flag()
        let code: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { process in
                finished.value.withLock { $0 = true }
                continuation.resume(returning: process.terminationStatus)
            }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
                return
            }
            let pid = process.processIdentifier
            Task {
                try? await Task.sleep(for: timeout)
                if !finished.value.withLock({ $0 }) { kill(pid, SIGKILL) }
            }
        }
        if code == SIGKILL && process.terminationReason == .uncaughtSignal {
            throw Timeout(command: ([tool] + arguments).joined(separator: " "))
        }
        return Result(exitCode: code,
                      stdout: (try? String(contentsOf: outURL, encoding: .utf8)) ?? "",
                      stderr: (try? String(contentsOf: errURL, encoding: .utf8)) ?? "")
    }
}

/// A lock-protected flag shared between a process's termination handler and its timeout.
final class Flag: Sendable {
    let value = Mutex(false)
}
