import Foundation
import Logging
import Synchronization
import Testing
@testable import APNsTransport

/// The loop's thread, as `OSThread.currentID()` reports it there.
private func threadID(of loop: EventLoop) async -> UInt {
    await withCheckedContinuation { continuation in
        loop.execute { continuation.resume(returning: OSThread.currentID()) }
    }
}

/// The calling thread's name (Linux: /proc/thread-self/comm), or `nil`.
private func currentThreadName() -> String? {
    #if os(Linux)
    guard let text = try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8) else { return nil }
    return text.trimmingCharacters(in: .whitespacesAndNewlines)
    #else
    return nil
    #endif
}

/// Holds a loop's thread in one job until released (at most 5 s).
private final class Gate: Sendable {
    private let held = Atomic<Bool>(false)
    private let released = Atomic<Bool>(false)

    var isHeld: Bool { held.load(ordering: .acquiring) }

    /// Holds until ``release()``, or 60 s at most (so a failing test cannot hang a loop).
    func hold() {
        held.store(true, ordering: .releasing)
        let deadline = ContinuousClock.now + .seconds(60)
        while !released.load(ordering: .acquiring), ContinuousClock.now < deadline {
            usleep(1_000)
        }
    }

    func release() { released.store(true, ordering: .releasing) }
}

/// A counter tasks share.
private final class Counter: Sendable {
    private let value = Atomic<Int>(0)
    func add() { value.add(1, ordering: .relaxed) }
    var count: Int { value.load(ordering: .relaxed) }
}

/// Runs `operation` in a task of its own and waits for its result at most 10 s: `nil`
/// if it has not finished by then (a job the loop never ran), so that a broken executor
/// fails the test instead of hanging it.
private func bounded<T: Sendable>(_ operation: @escaping @Sendable () async -> T) async -> T? {
    let slot = ResultSlot<T>()
    Task { slot.set(await operation()) }
    for _ in 0..<10_000 {
        if let value = slot.value { return value }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return slot.value
}

/// Where ``bounded(_:)``'s task leaves its result.
private final class ResultSlot<T: Sendable>: Sendable {
    private let stored = Mutex<T?>(nil)
    func set(_ value: T) { stored.withLock { $0 = value } }
    var value: T? { stored.withLock { $0 } }
}

/// Waits (bounded: up to `seconds`, 30 by default) until `condition` holds.
private func eventually(seconds: Double = 30, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return condition()
}

@Suite("Event loop as a task executor", .timeLimit(.minutes(1)))
struct LoopTaskExecutorTests {
    @Test("a task that prefers a loop runs on its thread, and comes back to it after the loop resumes it")
    func runsOnTheLoop() async throws {
        let loop = try #require(EventLoop(name: "apns-io-test"))
        defer { loop.stop() }
        let loopThread = await threadID(of: loop)
        let seen = await bounded { await withTaskExecutorPreference(loop) { () async -> [UInt] in
            var threads = [OSThread.currentID()]
            for _ in 0..<3 {
                // As the transport finishes a send: the loop's thread resumes the task.
                await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                    loop.execute { continuation.resume() }
                }
                threads.append(OSThread.currentID())
            }
            return threads
        } }
        #expect(seen == Array(repeating: loopThread, count: 4))
        #expect(OSThread.currentID() != loopThread)
    }

    @Test("100 tasks, each resumed 50 times by the loop's thread: every step runs there, in every task")
    func manyTasks() async throws {
        let loop = try #require(EventLoop(name: "apns-io-test"))
        defer { loop.stop() }
        let loopThread = await threadID(of: loop)
        let elsewhere = Counter()
        let steps = Counter()
        _ = await bounded { await withTaskExecutorPreference(loop) {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<100 {
                    group.addTask {
                        for _ in 0..<50 {
                            await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                                loop.execute { continuation.resume() }
                            }
                            if OSThread.currentID() != loopThread { elsewhere.add() }
                            steps.add()
                        }
                    }
                }
            }
        } }
        #expect(steps.count == 5_000)
        #expect(elsewhere.count == 0)
    }

    @Test("a task resumed from another thread is queued for the loop and runs there")
    func resumedFromElsewhere() async throws {
        let loop = try #require(EventLoop(name: "apns-io-test"))
        defer { loop.stop() }
        let loopThread = await threadID(of: loop)
        let seen = await bounded { await withTaskExecutorPreference(loop) { () async -> UInt in
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                OSThread.start(name: "apns-test-resume") { continuation.resume() }
            }
            return OSThread.currentID()
        } }
        #expect(seen == loopThread)
    }

    @Test("a task queued in the same turn as the loop's stop still runs")
    func queuedInTheStoppingTurn() async throws {
        let loop = try #require(EventLoop(name: "apns-io-test"))
        let gate = Gate()
        loop.execute { gate.hold() }
        #expect(await eventually(seconds: 30) { gate.isHeld })
        let slot = ResultSlot<Int>()
        Task { slot.set(await withTaskExecutorPreference(loop) { () async -> Int in 42 }) }
        // A loaded machine (the whole suite in parallel) may take a while to start the task.
        #expect(await eventually(seconds: 30) { loop.queuedTasks == 1 })
        loop.stop()
        gate.release()  // the next turn takes the stop job and the task together
        #expect(await eventually(seconds: 30) { slot.value == 42 })
        #expect(await eventually { loop.hasStopped })
    }

    @Test("a loop whose thread has ended still runs the tasks that prefer it (on a thread of their own)")
    func stoppedLoop() async throws {
        let loop = try #require(EventLoop(name: "apns-io-test"))
        let loopThread = await threadID(of: loop)
        loop.stop()
        #expect(await eventually { loop.hasStopped })
        let answer = await bounded { await withTaskExecutorPreference(loop) { () async -> String in
            currentThreadName() ?? "?"
        } }
        #expect(answer != nil)
        #if os(Linux)
        // Thread ids are reused, so the name tells the threads apart.
        #expect(answer == "apns-late-task")
        #endif
        _ = loopThread
    }
}

