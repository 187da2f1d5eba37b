import Foundation
import Synchronization
import Testing
@testable import APNsMockServer

/// The link shaper as a pure function of bytes and instants: no sockets, no clock read.
@Suite("Link emulation: the shaper")
struct LinkShaperTests {
    /// An arbitrary origin; every instant below is an offset from it.
    static let t0 = ContinuousClock.now

    static func bytes(_ count: Int, _ value: UInt8) -> [UInt8] { [UInt8](repeating: value, count: count) }

    @Test("bytes leave one delay after they were produced, in order")
    func delay() {
        var shaper = LinkShaper(link: .init(oneWayDelay: .milliseconds(100)), start: Self.t0)
        shaper.enqueue(Self.bytes(3, 1), at: Self.t0)
        shaper.enqueue(Self.bytes(2, 2), at: Self.t0 + .milliseconds(30))
        #expect(shaper.nextRelease(after: Self.t0) == Self.t0 + .milliseconds(100))
        var output: [UInt8] = []
        shaper.release(at: Self.t0 + .milliseconds(99), into: &output)
        #expect(output.isEmpty)
        shaper.release(at: Self.t0 + .milliseconds(100), into: &output)
        #expect(output == [1, 1, 1])
        #expect(shaper.nextRelease(after: Self.t0 + .milliseconds(100)) == Self.t0 + .milliseconds(130))
        shaper.release(at: Self.t0 + .milliseconds(130), into: &output)
        #expect(output == [1, 1, 1, 2, 2])
        #expect(shaper.isEmpty)
        #expect(shaper.nextRelease(after: Self.t0 + .milliseconds(130)) == nil)
    }

    @Test("a bandwidth cap lets ten milliseconds' worth through at once, then rate × time while busy")
    func bandwidth() {
        var shaper = LinkShaper(link: .init(bytesPerSecond: 10_000), start: Self.t0)
        #expect(shaper.burst == 100)
        shaper.enqueue(Self.bytes(40_000, 7), at: Self.t0)
        var output: [UInt8] = []
        shaper.release(at: Self.t0, into: &output)
        #expect(output.count == 100)
        // The next chunk: another 100 bytes, 10 ms later.
        #expect(shaper.nextRelease(after: Self.t0) == Self.t0 + .milliseconds(10))
        shaper.release(at: Self.t0 + .milliseconds(500), into: &output)
        #expect(output.count == 100 + 5_000)
        // A busy link earns rate × time however late it is polled: the rest leaves by 4 s.
        shaper.release(at: Self.t0 + .milliseconds(3_500), into: &output)
        #expect(output.count == 35_100)
        shaper.release(at: Self.t0 + .seconds(4), into: &output)
        #expect(output.count == 40_000)
        #expect(shaper.isEmpty)
        // Idle, it saves one burst at most: 100 s later, 100 bytes at once, not 1,000,000.
        shaper.enqueue(Self.bytes(5_000, 8), at: Self.t0 + .seconds(104))
        shaper.release(at: Self.t0 + .seconds(104), into: &output)
        #expect(output.count == 40_100)
        #expect(output.allSatisfy { $0 == 7 || $0 == 8 })
    }

    @Test("a slow cap (500 B/s) releases 500 bytes a second, a few at a time, not a 16 KiB burst first")
    func slowBandwidth() {
        var shaper = LinkShaper(link: .init(bytesPerSecond: 500), start: Self.t0)
        #expect(shaper.burst == 5)
        shaper.enqueue(Self.bytes(15_000, 1), at: Self.t0)
        var output: [UInt8] = []
        var now = Self.t0
        var writes = 0
        // Poll as the server does, at each next release, for one second.
        while now <= Self.t0 + .seconds(1) {
            let before = output.count
            shaper.release(at: now, into: &output)
            if output.count > before { writes += 1 }
            guard let next = shaper.nextRelease(after: now) else { break }
            now = next
        }
        #expect(output.count >= 500 && output.count <= 510, "\(output.count) bytes in one second")
        // Chunks of 5 bytes (10 ms' worth), about a hundred writes, not one per byte.
        #expect(writes >= 90 && writes <= 110, "\(writes) writes")
    }

