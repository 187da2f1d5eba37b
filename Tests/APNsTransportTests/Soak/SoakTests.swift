import Foundation
import SoakEngine
import Testing

/// The soak of Benchmarks/Soak (issue #8), small enough for every test run: 10,000
/// notifications through `APNsClient` and `HTTP2Transport` to `APNsMockServer` while
/// about 50 seeded faults (GOAWAY, dropped and refused connections, 429/500/503, delays,
/// stalls past the request timeout, stream limit 1) hit the server. `scripts/soak.sh`
/// runs the same engine at 1,000,000 in a release build.
@Suite("Soak (small)")
struct SoakTests {
    /// The seed that found the re-send of answered requests (see ResponseBeforeResetTests);
    /// `SWIFT_APNS_SOAK_SEED` picks another.
    static let seed = ProcessInfo.processInfo.environment["SWIFT_APNS_SOAK_SEED"].flatMap { UInt64($0) } ?? 3

    /// How the soak sends: one `send` per notification from 100 tasks; APNsClient's batch
    /// send, 1,000 device tokens per call with a window of 100 (HTTP2Transport.sendBatch);
    /// or one streamed batch, the device tokens read from an AsyncSequence.
    enum Way: String, CaseIterable, Sendable { case tasks, batches, streamed }

    @Test("every notification ends in exactly one outcome; none reaches the server twice unexplained",
          arguments: Way.allCases)
    func soak(way: Way) async throws {
        let configuration = SoakConfiguration(
            notifications: 10_000,
            seed: Self.seed,
            connections: 2,
            concurrency: 100,
            meanFaultGap: 200,
            requestTimeout: .seconds(2),
            stalls: true,
            // Far above any pause a loaded machine causes; a hang still ends the test.
            watchdog: .seconds(30),
            rssGrowthLimitBytes: 64 << 20,
            batchSize: way == .batches ? 1_000 : nil,
            streamed: way == .streamed
        )
        let report = try await Soak.run(configuration)
        #expect(report.passed, "\(report)")
        #expect(report.outcomeTotal == 10_000)
        // The faults did happen, and the server saw the notifications.
        #expect(report.faults.values.reduce(0, +) >= 10, "\(report.faults)")
        #expect((report.server?.requests ?? 0) >= 5_000)
        #expect(report.transport?.requestsInFlight == 0)
    }

    @Test("behind a 50 ms round trip (the mock server's link emulation), the same checks hold")
    func soakBehindARoundTrip() async throws {
        // Every answer, SETTINGS and PING acknowledgement arrives 50 ms late, so new
        // connections after GOAWAYs and drops start a round trip later and each request
        // holds its stream for at least 50 ms: 200 in flight carry at most 4,000/s.
        let configuration = SoakConfiguration(
            notifications: 3_000,
            seed: Self.seed,
            connections: 2,
            concurrency: 200,
            meanFaultGap: 100,
            requestTimeout: .seconds(2),
            stalls: true,
            watchdog: .seconds(30),
            rssGrowthLimitBytes: 64 << 20,
            oneWayDelay: .milliseconds(50)
        )
        let report = try await Soak.run(configuration)
        #expect(report.passed, "\(report)")
        #expect(report.outcomeTotal == 3_000)
        #expect(report.faults.values.reduce(0, +) >= 5, "\(report.faults)")
        #expect((report.server?.requests ?? 0) >= 1_500)
        #expect(report.transport?.requestsInFlight == 0)
    }
}
