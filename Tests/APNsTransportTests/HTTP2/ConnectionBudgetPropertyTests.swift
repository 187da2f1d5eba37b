import APNsCore
import Testing
@testable import APNsTransport

/// Seeded random sequences of the transport's connection budget (``ConnectionBudget``),
/// driven as ``SharedConnectionBudget`` drives it: pools ask for a connection, are granted
/// one, wait, or are asked to give one back (which they do later, or cannot); connections
/// close; a place freed is offered to a waiting pool, which asks again or withdraws; pools
/// go away. A model of the places held alongside.
@Suite("Connection budget: seeded random sequences against its rules")
struct ConnectionBudgetPropertyTests {
    typealias Budget = ConnectionBudget<Int>

    struct Run {
        var rng: SplitMix64
        var budget: Budget
        var held: [Int]
        var offered: Set<Int> = []
        /// Give-backs asked of each pool (waitAndReclaim, noteReclaim) not yet performed.
        var reclaims: [Int]
        var trace: [String] = []
        var problem: String?
        let seed: UInt64
        /// Whether the caller offers a place on after a direct withdraw (a pool whose queue
        /// emptied) and after an offered pool's refused request, as it does after a release.
        /// ``SharedConnectionBudget`` does neither (the two bugs below); `true` tests the
        /// budget's other rules as if it did.
        let offersOnAfterWithdrawOrRefusal: Bool

        init(seed: UInt64, offersOnAfterWithdrawOrRefusal: Bool) {
            self.seed = seed
            self.offersOnAfterWithdrawOrRefusal = offersOnAfterWithdrawOrRefusal
            rng = SplitMix64(seed: seed)
            let pools = Int.random(in: 2...5, using: &rng)
            budget = Budget(limit: Int.random(in: 1...5, using: &rng))
            held = Array(repeating: 0, count: pools)
            reclaims = Array(repeating: 0, count: pools)
            trace.append("limit \(budget.limit), \(pools) pools")
        }

        mutating func broken(_ message: String) {
            if problem == nil { problem = "seed \(seed): \(message)\n  \(trace.suffix(25).joined(separator: "; "))" }
        }

        /// A pool asks (as a connection about to open does).
        mutating func request(_ pool: Int) {
            let wasOffered = offered.contains(pool)
            let heldTotal = held.reduce(0, +)
            let offersToOthers = offered.subtracting([pool]).count
            let decision = budget.request(pool)
            trace.append("request(\(pool))=\(decision)")
            offered.remove(pool)
            switch decision {
            case .grant:
                held[pool] += 1
            case .wait:
                // Rule 1: a pool with none gets one while the budget has room.
                if held[pool] == 0, heldTotal + offersToOthers < budget.limit {
                    broken("pool \(pool) holds none and was refused with room (\(heldTotal) held, \(offersToOthers) offered)")
                }
                if wasOffered && offersOnAfterWithdrawOrRefusal { offerOn() }
            case .waitAndReclaim(let victim):
                if victim == pool { broken("pool \(pool) asked to give a connection back to itself") }
                if held[victim] - reclaims[victim] < 1 { broken("pool \(victim) asked to give back a connection it does not keep") }
                reclaims[victim] += 1
            }
        }

        /// A place was offered to `pool` (``HTTP2ConnectionPool/budgetAvailable()``): a
        /// connection of its own asks at once, or later (it is woken or started first), or
        /// the pool needs none any more and withdraws at once (``SharedConnectionBudget``'s
        /// `deliver`, which then offers the place on).
        mutating func deliver(_ pool: Int) {
            offered.insert(pool)
            switch Int.random(in: 0..<3, using: &rng) {
            case 0:
                request(pool)
            case 1:
                trace.append("offered(\(pool)), its connection asks later")
            default:
                trace.append("withdraw(\(pool)) at the offer")
                budget.withdraw(pool)
                offered.remove(pool)
                offerOn()
            }
        }

