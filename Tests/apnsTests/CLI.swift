import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Runs the built `apns` executable (`.build/debug/apns`, next to this package) with a
/// bounded time, standard input from bytes and its output captured in files.
enum CLI {
    struct Result: CustomStringConvertible {
        var status: Int32
        var stdout: String
        var stderr: String

        /// Standard output's lines, without empty ones.
        var lines: [String] { stdout.split(separator: "\n").map(String.init) }
        /// Standard error's lines, without empty ones.
        var errorLines: [String] { stderr.split(separator: "\n").map(String.init) }

        var description: String { "status \(status)\n--- stdout\n\(stdout)--- stderr\n\(stderr)" }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The package's root directory, found from this file's path.
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The `apns` built beside the running test binary (so a build in another scratch path,
    /// such as scripts/sanitize.sh's `.build-tsan`, runs its own), else `.build/debug/apns`,
    /// which `swift build` (and `swift build --build-tests`) makes.
    static var executable: String {
        get throws {
            var candidates: [String] = []
            if let testBinary = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
                candidates.append(URL(fileURLWithPath: testBinary).deletingLastPathComponent().appendingPathComponent("apns").path)
            }
            candidates.append(packageRoot.appendingPathComponent(".build/debug/apns").path)
            guard let path = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
                throw Failure(description: "\(candidates.last!) does not exist: run `swift build` first")
            }
            return path
        }
    }

    /// A loopback port where nothing listens, held for `body`: a socket bound to it and
    /// never listening, so that a connection is refused and no other test's server can
    /// take the port meanwhile (a port freed by a stopped server can be, in a parallel run).
    static func withRefusingPort<T>(_ body: (Int) async throws -> T) async throws -> T {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw Failure(description: "bind failed") }
        return try await body(Int(UInt16(bigEndian: address.sin_port)))
    }

    /// A new empty directory under the temporary directory.
    static func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apns-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// Runs `apns arguments…` to completion (killed after `timeout`), with `environment`
    /// overriding variables of the test's own environment.
    static func run(
        _ arguments: [String], standardInput: String? = nil, environment: [String: String] = [:], timeout: Duration = .seconds(60)
    ) async throws -> Result {
        let running = try start(arguments, standardInput: standardInput, environment: environment)
        defer { running.cleanUp() }
        let status = try await running.wait(timeout: timeout)
        return Result(status: status, stdout: running.stdout, stderr: running.stderr)
    }

    /// Starts `apns arguments…` in the background, with `environment` overriding variables
    /// of the test's own environment.
    static func start(_ arguments: [String], standardInput: String? = nil, environment: [String: String] = [:]) throws -> Running {
        try launch(try executable, arguments, standardInput: standardInput, environment: environment)
    }

    /// Starts the program at `path` (`apns`, curl, a Python server) in the background, its
    /// output in files, with `environment` overriding variables of the test's own.
    static func launch(
        _ path: String, _ arguments: [String], standardInput: String? = nil, environment: [String: String] = [:]
    ) throws -> Running {
        let directory = try temporaryDirectory()
        let running = Running(directory: directory)
        // If starting fails, its files go here; once returned, the caller's cleanUp() removes them.
        var started = false
        defer { if !started { running.cleanUp() } }
        let input = directory.appendingPathComponent("in")
        try Data((standardInput ?? "").utf8).write(to: input)
        let process = running.process
        // The shell does the redirections, so none of our descriptors reaches the child.
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = [
            "-c", #"in=$1; out=$2; err=$3; shift 3; exec "$@" <"$in" >"$out" 2>"$err""#, "sh",
            standardInput == nil ? "/dev/null" : input.path, running.outURL.path, running.errURL.path,
            path,
        ] + arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let exit = running.exit
        process.terminationHandler = { process in exit.finished(process.terminationStatus) }
        try process.run()
        started = true
        return running
    }

    /// A started `apns` process.
    /// The exit status, shared with the process's termination handler.
    final class ExitBox: Sendable {
        private let state = Mutex<(status: Int32?, waiter: CheckedContinuation<Int32, Never>?)>((nil, nil))

        func finished(_ status: Int32) {
            let waiter = state.withLock { state in
                state.status = status
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: status)
        }

        func status() async -> Int32 {
            await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
                let done = state.withLock { state -> Int32? in
                    if let status = state.status { return status }
                    state.waiter = continuation
                    return nil
                }
                if let done { continuation.resume(returning: done) }
            }
        }
    }

    final class Running {
        let process = Process()
        let exit = ExitBox()
        let directory: URL
        let outURL: URL
        let errURL: URL

        init(directory: URL) {
            self.directory = directory
            self.outURL = directory.appendingPathComponent("out")
            self.errURL = directory.appendingPathComponent("err")
        }

        var stdout: String { (try? String(contentsOf: outURL, encoding: .utf8)) ?? "" }
        var stderr: String { (try? String(contentsOf: errURL, encoding: .utf8)) ?? "" }
        var pid: Int32 { process.processIdentifier }

        /// Waits for the exit status; kills the process and throws after `timeout`.
        func wait(timeout: Duration) async throws -> Int32 {
            let pid = pid
            let killer = Task {
                try await Task.sleep(for: timeout)
                kill(pid, SIGKILL)
            }
            let status = await exit.status()
            killer.cancel()
            if process.terminationReason == .uncaughtSignal && status == SIGKILL {
                throw Failure(description: "apns timed out after \(timeout)\n\(stdout)\n\(stderr)")
            }
            return status
        }

        /// Polls standard output until a line starts with `prefix`; returns the rest of it.
        // 90 s: a whole parallel run on a loaded 2-core machine has kept a starting server
        // from printing its port for over 30 s.
        func waitForLine(startingWith prefix: String, timeout: Duration = .seconds(90)) async throws -> String {
            let deadline = ContinuousClock.now + timeout
            while ContinuousClock.now < deadline {
                for line in stdout.split(separator: "\n") where line.hasPrefix(prefix) {
                    return String(line.dropFirst(prefix.count))
                }
                if !process.isRunning { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            throw Failure(description: "no line starting with \"\(prefix)\"\n\(stdout)\n\(stderr)")
        }

        /// Kills the process if it still runs and removes its files.
        func cleanUp() {
            if process.isRunning { kill(pid, SIGKILL) }
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// Runs another program (curl, openssl) with a bounded time.
    static func tool(_ path: String, _ arguments: [String], timeout: Duration = .seconds(30)) async throws -> Result {
        let running = try launch(path, arguments)
        defer { running.cleanUp() }
        let status = try await running.wait(timeout: timeout)
        return Result(status: status, stdout: running.stdout, stderr: running.stderr)
    }

    /// Parses one line of `--json` output with Foundation's JSONSerialization.
    static func jsonObject(_ line: String) throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            throw Failure(description: "not a JSON object: \(line)")
        }
        return object
    }
}
