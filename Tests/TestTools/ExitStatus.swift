// Running outside tools (openssl, curl, h2load) from the test targets.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Waits for `process` to exit and returns its exit status (128 + the signal if a signal
/// ended it).
///
/// Foundation's `Process` on Linux learns that a child exited from its own SIGCHLD
/// monitor, and once, in a full test run from a fresh clone, the monitor missed an
/// `openssl` that had exited: the child stayed a zombie, `waitUntilExit()` never
/// returned, and every test waiting for the shared certificates waited with it until
/// the watchdog ended the run. This waits for the monitor up to `seconds`, then reaps the
/// child itself with `waitpid`. Returns -1 if the monitor reaped the child first and had
/// not recorded its status `seconds` later.
public func exitStatus(of process: Process, seconds: Double = 10) -> Int32 {
    let end = Date().addingTimeInterval(seconds)
    while process.isRunning, Date() < end { usleep(2_000) }
    if !process.isRunning { return recordedStatus(of: process) }
    var status: Int32 = 0
    while true {
        let reaped = waitpid(process.processIdentifier, &status, 0)
        if reaped == process.processIdentifier { break }
        if reaped == -1, errno == EINTR { continue }
        // ECHILD: the monitor reaped it after all. It records the status on a dispatch
        // queue, which tests blocking the pool's threads (as this wait does) can hold up:
        // wait for the record, but not for ever.
        let recordEnd = Date().addingTimeInterval(seconds)
        while process.isRunning, Date() < recordEnd { usleep(2_000) }
        return process.isRunning ? -1 : recordedStatus(of: process)
    }
    let signal = status & 0x7f
    return signal == 0 ? (status >> 8) & 0xff : 128 + signal
}

/// The exit status Foundation recorded, a signal's as 128 + its number.
private func recordedStatus(of process: Process) -> Int32 {
    process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
}

/// Whether process `pid` still runs: not gone and not a zombie (`/proc/<pid>/stat`).
/// Unlike `Process.isRunning`, it does not wait for Foundation's SIGCHLD monitor, whose
/// record is made on a dispatch queue that blocked test threads can hold up.
public func isAlive(pid: Int32) -> Bool {
    guard pid > 0, let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let close = stat.lastIndex(of: ")")
    else { return false }
    let state = stat[stat.index(after: close)...].drop(while: { $0 == " " }).first
    return state != "Z" && state != "X" && state != nil
}
