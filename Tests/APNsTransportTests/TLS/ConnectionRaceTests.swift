import Testing
@testable import APNsTransport

#if canImport(Glibc)
import Glibc
#endif

/// Happy Eyeballs' schedule (RFC 8305 §4 and §5) as a table of instants: no sockets, no
/// threads (``HostResolverTests`` races real sockets).
@Suite("ConnectionRace: when the next address starts (RFC 8305)")
struct ConnectionRaceTests {
    let t0 = ContinuousClock.now

    func at(_ milliseconds: Int) -> ContinuousClock.Instant { t0 + .milliseconds(milliseconds) }

    @Test("the first address at once, the next 250 ms later while the first still tries")
    func connectionAttemptDelay() {
        var race = ConnectionRace(count: 3)
        #expect(race.start(now: at(0)) == 0)
        #expect(race.start(now: at(0)) == nil)
        #expect(race.wakeUp(deadline: at(10_000)) == at(250))
        #expect(race.start(now: at(249)) == nil)
        #expect(race.start(now: at(250)) == 1)
        #expect(race.running == 2)
        #expect(race.wakeUp(deadline: at(10_000)) == at(500))
        #expect(race.start(now: at(500)) == 2)
        // Nothing left to start: wait for the attempts until the deadline.
        #expect(race.start(now: at(10_000)) == nil)
        #expect(race.wakeUp(deadline: at(10_000)) == at(10_000))
        #expect(!race.isExhausted)
    }

    @Test("a failed attempt starts the next address at once; the last failure exhausts the race")
    func failureStartsTheNext() {
        var race = ConnectionRace(count: 3)
        #expect(race.start(now: at(0)) == 0)
        race.failed()  // refused at 10 ms
        #expect(race.start(now: at(10)) == 1)
        #expect(race.start(now: at(20)) == nil)
        race.failed()
        #expect(race.start(now: at(30)) == 2)
        race.failed()
        #expect(race.start(now: at(40)) == nil)
        #expect(race.isExhausted)
        // A deadline before the next start is when to look again.
        var early = ConnectionRace(count: 2)
        _ = early.start(now: at(0))
        #expect(early.wakeUp(deadline: at(100)) == at(100))
    }

    @Test("one failure among several running does not hold the next start back")
    func failureWhileOthersRun() {
        var race = ConnectionRace(count: 4)
        #expect(race.start(now: at(0)) == 0)
        #expect(race.start(now: at(250)) == 1)
        race.failed()  // the first fails at 300 ms, the second still tries
        #expect(race.start(now: at(300)) == 2)
        #expect(race.start(now: at(400)) == nil)
        #expect(race.start(now: at(550)) == 3)
        #expect(race.running == 3)
        #expect(race.isExhausted == false)
    }

    @Test("families alternate from the first one's, each family in its order (RFC 8305 §4)")
    func interleaving() {
        let v6 = AF_INET6, v4 = AF_INET
        func order(_ items: [(String, Int32)]) -> [String] {
            ConnectionRace.interleavedByFamily(items, family: { $0.1 }).map(\.0)
        }
        #expect(order([("6a", v6), ("6b", v6), ("4a", v4), ("4b", v4)]) == ["6a", "4a", "6b", "4b"])
        #expect(order([("4a", v4), ("6a", v6), ("6b", v6), ("6c", v6)]) == ["4a", "6a", "6b", "6c"])
        #expect(order([("4a", v4), ("4b", v4)]) == ["4a", "4b"])
        #expect(order([("6a", v6), ("4a", v4), ("4b", v4), ("4c", v4)]) == ["6a", "4a", "4b", "4c"])
        #expect(order([]) == [])
    }
}