        /// ``SharedConnectionBudget``'s wakeNextWaiter: offers every free place.
        mutating func offerOn() {
            while let next = budget.offer() {
                trace.append("offer->\(next)")
                if offered.contains(next) { broken("pool \(next) offered a second place") }
                deliver(next)
            }
        }

        mutating func release(_ pool: Int) {
            guard held[pool] > 0 else { return }
            held[pool] -= 1
            if reclaims[pool] > 0 { reclaims[pool] -= 1 }
            let next = budget.release(pool)
            trace.append("release(\(pool))->\(next.map(String.init) ?? "-")")
            if let next { deliver(next) }
            offerOn()
        }

        mutating func step() {
            let pool = Int.random(in: 0..<held.count, using: &rng)
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<35:
                // A pool wants one more (only while it is not already waiting for one).
                if !budget.isWaiting(pool) { request(pool) }
            case 35..<60:
                // A connection closes (a give-back asked for, or any other reason).
                release(pool)
            case 60..<70:
                // The pool was asked to give one back but had none up to retire.
                if reclaims[pool] > 0, Bool.random(using: &rng) {
                    reclaims[pool] -= 1
                    budget.cancelReclaim(from: pool)
                    trace.append("cancelReclaim(\(pool))")
                }
            case 70..<80 where offered.contains(pool) && Bool.random(using: &rng):
                // The connection woken or started for an offered place asks for it.
                request(pool)
            case 70..<80:
                // The pool's queue emptied while it waited (its connection went idle:
                // HTTP2ConnectionPool.connectPermission's `.idle` withdraws it), an offered
                // place included.
                if budget.isWaiting(pool) {
                    trace.append("withdraw(\(pool))")
                    budget.withdraw(pool)
                    offered.remove(pool)
                    if offersOnAfterWithdrawOrRefusal { offerOn() }
                }
            case 80..<88:
                // A starved pool asks the holders for an idle connection (rule 4).
                if let candidate = budget.reclaimCandidates(for: pool).first, Bool.random(using: &rng) {
                    budget.noteReclaim(from: candidate)
                    reclaims[candidate] += 1
                    trace.append("noteReclaim(\(candidate)) for \(pool)")
                }
            case 88..<90:
                // The pool goes away (its credential removed): its places go back.
                trace.append("remove(\(pool))")
                budget.remove(pool)
                held[pool] = 0
                reclaims[pool] = 0
                offered.remove(pool)
                offerOn()
            default:
                if let next = budget.offer() {
                    trace.append("offer->\(next)")
                    deliver(next)
                }
            }
            check()
        }

