import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The write end of the pipe the signal handler writes each caught signal's number to.
/// Set once, before any handler is installed, and never changed after.
nonisolated(unsafe) private var signalPipeWriteEnd: Int32 = -1

/// Catches signals with `sigaction` and a self-pipe: the handler only writes the signal's
/// number to a pipe (async-signal-safe), and a thread of its own reads the pipe and runs
/// the Swift code. That thread is the one that unblocks SIGINT, SIGTERM and SIGHUP: a signal mask
/// is inherited across `exec`, and the threads Swift's concurrency runs on block every
/// signal, so a tool started by such a thread (a test runner's) would otherwise keep
/// Ctrl-C pending until it exits. Unlike a dispatch signal source (a `signalfd` on Linux,
/// which needs every thread to block the signal) this works whatever threads exist.
private enum SignalPipe {
    /// The actions waiting for each signal number, and whether the pipe exists.
    static let state = Mutex<(handlers: [Int32: @Sendable (Int32) -> Void], started: Bool)>(([:], false))

    /// Creates the pipe and its reader thread (once).
    static func start() {
        let first = state.withLock { state in
            defer { state.started = true }
            return !state.started
        }
        guard first else { return }
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return }
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        signalPipeWriteEnd = fds[1]
        let readEnd = fds[0]
        var thread = pthread_t()
        let argument = UnsafeMutableRawPointer(bitPattern: Int(readEnd) + 1)
        pthread_create(&thread, nil, { argument in
            // The thread the kernel delivers SIGINT, SIGTERM and SIGHUP to (see the type's comment).
            var unblocked = sigset_t()
            sigemptyset(&unblocked)
            sigaddset(&unblocked, SIGINT)
            sigaddset(&unblocked, SIGTERM)
            sigaddset(&unblocked, SIGHUP)
            pthread_sigmask(SIG_UNBLOCK, &unblocked, nil)
            let readEnd = Int32(Int(bitPattern: argument) - 1)
            var byte: UInt8 = 0
            while true {
                let n = read(readEnd, &byte, 1)
                if n < 0 && errno == EINTR { continue }
                guard n == 1 else { return nil }
                let number = Int32(byte)
                let handler = SignalPipe.state.withLock { $0.handlers[number] }
                handler?(number)
            }
        }, argument)
        pthread_detach(thread)
    }

    /// Routes `signals` to `handler` (replacing an earlier one).
    static func install(_ signals: [Int32], _ handler: @escaping @Sendable (Int32) -> Void) {
        start()
        state.withLock { state in
            for number in signals { state.handlers[number] = handler }
        }
        for number in signals {
            var action = sigaction()
            #if canImport(Glibc)
            action.__sigaction_handler.sa_handler = { number in
                var byte = UInt8(truncatingIfNeeded: number)
                _ = write(signalPipeWriteEnd, &byte, 1)
            }
            #else
            action.__sigaction_u.__sa_handler = { number in
                var byte = UInt8(truncatingIfNeeded: number)
                _ = write(signalPipeWriteEnd, &byte, 1)
            }
            #endif
            sigemptyset(&action.sa_mask)
            action.sa_flags = SA_RESTART
            sigaction(number, &action, nil)
        }
    }

    /// Gives `signals` their default actions back.
    static func remove(_ signals: [Int32]) {
        for number in signals { signal(number, SIG_DFL) }
        state.withLock { state in
            for number in signals { state.handlers[number] = nil }
        }
    }
}

/// Waits for a signal instead of dying of it, so the process can shut down cleanly (stop
/// servers, flush output).
enum SignalWaiter {
    /// Catches `signals` from now on; the first one that arrives is kept for
    /// ``Caught/first()``. Call it before the process tells anyone it is ready (a port file, a
    /// line on standard output): a signal sent the moment after, while the process is still
    /// getting to its wait, is then caught, not fatal.
    static func catching(_ signals: [Int32]) -> Caught {
        Caught(signals)
    }

    /// Signals caught since ``SignalWaiter/catching(_:)``: the first one, and who waits for it.
    final class Caught: Sendable {
        private let state = Mutex<(signal: Int32?, waiter: CheckedContinuation<Int32, Never>?)>((nil, nil))

        fileprivate init(_ signals: [Int32]) {
            SignalPipe.install(signals) { [self] number in
                let waiter = state.withLock { state -> CheckedContinuation<Int32, Never>? in
                    guard state.signal == nil else { return nil }
                    state.signal = number
                    defer { state.waiter = nil }
                    return state.waiter
                }
                waiter?.resume(returning: number)
            }
        }

        /// The first signal caught: at once if one already came, else when one does.
        func first() async -> Int32 {
            await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
                let caught = state.withLock { state -> Int32? in
                    if let signal = state.signal { return signal }
                    state.waiter = continuation
                    return nil
                }
                if let caught { continuation.resume(returning: caught) }
            }
        }
    }

    /// Makes sure SIGINT and SIGTERM reach this process, caught or not: starts the thread
    /// that does not block them (see ``SignalPipe``). Call first thing.
    static func unblockTerminationSignals() {
        SignalPipe.start()
    }
}

/// Watches signals while a job runs, so that an interrupted job ends cleanly: the first
/// signal calls `onFirst` (which asks the job to stop; the job then reports what became of
/// its work), another one more than half a second later ends the process at once (status
/// 128 + the signal's number, standard output flushed). ``stop()`` gives the signals their
/// default actions back.
final class SignalWatch: Sendable {
    private let signals: [Int32]
    /// When the first signal came.
    private let first = Mutex<ContinuousClock.Instant?>(nil)

    /// Starts watching `signals`.
    init(_ signals: [Int32], onFirst: @escaping @Sendable (Int32) -> Void) {
        self.signals = signals
        SignalPipe.install(signals) { [self] number in
            let previous = first.withLock { first in
                defer { if first == nil { first = .now } }
                return first
            }
            guard let previous else {
                onFirst(number)
                return
            }
            // The same signal delivered twice at once (timeout(1) signals the child and
            // then its process group) is one request to stop, not two.
            if ContinuousClock.now - previous > .milliseconds(500) { Terminal.exit(128 + number) }
        }
    }

    /// Stops watching; the signals' default actions apply again.
    func stop() {
        SignalPipe.remove(signals)
    }
}
