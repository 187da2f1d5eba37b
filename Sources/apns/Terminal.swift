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
        FileHandle.standardError.write(Data((line + "\n").utf8))
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
