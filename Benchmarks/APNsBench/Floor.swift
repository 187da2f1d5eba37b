// The floor under one awaited send: `APNS_BENCH_MODE=floor` runs the `workers` pattern
// (CONC tasks, each awaiting its next "send" when the last one is resumed) with no SDK,
// no socket and no server. Each await queues its continuation for one OS thread, which,
// like the transport's event loop finishing the sends of a turn's answers, takes what is
// queued and resumes it all, then sleeps until more is queued. What it costs per await is
// what Swift concurrency and the scheduler alone charge for one `send` awaited from a
// task and answered on another thread: the part of the `workers` figure no transport can
// remove. Compare it with `workers` and `batch` in the same run.
#if canImport(Glibc)
import Glibc
#endif

/// The other thread: takes every queued continuation in one turn and resumes it.
final class FloorResumer: @unchecked Sendable {
    // Guarded by `mutex`; the thread sleeps on `condition` while both are empty/false.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var queued: [UnsafeContinuation<Void, Never>] = []
    private var sleeping = false
    private var stopped = false

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    /// Queues `continuation` for the next turn, waking the thread if it sleeps.
    func enqueue(_ continuation: UnsafeContinuation<Void, Never>) {
        pthread_mutex_lock(mutex)
        queued.append(continuation)
        let wake = sleeping
        sleeping = false
        pthread_mutex_unlock(mutex)
        if wake { pthread_cond_signal(condition) }
    }

    /// The thread's body: turns until ``stop()``.
    func run() {
        var turn: [UnsafeContinuation<Void, Never>] = []
        pthread_mutex_lock(mutex)
        while true {
            while queued.isEmpty, !stopped {
                sleeping = true
                pthread_cond_wait(condition, mutex)
            }
            if queued.isEmpty { break }
            swap(&turn, &queued)
            pthread_mutex_unlock(mutex)
            for continuation in turn { continuation.resume() }
            turn.removeAll(keepingCapacity: true)
            pthread_mutex_lock(mutex)
        }
        pthread_mutex_unlock(mutex)
    }

    /// Ends ``run()`` once nothing is queued.
    func stop() {
        pthread_mutex_lock(mutex)
        stopped = true
        pthread_mutex_unlock(mutex)
        pthread_cond_signal(condition)
    }

    /// Starts ``run()`` on a new detached thread; false if it could not.
    func start() -> Bool {
        let context = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { raw in
            let resumer = Unmanaged<FloorResumer>.fromOpaque(raw!).takeRetainedValue()
            resumer.run()
            return nil
        }, context)
        if result != 0 {
            Unmanaged<FloorResumer>.fromOpaque(context).release()
            return false
        }
        pthread_detach(thread)
        return true
    }
}

/// `count` awaits from `tasks` tasks, each resumed by one `FloorResumer` thread; returns
/// how many completed (all of them).
func runFloor(count: Int, tasks: Int) async -> Int {
    let resumer = FloorResumer()
    guard resumer.start() else {
        printError("floor: could not start the resuming thread")
        return 0
    }
    defer { resumer.stop() }
    final class NextIndex: @unchecked Sendable {
        private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        private var value = 0
        init() { pthread_mutex_init(mutex, nil) }
        func take() -> Int {
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            value += 1
            return value - 1
        }
    }
    let next = NextIndex()
    return await withTaskGroup(of: Int.self) { group in
        for _ in 0..<max(1, min(tasks, count)) {
            group.addTask {
                var done = 0
                while next.take() < count {
                    await withUnsafeContinuation { resumer.enqueue($0) }
                    done += 1
                }
                return done
            }
        }
        var total = 0
        for await done in group { total += done }
        return total
    }
}
