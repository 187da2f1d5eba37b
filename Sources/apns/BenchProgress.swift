import APNsTransport

/// The progress of a long `apns bench` run on standard error: a task of its own redraws a
/// ``ProgressBar`` from the transport's statistics ten times a second, so the measured
/// send path does no extra work for it (the task's few wake-ups a second are all it costs).
enum BenchProgress {
    /// Runs shorter than this finish before a bar would tell anything.
    static let minimumCount = 10_000

    /// Starts showing the progress of `total` notifications through `transport`, counted
    /// from now (the warm-up is not counted); `nil` unless standard error is a terminal and
    /// the run is long. Cancel the task when the run ends: it draws the last count and
    /// clears its line.
    static func start(total: Int, transport: HTTP2Transport, enabled: Bool = Terminal.standardErrorIsTerminal) -> Task<Void, Never>? {
        guard enabled, total >= minimumCount else { return nil }
        let baseline = answered(transport.statistics)
        return Task {
            let bar = ProgressBar(total: total, enabled: true)
            func draw() { bar.update(done: min(total, answered(transport.statistics) - baseline)) }
            while !Task.isCancelled {
                draw()
                try? await Task.sleep(for: .milliseconds(100))
            }
            draw()
            bar.finish()
        }
    }

    /// Requests the transport has finished with: answered with any status, or failed.
    static func answered(_ statistics: HTTP2Transport.Statistics) -> Int {
        statistics.responsesByStatus.values.reduce(0, +) + statistics.failuresByCode.values.reduce(0, +)
    }
}
