import Foundation
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Standard streams, terminal detection and the process-wide log handler.
enum Terminal {
    /// Writes `line` and a newline to standard error, unbuffered.
    static func standardError(_ line: String) {
        writeStandardError(line + "\n")
    }

    /// Writes `text` to standard error as it is, unbuffered, with `write(2)`. A standard
    /// error that cannot be written (a closed pipe, a full disk, `2>/dev/full`) is
    /// ignored: there is nowhere left to say so, and `FileHandle.write(_:)` would end the
    /// process with a trap instead.
    static func writeStandardError(_ text: String) {
        var bytes = Array(text.utf8)
        bytes.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(STDERR_FILENO, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { return }
                offset += written
            }
        }
    }

    /// Ignores SIGPIPE for the life of the process: a write to a closed pipe (`apns … |
    /// head -1`) then fails with EPIPE, which is handled like any other write failure
    /// (standard output: a line on standard error and exit status 1), whether or not the
    /// transport (which ignores SIGPIPE too) has started. Call first thing.
    static func ignoreBrokenPipes() {
        signal(SIGPIPE, SIG_IGN)
    }

    /// Whether standard error is a terminal (progress bars go there only then).
    static var standardErrorIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }

    /// Whether standard input is a terminal (nothing is read from it then).
    static var standardInputIsTerminal: Bool { isatty(STDIN_FILENO) == 1 }

    /// Sends swift-log output to standard error at `level`. Call once, before logging.
    static func bootstrapLogging(level: Logger.Level) {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }

    /// Flushes standard output (and every other C stream).
    static func flush() {
        fflush(nil)
    }

    /// Flushes the streams and ends the process with `status`; when standard output could
    /// not be written (a full disk, a closed pipe, `> /dev/full`), says so on standard
    /// error and ends with status 1 instead of 0: the results are incomplete.
    static func exit(_ status: Int32) -> Never {
        var status = status
        // Output that could not be written stays in the buffer, so flushing it fails again.
        if fflush(nil) != 0 {
            let reason = String(cString: strerror(errno))
            standardError("apns: cannot write to standard output (\(reason)): what it printed is incomplete")
            if status == 0 { status = 1 }
        }
        #if canImport(Glibc)
        Glibc.exit(status)
        #else
        Darwin.exit(status)
        #endif
    }

    /// Reads all of standard input.
    static func readStandardInput() -> [UInt8] {
        Array(FileHandle.standardInput.readDataToEndOfFile())
    }

    /// Reads standard input to its end, and writes `notice` to standard error once if
    /// nothing has ended it after `delay`: a pipe that an outer program never closes
    /// would otherwise keep the tool waiting without a word.
    static func readStandardInput(noticeAfter delay: Duration, _ notice: String) -> [UInt8] {
        let finished = InputFinished()
        let milliseconds = Int(delay.components.seconds * 1000 + delay.components.attoseconds / 1_000_000_000_000_000)
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(milliseconds)) {
            finished.state.withLock { done in if !done { standardError(notice) } }
        }
        let bytes = readStandardInput()
        finished.state.withLock { $0 = true }
        return bytes
    }

    /// Seconds since the `start` instant.
    static func seconds(since start: ContinuousClock.Instant) -> Double {
        seconds(ContinuousClock.now - start)
    }

    /// A duration in seconds.
    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

/// Whether standard input has been read to its end (for the notice of a silent pipe).
private final class InputFinished: Sendable {
    let state = Mutex(false)
}
