import Foundation
import Synchronization
import Testing
@testable import APNsTransport

#if canImport(Glibc)
import Glibc
#endif

/// A pair of connected UNIX stream sockets, closed at the end of the test.
private final class SocketPair {
    let a: Int32
    let b: Int32

    init() throws {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else {
            throw POSIXError(.EMFILE)
        }
        a = fds[0]
        b = fds[1]
        for fd in fds { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
    }

    func send(_ byte: UInt8 = 1) {
        var value = byte
        _ = write(b, &value, 1)
    }

    func drain() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(a, &buffer, buffer.count) > 0 {}
    }

    deinit {
        close(a)
        close(b)
    }
}

/// Counts the calls a loop makes and what they reported; drains its socket.
private final class CountingHandler: EventLoopHandler, @unchecked Sendable {
    let calls = Atomic<Int>(0)
    let readableCalls = Atomic<Int>(0)
    let writableCalls = Atomic<Int>(0)
    let pair: SocketPair?
    var onEvent: ((Bool, Bool) -> Void)?

    init(pair: SocketPair? = nil) { self.pair = pair }

    func handleEvent(readable: Bool, writable: Bool) {
        calls.add(1, ordering: .relaxed)
        if readable { readableCalls.add(1, ordering: .relaxed); pair?.drain() }
        if writable { writableCalls.add(1, ordering: .relaxed) }
        onEvent?(readable, writable)
    }
}

