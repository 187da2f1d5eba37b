import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `apns mock-server` in a child process, so the benchmark's CPU time is the client's alone.
/// The child stops by itself when this process ends, however it ends (`--parent-pid`).
final class MockServerProcess: @unchecked Sendable {  // stop() may run on the signal queue; it is idempotent
    let process: Process
    let port: Int
    let caPath: String
    private let directory: URL

    private init(process: Process, port: Int, caPath: String, directory: URL) {
        self.process = process
        self.port = port
        self.caPath = caPath
        self.directory = directory
    }

    /// Starts the child and waits (at most 20 s) for it to write its port.
    static func start(maxStreams: Int) async throws -> MockServerProcess {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apns-bench-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let portFile = directory.appendingPathComponent("port").path
        let caPath = directory.appendingPathComponent("ca.pem").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        if !FileManager.default.isExecutableFile(atPath: process.executableURL?.path ?? "") {
            process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        }
        process.arguments = ["mock-server", "--port-file", portFile, "--ca-file", caPath, "--record-limit", "0",
                             "--max-streams", String(maxStreams), "--parent-pid", String(getpid())]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8),
                let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
            {
                return MockServerProcess(process: process, port: port, caPath: caPath, directory: directory)
            }
            if !process.isRunning { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        if process.isRunning { process.terminate() }
        throw CLIError("the mock server child process did not start")
    }

    /// Sends SIGTERM, waits for the child and removes its files.
    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }
}
