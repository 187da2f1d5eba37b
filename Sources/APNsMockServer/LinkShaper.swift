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
    /// The bandwidth cap's credit, in bytes, and when it was last topped up.
    private var credit = 0
    private var creditTime: ContinuousClock.Instant

    /// The most bytes the bandwidth cap lets through at once after an idle period.
    static let burst = 16 * 1024

    init(link: MockAPNsServer.LinkEmulation, start: ContinuousClock.Instant) {
        self.link = link
        self.start = start
        self.creditTime = start
        self.credit = Self.burst
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
        if stallEnd(at: now) != nil { return }
        if let rate = link.bytesPerSecond, rate > 0 {
            let elapsed = creditTime.duration(to: now)
            if elapsed > .zero {
                let added = Double(rate) * (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
                credit = min(Self.burst, credit + Int(added.rounded(.down)))
                creditTime = now
            }
        }
        while head < queue.count, queue[head].due <= now {
            let remaining = queue[head].bytes.count - headOffset
            var take = remaining
            if let rate = link.bytesPerSecond, rate > 0 {
                take = min(take, credit)
                credit -= take
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
        } else if head > 64 {
            queue.removeFirst(head)
            head = 0
        }
    }

    /// When ``release(at:into:)`` next has something to move, if anything waits.
    func nextRelease(after now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        guard head < queue.count else { return nil }
        var next = max(queue[head].due, now)
        if let end = stallEnd(at: next) { next = end }
        if let rate = link.bytesPerSecond, rate > 0, credit <= 0 {
            // Enough credit for at least one full burst's share: one millisecond of bytes.
            next = max(next, creditTime + .milliseconds(1))
        }
        return next
    }
}
