import APNsCore
import COpenSSL
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What an ``EventLoop`` drives: a connection. All of a handler's calls come from its
/// loop's thread, one at a time.
protocol EventLoopHandler: AnyObject {
    /// Its descriptor is ready (`readable`, `writable`), it was woken (``EventLoop/wake(_:)``),
    /// or its deadline (``EventLoop/setDeadline(_:at:)``) passed: both flags are `false`
    /// then. The handler works out what to do from its own state, so an extra call is
    /// harmless.
    func handleEvent(readable: Bool, writable: Bool)
}

/// One I/O thread that drives many connections: it waits on one ``IOPoller`` for all
/// their descriptors, a wake-up descriptor and the earliest of their deadlines, then calls
/// each handler that is ready, woken or due. This is how a transport holds a thousand
/// connections with a thread per core rather than a thread per connection (SwiftNIO's
/// event loops work the same way).
///
/// The loop is also a `TaskExecutor` (SE-0417): a task that prefers it runs its
/// nonisolated code on the loop's thread, between the loop's turns. A send from such a
/// task to a connection of the same loop is queued, written, answered and resumed on
/// one thread, with no other thread woken (see ``HTTP2Transport/taskExecutor``).
///
/// Thread safety (why `@unchecked Sendable` is sound): ``execute(_:)``, ``wake(_:)`` and
/// ``enqueue(_:)`` may be called from any thread and go through ``inbox`` (a `Mutex`) and
/// the wake-up descriptor (``enqueue(_:)`` on the loop's own thread appends to
/// ``localTasks``, which only that thread touches); everything else (``attach(_:as:)``,
/// ``watch(_:token:)``, the handler table, the poller and the timer heap) is touched only
/// on the loop's own thread, which the methods document and check in debug builds.
final class EventLoop: TaskExecutor, @unchecked Sendable {
    /// A registration's handle, chosen by the loop; never reused.
    typealias Token = UInt64

    private struct Inbox {
        var jobs: [@Sendable () -> Void] = []
        var woken: [Token] = []
        /// Jobs of tasks that prefer this loop as their executor, from other threads.
        var tasks: [UnownedJob] = []
        /// The loop's thread has ended: a task job runs on a thread of its own.
        var stopped = false
        /// The loop is (about to be) blocked in the poller: a new item must signal it.
        var sleeping = false
    }

    private struct Entry {
        let handler: any EventLoopHandler
        var fd: Int32 = -1
        var write = false
        var deadline: UInt64?
    }

    /// A name for logs and the thread (`apns-io-N`).
    let name: String
    private let inbox = Mutex(Inbox())
    private let wakeup: WakeupSignal
    /// Handlers attached to this loop (any thread may read it, to balance new connections).
    private let attachedCount = Atomic<Int>(0)
    /// The last token handed out (0 is the wake-up descriptor's).
    private let tokenCounter = Atomic<UInt64>(0)
    /// The loop thread's ``OSThread/currentID()`` (0 until it runs): a task job enqueued
    /// on that thread skips the inbox.
    private let threadID = Atomic<UInt>(0)

    // MARK: Loop thread only
    private let poller: IOPoller
    private var entries: [Token: Entry] = [:]
    private var timers = DeadlineHeap()
    private var ready: [IOPoller.Readiness] = []
    private var jobs: [@Sendable () -> Void] = []
    private var running = true
    private var woken: [Token] = []
    private var tasks: [UnownedJob] = []
    /// Task jobs enqueued on the loop's own thread (a continuation the loop resumed, for
    /// a task that prefers the loop): run at the start of the next turn.
    private var localTasks: [UnownedJob] = []
    private var runningTasks: [UnownedJob] = []
    /// Scratch space for reads, shared by every connection of the loop (one read at a
    /// time); freed when the loop's thread ends.
    let readBuffer: UnsafeMutableRawBufferPointer

    /// The token the wake-up descriptor is registered with.
    private static let wakeupToken: Token = 0

