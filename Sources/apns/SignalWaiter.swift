import Dispatch

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Waits for a signal with DispatchSource instead of a signal handler, so the process
/// can shut down cleanly (stop servers, flush output) rather than die.
enum SignalWaiter {
    /// Ignores the default action of `signals`, then returns the first one that arrives.
    static func wait(for signals: [Int32]) async -> Int32 {
        let queue = DispatchQueue(label: "apns.signals")
        return await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
            let box = SourcesBox()
            queue.sync {
                for number in signals {
                    signal(number, SIG_IGN)
                    let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
                    source.setEventHandler {
                        guard !box.resumed else { return }
                        box.resumed = true
                        for source in box.sources { source.cancel() }
                        continuation.resume(returning: number)
                    }
                    box.sources.append(source)
                    source.resume()
                }
            }
        }
    }

    /// The sources and whether the continuation resumed; touched only on the signal queue.
    private final class SourcesBox: @unchecked Sendable {
        // Safe without a lock: every access happens on the serial queue "apns.signals".
        var sources: [any DispatchSourceSignal] = []
        var resumed = false
    }
}
