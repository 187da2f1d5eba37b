/// Holds back what a connection sends, as a slower network would: every byte leaves a
/// one-way delay after it was produced, no faster than a bandwidth cap, and nothing leaves
/// during periodic stalls. See ``MockAPNsServer/LinkEmulation``.
///
/// A value with no I/O and no clock of its own: the connection passes the time in. It
/// works on the HTTP/2 bytes before TLS, so everything the server sends on the connection
/// (answers, SETTINGS and their acknowledgements, PING acknowledgements, GOAWAY) is
/// delayed alike; the TLS handshake is not.
struct LinkShaper {
    let link: MockAPNsServer.LinkEmulation
    /// When the link started: stalls are counted from here.
    private let start: ContinuousClock.Instant
    /// Bytes waiting, oldest first, each with the moment it may leave.
    private var queue: [(due: ContinuousClock.Instant, bytes: [UInt8])] = []
    private var head = 0
    /// Bytes of `queue[head]` already released.
    private var headOffset = 0
    /// The bandwidth cap's credit, in bytes (fractions kept, so that a slow rate polled
    /// often still adds up), and when it was last topped up.
    private var credit: Double
    private var creditTime: ContinuousClock.Instant

    /// The most bytes the bandwidth cap lets through at once after an idle period: ten
    /// milliseconds' worth, at least one byte and at most 16 KiB. A link that was busy all
    /// along earns rate × time; idle, it saves no more than this.
    let burst: Double

    init(link: MockAPNsServer.LinkEmulation, start: ContinuousClock.Instant) {
        self.link = link
        self.start = start
        self.creditTime = start
        self.burst = Self.burst(bytesPerSecond: link.bytesPerSecond)
        self.credit = burst
    }

    /// The burst of a cap of `bytesPerSecond` (see ``burst``).
    static func burst(bytesPerSecond: Int?) -> Double {
        guard let rate = bytesPerSecond, rate > 0 else { return 0 }
        return Double(min(16 * 1024, max(1, rate / 100)))
    }

    /// Whether nothing is waiting.
    var isEmpty: Bool { head == queue.count }

    /// Queues `bytes`, produced at `now`.
    mutating func enqueue(_ bytes: [UInt8], at now: ContinuousClock.Instant) {
        guard !bytes.isEmpty else { return }
        queue.append((now + link.oneWayDelay, bytes))
    }

    /// Forgets everything waiting (the connection went silent or closed).
    mutating func removeAll() {
        queue.removeAll()
        head = 0
        headOffset = 0
    }

    /// Moves everything waiting to `output` at once (the emulation is being removed).
    mutating func releaseAll(into output: inout [UInt8]) {
        while head < queue.count {
            output.append(contentsOf: queue[head].bytes[headOffset...])
            head += 1
            headOffset = 0
        }
        removeAll()
    }

    /// Whether `now` falls in a stall, and when that stall ends.
    private func stallEnd(at now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        guard let stalls = link.stalls, stalls.every > .zero, stalls.length > .zero else { return nil }
        let elapsed = start.duration(to: now)
        guard elapsed >= .zero else { return nil }
        let period = Int64((elapsed / stalls.every).rounded(.down))
        let periodStart = start + stalls.every * Double(period)
        let end = periodStart + stalls.length
        return now < end ? end : nil
    }

    /// Moves to `output` every byte that may leave at `now`.
    mutating func release(at now: ContinuousClock.Instant, into output: inout [UInt8]) {
        if stallEnd(at: now) != nil {
            // A stalled link sends nothing, so it earns no credit either.
            creditTime = max(creditTime, now)
            return
        }
        let rate = link.bytesPerSecond.flatMap { $0 > 0 ? Double($0) : nil }
        if let rate, creditTime < now {
            // Idle (nothing due) until the head was due: credit up to a burst; busy from
            // then on: all of rate × time.
            let busyFrom = head < queue.count ? min(max(queue[head].due, creditTime), now) : now
            credit = min(burst, credit + rate * Self.seconds(creditTime.duration(to: busyFrom)))
            credit += rate * Self.seconds(busyFrom.duration(to: now))
            creditTime = now
        }
        while head < queue.count, queue[head].due <= now {
            let remaining = queue[head].bytes.count - headOffset
            var take = remaining
            if rate != nil {
                // A millionth of a byte's slack: durations made from a rate are not exact.
                take = min(take, Int((credit + 1e-6).rounded(.down)))
                credit -= Double(take)
            }
            guard take > 0 else { break }
            output.append(contentsOf: queue[head].bytes[headOffset..<headOffset + take])
            headOffset += take
            if headOffset == queue[head].bytes.count {
                head += 1
                headOffset = 0
            }
        }
        if head == queue.count {
            queue.removeAll(keepingCapacity: true)
            head = 0
            credit = min(credit, burst)
        } else if head > 64 {
            queue.removeFirst(head)
            head = 0
        }
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// When ``release(at:into:)`` next has something to move, if anything waits.
    func nextRelease(after now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        guard head < queue.count else { return nil }
        var next = max(queue[head].due, now)
        if let end = stallEnd(at: next) { next = end }
        if let rate = link.bytesPerSecond, rate > 0 {
            // When the credit covers the head's bytes, or a burst of them: bytes leave in
            // chunks of at most ten milliseconds' worth, never one write per byte.
            let needed = min(Double(queue[head].bytes.count - headOffset), burst)
            if credit < needed {
                let wait = Duration.seconds((needed - credit) / Double(rate))
                next = max(next, creditTime + wait)
                if let end = stallEnd(at: next) { next = end }
            }
        }
        return next
    }
}
