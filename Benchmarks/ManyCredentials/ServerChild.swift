// The mock server as a child process, started with posix_spawn rather than Foundation's
// `Process`: on Linux, `Process` watches its children from a thread of its own, which
// would count among the client's threads that this benchmark measures.
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The pid of the running mock server child, or 0: read by the signal handler, which kills
/// the child before the benchmark dies of SIGINT, SIGTERM or SIGHUP.
nonisolated(unsafe) var serverChildPID: pid_t = 0

/// Files the signal handler removes, then the directory that held them (the last entry),
/// as C strings; `nil`-terminated, or `nil` when there is nothing to remove.
nonisolated(unsafe) var signalCleanupPaths: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?

/// Makes SIGINT, SIGTERM and SIGHUP kill the mock server child (if any), remove
/// `files` and then `directory` (with async-signal-safe calls only), and exit with
/// 128 + the signal, so that an interrupted or timed-out run leaves nothing behind.
func forwardTerminatingSignalsToServerChild(removing files: [String], in directory: String) {
    let paths = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>.allocate(capacity: files.count + 2)
    for (index, path) in (files + [directory]).enumerated() { paths[index] = strdup(path) }
    paths[files.count + 1] = nil
    signalCleanupPaths = paths
    for signalNumber in [SIGINT, SIGTERM, SIGHUP] {
        _ = signal(signalNumber) { received in
            let pid = serverChildPID
            if pid > 0 {
                kill(pid, SIGKILL)
                var status: Int32 = 0
                _ = waitpid(pid, &status, 0)
            }
            if let paths = signalCleanupPaths {
                var index = 0
                while let path = paths[index] {
                    if paths[index + 1] == nil { rmdir(path) } else { unlink(path) }
                    index += 1
                }
            }
            _exit(128 + received)
        }
    }
}

/// `apns mock-server` running in a child process, with the port and CA certificate it
/// wrote once listening.
struct ServerChild {
    /// The child's process id.
    let pid: pid_t
    /// The port it listens on (loopback).
    let port: Int
    /// The CA certificate (PEM) its server certificate chains to.
    let caPEM: String
    /// Where its standard output and error go.
    let logPath: String

    /// Starts `binary mock-server --accept-any-token --record-limit 0 --port-file … --ca-file …`
    /// with its output in `directory/server.log`, and waits at most `timeout` for the port
    /// file. The child is killed if it does not come up.
    static func start(binary: String, directory: String, timeout: Duration = .seconds(30)) async throws -> ServerChild {
        let (portFile, caFile, logPath) = files(in: directory)
        let arguments = [
            binary, "mock-server", "--accept-any-token", "--record-limit", "0",
            "--port-file", portFile, "--ca-file", caFile,
        ]
        let pid = try spawn(binary, arguments: arguments, outputPath: logPath)
        serverChildPID = pid
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8),
                let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)),
                let ca = try? String(contentsOfFile: caFile, encoding: .utf8)
            {
                return ServerChild(pid: pid, port: port, caPEM: ca, logPath: logPath)
            }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                serverChildPID = 0
                throw BenchmarkError("the mock server exited before writing its port (wait status \(status)); its output:\n\(tail(of: logPath))")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        ServerChild(pid: pid, port: 0, caPEM: "", logPath: logPath).stop()
        throw BenchmarkError("the mock server wrote no port file within \(timeout); its output:\n\(tail(of: logPath))")
    }

    /// The port file, CA file and log the child writes in `directory`.
    static func files(in directory: String) -> (port: String, ca: String, log: String) {
        (directory + "/port", directory + "/ca.pem", directory + "/server.log")
    }

    /// Sends SIGTERM, waits up to 10 s for the child to exit, then sends SIGKILL and reaps it.
    func stop() {
        guard pid > 0 else { return }
        kill(pid, SIGTERM)
        var status: Int32 = 0
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if waitpid(pid, &status, WNOHANG) == pid {
                serverChildPID = 0
                return
            }
            usleep(20_000)
        }
        kill(pid, SIGKILL)
        _ = waitpid(pid, &status, 0)
        serverChildPID = 0
    }

    /// Spawns `path` with `arguments` (the first is argv[0]) and this process's
    /// environment, its standard output and error appended to `outputPath`.
    private static func spawn(_ path: String, arguments: [String], outputPath: String) throws -> pid_t {
        guard access(path, X_OK) == 0 else {
            throw BenchmarkError("\(path) is not an executable: build it (swift build --product apns) or name it with --server-binary")
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        let environment = ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" }
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, path, &actions, nil, argv, envp)
        guard result == 0 else { throw BenchmarkError("cannot start \(path): \(String(cString: strerror(result)))") }
        return pid
    }

    /// The last 2,000 characters of the file at `path` (the child's output), or a note that
    /// there is none.
    static func tail(of path: String) -> String {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8), !text.isEmpty else { return "(no output)" }
        return String(text.suffix(2_000))
    }
}

/// A failure of the benchmark itself (not of a notification), with what to do about it.
struct BenchmarkError: Error, CustomStringConvertible {
    /// What went wrong.
    let description: String

    /// A failure described by `description`.
    init(_ description: String) { self.description = description }
}