@Suite("A transport's home thread")
struct ConnectionThreadsTests {
    @Test("two transports' homes go to different loops; a home counts in its loop's load until the transport is gone")
    func homesSpread() throws {
        let group = EventLoopGroup(threads: 2)
        defer { group.stop() }
        var first: ConnectionThreads? = ConnectionThreads(group: group, placement: .taskExecutorThread)
        let second = ConnectionThreads(group: group, placement: .taskExecutorThread)
        let firstHome = try #require(first?.homeLoop())
        let secondHome = try #require(second.homeLoop())
        #expect(firstHome !== secondHome)
        #expect(first?.homeLoop() === firstHome)
        #expect(firstHome.load == 1)
        // Every connection of a transport with `.taskExecutorThread` goes home.
        let connectionLoop = try #require(first?.loopForNewConnection())
        #expect(connectionLoop === firstHome)
        #expect(firstHome.load == 2)
        connectionLoop.release()
        first = nil
        #expect(firstHome.load == 0)
        #expect(secondHome.load == 1)
    }

    @Test("spread: the first connection goes home; a second goes home only once the first has ended")
    func firstConnectionGoesHome() throws {
        let group = EventLoopGroup(threads: 3)
        defer { group.stop() }
        let other = ConnectionThreads(group: group, placement: .spread)
        let busy = try #require(other.loopForNewConnection())  // another transport's connection
        let threads = ConnectionThreads(group: group, placement: .spread)
        let home = try #require(threads.homeLoop())
        #expect(home !== busy)
        let first = try #require(threads.loopForNewConnection())
        #expect(first === home)
        let second = try #require(threads.loopForNewConnection())
        #expect(second !== home)  // least loaded: home has the first
        threads.connectionEnded(on: first)
        first.release()
        let third = try #require(threads.loopForNewConnection())
        #expect(third === home)
        busy.release()
    }

    @Test("spread: a home chosen while connections are up is the loop of one of them")
    func homeFollowsTheConnections() throws {
        let group = EventLoopGroup(threads: 3)
        defer { group.stop() }
        let threads = ConnectionThreads(group: group, placement: .spread)
        let connection = try #require(threads.loopForNewConnection())
        let otherTransport = ConnectionThreads(group: group, placement: .spread)
        _ = try #require(otherTransport.homeLoop())  // loads another loop
        #expect(threads.homeLoop() === connection)
    }

    @Test("spread over socket pairs: one connection, and a task preferring the executor sends and is resumed on its thread")
    func oneConnectionShared() async throws {
        let server = SocketPairHTTP2Server()
        let transport = makeTransport(server)
        // A first request opens the connection before the executor is asked for.
        _ = try await transport.send(devicePush(token: 0))
        let loop = try #require(transport.taskExecutor as? EventLoop)
        let connections = transport.pools.withLock { $0.pools.values.flatMap(\.connectionObjects) }
        #expect(connections.count == 1)
        #expect(connections.allSatisfy { $0.loop === loop })
        let loopThread = await threadID(of: loop)
        let request = try devicePush(token: 1)
        let seen = await bounded { () async -> [UInt] in
            await withTaskExecutorPreference(loop) {
                let before = OSThread.currentID()
                _ = try? await transport.send(request)
                return [before, OSThread.currentID()]
            }
        }
        await transport.shutdown()
        await server.stop()
        #expect(seen == [loopThread, loopThread])
    }
}

