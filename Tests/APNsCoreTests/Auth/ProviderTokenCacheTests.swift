import Foundation
import MetricsTestKit
import Testing
@testable import APNsCore

@Suite("Provider token cache: one shared token, APNs' 20/60-minute rules")
struct ProviderTokenCacheTests {
    static let minute: Double = 60
    static let key: ProviderKey? = try? ProviderKey(contentsOfFile: AuthFixture.path("p256.p8"))

    static func makeCache(
        clock: FakeClock,
        refreshInterval: Duration = ProviderTokenCache.defaultRefreshInterval
    ) throws -> ProviderTokenCache {
        try ProviderTokenCache(key: try #require(key), keyID: "ABC123DEFG", teamID: "DEF123GHIJ",
                               refreshInterval: refreshInterval, clock: clock.clock)
    }

    @Test func signsNothingUntilAsked() throws {
        let cache = try Self.makeCache(clock: FakeClock())
        #expect(cache.signatureCount == 0)
        _ = try cache.token()
        #expect(cache.signatureCount == 1)
    }

    @Test func sameTokenWithinTheInterval() throws {
        let clock = FakeClock()
        let cache = try Self.makeCache(clock: clock)
        let first = try cache.token()
        for _ in 0..<49 {
            clock.advance(seconds: Self.minute)
            #expect(try cache.token() == first)
        }
        clock.advance(seconds: 59) // 49:59 after iat
        #expect(try cache.token() == first)
        #expect(cache.signatureCount == 1)
    }

    /// Exactly `refreshInterval` after `iat` the token is due: the new one is signed with
    /// the current time as `iat`, so it is never older than the interval.
    @Test("New token from exactly the interval on", arguments: [20, 35, 50, 59])
    func newTokenAtTheBoundary(minutes: Int) throws {
        let clock = FakeClock()
        let cache = try Self.makeCache(clock: clock, refreshInterval: .seconds(minutes * 60))
        let first = try cache.token()
        clock.advance(seconds: Double(minutes) * Self.minute - 1)
        #expect(try cache.token() == first)
        clock.advance(seconds: 1)
        let second = try cache.token()
        #expect(second != first)
        #expect(second.issuedAt == first.issuedAt.addingTimeInterval(Double(minutes) * Self.minute))
        #expect(try cache.token() == second)
        #expect(cache.signatureCount == 2)
    }

