/// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
/// 2014): 64 bits of state, a sequence fixed by its seed. Fast, and not for secrets: the
/// mock server's `apns-id`s, and reproducible inputs in this package's tests.
package struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// The sequence that starts from `seed`.
    package init(seed: UInt64) {
        state = seed
    }

    /// The next 64 bits of the sequence.
    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