@Suite("HTTP2Transport's task executor over socket pairs", .timeLimit(.minutes(1)))
struct TransportTaskExecutorTests {
    @Test("taskExecutorThread: every connection runs on the executor's thread, and a send from a task preferring it starts and ends there")
    func connectionsOnTheExecutorThread() async throws {
        let server = SocketPairHTTP2Server()
        let transport = makeTransport(server) {
            $0.connectionCount = 3
            $0.threadPlacement = .taskExecutorThread
        }
        let executor = try #require(transport.taskExecutor)
        let loop = try #require(executor as? EventLoop)
        let loopThread = await threadID(of: loop)
        let requests = try (0..<300).map { try devicePush(token: $0) }
        let elsewhere = Counter()
        let statuses: [Int] = await bounded { () async -> [Int] in await withTaskExecutorPreference(executor) {
            await withTaskGroup(of: Int.self) { group in
                for request in requests {
                    group.addTask {
                        if OSThread.currentID() != loopThread { elsewhere.add() }
                        let status = (try? await transport.send(request))?.status ?? 0
                        if OSThread.currentID() != loopThread { elsewhere.add() }
                        return status
                    }
                }
                var statuses: [Int] = []
                for await status in group { statuses.append(status) }
                return statuses
            }
        } } ?? []
        let connections = transport.pools.withLock { $0.pools.values.flatMap(\.connectionObjects) }
        await transport.shutdown()
        await server.stop()

        #expect(statuses.count == 300 && statuses.allSatisfy { $0 == 200 })
        #expect(elsewhere.count == 0)
        #expect(!connections.isEmpty)
        #expect(connections.allSatisfy { $0.loop === loop })
    }

    @Test("senders on the executor thread through a GOAWAY and refused streams: every request answered exactly once")
    func goAwayAndRefusals() async throws {
        var behaviour = SocketPairHTTP2Server.Behaviour()
        behaviour.goAwayAfterRequests = (connection: 1, requests: 30)
        behaviour.refuseRequests = [2, 5, 40]
        let server = SocketPairHTTP2Server(behaviour)
        let transport = makeTransport(server) {
            $0.connectionCount = 2
            $0.threadPlacement = .taskExecutorThread
        }
        let requests = try (0..<300).map { try devicePush(token: $0) }
        let statuses: [Int] = await bounded { () async -> [Int] in
            await withTaskExecutorPreference(transport.taskExecutor) {
                await withTaskGroup(of: [Int].self) { group in
                    // 20 workers, each sending its share one request after another.
                    for worker in 0..<20 {
                        group.addTask {
                            var statuses: [Int] = []
                            for index in stride(from: worker, to: requests.count, by: 20) {
                                statuses.append((try? await transport.send(requests[index]))?.status ?? 0)
                            }
                            return statuses
                        }
                    }
                    var all: [Int] = []
                    for await statuses in group { all += statuses }
                    return all
                }
            }
        } ?? []
        await transport.shutdown()
        await server.stop()

        #expect(statuses.count == 300 && statuses.allSatisfy { $0 == 200 })
        let state = server.snapshot
        #expect(state.answeredIDs.count == 300)
        #expect(state.answeredIDs.values.allSatisfy { $0 == 1 })
        #expect(transport.statistics.goAwaysReceived == 1)
        #expect(transport.statistics.requestsRequeued >= 3)
    }

    @Test("a sender on the executor thread times out, and another is cancelled, while the server never answers")
    func timeoutAndCancellation() async throws {
        let server = SocketPairHTTP2Server(.silent())
        let transport = makeTransport(server) { $0.threadPlacement = .taskExecutorThread }
        let executor = transport.taskExecutor
        // 2 s: the request must be written before it expires (a timeout that may have
        // reached APNs), which a loaded machine can hold back for more than 200 ms.
        let timing = try devicePush(token: 1, timeout: .seconds(2))
        let cancelling = try devicePush(token: 2, timeout: .seconds(120))
        /// Sends `request` from a task that prefers the executor; the error, or `nil`.
        @Sendable func failure(of request: APNsRequest) async -> APNsTransportError? {
            await withTaskExecutorPreference(executor) {
                do throws(APNsTransportError) {
                    _ = try await transport.send(request)
                    return nil
                } catch {
                    return error
                }
            }
        }
        // The long one first, so that the connection is open and the 2 s of the other
        // are spent on the wire, not on a handshake slowed by a busy machine.
        let cancelled = Task { await failure(of: cancelling) }
        #expect(await eventually { transport.statistics.requestsSent == 1 })
        let timedOut = await bounded { await failure(of: timing) }
        #expect(transport.statistics.requestsSent == 2)
        cancelled.cancel()
        let cancellation = await bounded { await cancelled.value }
        await transport.shutdown()
        await server.stop()

        #expect(timedOut??.code == .timeout)
        #expect(timedOut??.mayHaveReachedAPNs == true)
        #expect(cancellation??.code == .cancelled)
        #expect(cancellation??.mayHaveReachedAPNs == true)
    }

    @Test("the executor is the transport's own for its life; the client and a transport without one pass it on")
    func stable() throws {
        let server = SocketPairHTTP2Server()
        let transport = makeTransport(server)
        let first = try #require(transport.taskExecutor as? EventLoop)
        #expect(transport.taskExecutor as? EventLoop === first)
        let client = APNsClient(environment: .production, credentials: .certificate, transport: transport)
        #expect(client.taskExecutor as? EventLoop === first)
        #expect(APNsClient(environment: .production, credentials: .certificate, transport: NoExecutorTransport()).taskExecutor == nil)
    }
}

/// A transport that keeps `PushTransport`'s default: no executor.
private struct NoExecutorTransport: PushTransport {
    func send(_ request: APNsRequest) async throws(APNsTransportError) -> APNsResponse {
        APNsResponse(status: 200)
    }

    func shutdown() async {}
}
