import APNsCore
import APNsMockServer
import APNsTesting
import Foundation
import Logging
import Synchronization
import Testing
@testable import APNsTransport

extension BatchLog {
    /// Runs the batch over `feed` (the log's requests, as the feed supplies their indices).
    func send(through transport: some PushTransport, feed: RequestFeed, window: Int) async {
        await transport.sendBatch(
            feed: feed,
            maxConcurrency: window,
            makeRequest: { self.make($0) },
            onResult: { self.result($0, $1, $2) }
        )
    }
}

/// `HTTP2Transport.sendBatch(feed:…)`: an open-ended batch over real connections to the
/// mock server, the feed supplied from another task while the batch runs.
@Suite("HTTP2Transport.sendBatch(feed:): indices supplied while the batch runs", .timeLimit(.minutes(2)))
struct FeedBatchTests {
    @Test("supplied in bursts with pauses, over 1 and 4 connections: each made once in order, one result each, each answered once", arguments: [1, 4])
    func bursts(connections: Int) async throws {
        let count = Sanitizer.scaled(5_000)
        try await withMockAPNsServer(configuration: .init(maxConcurrentStreams: 100)) { server in
            let transport = try mockTransport(server) { $0.connectionCount = connections }
            let log = BatchLog(requests: try (0..<count).map { try mockPush($0, port: server.port, timeout: .seconds(300)) })
            let feed = RequestFeed()
            let sending = Task { await log.send(through: transport, feed: feed, window: 300) }
            // Bursts of 1 to 700, with pauses long enough for the batch to run dry and wait.
            var supplied = 0
            var burst = 1
            while supplied < count {
                supplied = min(count, supplied + burst)
                #expect(feed.supply(upTo: supplied))
                burst = burst * 7 % 701
                if burst % 3 == 0 { try await Task.sleep(for: .milliseconds(2)) }
            }
            feed.close()
            await sending.value
            let statistics = transport.statistics
            await transport.shutdown()

            let results = log.expectEachMadeOnceInOrder(count: count)
            #expect(results.values.allSatisfy { (try? $0.get().status) == 200 })
            let answered = answeredIDs(server)
            #expect(answered.count == count)
            #expect(answered.values.allSatisfy { $0 == 1 })
            #expect(statistics.requestsInFlight == 0)
        }
    }

    @Test("one index at a time: each is sent while the feed stays open, and close ends the batch")
    func trickle() async throws {
        try await withMockAPNsServer { server in
            let transport = try mockTransport(server)
            let log = BatchLog(requests: try (0..<5).map { try mockPush($0, port: server.port) })
            let feed = RequestFeed()
            let sending = Task { await log.send(through: transport, feed: feed, window: 10) }
            for index in 0..<5 {
                #expect(feed.supply(upTo: index + 1))
                #expect(await waitUntil { log.results.count == index + 1 }, "index \(index) was not answered while the feed was open")
            }
            #expect(!feed.isClosed)
            feed.close()
            await sending.value
            await transport.shutdown()
            #expect(log.made == Array(0..<5))
            #expect(log.results.values.allSatisfy { (try? $0.get().status) == 200 })
        }
    }

    @Test("a window of Int.max is the widest window (65,536), not an allocation of Int.max slots")
    func unboundedWindow() async throws {
        try await withMockAPNsServer { server in
            let transport = try mockTransport(server)
            let log = BatchLog(requests: try (0..<100).map { try mockPush($0, port: server.port) })
            let feed = RequestFeed()
            feed.supply(upTo: 100)
            feed.close()
            await log.send(through: transport, feed: feed, window: .max)
            await transport.shutdown()
            #expect(log.expectEachMadeOnceInOrder(count: 100).values.allSatisfy { (try? $0.get().status) == 200 })
        }
    }

    @Test("a feed closed with nothing supplied, or before the batch starts: the batch returns")
    func closedEarly() async throws {
        try await withMockAPNsServer { server in
            let transport = try mockTransport(server)
            let empty = RequestFeed()
            empty.close()
            let log = BatchLog(requests: [])
            await log.send(through: transport, feed: empty, window: 10)
            #expect(log.made.isEmpty)

            let ready = RequestFeed()
            let three = BatchLog(requests: try (0..<3).map { try mockPush($0, port: server.port) })
            ready.supply(upTo: 3)
            ready.close()
            await three.send(through: transport, feed: ready, window: 10)
            #expect(three.made == [0, 1, 2])
            #expect(three.results.count == 3)

            // Closed while the batch waits for supply.
            let waiting = RequestFeed()
            let none = Task { await log.send(through: transport, feed: waiting, window: 10) }
            try await Task.sleep(for: .milliseconds(20))
            waiting.close()
            await none.value
            await transport.shutdown()
        }
    }

    @Test("cancelled: the window's requests fail as sent, the rest supplied fail unsent, later supplies are refused")
    func cancellation() async throws {
        try await withMockAPNsServer { server in
            let transport = try mockTransport(server)
            _ = try await transport.send(mockPush(10_000, port: server.port))  // the stream limit rises
            let log = BatchLog(requests: try (0..<300).map { try mockPush($0, port: server.port, timeout: .seconds(300)) })
            let feed = RequestFeed()
            feed.supply(upTo: 200)
            server.setResponseDelay(.seconds(600))
            let sending = Task { await log.send(through: transport, feed: feed, window: 50) }
            #expect(await waitUntil { server.statistics.requests == 51 })
            sending.cancel()
            await sending.value
            // The batch is over: nothing supplied from now on is made.
            #expect(!feed.supply(upTo: 300))
            server.setResponseDelay(.zero)
            let statistics = transport.statistics
            await transport.shutdown()

            #expect(log.made == Array(0..<200))
            let results = log.results
            #expect(Set(results.keys) == Set(0..<200))
            let (sent, unsent) = countCancelled(results, sentBelow: 50)
            #expect(sent == 50)
            #expect(unsent == 150)
            #expect(statistics.requestsInFlight == 0)
            #expect(server.statistics.requests == 51)
        }
    }