    @Test("nothing leaves during a stall; what waited leaves when it ends")
    func stalls() {
        let link = MockAPNsServer.LinkEmulation(stalls: .init(every: .seconds(1), length: .milliseconds(200)))
        var shaper = LinkShaper(link: link, start: Self.t0)
        var output: [UInt8] = []
        shaper.enqueue(Self.bytes(4, 3), at: Self.t0 + .milliseconds(50))
        shaper.release(at: Self.t0 + .milliseconds(50), into: &output)
        #expect(output.isEmpty)
        #expect(shaper.nextRelease(after: Self.t0 + .milliseconds(50)) == Self.t0 + .milliseconds(200))
        shaper.release(at: Self.t0 + .milliseconds(200), into: &output)
        #expect(output.count == 4)
        // The next period stalls again.
        shaper.enqueue(Self.bytes(1, 4), at: Self.t0 + .milliseconds(1_100))
        shaper.release(at: Self.t0 + .milliseconds(1_100), into: &output)
        #expect(output.count == 4)
        #expect(shaper.nextRelease(after: Self.t0 + .milliseconds(1_100)) == Self.t0 + .milliseconds(1_200))
    }

    @Test("removing the emulation releases everything at once")
    func releaseAll() {
        var shaper = LinkShaper(link: .init(oneWayDelay: .seconds(3600)), start: Self.t0)
        shaper.enqueue([1, 2], at: Self.t0)
        shaper.enqueue([3], at: Self.t0)
        var output: [UInt8] = []
        shaper.releaseAll(into: &output)
        #expect(output == [1, 2, 3])
        #expect(shaper.isEmpty)
    }
}

@Suite("Link emulation on a running server")
struct LinkEmulationServerTests {
    @Test("an answer waits behind the link's delay and arrives once the emulation is removed (curl)")
    func answerHeldByTheLink() async throws {
        try await withServerAndCurl { server, curl in
            server.setLinkEmulation(.init(oneWayDelay: .seconds(3600)))
            let answered = Flag()
            async let response = {
                // A wide limit: under a loaded machine the handshake alone can take seconds,
                // and the answer is held until the emulation is removed.
                let response = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)",
                                                   headers: ["apns-topic: com.example.app"], extra: ["--max-time", "60"])
                answered.value.withLock { $0 = true }
                return response
            }()
            // The server has processed the request (bounded wait)...
            for _ in 0..<1_000 where server.statistics.requests == 0 {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(server.statistics.requests == 1)
            // ...and its answer is held: without the link it would be back within milliseconds.
            try await Task.sleep(for: .milliseconds(300))
            #expect(!answered.value.withLock { $0 })
            server.setLinkEmulation(nil)
            let received = try await response
            #expect(received.status == 200)
            #expect(answered.value.withLock { $0 })
        }
    }

    @Test("behind a short delay, a bandwidth cap and stalls, many answers (with JSON bodies) all arrive intact (h2load)")
    func answersIntactBehindTheLink() async throws {
        try await withServerAndCurl { server, _ in
            server.setLinkEmulation(.init(oneWayDelay: .milliseconds(20), bytesPerSecond: 2_000_000,
                                          stalls: .init(every: .milliseconds(300), length: .milliseconds(50))))
            server.failNextRequests(500, with: .serviceUnavailable)
            let bodyFile = FileManager.default.temporaryDirectory.appendingPathComponent("link-body-\(UUID().uuidString)").path
            try Data(samplePayload.utf8).write(to: URL(fileURLWithPath: bodyFile))
            defer { try? FileManager.default.removeItem(atPath: bodyFile) }
            let result = try await ExternalTool.run("h2load", [
                "-n", "1000", "-c", "2", "-m", "50", "-d", bodyFile, "-H", "apns-topic: com.example.app",
                "https://127.0.0.1:\(server.port)/3/device/\(sampleDeviceToken)",
            ], timeout: .seconds(120))
            // h2load counts a 5xx answer as "failed"; every request must be done, none errored.
            #expect(result.stdout.contains("1000 done") && result.stdout.contains(" 0 errored, 0 timeout"), "\(result.stdout)")
            #expect(result.stdout.contains("500 2xx") && result.stdout.contains("500 5xx"), "\(result.stdout)")
            #expect(server.statistics.requests == 1000)
        }
    }
}
