import Synchronization

/// The indices of an open-ended batch, supplied while it runs: the handle between whoever
/// produces work (a queue consumer, a database cursor, an `AsyncSequence`) and
/// ``PushTransport/sendBatch(feed:maxConcurrency:makeRequest:onResult:)``, which makes
/// each supplied index's request when the window has room.
///
/// The producer calls ``supply(upTo:)`` as work arrives (indices `0..<count`, in order,
/// with `count` only growing) and ``close()`` when no more will come; the batch returns
/// once the feed is closed and every supplied index has its result. Supplying is cheap (an
/// atomic update; a wake-up only when the batch had run out of indices), so it can be done
/// once per item.
///
/// If the batch ends early (its task was cancelled), the feed is *sealed*: the indices
/// supplied before then still get their results (failed with `cancelled` if they were not
/// sent), and ``supply(upTo:)`` returns `false` from then on, so the producer knows
/// which indices the batch will never make.
///
/// A feed serves one batch.
public final class RequestFeed: Sendable {
    /// `available << 3 | sealed << 2 | closed << 1 | waiting`, in one word so that the
    /// producer and the batch agree on every change without a lock.
    private let bits = Atomic<Int>(0)
    /// Called when the producer supplies or closes while the batch waits for it. In an
    /// object: a closure kept in a `Mutex` itself is re-wrapped in a reabstraction thunk
    /// at every `withLock`, so a call through it grew longer with every wake-up.
    private let wake = Mutex<Wake?>(nil)

    private final class Wake: Sendable {
        let call: @Sendable () -> Void
        init(_ call: @escaping @Sendable () -> Void) { self.call = call }
    }

    private static let waitingBit = 1
    private static let closedBit = 2
    private static let sealedBit = 4
    private static let flagBits = 3

    /// A feed with nothing supplied yet.
    public init() {}

    /// The widest window an open-ended batch keeps (a larger `maxConcurrency` counts as
    /// this): a batch of unknown size cannot take its count as the bound, and a window
    /// wider than the streams the connections carry only makes requests wait.
    public static let maxWindow = 1 << 16

    /// Makes indices `0..<count` available to the batch (a smaller `count` than before
    /// changes nothing; a count beyond 2^60 counts as 2^60 - 1).
    ///
    /// - Returns: `false` if the feed was closed or the batch has ended (it was
    ///   cancelled): indices supplied now will never be made; the producer keeps their
    ///   fate in its hands.
    @discardableResult
    public func supply(upTo count: Int) -> Bool {
        update { old in
            if old & (Self.closedBit | Self.sealedBit) != 0 { return nil }
            // The count shares the word with the flags: clamped, it cannot shift into the sign.
            return max(old >> Self.flagBits, min(count, Int.max >> Self.flagBits)) << Self.flagBits
        }
    }

    /// Says that no index past those supplied will come. The batch returns once those
    /// have their results. Calling it again changes nothing.
    public func close() {
        _ = update { old in old & Self.closedBit != 0 ? nil : (old | Self.closedBit) & ~Self.waitingBit }
    }

    /// Replaces the word with `change(old)` (`nil`: leave it) and wakes a waiting batch.
    /// - Returns: Whether the word was changed.
    private func update(_ change: (Int) -> Int?) -> Bool {
        var old = bits.load(ordering: .acquiring)
        while true {
            guard let new = change(old) else { return false }
            let (exchanged, current) = bits.compareExchange(expected: old, desired: new, ordering: .acquiringAndReleasing)
            if exchanged {
                if old & Self.waitingBit != 0 { wakeBatch() }
                return true
            }
            old = current
        }
    }

    /// Whether ``close()`` was called.
    public var isClosed: Bool { bits.load(ordering: .acquiring) & Self.closedBit != 0 }

    /// How many indices were supplied.
    public var supplied: Int { bits.load(ordering: .acquiring) >> Self.flagBits }

    // MARK: - The batch's side

    /// What the batch sees of the feed: the indices supplied and whether more may come.
    public struct Snapshot: Sendable, Equatable {
        /// Indices `0..<available` were supplied.
        public let available: Int
        /// No index past `available` will come.
        public let closed: Bool
        /// The word it was read from (for ``RequestFeed/waitForSupply(after:)``).
        fileprivate let bits: Int
    }

    /// The feed's state now. For transports.
    public func snapshot() -> Snapshot {
        let value = bits.load(ordering: .acquiring)
        return Snapshot(available: value >> Self.flagBits, closed: value & Self.closedBit != 0, bits: value)
    }

    /// Registers what the feed calls when it has news for a batch that waits
    /// (``waitForSupply(after:)``). For transports: called once, before the first wait.
    public func attach(wake: @escaping @Sendable () -> Void) {
        let box = Wake(wake)
        self.wake.withLock { $0 = box }
    }

    /// Asks to be woken (the `wake` given to ``attach(wake:)``) at the next
    /// ``supply(upTo:)`` or ``close()``, if nothing changed since `snapshot` was read.
    /// For transports.
    ///
    /// - Returns: `false` if the feed changed since `snapshot` (read it again: there may be
    ///   more to do, and no wake-up will come for it).
    public func waitForSupply(after snapshot: Snapshot) -> Bool {
        bits.compareExchange(expected: snapshot.bits, desired: snapshot.bits | Self.waitingBit, ordering: .acquiringAndReleasing)
            .exchanged
    }

    /// Ends the batch's intake: from now on ``supply(upTo:)`` returns `false`.
    /// For transports, when a batch stops early (cancelled).
    ///
    /// - Returns: How many indices had been supplied: the batch owes each of them a
    ///   result.
    public func seal() -> Int {
        bits.bitwiseOr(Self.sealedBit, ordering: .acquiringAndReleasing).oldValue >> Self.flagBits
    }

    private func wakeBatch() {
        let wake = self.wake.withLock { $0 }
        wake?.call()
    }
}

/// A wake-up for a task that waits for a ``RequestFeed`` (or for its cancellation): raised
/// before the wait, it is not lost.
final class FeedSignal: Sendable {
    private struct State {
        var raised = false
        var waiter: UnsafeContinuation<Void, Never>?
    }
    private let state = Mutex(State())

    /// Wakes the waiter, or the next wait.
    func raise() {
        let waiter = state.withLock { state -> UnsafeContinuation<Void, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.raised = true
            return nil
        }
        waiter?.resume()
    }

    /// Returns at the next ``raise()`` (at once if one came since the last wait), or when
    /// the task is cancelled.
    func wait() async {
        await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.raised {
                        state.raised = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            raise()
        }
    }
}