    /// Creates the loop and starts its thread; `nil` when the system has no descriptors left.
    init?(name: String, poller kind: IOPoller.Kind = .platformDefault) {
        guard let poller = IOPoller(kind: kind) else { return nil }
        let wakeup = WakeupSignal()
        guard wakeup.isValid, poller.add(wakeup.readDescriptor, token: Self.wakeupToken, write: false) else { return nil }
        self.name = name
        self.poller = poller
        self.wakeup = wakeup
        self.readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
        let started = OSThread.start(name: name) { [self] in
            // A peer that closes mid-write must fail the write with EPIPE, not end the process.
            capns_block_sigpipe_on_this_thread()
            self.run()
        }
        guard started else {
            readBuffer.deallocate()
            return nil
        }
    }

    /// How many handlers were assigned to this loop and not yet detached.
    var load: Int { attachedCount.load(ordering: .relaxed) }

    /// Counts a handler the group assigned to this loop (before it attaches, so that
    /// handlers made at the same moment spread over the loops). Any thread.
    func reserve() {
        attachedCount.add(1, ordering: .relaxed)
    }

    // MARK: Any thread

    /// Runs `job` on the loop's thread, soon (in the order submitted).
    func execute(_ job: @escaping @Sendable () -> Void) {
        let signal = inbox.withLock { inbox -> Bool in
            inbox.jobs.append(job)
            defer { inbox.sleeping = false }
            return inbox.sleeping
        }
        if signal { wakeup.signal() }
    }