/// Waits (bounded: at least 20 s, in 1 ms steps) until `condition` holds.
private func eventually(_ condition: () -> Bool) async -> Bool {
    for _ in 0..<20_000 {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return condition()
}

@Suite("Event loop: the timer heap")
struct DeadlineHeapTests {
    @Test("entries come out in deadline order, only when due")
    func order() {
        var heap = DeadlineHeap()
        var generator = SystemRandomNumberGenerator()
        var pushed: [UInt64] = []
        for token in 0..<500 {
            let deadline = UInt64.random(in: 1...10_000, using: &generator)
            pushed.append(deadline)
            heap.push(deadline, UInt64(token))
        }
        #expect(heap.popDue(now: 0) == nil)
        var popped: [UInt64] = []
        while let (deadline, _) = heap.popDue(now: 5_000) { popped.append(deadline) }
        #expect(popped == pushed.filter { $0 <= 5_000 }.sorted())
        #expect(heap.count == pushed.filter { $0 > 5_000 }.count)
        #expect(heap.earliest == pushed.filter { $0 > 5_000 }.min())
    }
}

@Suite("Event loop: readiness (epoll and poll)")
struct IOPollerTests {
    @Test("a readable descriptor is reported by its token; write interest reports writability; removal stops reports",
          arguments: [IOPoller.Kind.epoll, .poll])
    func readiness(kind: IOPoller.Kind) throws {
        let poller = try #require(IOPoller(kind: kind))
        let first = try SocketPair()
        let second = try SocketPair()
        #expect(poller.add(first.a, token: 7, write: false))
        #expect(poller.add(second.a, token: 9, write: false))
        var ready: [IOPoller.Readiness] = []
        #expect(poller.wait(milliseconds: 0, into: &ready))
        #expect(ready.isEmpty)

        second.send()
        #expect(poller.wait(milliseconds: 1_000, into: &ready))
        #expect(ready.map(\.token) == [9])
        #expect(ready.first?.readable == true && ready.first?.writable == false)

        // Level-triggered: still readable until read.
        ready.removeAll()
        #expect(poller.wait(milliseconds: 0, into: &ready))
        #expect(ready.map(\.token) == [9])
        second.drain()

        // A socket with room in its send buffer is writable once asked for.
        poller.modify(first.a, token: 7, write: true)
        ready.removeAll()
        #expect(poller.wait(milliseconds: 1_000, into: &ready))
        #expect(ready.map(\.token) == [7])
        #expect(ready.first?.writable == true && ready.first?.readable == false)

        poller.remove(first.a, token: 7)
        ready.removeAll()
        #expect(poller.wait(milliseconds: 0, into: &ready))
        #expect(ready.isEmpty)

        // The peer closing counts as readable (the next read reports the end).
        poller.remove(second.a, token: 9)
        let third = try SocketPair()
        #expect(poller.add(third.a, token: 11, write: false))
        shutdown(third.b, Int32(SHUT_WR))
        ready.removeAll()
        #expect(poller.wait(milliseconds: 1_000, into: &ready))
        #expect(ready.map(\.token) == [11])
        #expect(ready.first?.readable == true)
    }
}

@Suite("Event loop: one thread drives many handlers")
struct EventLoopTests {
    @Test("wakes from other threads reach the handler; jobs run on the loop", arguments: [IOPoller.Kind.epoll, .poll])
    func wakeAndExecute(kind: IOPoller.Kind) async throws {
        let loop = try #require(EventLoop(name: "apns-io-test", poller: kind))
        let handler = CountingHandler()
        let token = loop.makeToken()
        let attached = Atomic<Bool>(false)
        loop.reserve()
        loop.execute {
            loop.attach(handler, as: token)
            attached.store(true, ordering: .releasing)
        }
        #expect(await eventually { attached.load(ordering: .acquiring) })
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask { for _ in 0..<100 { loop.wake(token) } }
            }
        }
        #expect(await eventually { handler.calls.load(ordering: .relaxed) == 400 })
        loop.execute { loop.detach(token) }
        #expect(await eventually { loop.load == 0 })
        loop.stop()
    }

    @Test("a deadline calls the handler once it passes; an earlier deadline replaces a later one; nil cancels")
    func deadlines() async throws {
        let loop = try #require(EventLoop(name: "apns-io-test"))
        let early = CountingHandler()
        let cancelled = CountingHandler()
        let earlyToken = loop.makeToken()
        let cancelledToken = loop.makeToken()
        let started = MonotonicTime.now()
        let firedAt = Mutex<UInt64>(0)
        early.onEvent = { _, _ in firedAt.withLock { $0 = MonotonicTime.now() } }
        loop.reserve()
        loop.reserve()
        loop.execute {
            loop.attach(early, as: earlyToken)
            loop.attach(cancelled, as: cancelledToken)
            let now = MonotonicTime.now()
            loop.setDeadline(earlyToken, at: now + 5_000_000_000)
            loop.setDeadline(earlyToken, at: now + 30_000_000)  // replaces the later one
            loop.setDeadline(earlyToken, at: now + 4_000_000_000)  // later: the earlier is kept
            loop.setDeadline(cancelledToken, at: now + 30_000_000)
            loop.setDeadline(cancelledToken, at: nil)
        }
        #expect(await eventually { early.calls.load(ordering: .relaxed) == 1 })
        #expect(firedAt.withLock { $0 } >= started + 30_000_000)
        try await Task.sleep(for: .milliseconds(100))
        #expect(early.calls.load(ordering: .relaxed) == 1)
        #expect(cancelled.calls.load(ordering: .relaxed) == 0)
        loop.execute { loop.detach(earlyToken); loop.detach(cancelledToken) }
        loop.stop()
    }

    @Test("100 sockets on one loop: each ready socket's handler is called, the others are not",
          arguments: [IOPoller.Kind.epoll, .poll])
    func manyDescriptors(kind: IOPoller.Kind) async throws {
        // Not more: other tests of this process spawn processes through Foundation, whose
        // select(2)-based child watcher breaks once descriptors pass FD_SETSIZE (1,024).
        let loop = try #require(EventLoop(name: "apns-io-test", poller: kind))
        var handlers: [CountingHandler] = []
        var tokens: [EventLoop.Token] = []
        for _ in 0..<100 {
            handlers.append(CountingHandler(pair: try SocketPair()))
            tokens.append(loop.makeToken())
        }
        let registered = Atomic<Int>(0)
        for (handler, token) in zip(handlers, tokens) {
            loop.reserve()
            loop.execute {
                loop.attach(handler, as: token)
                if loop.watch(handler.pair!.a, token: token) { registered.add(1, ordering: .relaxed) }
            }
        }
        #expect(await eventually { registered.load(ordering: .relaxed) == 100 })
        for index in stride(from: 0, to: 100, by: 2) { handlers[index].pair?.send() }
        #expect(await eventually { (0..<100).allSatisfy { $0 % 2 == 1 || handlers[$0].readableCalls.load(ordering: .relaxed) >= 1 } })
        #expect((0..<100).allSatisfy { $0 % 2 == 0 || handlers[$0].calls.load(ordering: .relaxed) == 0 })
        let detached = Atomic<Int>(0)
        for token in tokens {
            loop.execute {
                loop.unwatch(token)
                loop.detach(token)
                detached.add(1, ordering: .relaxed)
            }
        }
        #expect(await eventually { detached.load(ordering: .relaxed) == 100 })
        #expect(loop.load == 0)
        loop.stop()
    }

    /// Takes a loop from `group` for a new handler and attaches one there, as a
    /// connection does; returns the loop and the handler (kept by the caller).
    private static func attachHandler(to group: EventLoopGroup) throws -> (EventLoop, CountingHandler) {
        let loop = try #require(group.next())
        let token = loop.makeToken()
        let handler = CountingHandler()
        // Count it as attached at once (the loop thread attaches it soon).
        let done = DispatchSemaphore(value: 0)
        loop.execute {
            loop.attach(handler, as: token)
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 5) == .success)
        return (loop, handler)
    }

    @Test("a group starts no more loop threads than it was given, and spreads handlers over them")
    func groupBound() throws {
        let group = EventLoopGroup(threads: 3)
        var loops: [ObjectIdentifier: Int] = [:]
        var handlers: [CountingHandler] = []
        for _ in 0..<30 {
            let (loop, handler) = try Self.attachHandler(to: group)
            handlers.append(handler)
            loops[ObjectIdentifier(loop), default: 0] += 1
        }
        #expect(group.runningThreads == 3)
        #expect(loops.count == 3)
        #expect(loops.values.allSatisfy { $0 == 10 })
        group.stop()
    }

    @Test("a group follows a limit that rises while it runs (a quota grown in place); a lower one stops no loop")
    func groupFollowsItsLimit() throws {
        let limit = Atomic<Int>(1)
        let group = EventLoopGroup(threadLimit: { limit.load(ordering: .relaxed) })
        var handlers: [CountingHandler] = []
        var perLoop: [ObjectIdentifier: Int] = [:]
        func attach(_ count: Int) throws {
            for _ in 0..<count {
                let (loop, handler) = try Self.attachHandler(to: group)
                handlers.append(handler)
                perLoop[ObjectIdentifier(loop), default: 0] += 1
            }
        }
        try attach(4)
        #expect(group.runningThreads == 1)
        limit.store(3, ordering: .relaxed)
        try attach(4)
        #expect(group.runningThreads == 3)
        limit.store(1, ordering: .relaxed)
        try attach(6)
        #expect(group.runningThreads == 3)
        // The loops that run keep taking new handlers, the least loaded first: 14 over 3.
        #expect(perLoop.count == 3)
        #expect(perLoop.values.sorted() == [4, 5, 5])
        group.stop()
    }
}

