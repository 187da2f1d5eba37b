// The seeds of the property tests (seeded random sequences of the state machines).
import Foundation

/// The seeds a property test runs: `1...count` by default; `APNS_PROPERTY_SCALE=n` runs `n`
/// times as many (a longer search), and `APNS_PROPERTY_SEED=s` runs seed `s` alone (to
/// reproduce a failure the message names).
public enum PropertySeeds {
    public static func range(_ count: UInt64) -> ClosedRange<UInt64> {
        let environment = ProcessInfo.processInfo.environment
        if let seed = environment["APNS_PROPERTY_SEED"].flatMap(UInt64.init) { return seed...seed }
        let scale = environment["APNS_PROPERTY_SCALE"].flatMap(UInt64.init) ?? 1
        return 1...(count * max(1, scale))
    }
}