    /// Runs `job` on the loop's thread, soon: the job of a task that prefers this loop as
    /// its executor (`withTaskExecutorPreference`). Any thread; on the loop's own thread
    /// (the loop resumed the task) it costs no lock and wakes nothing.
    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        if threadID.load(ordering: .relaxed) == OSThread.currentID() {
            localTasks.append(job)
            return
        }
        let (signal, stopped) = inbox.withLock { inbox -> (Bool, Bool) in
            if inbox.stopped { return (false, true) }
            inbox.tasks.append(job)
            defer { inbox.sleeping = false }
            return (inbox.sleeping, false)
        }
        if stopped {
            Self.runLate([job], on: asUnownedTaskExecutor())
        } else if signal {
            wakeup.signal()
        }
    }

    /// Whether the loop's thread has ended (after ``stop()``).
    var hasStopped: Bool { inbox.withLock { $0.stopped } }

    /// How many task jobs from other threads wait for the loop's next turn (for tests).
    var queuedTasks: Int { inbox.withLock { $0.tasks.count } }

    /// Runs task jobs that reach a loop whose thread has ended (only a group a test made
    /// stops its loops) on a thread of their own, so that no task waits forever.
    private static func runLate(_ jobs: [UnownedJob], on executor: UnownedTaskExecutor) {
        guard !jobs.isEmpty else { return }
        struct Late: @unchecked Sendable {
            let jobs: [UnownedJob]
            let executor: UnownedTaskExecutor
        }
        let late = Late(jobs: jobs, executor: executor)
        OSThread.start(name: "apns-late-task") {
            for job in late.jobs { job.runSynchronously(on: late.executor) }
        }
    }

    /// Calls the handler registered as `token` soon, on the loop's thread. Callers
    /// coalesce (a handler woken twice before it runs needs one call): see
    /// ``HTTP2Connection/wake()``.
    func wake(_ token: Token) {
        let signal = inbox.withLock { inbox -> Bool in
            inbox.woken.append(token)
            defer { inbox.sleeping = false }
            return inbox.sleeping
        }
        if signal { wakeup.signal() }
    }

    // MARK: Loop thread only

    /// A new token for a handler about to be attached (any thread).
    func makeToken() -> Token {
        tokenCounter.wrappingAdd(1, ordering: .relaxed).newValue
    }

    /// Registers `handler` as `token` (from ``makeToken()``; no descriptor yet). Wakes for
    /// `token` that arrive before this are dropped: call the handler once after attaching.
    func attach(_ handler: any EventLoopHandler, as token: Token) {
        entries[token] = Entry(handler: handler)
    }

    /// Unregisters `token` (and stops watching its descriptor); no further calls. Ends
    /// the handler's place in ``load``.
    func detach(_ token: Token) {
        guard let entry = entries.removeValue(forKey: token) else { return }
        if entry.fd >= 0 { poller.remove(entry.fd, token: token) }
        release()
    }

    /// Ends a place counted by ``reserve()`` (``detach(_:)`` does it for attached handlers).
    func release() {
        attachedCount.subtract(1, ordering: .relaxed)
    }

    /// Watches `fd` for `token`'s handler (readability; writability per ``setWriteInterest(_:_:)``).
    /// - Returns: `false` when the system refuses.
    func watch(_ fd: Int32, token: Token) -> Bool {
        guard var entry = entries[token] else { return false }
        if entry.fd >= 0 { poller.remove(entry.fd, token: token) }
        entry.fd = -1
        entry.write = false
        guard poller.add(fd, token: token, write: false) else {
            entries[token] = entry
            return false
        }
        entry.fd = fd
        entries[token] = entry
        return true
    }

    /// Stops watching `token`'s descriptor (call before closing it).
    func unwatch(_ token: Token) {
        guard var entry = entries[token], entry.fd >= 0 else { return }
        poller.remove(entry.fd, token: token)
        entry.fd = -1
        entry.write = false
        entries[token] = entry
    }

    /// Whether `token`'s descriptor is also watched for writability.
    func setWriteInterest(_ token: Token, _ write: Bool) {
        guard let entry = entries[token], entry.fd >= 0, entry.write != write else { return }
        entries[token]?.write = write
        poller.modify(entry.fd, token: token, write: write)
    }

    /// Calls `token`'s handler no later than `deadline` (``MonotonicTime``); `nil` cancels.
    /// A deadline already set that comes earlier is kept: the handler is called then and
    /// sets its next one (an early call is harmless, and the heap stays small).
    func setDeadline(_ token: Token, at deadline: UInt64?) {
        guard let entry = entries[token] else { return }
        guard let deadline else {
            entries[token]?.deadline = nil
            return
        }
        if let current = entry.deadline, current <= deadline { return }
        entries[token]?.deadline = deadline
        timers.push(deadline, token)
    }

    /// Ends the loop's thread once the jobs queued before this have run (for loops that
    /// are not the shared group's, which live as long as the process). Handlers still
    /// attached are no longer called.
    func stop() {
        execute { [self] in running = false }
    }

    // MARK: The loop

    private func run() {
        threadID.store(OSThread.currentID(), ordering: .relaxed)
        defer {
            // Thread ids are reused: no later thread may pass for this one.
            threadID.store(0, ordering: .relaxed)
            entries.removeAll()
            readBuffer.deallocate()
            let queued = inbox.withLock { inbox -> [UnownedJob] in
                inbox.stopped = true
                defer { inbox.tasks = [] }
                return inbox.tasks
            }
            // Task jobs taken from the inbox in the turn that stopped the loop, queued
            // by this thread, or queued since: none may be dropped.
            Self.runLate(tasks + localTasks + queued, on: asUnownedTaskExecutor())
            tasks = []
            localTasks = []
        }
        while running {
            runJobsAndWakes()
            guard running else { return }
            let now = MonotonicTime.now()
            runDueTimers(now: now)
            var timeout: Int32 = -1
            if let next = timers.earliest {
                let now = MonotonicTime.now()
                timeout = next <= now ? 0 : Int32(clamping: (next - now + 999_999) / 1_000_000)
            }
            let hasLocalTasks = !localTasks.isEmpty
            let sleeping = inbox.withLock { inbox -> Bool in
                if inbox.jobs.isEmpty, inbox.woken.isEmpty, inbox.tasks.isEmpty, !hasLocalTasks {
                    inbox.sleeping = true
                    return true
                }
                return false
            }
            ready.removeAll(keepingCapacity: true)
            _ = poller.wait(milliseconds: sleeping ? timeout : 0, into: &ready)
            if sleeping { inbox.withLock { $0.sleeping = false } }
            if sleeping, ready.count == 1, ready[0].token == Self.wakeupToken {
                // Only another thread woke the loop (it queued a request). Those threads
                // usually have more to queue: let them run first, so that one turn of the
                // loop writes many requests instead of one per wake (on a shared core,
                // the woken loop would otherwise preempt them after every request).
                // With a core to itself, nothing else is runnable and this returns at once.
                sched_yield()
            }
            for event in ready {
                if event.token == Self.wakeupToken {
                    wakeup.drain()
                    continue
                }
                // Looked up per event: an earlier handler of this batch may have detached it.
                guard let entry = entries[event.token], entry.fd >= 0 else { continue }
                entry.handler.handleEvent(readable: event.readable, writable: event.writable)
            }
        }
    }

    /// Runs the queued jobs, then the tasks' jobs, then calls the woken handlers: a task
    /// that sends queues its request and wakes its connection, which then writes it in
    /// the same turn.
    private func runJobsAndWakes() {
        inbox.withLock { inbox in
            if inbox.jobs.isEmpty, inbox.woken.isEmpty, inbox.tasks.isEmpty { return }
            swap(&jobs, &inbox.jobs)
            swap(&woken, &inbox.woken)
            swap(&tasks, &inbox.tasks)
        }
        for job in jobs { job() }
        jobs.removeAll(keepingCapacity: true)
        guard running else { return }
        if runTasks() {
            // The connections those tasks woke, in this turn (a second lock only then).
            inbox.withLock { inbox in
                woken.append(contentsOf: inbox.woken)
                inbox.woken.removeAll(keepingCapacity: true)
            }
        }
        for token in woken {
            entries[token]?.handler.handleEvent(readable: false, writable: false)
        }
        woken.removeAll(keepingCapacity: true)
    }

    /// Runs the task jobs queued so far: from other threads first, then the loop's own
    /// (those a job queues now run in the next turn).
    ///
    /// - Returns: Whether any ran.
    private func runTasks() -> Bool {
        guard !tasks.isEmpty || !localTasks.isEmpty else { return false }
        let executor = asUnownedTaskExecutor()
        for job in tasks { job.runSynchronously(on: executor) }
        tasks.removeAll(keepingCapacity: true)
        swap(&runningTasks, &localTasks)
        for job in runningTasks { job.runSynchronously(on: executor) }
        runningTasks.removeAll(keepingCapacity: true)
        return true
    }

    private func runDueTimers(now: UInt64) {
        while let (deadline, token) = timers.popDue(now: now) {
            // Stale entries (the handler set another deadline, or detached) are skipped.
            guard let entry = entries[token], entry.deadline == deadline else { continue }
            entries[token]?.deadline = nil
            entry.handler.handleEvent(readable: false, writable: false)
        }
    }
}

