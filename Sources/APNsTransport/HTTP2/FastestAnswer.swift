/// The fastest answer a connection has given, as a lower bound on how long the next
/// request written on it waits for its answer.
///
/// A request whose deadline is nearer than that cannot be answered in time: written, it
/// would time out in flight, and its outcome would be "may have reached APNs". Not
/// written, it fails as never sent, which the caller can safely send again. So the
/// connection asks ``isTooLate(deadline:now:)`` before it writes a request.
///
/// One request at a time is timed (as TCP times one segment at a time): the first
/// written while none is being timed. Its answer gives a sample; a request that ends any
/// other way (reset, refused, timed out) gives none, and ``submitted(streamID:now:)`` takes
/// another once ``dropSample(unlessInFlight:)`` has let it go. The bound is the smallest
/// sample: it only falls, so a path that becomes slower never makes a request go unsent
/// that could have been answered. Time is an input; there is no I/O.
struct FastestAnswer: Sendable, Equatable {
    /// The stream being timed; 0 for none (stream 0 is the connection's own).
    private(set) var sampledStream: Int32 = 0
    /// When the timed request was written.
    private var sampledAt: UInt64 = 0
    /// The fastest answer so far, in nanoseconds; `nil` before the first.
    private(set) var fastest: UInt64?

    /// `streamID` was written at `now`: timed if no other request is.
    mutating func submitted(streamID: Int32, now: UInt64) {
        guard sampledStream == 0 else { return }
        sampledStream = streamID
        sampledAt = now
    }

    /// The answer to `streamID` arrived at `now`.
    mutating func answered(streamID: Int32, now: UInt64) {
        guard streamID == sampledStream, sampledStream != 0 else { return }
        sampledStream = 0
        let elapsed = now >= sampledAt ? now - sampledAt : 0
        fastest = min(fastest ?? elapsed, elapsed)
    }

    /// Lets the timed request go when it ended without an answer: `isInFlight` says
    /// whether its stream is still waiting.
    mutating func dropSample(unlessInFlight isInFlight: (Int32) -> Bool) {
        if sampledStream != 0 && !isInFlight(sampledStream) { sampledStream = 0 }
    }

    /// Whether a request with `deadline` must not be written at `now`: its deadline has
    /// passed, or is nearer than the fastest answer.
    func isTooLate(deadline: UInt64, now: UInt64) -> Bool {
        guard deadline > now else { return true }
        guard let fastest else { return false }
        return deadline - now < fastest
    }
}
