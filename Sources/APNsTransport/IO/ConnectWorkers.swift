import COpenSSL
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// A few threads that open connections: name resolution, TCP connect, a proxy's CONNECT
/// and the TLS handshake all block (each with its deadline), so they run here rather than
/// on an ``EventLoop``, whose thread must never block.
///
/// A thread starts whenever an attempt finds no idle worker, up to ``maxThreads``, and
/// ends after ``idleLifetime`` without work, so a process holding a thousand open, idle
/// connections has none of them. The bound is high on purpose: an attempt that hangs
/// until its connect timeout (an endpoint that drops packets, a stuck proxy) holds its
/// worker, and must not hold up other pools' attempts; only beyond ``maxThreads``
/// attempts at once do they queue, and then run in order.
final class ConnectWorkers: Sendable {
    /// The workers every transport uses.
    static let shared = ConnectWorkers(maxThreads: 64, idleLifetime: .seconds(2))

    private struct State {
        var jobs = FIFOQueue<@Sendable () -> Void>()
        var threads = 0
        var idle = 0
    }

    /// The most threads opening connections at once.
    let maxThreads: Int
    /// How long a worker waits for work before it ends.
    let idleLifetime: Duration
    private let state = Mutex(State())
    /// Signalled when a job is queued.
    private let condition = ThreadCondition()

    init(maxThreads: Int, idleLifetime: Duration) {
        self.maxThreads = max(1, maxThreads)
        self.idleLifetime = idleLifetime
    }

    /// Runs `job` on a worker thread, soon.
    func run(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        let start = state.withLock { state -> Bool in
            state.jobs.append(job)
            if state.jobs.count > state.idle, state.threads < maxThreads {
                state.threads += 1
                return true
            }
            return false
        }
        condition.signal()
        condition.unlock()
        if start {
            let started = OSThread.start(name: "apns-connect") { [self] in
                capns_block_sigpipe_on_this_thread()
                self.work()
            }
            if !started { workWithoutThread() }
        }
    }

    /// How many worker threads exist now.
    var runningThreads: Int { state.withLock { $0.threads } }

    /// No thread could be started: give the count back, and if no worker is left to take
    /// the queued jobs, run them on the calling thread (slower, but none is lost).
    private func workWithoutThread() {
        condition.lock()
        let alone = state.withLock { state -> Bool in
            state.threads -= 1
            return state.threads == 0
        }
        condition.unlock()
        guard alone else { return }
        while let job = state.withLock({ $0.jobs.popFirst() }) { job() }
    }

    private func work() {
        while true {
            condition.lock()
            var job = state.withLock { $0.jobs.popFirst() }
            if job == nil {
                state.withLock { $0.idle += 1 }
                condition.wait(timeout: idleLifetime)
                job = state.withLock { state -> (@Sendable () -> Void)? in
                    state.idle -= 1
                    if let next = state.jobs.popFirst() { return next }
                    // Nothing came: end (decided under the lock, so `run` starts another
                    // thread for work queued after this).
                    state.threads -= 1
                    return nil
                }
                if job == nil {
                    condition.unlock()
                    return
                }
            }
            condition.unlock()
            job?()
        }
    }
}
