import Foundation

/// A one-line progress bar with rate and ETA on standard error, redrawn at most ten
/// times a second; silent unless standard error is a terminal.
final class ProgressBar {
    private let total: Int
    private let enabled: Bool
    private let start = ContinuousClock.now
    private var lastDraw = ContinuousClock.now - .seconds(1)
    private var drew = false

    /// A bar for `total` items; drawn only when `enabled` (a terminal and a long enough batch).
    init(total: Int, enabled: Bool) {
        self.total = max(total, 1)
        self.enabled = enabled
    }

    /// Redraws for `done` items finished, unless it was drawn under 100 ms ago.
    func update(done: Int) {
        guard enabled else { return }
        let now = ContinuousClock.now
        guard now - lastDraw >= .milliseconds(100) || done == total else { return }
        lastDraw = now
        drew = true
        let elapsed = Terminal.seconds(now - start)
        let rate = elapsed > 0 ? Double(done) / elapsed : 0
        let eta = rate > 0 ? Double(total - done) / rate : 0
        let width = 30
        let filled = min(width, done * width / total)
        let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
        let line = String(format: "\r%@ %d/%d %3d%% %.0f/s ETA %.0fs ", bar, done, total, done * 100 / total, rate, eta)
        Terminal.writeStandardError(line)
    }

    /// Clears the bar's line.
    func finish() {
        guard enabled, drew else { return }
        Terminal.writeStandardError("\r\u{1B}[2K")
    }
}
