// ThreadSanitizer builds lock with TSanVisibleMutex instead, and cannot see the futex
// inside Synchronization.Mutex that this lock is built on.
#if !SWIFT_APNS_TSAN_LOCKS
import APNsCore
import Foundation
import Synchronization
import Testing
@testable import APNsTransport

#if canImport(Glibc)
import Glibc
#endif

/// The lock every module of the package uses (`Mutex` is ``YieldingMutex`` outside
/// ThreadSanitizer builds): mutual exclusion when more threads want it than the cores
/// they may run on, a try that fails while another thread holds it, a waiter that
/// outlasts its spins and yields, and errors out of the body.
@Suite(.blockingIO)
struct YieldingMutexTests {
    /// A counter whose increment is a read, some work and a write: without mutual
    /// exclusion, increments made by threads that interleave inside it are lost.
    final class Counter: @unchecked Sendable {
        let lock = YieldingMutex(0)
        /// The same count, kept outside the lock's value and touched only under the lock.
        var shadow = 0
    }

    @Test("more threads than processors: no increment is lost")
    func mutualExclusionBeyondProcessors() {
        let counter = Counter()
        // More threads than this machine's processors, so that holders are preempted.
        let threads = min(16, max(8, 2 * ProcessInfo.processInfo.activeProcessorCount)), increments = 10_000
        let done = DispatchSemaphore(value: 0)
        for index in 0..<threads {
            let started = OSThread.start(name: "apns-lock-\(index)") {
                for _ in 0..<increments {
                    counter.lock.withLock { value in
                        let seen = counter.shadow
                        // Work inside the lock, so that a thread is often preempted
                        // while it holds it and the others must wait.
                        var spin = 0
                        for step in 0..<64 { spin &+= step }
                        counter.shadow = seen + 1 + (spin == -1 ? 1 : 0)
                        value += 1
                    }
                }
                done.signal()
            }
            #expect(started)
        }
        for _ in 0..<threads {
            #expect(done.wait(timeout: .now() + 120) == .success)
        }
        #expect(counter.lock.withLock { $0 } == threads * increments)
        #expect(counter.lock.withLock { _ in counter.shadow } == threads * increments)
    }

    @Test("a try fails while another thread holds the lock, and succeeds after")
    func tryFailsWhileHeld() {
        let lock = YieldingMutex("free")
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        OSThread.start(name: "apns-lock-hold") {
            lock.withLock { value in
                value = "held"
                holding.signal()
                release.wait()
                value = "released"
            }
            finished.signal()
        }
        #expect(holding.wait(timeout: .now() + 10) == .success)
        #expect(lock.withLockIfAvailable { $0 } == nil)
        release.signal()
        #expect(finished.wait(timeout: .now() + 10) == .success)
        #expect(lock.withLockIfAvailable { $0 } == "released")
    }

    @Test("a waiter that outlasts its spins and yields gets the lock when it is given back")
    func waiterBeyondSpinsAndYields() {
        let lock = YieldingMutex([String]())
        let holding = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        OSThread.start(name: "apns-lock-hold") {
            lock.withLock { events in
                holding.signal()
                // Long enough for the waiter's 31 pauses and 64 yields several times over.
                usleep(200_000)
                events.append("holder done")
            }
            finished.signal()
        }
        #expect(holding.wait(timeout: .now() + 10) == .success)
        let seen = lock.withLock { events in
            events.append("waiter in")
            return events
        }
        #expect(seen == ["holder done", "waiter in"])
        #expect(finished.wait(timeout: .now() + 10) == .success)
    }

    struct Refused: Error, Equatable {}

    @Test("an error thrown in the body reaches the caller, and the lock is free after it")
    func errorLeavesLockFree() {
        let lock = YieldingMutex(1)
        #expect(throws: Refused.self) {
            try lock.withLock { (value: inout Int) throws(Refused) -> Int in
                value = 2
                throw Refused()
            }
        }
        #expect(lock.withLockIfAvailable { $0 } == 2)
    }
}
#endif