        mutating func check() {
            let total = held.reduce(0, +)
            if budget.held != total { broken("the budget counts \(budget.held) held, the model \(total)") }
            if total > budget.limit || budget.peakHeld > budget.limit { broken("\(total) held (peak \(budget.peakHeld)) over the limit \(budget.limit)") }
            for pool in held.indices where budget.held(by: pool) != held[pool] {
                broken("pool \(pool) holds \(budget.held(by: pool)), the model \(held[pool])")
            }
            // Rule 3: each free place is offered to a waiting pool; no waiter is forgotten.
            // (A pool holding none is guaranteed one, so it must never wait unoffered with room.)
            let free = budget.limit - total - offered.count
            let forgotten = held.indices.filter { budget.isWaiting($0) && !offered.contains($0) && held[$0] == 0 }
            if free > 0, !forgotten.isEmpty {
                broken("\(free) places free and nobody offered them, while pools \(forgotten), holding none, wait")
            }
        }
    }

    @Test("places held never pass the limit, a pool with none gets one with room, and no waiter holding none is forgotten (1,000 seeds × 200 steps)")
    func randomSequences() {
        var failures: [String] = []
        for seed in PropertySeeds.range(1_000) {
            var run = Run(seed: seed, offersOnAfterWithdrawOrRefusal: true)
            for _ in 0..<200 where run.problem == nil { run.step() }
            if let problem = run.problem { failures.append(problem) }
        }
        #expect(failures.isEmpty, "\(failures.count) seeds failed; first: \(failures.prefix(3).joined(separator: "\n"))")
    }

    @Test("as SharedConnectionBudget.withdraw drives it (no offer after a withdraw), no waiter holding none is forgotten",
          .disabled("bug: SharedConnectionBudget.withdraw (called from HTTP2ConnectionPool.connectPermission's .idle) clears an offered place without offering it on: another pool that holds none waits with a place free until some later release"))
    func withdrawAsTheShellDoes() {
        // The smallest sequence: one place; pool 0 holds it, pools 1 and 2 wait. Pool 0's
        // connection closes: the place is offered to pool 1, whose queue empties before its
        // connection asks (it goes idle and withdraws). Pool 2, holding none, still waits.
        var budget = Budget(limit: 1)
        #expect(budget.request(0) == .grant)
        #expect(budget.request(1) == .wait)
        #expect(budget.request(2) == .wait)
        #expect(budget.release(0) == 1)
        budget.withdraw(1)
        // SharedConnectionBudget.withdraw stops here: nothing offers the free place.
        #expect(budget.held == 0)
        #expect(budget.isWaiting(2))
        // Pool 2's own timer (reclaimIdle) finds no candidate either: the budget is not spent.
        #expect(budget.reclaimCandidates(for: 2).isEmpty)
        // Rule 3: a free place is offered to a waiting pool. Here one is free, and the pool
        // that would take it (holding none, so guaranteed one) has not been offered it.
        #expect(budget.nextWaiter == nil, "a place is free and pool \(budget.nextWaiter.map(String.init) ?? "-") waits un-offered")
    }

    @Test("an offered pool refused at its share passes the place on to a pool holding none",
          .disabled("bug: ConnectionBudget.request clears the asking pool's offer and, when it refuses that pool (at its fair share while others wait), offers the freed place to nobody: a pool holding none that began waiting after the offer waits with a place free until some later release"))
    func refusedOfferIsPassedOn() {
        // The smallest sequence: two places; pools 0 and 1 hold one each. Pool 0 asks for a
        // second: the budget is spent, it waits. Pool 1's connection closes: the place is
        // offered to pool 0. Pool 2 asks: the place is pool 0's, so pool 2 waits (no one to
        // reclaim from). Pool 0's connection asks for the offered place and is refused
        // (pool 0 is at its fair share, 1, while pool 2 waits).
        var budget = Budget(limit: 2)
        #expect(budget.request(0) == .grant)
        #expect(budget.request(1) == .grant)
        #expect(budget.request(0) == .wait)
        #expect(budget.release(1) == 0)
        #expect(budget.request(2) == .wait)
        #expect(budget.request(0) == .wait)
        #expect(budget.held == 1)
        #expect(budget.isWaiting(2) && budget.held(by: 2) == 0)
        // A place is free, pool 2 holds none and waits, and nobody offered it the place:
        // SharedConnectionBudget.request does not call offer() after a refusal.
        #expect(budget.nextWaiter == nil, "a place is free and pool \(budget.nextWaiter.map(String.init) ?? "-") waits un-offered")
    }

    @Test("the shell's pattern, at random: seeds where a waiter holding none is left un-offered with a place free",
          .disabled("bug: see withdrawAsTheShellDoes and refusedOfferIsPassedOn"))
    func randomSequencesAsTheShellDoes() {
        var failures: [String] = []
        for seed in PropertySeeds.range(1_000) {
            var run = Run(seed: seed, offersOnAfterWithdrawOrRefusal: false)
            for _ in 0..<200 where run.problem == nil { run.step() }
            if let problem = run.problem { failures.append(problem) }
        }
        #expect(failures.isEmpty, "\(failures.count) seeds failed; first: \(failures.prefix(3).joined(separator: "\n"))")
    }
}