/// The process's I/O threads: one ``EventLoop`` per processor the process may use,
/// started on first use and kept for the life of the process (like SwiftNIO's singleton
/// group). Every transport's connections are spread over them; a new connection goes to
/// the least loaded loop.
final class EventLoopGroup: Sendable {
    /// The group every transport uses: one loop per processor the process may use
    /// (``UsableProcessors``: affinity mask and CPU quota included) and at least two, or
    /// `APNS_IO_THREADS` loops (1 to 64) when that environment variable is set (for a
    /// process whose cores are shared with much other work, such as a test run with many
    /// servers in-process).
    ///
    /// The number is asked for again whenever a new loop may be needed (a connection opens
    /// while every loop serves one), so a process whose CPU quota or affinity grows while
    /// it runs (a container resized in place) gets loops for the new processors; loops
    /// already started stay when it shrinks.
    static let shared: EventLoopGroup = {
        let environment = ProcessInfo.processInfo.environment
        return EventLoopGroup(threadLimit: { configuredThreads(environment) })
    }()

    /// The least number of loops the group has by default. With one usable processor, a
    /// lone I/O thread is preempted by the executor's worker each time it resumes a
    /// sending task and the worker was asleep (the kernel favours the woken thread): about
    /// one notification in five; a second loop keeps the threads in long turns instead.
    /// Measured (`Benchmarks/README.md`, session 22): 4,000 tasks over 4 connections, the
    /// process on one core, 6.0–6.3 µs of CPU per notification with one loop and
    /// 4.7–5.2 with two; the batch the same with either. Loops start only as connections
    /// need them, so a process with one connection still runs one.
    static let minimumDefaultThreads = 2