    @Test("the transport shut down in the middle of a stream: every element read gets one outcome, the later ones shutdown, unsent; the rest stay unread")
    func shutdownMidStream() async throws {
        try await withMockAPNsServer { server in
            let environment = APNsEnvironment.custom(host: "127.0.0.1", port: server.port)
            let transport = try mockTransport(server) { $0.shutdownGracePeriod = .milliseconds(100) }
            let client = APNsClient(environment: environment, credentials: .certificate, transport: transport, retryPolicy: .never)
            let (stream, input) = AsyncStream.makeStream(of: DeviceToken.self)
            let outcomes = Mutex<[Int: [APNsOutcome]]>([:])
            let notification = PushNotification(payload: .alert(body: "Hi"), topic: "com.example.app")
            let sending = Task {
                await client.send(notification, to: stream, maxConcurrency: 20) { index, outcome in
                    outcomes.withLock { $0[index, default: []].append(outcome) }
                }
            }
            func device(_ index: Int) throws -> DeviceToken {
                let hex = String(index, radix: 16)
                return try DeviceToken(hex: String(repeating: "0", count: 64 - hex.count) + hex)
            }
            for index in 0..<100 { input.yield(try device(index)) }
            #expect(await waitUntil { outcomes.withLock { $0.count } == 100 })
            await transport.shutdown()
            var terminated: [Int] = []
            for index in 100..<150 {
                if case .terminated = input.yield(try device(index)) { terminated.append(index) }
            }
            input.finish()
            let summary = await sending.value

            // Once the transport shut down, the stream was no longer read: at most the
            // element whose read was under way (the first one yielded after) was taken.
            // Either the reader came back with it and stopped (the stream still holds the
            // rest, in order), or it was still waiting a moment later and was cancelled
            // (the stream ended: every later yield was refused, nothing was taken).
            let read = summary.total
            var unread: [DeviceToken] = []
            for await token in stream { unread.append(token) }
            #expect(read == 100 || read == 101)
            if terminated.isEmpty {
                #expect(unread == (read..<150).map { try! device($0) })
            } else {
                #expect(unread.isEmpty)
                #expect(terminated == Array(read..<150))
            }

            let byIndex = outcomes.withLock { $0 }
            #expect(byIndex.count == read)
            #expect(byIndex.values.allSatisfy { $0.count == 1 })
            for index in 0..<100 { #expect(byIndex[index]?.first?.accepted != nil, "index \(index)") }
            for index in 100..<read {
                let error = byIndex[index]?.first?.error?.transportError
                #expect(error?.code == .shutdown, "index \(index)")
                #expect(error?.mayHaveReachedAPNs == false, "index \(index)")
            }
            #expect(server.recordedRequests.count == 100)
        }
    }

    @Test("APNsClient streams tokens from an AsyncStream over HTTP/2: one outcome each, Unregistered ones named")
    func clientStream() async throws {
        try await withMockAPNsServer { server in
            let environment = APNsEnvironment.custom(host: "127.0.0.1", port: server.port)
            let transport = try mockTransport(server)
            let client = APNsClient(environment: environment, credentials: .certificate, transport: transport)
            let count = Sanitizer.scaled(3_000)
            let devices = try (0..<count).map { index -> DeviceToken in
                let hex = String(index, radix: 16)
                return try DeviceToken(hex: String(repeating: "0", count: 64 - hex.count) + hex)
            }
            for index in stride(from: 0, to: count, by: 100) {
                server.respond(toDeviceToken: devices[index].hexString, with: .unregistered(since: Date(timeIntervalSince1970: 1_700_000_000)))
            }
            let (stream, input) = AsyncStream.makeStream(of: DeviceToken.self)
            let producer = Task {
                for (index, device) in devices.enumerated() {
                    input.yield(device)
                    if index % 500 == 499 { try? await Task.sleep(for: .milliseconds(2)) }
                }
                input.finish()
            }
            let outcomes = Mutex<[Int: [APNsOutcome]]>([:])
            let notification = PushNotification(payload: .alert(title: "Hello", body: "World"), topic: "com.example.app")
            let summary = await client.send(notification, to: stream, maxConcurrency: 200) { index, outcome in
                outcomes.withLock { $0[index, default: []].append(outcome) }
            }
            await producer.value
            await client.shutdown()

            #expect(summary == APNsBatchSummary(accepted: count - count / 100, rejected: count / 100, failed: 0))
            let byIndex = outcomes.withLock { $0 }
            #expect(byIndex.count == count)
            #expect(byIndex.values.allSatisfy { $0.count == 1 })
            for (index, list) in byIndex {
                #expect(list[0].deviceToken == devices[index])
                #expect((list[0].error?.rejection?.reason == .unregistered) == (index % 100 == 0), "index \(index)")
            }
            #expect(server.recordedRequests.count == count)
        }
    }
}