    @Test func iatIsTheSignedWholeSecond() throws {
        let clock = FakeClock(Date(timeIntervalSince1970: 1_700_000_000.999))
        let cache = try Self.makeCache(clock: clock)
        let token = try cache.token()
        #expect(token.issuedAt == Date(timeIntervalSince1970: 1_700_000_000))
        var verifier = ProviderTokenVerifier()
        verifier.register(try #require(Self.key), keyID: "ABC123DEFG")
        #expect(try verifier.verify(token.jwt).issuedAtSeconds == 1_700_000_000)
    }

    /// 1,000 tasks ask at once after expiry: one signature, one token for all.
    @Test func thousandConcurrentCallersCauseOneSignature() async throws {
        let clock = FakeClock()
        let cache = try Self.makeCache(clock: clock)
        for round in 1...2 {
            let tokens = try await withThrowingTaskGroup(of: ProviderToken.self) { group in
                for _ in 0..<1_000 {
                    group.addTask { try cache.token() }
                }
                var tokens = Set<ProviderToken>()
                for try await token in group { tokens.insert(token) }
                return tokens
            }
            #expect(tokens.count == 1)
            #expect(cache.signatureCount == round)
            clock.advance(seconds: 50 * Self.minute)
        }
    }

    // MARK: invalidate (after 403 ExpiredProviderToken)

    @Test func invalidatingAnOldEnoughTokenGivesANewOne() throws {
        let clock = FakeClock()
        let cache = try Self.makeCache(clock: clock)
        let first = try cache.token()
        clock.advance(seconds: 20 * Self.minute)
        cache.invalidate(first)
        let second = try cache.token()
        #expect(second != first)
        #expect(second.issuedAt == first.issuedAt.addingTimeInterval(20 * Self.minute))
        #expect(cache.signatureCount == 2)
    }

    /// A token younger than 20 minutes is kept (APNs would answer
    /// TooManyProviderTokenUpdates), then replaced as soon as it turns 20 minutes.
    @Test func invalidatingAYoungTokenWaitsUntilItIsTwentyMinutesOld() throws {
        let clock = FakeClock()
        let cache = try Self.makeCache(clock: clock)
        let first = try cache.token()
        clock.advance(seconds: 5 * Self.minute)
        cache.invalidate(first)
        #expect(try cache.token() == first)
        clock.advance(seconds: 15 * Self.minute - 1)
        #expect(try cache.token() == first)
        clock.advance(seconds: 1)
        let second = try cache.token()
        #expect(second != first)
        #expect(cache.signatureCount == 2)
    }

    /// APNs refuses a token whose iat is over an hour old by its clock, so a token 5 minutes
    /// old by ours that it calls expired means our clock is at least 55 minutes behind: the
    /// cache counts it (once per token), says when the next token comes (iat + 20 min, the
    /// earliest APNs allows), and signs it then.
    @Test func aYoungExpiredTokenIsReportedAsClockSkew() throws {
        let clock = FakeClock()
        let metrics = TestMetrics()
        let cache = try ProviderTokenCache(
            key: try #require(Self.key), keyID: "ABC123DEFG", teamID: "DEF123GHIJ", clock: clock.clock, metricsFactory: metrics)
        let first = try cache.token()
        #expect(cache.nextTokenDate == nil)
        clock.advance(seconds: 5 * Self.minute)
        cache.invalidate(first)
        cache.invalidate(first)  // a burst of answers with the same token: one report
        #expect(cache.clockSkewReports == 1)
        #expect(try metrics.expectCounter("apns_provider_token_clock_skew_total").totalValue == 1)
        #expect(cache.nextTokenDate == first.issuedAt.addingTimeInterval(20 * Self.minute))
        clock.advance(seconds: 15 * Self.minute)
        #expect(cache.nextTokenDate == nil)
        let second = try cache.token()
        #expect(second != first)
        // An old enough token called expired is an ordinary expiry, not skew.
        clock.advance(seconds: 25 * Self.minute)
        cache.invalidate(second)
        #expect(cache.clockSkewReports == 1)
        #expect(try metrics.expectCounter("apns_provider_token_clock_skew_total").totalValue == 1)
        #expect(try cache.token() != second)
    }

    @Test func invalidatingAStaleTokenIsIgnored() throws {
        let clock = FakeClock()
        let cache = try Self.makeCache(clock: clock)
        let first = try cache.token()
        clock.advance(seconds: 50 * Self.minute)
        let second = try cache.token()
        clock.advance(seconds: 25 * Self.minute)
        // A request that carried the old token fails late: nothing changes.
        cache.invalidate(first)
        #expect(try cache.token() == second)
        // Another cache's token, same value shape: ignored too.
        cache.invalidate(ProviderToken(jwt: "x.y.z", issuedAt: first.issuedAt, keyID: "ABC123DEFG"))
        #expect(try cache.token() == second)
        #expect(cache.signatureCount == 2)
    }

    /// Many requests fail with the same expired token: one new token, not one per failure.
    @Test func repeatedInvalidationsCauseOneRefresh() throws {
        let clock = FakeClock()
        let cache = try Self.makeCache(clock: clock)
        let first = try cache.token()
        clock.advance(seconds: 30 * Self.minute)
        for _ in 0..<10 { cache.invalidate(first) }
        let second = try cache.token()
        for _ in 0..<10 { cache.invalidate(first) }
        #expect(try cache.token() == second)
        // The new token, invalidated at once, is kept: never two new tokens within 20 minutes.
        cache.invalidate(second)
        #expect(try cache.token() == second)
        #expect(cache.signatureCount == 2)
    }

    @Test("a clock set back behind the token's iat: the token is kept until 20 minutes after it was signed, then replaced")
    func clockSetBackReplacesTheTokenWhenAllowed() throws {
        let clock = FakeClock()
        let cache = try Self.makeCache(clock: clock)
        let first = try cache.token()
        clock.advance(seconds: -30) // small NTP step: keep the token
        #expect(try cache.token() == first)
        clock.pass(seconds: 60)
        clock.advance(seconds: -150) // a step behind iat: its age is unknown by the wall clock
        // APNs refuses a second new token within 20 minutes on a connection
        // (TooManyProviderTokenUpdates): the token is kept, however often it is asked for.
        #expect(try cache.token() == first)
        clock.pass(seconds: 17 * 60)
        #expect(try cache.token() == first)
        #expect(cache.signatureCount == 1)
        clock.pass(seconds: 2 * 60) // 20 minutes since it was signed, by a clock that does not step
        let second = try cache.token()
        #expect(second != first)
        #expect(second.issuedAt < first.issuedAt)
        #expect(cache.signatureCount == 2)
        // The new token ages by the wall clock again.
        clock.advance(seconds: 49 * 60)
        #expect(try cache.token() == second)
        clock.advance(seconds: 60)
        #expect(try cache.token() != second)
    }

    // MARK: Configuration

    @Test("Refuses refresh intervals outside 20...59 minutes", arguments: [
        Duration.seconds(0), .seconds(19 * 60 + 59), .seconds(59 * 60 + 1), .seconds(60 * 60), .seconds(-1),
    ])
    func refusesIntervals(_ interval: Duration) throws {
        let error = #expect(throws: ProviderTokenError.self) {
            _ = try Self.makeCache(clock: FakeClock(), refreshInterval: interval)
        }
        #expect(error?.code == .invalidRefreshInterval)
    }

    @Test("Accepts refresh intervals within 20...59 minutes", arguments: [
        Duration.seconds(20 * 60), .seconds(50 * 60), .seconds(59 * 60),
    ])
    func acceptsIntervals(_ interval: Duration) throws {
        let cache = try Self.makeCache(clock: FakeClock(), refreshInterval: interval)
        #expect(cache.refreshInterval == interval)
    }

    @Test("Refuses identifiers that are not 10 characters of A-Z0-9", arguments: [
        "", "ABC123DEF", "ABC123DEFGH", "abc123defg", "ABC123DEF-", "ABC 23DEFG", "ABC123DEFÉ", "\"ABC123DEF",
    ])
    func refusesIdentifiers(_ identifier: String) throws {
        let key = try #require(Self.key)
        let keyError = #expect(throws: ProviderTokenError.self) {
            _ = try ProviderTokenCache(key: key, keyID: identifier, teamID: "DEF123GHIJ")
        }
        #expect(keyError?.code == .invalidKeyID)
        let teamError = #expect(throws: ProviderTokenError.self) {
            _ = try ProviderTokenCache(key: key, keyID: "ABC123DEFG", teamID: identifier)
        }
        #expect(teamError?.code == .invalidTeamID)
    }

    /// The cache and the key cross task boundaries as any Sendable value must.
    @Test func usableFromDetachedTasks() async throws {
        let key = try #require(Self.key)
        let cache = try await Task.detached {
            try ProviderTokenCache(key: key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
        }.value
        let a = try await Task.detached { try cache.token() }.value
        let b = try cache.token()
        #expect(a == b)
    }

    @Test("the system clock is the wall clock Foundation reads, to within a kernel tick")
    func systemClockIsTheWallClock() throws {
        // Foundation's Date() reads CLOCK_REALTIME precisely; the coarse clock lags it by
        // at most a tick (10 ms at HZ=100), never leads it by more than rounding.
        for _ in 0..<100 {
            let before = Date()
            let system = ProviderTokenClock.system.now()
            let after = Date()
            #expect(system.timeIntervalSince(after) <= 0.001)
            #expect(before.timeIntervalSince(system) < 0.050)
        }
    }
}
