/// The counts of a batch send whose outcomes went to a callback
/// (``APNsClient/send(_:to:maxConcurrency:onOutcome:)``).
public struct APNsBatchSummary: Sendable, Hashable, CustomStringConvertible {
    /// Notifications APNs accepted.
    public var accepted: Int
    /// Notifications APNs rejected (``APNsError/rejected(_:)``).
    public var rejected: Int
    /// Notifications that failed in transport or were invalid (``APNsError/failed(_:)``,
    /// ``APNsError/invalid(_:)``).
    public var failed: Int

    /// Creates a summary.
    public init(accepted: Int = 0, rejected: Int = 0, failed: Int = 0) {
        self.accepted = accepted
        self.rejected = rejected
        self.failed = failed
    }

    /// Every notification of the batch: `accepted + rejected + failed`.
    public var total: Int { accepted + rejected + failed }

    /// For example `1000 notifications: 990 accepted, 7 rejected, 3 failed`.
    public var description: String {
        "\(total) notification\(total == 1 ? "" : "s"): \(accepted) accepted, \(rejected) rejected, \(failed) failed"
    }
}
