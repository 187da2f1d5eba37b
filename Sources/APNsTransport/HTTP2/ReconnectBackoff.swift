import APNsCore
/// The delay before a new connection attempt after `failures` consecutive failed ones:
/// exponential from `base`, capped at `maximum`, with "equal jitter" (uniform in
/// `[d/2, d]`), so that many providers restarting at once do not reconnect in step.
///
/// APNs treats rapid reconnects as a denial-of-service attack
/// ([Sending notification requests to APNs](https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns)),
/// so the pool never connects again sooner than this.
struct ReconnectBackoff: Sendable, Hashable {
    var base: Duration
    var maximum: Duration

    /// The delay after `failures` consecutive failures (0 → no delay).
    ///
    /// - Parameter jitter: A number in `0...1`; 0 gives `d/2`, 1 gives `d`.
    func delay(afterFailures failures: Int, jitter: Double) -> Duration {
        guard failures > 0 else { return .zero }
        let exponent = min(failures - 1, 30)
        let baseNanos = Double(MonotonicTime.nanoseconds(base))
        let bound = min(Double(MonotonicTime.nanoseconds(maximum)), baseNanos * Double(1 << exponent))
        let clamped = jitter.isNaN ? 0 : min(1, max(0, jitter))
        return .nanoseconds(Int64(bound * (0.5 + 0.5 * clamped)))
    }
}
