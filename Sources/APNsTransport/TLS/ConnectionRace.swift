/// When one connection attempt starts its next address: Happy Eyeballs (RFC 8305), as pure
/// logic (``TCPConnector`` opens the sockets and waits on them).
///
/// The first address is tried at once; while no attempt has connected, the next one
/// starts ``attemptDelay`` after the previous one started (RFC 8305 §5's Connection
/// Attempt Delay, 250 ms recommended), or at once when an attempt fails. Attempts that
/// started keep running: the first to connect wins and the others are closed. So an
/// address that drops packets (an IPv6 route that goes nowhere, a data center that does
/// not answer) costs a quarter of a second, not the connect timeout.
///
/// The addresses are ordered by ``interleavedByFamily(_:family:)`` first (RFC 8305 §4), so
/// a family that does not work at all is behind by one address, not by all of its own.
struct ConnectionRace {
    /// How long an attempt has before the next address starts beside it.
    static let attemptDelay: Duration = .milliseconds(250)

    /// The number of addresses.
    let count: Int
    /// The next address to start.
    private(set) var next = 0
    /// Attempts started and not yet failed.
    private(set) var running = 0
    /// When the latest attempt started.
    private var lastStart: ContinuousClock.Instant?
    /// An attempt failed since the latest start: the next one need not wait.
    private var failedSinceLastStart = false

    init(count: Int) {
        self.count = count
    }

    /// The address to start now, if one is due (recorded as started), or `nil`.
    mutating func start(now: ContinuousClock.Instant) -> Int? {
        guard next < count else { return nil }
        if let lastStart, running > 0, !failedSinceLastStart, now < lastStart + Self.attemptDelay { return nil }
        defer { next += 1 }
        running += 1
        lastStart = now
        failedSinceLastStart = false
        return next
    }

    /// An attempt that had started failed.
    mutating func failed() {
        running -= 1
        failedSinceLastStart = true
    }

    /// Every address was tried and every attempt failed.
    var isExhausted: Bool { next >= count && running == 0 }

    /// When to look again while attempts run: when the next address is due, or `deadline`.
    func wakeUp(deadline: ContinuousClock.Instant) -> ContinuousClock.Instant {
        guard next < count, let lastStart else { return deadline }
        return min(deadline, lastStart + Self.attemptDelay)
    }

    /// `items` with their families alternating (RFC 8305 §4), starting with the family of
    /// the first; within a family the order is kept.
    static func interleavedByFamily<Item>(_ items: [Item], family: (Item) -> Int32) -> [Item] {
        guard let first = items.first else { return [] }
        let leading = family(first)
        var preferred = items.filter { family($0) == leading }[...]
        var others = items.filter { family($0) != leading }[...]
        var result: [Item] = []
        result.reserveCapacity(items.count)
        while !preferred.isEmpty || !others.isEmpty {
            if let item = preferred.popFirst() { result.append(item) }
            if let item = others.popFirst() { result.append(item) }
        }
        return result
    }
}
