import Testing
@testable import APNsTransport

/// One pool's side of the transport's connection budget, without threads, sockets or a
/// clock: places held and released, owed while connections are being opened, given back
/// to a pool that has none, and the starvation clock that lets a waiting pool take a
/// busy pool's place in turn.
@Suite("A pool's share of the connection budget (pure)")
struct PoolBudgetShareTests {
    static let ms: UInt64 = 1_000_000

    @Test("places granted and released by connection ID; a release of an ID that held none gives nothing back")
    func grantAndRelease() {
        var share = PoolBudgetShare()
        #expect(share.holdsNone)
        share.granted(0, at: 5 * Self.ms)
        share.granted(1, at: 7 * Self.ms)
        #expect(share.holders == [0, 1])
        #expect(share.lastGranted == 7 * Self.ms)
        let releases = [share.released(0), share.released(0), share.released(9), share.released(1)]
        #expect(releases == [true, false, false, true])
        #expect(share.holdsNone)
    }

    /// The rules for giving a connection to a pool that has none, as a table: queued
    /// requests, time since the last request, places held, time since the last grant,
    /// whether the other pool has starved long enough to take a busy one's place.
    @Test("gives back when idle for 250 ms, when above its guaranteed one, or, to a starved pool, after holding its place 1 s", arguments: [
        // (queued, ms since last use, places held, ms since grant, evenIfBusy, gives back)
        (0, 250, 1, 0, false, true),     // idle long enough
        (0, 249, 1, 5_000, false, false),  // idle, but only just used
        (3, 5_000, 1, 5_000, false, false),  // busy: requests wait
        (3, 0, 2, 0, false, true),     // busy, but above its guaranteed one
        (3, 0, 1, 999, true, false),   // a starved pool asks; held under 1 s
        (3, 0, 1, 1_000, true, true),  // held 1 s: shares in turn
        (3, 0, 1, 1_000, false, false),  // the same, but the other has not starved yet
    ])
    func givesBack(queued: Int, sinceUse: UInt64, held: Int, sinceGrant: UInt64, evenIfBusy: Bool, expected: Bool) {
        var share = PoolBudgetShare()
        let now = 10_000 * Self.ms
        for id in 0..<held { share.granted(id, at: now - sinceGrant * Self.ms) }
        share.used(at: now - sinceUse * Self.ms)
        #expect(share.givesBack(now: now, queued: queued, evenIfBusy: evenIfBusy) == expected)
    }

    @Test("a place asked back while every connection is still being opened is owed: the next one up retires, once per place held")
    func owedRetirements() {
        var share = PoolBudgetShare()
        // Nothing held: nothing to owe.
        let none = share.oweRetirement()
        #expect(!none)
        share.granted(0, at: 0)
        share.granted(1, at: 0)
        // Two places held: two owed, then no more.
        let owed = [share.oweRetirement(), share.oweRetirement(), share.oweRetirement()]
        #expect(owed == [true, true, false])
        #expect(share.owedRetirements == 2)
        let retiresOnceUp = [share.connectionUp(), share.connectionUp(), share.connectionUp()]
        #expect(retiresOnceUp == [true, true, false])
    }

    @Test("waiting for a place: asks for an idle pool's connection every 100 ms, for a busy one's after 1 s of waiting; the clock restarts once it gets a place")
    func starvation() {
        var share = PoolBudgetShare()
        let start = 1_000 * Self.ms
        // (ms after the start, waiting, granted a place now) -> (ask, evenIfBusy)
        let steps: [(UInt64, Bool, Bool, Bool, Bool)] = [
            (0, true, false, true, false),
            (50, true, false, false, false),  // within 100 ms of the last ask: no new ask
            (100, true, false, true, false),
            (999, true, false, true, false),
            (1_000, false, true, false, false),  // it got a place
            (1_100, true, false, true, false),  // waits again: the second counts from now
            (2_100, true, false, true, true),
        ]
        for (after, waiting, granted, ask, evenIfBusy) in steps {
            if granted { share.granted(1, at: start + after * Self.ms) }
            let decision = share.waitsForAPlace(now: start + after * Self.ms, waiting: waiting)
            #expect(decision.ask == ask && decision.evenIfBusy == evenIfBusy, "at \(after) ms: \(decision)")
        }
    }

    /// Found from outside: with a request timeout of 1 s, each request expired in the
    /// queue just before the pool had waited a second; its queue empty, the clock
    /// restarted, so the next request (100 ms later) started from zero, and the busy
    /// holders never had to share: the tenant never got a connection.
    @Test("a pause in waiting shorter than a second (its requests timed out, the next is coming) does not restart the clock; a longer one does")
    func starvationSurvivesShortPauses() {
        var share = PoolBudgetShare()
        let start = 1_000 * Self.ms
        let steps: [(UInt64, Bool, Bool, Bool)] = [
            (0, true, true, false),
            (990, false, false, false),  // its request timed out: nothing queued
            (1_090, true, true, true),  // the next one: waiting since 0, over a second
            (1_200, false, false, false),
            (2_300, false, false, false),  // a pause of 1.1 s: the clock restarts
            (2_400, true, true, false),
            (3_400, true, true, true),
        ]
        for (after, waiting, ask, evenIfBusy) in steps {
            let decision = share.waitsForAPlace(now: start + after * Self.ms, waiting: waiting)
            #expect(decision.ask == ask && decision.evenIfBusy == evenIfBusy, "at \(after) ms: \(decision)")
        }
    }
}
