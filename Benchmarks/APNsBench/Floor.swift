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
///
/// It is also a task executor: with `APNS_BENCH_EXECUTOR` set, the awaiting tasks run on
/// it (`withTaskExecutorPreference`), as senders on the transport's I/O thread do, and the
/// continuations it resumes queue their tasks' jobs for its next turn: the floor of the
/// `workers` way on the executor, with no thread switch.
final class FloorResumer: TaskExecutor, @unchecked Sendable {
    // Guarded by `mutex`; the thread sleeps on `condition` while both are empty/false.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var queued: [UnsafeContinuation<Void, Never>] = []
    private var queuedRequests: [FloorRequest] = []
    private var jobs: [UnownedJob] = []
    private var sleeping = false
    private var stopped = false

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    /// Queues `continuation` for the next turn, waking the thread if it sleeps.
    func enqueue(_ continuation: UnsafeContinuation<Void, Never>) {
        queue { $0.queued.append(continuation) }
    }

    /// Queues `request` (its continuation set) for the next turn.
    func enqueue(_ request: FloorRequest) {
        queue { $0.queuedRequests.append(request) }
    }

    /// Queues a task's job for the next turn (`TaskExecutor`).
    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        queue { $0.jobs.append(unowned) }
    }

    /// Runs `add` under the lock, then wakes the thread if it sleeps.
    private func queue(_ add: (FloorResumer) -> Void) {
        pthread_mutex_lock(mutex)
        add(self)
        let wake = sleeping
        sleeping = false
        pthread_mutex_unlock(mutex)
        if wake { pthread_cond_signal(condition) }
    }

    /// The thread's body: turns until ``stop()``.
    func run() {
        var turn: [UnsafeContinuation<Void, Never>] = []
        var requests: [FloorRequest] = []
        var turnJobs: [UnownedJob] = []
        let executor = asUnownedTaskExecutor()
        pthread_mutex_lock(mutex)
        while true {
            while queued.isEmpty, queuedRequests.isEmpty, jobs.isEmpty, !stopped {
                sleeping = true
                pthread_cond_wait(condition, mutex)
            }
            if queued.isEmpty, queuedRequests.isEmpty, jobs.isEmpty { break }
            swap(&turn, &queued)
            swap(&requests, &queuedRequests)
            swap(&turnJobs, &jobs)
            pthread_mutex_unlock(mutex)
            for job in turnJobs { job.runSynchronously(on: executor) }
            turnJobs.removeAll(keepingCapacity: true)
            for continuation in turn { continuation.resume() }
            turn.removeAll(keepingCapacity: true)
            for request in requests {
                // Read, as a transport reads its request to answer it.
                request.words[2] = request.parts.words[0] &+ request.more[0]
                let continuation = request.continuation
                request.continuation = nil
                continuation?.resume()
            }
            requests.removeAll(keepingCapacity: true)
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

/// What one awaited send keeps in memory besides its frames, in the `sdk` floor: about
/// the size of the SDK's request and pending request (two objects of 24 words).
final class FloorRequest: @unchecked Sendable {
    var words = SIMD16<UInt64>(repeating: 1)
    var more = SIMD8<UInt64>(repeating: 2)
    var continuation: UnsafeContinuation<Void, Never>?
    let parts: FloorParts
    init(_ index: Int) { parts = FloorParts(index); words[0] = UInt64(truncatingIfNeeded: index) }
}

/// The request's second object (its storage, in the SDK).
final class FloorParts: Sendable {
    let words: SIMD16<UInt64>
    let more: SIMD8<UInt64>
    init(_ index: Int) { words = SIMD16(repeating: UInt64(truncatingIfNeeded: index)); more = SIMD8(repeating: 3) }
}

/// Which parts of the SDK's await the `sdk` floor has (`APNS_BENCH_FLOOR=sdk` all of
/// them; `sdk-` followed by `nocancel`, `smallframes` or `norequest`, comma-separated,
/// leaves parts out, to measure what each costs).
struct FloorShape: Sendable {
    var cancellationHandler = true
    var largeFrames = true
    var request = true

    /// The shape `APNS_BENCH_FLOOR` names, or `nil` for the bare floor.
    init?(_ name: String?) {
        guard let name, name == "sdk" || name.hasPrefix("sdk-") else { return nil }
        for part in name.dropFirst(4).split(separator: ",") {
            switch part {
            case "nocancel": cancellationHandler = false
            case "smallframes": largeFrames = false
            case "norequest": request = false
            default: printError("floor: unknown part '\(part)' in APNS_BENCH_FLOOR")
            }
        }
    }
}

/// One await as the SDK's `send` makes it, with no transport: a frame of about 1,300
/// bytes (as `APNsClient.send`'s), an inner call's frame, a cancellation handler, and a
/// request of two objects that the resuming thread reads before it resumes the caller
/// (each part can be left out, see ``FloorShape``).
@inline(never)
func floorSDKSend(_ resumer: FloorResumer, _ index: Int, _ shape: FloorShape) async -> Int {
    guard shape.largeFrames else { return await floorSDKTransportSend(resumer, index, shape) }
    var first = SIMD64<UInt64>(repeating: 1), second = SIMD64<UInt64>(repeating: 2), third = SIMD32<UInt64>(repeating: 3)
    withUnsafeMutableBytes(of: &first) { floorTouch($0) }
    withUnsafeMutableBytes(of: &second) { floorTouch($0) }
    withUnsafeMutableBytes(of: &third) { floorTouch($0) }
    let answer = await floorSDKTransportSend(resumer, index, shape)
    withUnsafeMutableBytes(of: &first) { floorTouch($0) }
    withUnsafeMutableBytes(of: &second) { floorTouch($0) }
    withUnsafeMutableBytes(of: &third) { floorTouch($0) }
    return answer &+ Int(first[0] &+ second[0] &+ third[0])
}

/// The transport's part of ``floorSDKSend(_:_:_:)``: the cancellation handler around the
/// continuation, as `HTTP2Transport.send` has.
@inline(never)
func floorSDKTransportSend(_ resumer: FloorResumer, _ index: Int, _ shape: FloorShape) async -> Int {
    var words = SIMD32<UInt64>(repeating: 1)
    if shape.largeFrames { withUnsafeMutableBytes(of: &words) { floorTouch($0) } }
    let request = shape.request ? FloorRequest(index) : nil
    let wait = {
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
            if let request {
                request.continuation = continuation
                resumer.enqueue(request)
            } else {
                resumer.enqueue(continuation)
            }
        }
    }
    if shape.cancellationHandler {
        await withTaskCancellationHandler { await wait() } onCancel: { request?.words[1] = 0 }
    } else {
        await wait()
    }
    if shape.largeFrames { withUnsafeMutableBytes(of: &words) { floorTouch($0) } }
    guard let request else { return Int(words[1]) }
    return Int(request.words[0] &+ request.parts.more[1] &+ words[1])
}

/// `count` awaits from `tasks` tasks, each resumed by one `FloorResumer` thread; returns
/// how many completed (all of them). With `sdk`, each await is ``floorSDKSend(_:_:_:)``.
func runFloor(count: Int, tasks: Int, sdk: FloorShape? = nil, onResumer: Bool = false) async -> Int {
    let resumer = FloorResumer()
    guard resumer.start() else {
        printError("floor: could not start the resuming thread")
        return 0
    }
    defer { resumer.stop() }
    if onResumer {
        return await withTaskExecutorPreference(resumer) {
            await runFloorWorkers(count: count, tasks: tasks, sdk: sdk, resumer: resumer)
        }
    }
    return await runFloorWorkers(count: count, tasks: tasks, sdk: sdk, resumer: resumer)
}

/// The tasks of ``runFloor(count:tasks:sdk:onResumer:)``.
func runFloorWorkers(count: Int, tasks: Int, sdk: FloorShape?, resumer: FloorResumer) async -> Int {
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
                while true {
                    let index = next.take()
                    if index >= count { break }
                    if let sdk {
                        _ = await floorSDKSend(resumer, index, sdk)
                    } else {
                        await withUnsafeContinuation { resumer.enqueue($0) }
                    }
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

/// Writes to `bytes` so that the optimizer keeps the values in a frame.
@inline(never)
func floorTouch(_ bytes: UnsafeMutableRawBufferPointer) {
    if bytes.count == 7 { print(bytes[0]) }
    bytes[0] = 1
}

/// An awaited call whose async frame is about 350 bytes (32 words live across the await).
@inline(never)
func floorSmallFrame(_ resumer: FloorResumer) async -> Int {
    var words = SIMD32<UInt64>(repeating: 1)
    withUnsafeMutableBytes(of: &words) { floorTouch($0) }
    await withUnsafeContinuation { resumer.enqueue($0) }
    withUnsafeMutableBytes(of: &words) { floorTouch($0) }
    return Int(words[0])
}

/// The same with a frame of about 1,100 bytes: past the first slab of the task
/// allocator (984 bytes), which a task of its own then allocates with malloc.
@inline(never)
func floorLargeFrame(_ resumer: FloorResumer) async -> Int {
    var first = SIMD64<UInt64>(repeating: 1), second = SIMD64<UInt64>(repeating: 2)
    withUnsafeMutableBytes(of: &first) { floorTouch($0) }
    withUnsafeMutableBytes(of: &second) { floorTouch($0) }
    await withUnsafeContinuation { resumer.enqueue($0) }
    withUnsafeMutableBytes(of: &first) { floorTouch($0) }
    withUnsafeMutableBytes(of: &second) { floorTouch($0) }
    return Int(first[0] &+ second[0])
}

/// The `tasks` pattern with no SDK and no I/O (`APNS_BENCH_MODE=floortasks`): a child task
/// per await, `tasks` at a time, each awaiting a call whose frame is small (`largeFrame`
/// false) or past the task allocator's first slab; one other thread resumes them in turns.
/// The difference between the two is what a task of its own pays for the frames of an
/// awaited call that do not fit its first slab.
func runFloorTasks(count: Int, tasks: Int, largeFrame: Bool) async -> Int {
    let resumer = FloorResumer()
    guard resumer.start() else {
        printError("floor: could not start the resuming thread")
        return 0
    }
    defer { resumer.stop() }
    return await withTaskGroup(of: Bool.self) { group in
        var started = 0
        var done = 0
        func startOne() {
            group.addTask {
                _ = largeFrame ? await floorLargeFrame(resumer) : await floorSmallFrame(resumer)
                return true
            }
            started += 1
        }
        while started < min(max(1, tasks), count) { startOne() }
        while let finished = await group.next() {
            if finished { done += 1 }
            if started < count { startOne() }
        }
        return done
    }
}