@Suite("Event loop: how many")
struct EventLoopCountTests {
    @Test("APNS_IO_THREADS names the number of loops when it is 1...64; otherwise one per usable processor, at least two")
    func configured() {
        let cores = max(2, UsableProcessors.current())
        #expect(EventLoopGroup.configuredThreads([:]) == cores)
        #expect(EventLoopGroup.configuredThreads(["APNS_IO_THREADS": "8"]) == 8)
        #expect(EventLoopGroup.configuredThreads(["APNS_IO_THREADS": "1"]) == 1)
        #expect(EventLoopGroup.configuredThreads(["APNS_IO_THREADS": "0"]) == cores)
        #expect(EventLoopGroup.configuredThreads(["APNS_IO_THREADS": "65"]) == cores)
        #expect(EventLoopGroup.configuredThreads(["APNS_IO_THREADS": "many"]) == cores)
    }
}

@Suite("Connection workers")
struct ConnectWorkersTests {
    @Test("jobs all run, at most maxThreads at once, and the threads end once idle")
    func boundedAndTransient() async throws {
        let workers = ConnectWorkers(maxThreads: 3, idleLifetime: .milliseconds(100))
        let running = Atomic<Int>(0)
        let peak = Atomic<Int>(0)
        let finished = Atomic<Int>(0)
        for _ in 0..<30 {
            workers.run {
                let now = running.add(1, ordering: .relaxed).newValue
                var seen = peak.load(ordering: .relaxed)
                while now > seen {
                    let (exchanged, original) = peak.compareExchange(expected: seen, desired: now, ordering: .relaxed)
                    if exchanged { break }
                    seen = original
                }
                // 50 ms each: one thread alone would take 1.5 s for the thirty, so a
                // second thread that a loaded machine starts late still overlaps it.
                usleep(50_000)
                running.subtract(1, ordering: .relaxed)
                finished.add(1, ordering: .relaxed)
            }
        }
        #expect(await eventually { finished.load(ordering: .relaxed) == 30 })
        #expect(peak.load(ordering: .relaxed) <= 3)
        #expect(peak.load(ordering: .relaxed) >= 2)
        #expect(await eventually { workers.runningThreads == 0 })
        // Work after the threads ended starts a thread again.
        let again = Atomic<Bool>(false)
        workers.run { again.store(true, ordering: .relaxed) }
        #expect(await eventually { again.load(ordering: .relaxed) })
    }
}
