#if canImport(Glibc)
import Glibc
#endif

/// The header names and values a connection received lately, so that a field that repeats
/// (every request of a connection carries the same names, and usually the same
/// `authorization`, `apns-topic` and `user-agent`) becomes the `String` made last time
/// instead of a new one: a length check and a `memcmp` instead of UTF-8 validation and a
/// heap allocation.
///
/// Bytes that are not valid UTF-8 are decoded with replacement characters, as
/// `String(decoding:as:)` does, and never match a cached string. Lives on the server
/// thread only; one per connection.
struct HeaderStringCache {
    /// How many strings are kept; the oldest is replaced first.
    static let capacity = 32
    private var strings: [String] = []
    private var nextReplaced = 0

    init() {
        strings.reserveCapacity(Self.capacity)
    }

    /// The string for `bytes`: a cached one with exactly these bytes, or a new one (then cached).
    mutating func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return "" }
        for candidate in strings where candidate.utf8.count == bytes.count {
            let same = candidate.utf8.withContiguousStorageIfAvailable { stored in
                memcmp(stored.baseAddress!, base, bytes.count) == 0
            } ?? candidate.utf8.elementsEqual(bytes)
            if same { return candidate }
        }
        let made = String(decoding: bytes, as: UTF8.self)
        if strings.count < Self.capacity {
            strings.append(made)
        } else {
            strings[nextReplaced] = made
            nextReplaced = (nextReplaced + 1) % Self.capacity
        }
        return made
    }
}