    /// The number of loops for `environment`: `APNS_IO_THREADS` if it is a number in
    /// 1...64, else `usable` (by default the processors this process may use now), at
    /// least ``minimumDefaultThreads``.
    static func configuredThreads(_ environment: [String: String], usable: () -> Int = UsableProcessors.current) -> Int {
        if let text = environment["APNS_IO_THREADS"], let value = Int(text), (1...64).contains(value) {
            return value
        }
        return max(minimumDefaultThreads, usable())
    }

    /// How many loops the group may run now (read when a new loop may be needed).
    private let threadLimit: @Sendable () -> Int
    private let loops = Mutex<[EventLoop]>([])
    private let nextIndex = Atomic<Int>(0)

    /// A group of `threads` loops (at least 1), started lazily.
    convenience init(threads: Int, poller kind: IOPoller.Kind = .platformDefault) {
        let fixed = max(1, threads)
        self.init(threadLimit: { fixed }, poller: kind)
    }

    /// A group of at most `threadLimit()` loops (at least 1), started lazily; the limit is
    /// asked for each time a new loop may be needed, and a lower one stops no loop.
    init(threadLimit: @escaping @Sendable () -> Int, poller kind: IOPoller.Kind = .platformDefault) {
        self.threadLimit = threadLimit
        self.kind = kind
    }

    private let kind: IOPoller.Kind

    /// The loop for a new handler, counted in its ``EventLoop/load`` until it detaches:
    /// the least loaded, ties broken in turn; `nil` only when the system has no
    /// descriptors for a loop at all. The handler must attach and later detach (or the
    /// caller must call ``EventLoop/release()``).
    func next() -> EventLoop? {
        // A new loop only when none runs or every loop serves something; only then is the
        // limit asked for (for the shared group it reads the kernel's files), outside the lock.
        let mayGrow = loops.withLock { $0.isEmpty || $0.allSatisfy { $0.load > 0 } }
        let limit = mayGrow ? max(1, threadLimit()) : 0
        return loops.withLock { loops -> EventLoop? in
            if loops.count < limit {
                // Start loops as connections need them, up to one per usable processor.
                if loops.isEmpty || loops.allSatisfy({ $0.load > 0 }),
                   let loop = EventLoop(name: "apns-io-\(loops.count)", poller: kind) {
                    loops.append(loop)
                    loop.reserve()
                    return loop
                }
            }
            guard !loops.isEmpty else { return nil }
            let start = nextIndex.add(1, ordering: .relaxed).newValue
            var best = loops[start % loops.count]
            for offset in 1..<max(loops.count, 1) {
                let candidate = loops[(start + offset) % loops.count]
                if candidate.load < best.load { best = candidate }
            }
            best.reserve()
            return best
        }
    }

    /// How many loop threads run now.
    var runningThreads: Int { loops.withLock { $0.count } }

    /// Stops every loop of the group (not for ``shared``, whose loops live as long as the
    /// process); for groups a test makes.
    func stop() {
        for loop in loops.withLock({ $0 }) { loop.stop() }
    }
}

/// A min-heap of (deadline, token): the loop's timers. Entries are never removed except
/// when due; the loop skips those that no longer match their handler's deadline.
struct DeadlineHeap {
    private var items: [(deadline: UInt64, token: UInt64)] = []

    /// The earliest deadline, stale or not.
    var earliest: UInt64? { items.first?.deadline }

    /// How many entries (stale ones included) the heap holds.
    var count: Int { items.count }

    mutating func push(_ deadline: UInt64, _ token: UInt64) {
        items.append((deadline, token))
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[child].deadline < items[parent].deadline else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns the earliest entry if it is due at `now`.
    mutating func popDue(now: UInt64) -> (UInt64, UInt64)? {
        guard let first = items.first, first.deadline <= now else { return nil }
        let last = items.removeLast()
        if !items.isEmpty {
            items[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1
                let right = left + 1
                var smallest = parent
                if left < items.count, items[left].deadline < items[smallest].deadline { smallest = left }
                if right < items.count, items[right].deadline < items[smallest].deadline { smallest = right }
                if smallest == parent { break }
                items.swapAt(parent, smallest)
                parent = smallest
            }
        }
        return first
    }
}
