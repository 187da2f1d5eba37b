import Foundation
import Testing

/// Runs a suite's tests on threads of their own instead of the cooperative pool.
///
/// The tests of the TLS layer are synchronous: they connect, read and wait for outside
/// processes (`openssl s_server`, `tinyproxy`) with blocking calls, some for seconds. On
/// the cooperative pool, which has one thread per core (two here), such a test takes half
/// the pool for as long as it blocks, and every other test that waits for an outcome, with a
/// bound on how long it may take, waits for a thread too. Under this trait the test body,
/// and every child task it starts, runs on ``BlockingIOExecutor`` instead.
struct BlockingIOTrait: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        try await withTaskExecutorPreference(BlockingIOExecutor.shared) {
            try await function()
        }
    }
}

extension Trait where Self == BlockingIOTrait {
    /// The test (or every test of the suite) runs off the cooperative pool: see
    /// ``BlockingIOTrait``.
    static var blockingIO: Self { BlockingIOTrait() }
}

/// A task executor with a thread for every job that is ready while the others block: a
/// job never waits for a thread. Idle threads end after a few seconds.
final class BlockingIOExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: `jobs` and `idle` are only touched with `condition` locked.
    static let shared = BlockingIOExecutor()

    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var idle = 0

    /// Whether the calling thread is one of this executor's.
    static var isCurrent: Bool { Thread.current.threadDictionary["BlockingIOExecutor"] != nil }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        // Every idle thread may already be promised to an earlier job: start another
        // unless there are enough waiting for all the jobs.
        let spawn = jobs.count > idle
        if !spawn { condition.signal() }
        condition.unlock()
        if spawn {
            let thread = Thread { [self] in work() }
            thread.name = "blocking-io"
            thread.start()
        }
    }

    private func work() {
        Thread.current.threadDictionary["BlockingIOExecutor"] = true
        let executor = asUnownedTaskExecutor()
        condition.lock()
        while true {
            while jobs.isEmpty {
                idle += 1
                let signalled = condition.wait(until: Date().addingTimeInterval(5))
                idle -= 1
                if !signalled, jobs.isEmpty {
                    condition.unlock()
                    return
                }
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: executor)
            condition.lock()
        }
    }
}

@Suite("Blocking tests run off the cooperative pool", .blockingIO)
struct BlockingIOTraitTests {
    @Test("a synchronous test body runs on the executor's threads")
    func synchronousBody() {
        #expect(BlockingIOExecutor.isCurrent)
    }

    @Test("an asynchronous body and its child tasks stay there across suspensions")
    func asynchronousBody() async throws {
        try await Task.sleep(for: .milliseconds(1))
        #expect(BlockingIOExecutor.isCurrent)
        let children = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<4 { group.addTask { BlockingIOExecutor.isCurrent } }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(children == [true, true, true, true])
    }

    @Test("jobs that block do not hold back a job that is ready")
    func blockedJobsDoNotDelayOthers() async {
        // Eight children block their threads at once, four times the cores here, until
        // one more child has run: it must get a thread of its own while they block. The
        // check is what happened, not how soon (a whole parallel run on two cores can
        // start a thread late): had the ninth child waited for a blocked one's thread,
        // the eight would wait out their 20 s and report that nobody released them.
        let release = DispatchSemaphore(value: 0)
        let released = await withTaskGroup(of: Bool?.self) { group in
            for _ in 0..<8 { group.addTask { release.wait(timeout: .now() + 20) == .success } }
            group.addTask {
                for _ in 0..<8 { release.signal() }
                return nil
            }
            var released: [Bool] = []
            for await value in group { if let value { released.append(value) } }
            return released
        }
        #expect(released == Array(repeating: true, count: 8), "\(released)")
    }
}
