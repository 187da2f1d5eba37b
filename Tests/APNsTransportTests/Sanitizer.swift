import Foundation

/// The sanitizer the suite runs under, if any: `scripts/sanitize.sh` sets
/// `SWIFT_APNS_SANITIZER` to `thread` or `address`.
enum Sanitizer {
    static let name = ProcessInfo.processInfo.environment["SWIFT_APNS_SANITIZER"]

    /// `count` normally; a fifth of it under ThreadSanitizer, which slows this code
    /// 10–20 times, so that load tests keep their shape and finish in a minute.
    static func scaled(_ count: Int) -> Int {
        name == "thread" ? max(1, count / 5) : count
    }
}
