#if canImport(Glibc)
import Glibc
#endif

/// The header names and values of the last request a connection received, by position,
/// so that a field that repeats (every request of a connection carries the same names in
/// the same order, and usually the same `authorization`, `apns-topic` and `user-agent`)
/// becomes the `String` made last time instead of a new one: a length check and a
/// `memcmp` instead of UTF-8 validation and a heap allocation.
///
/// Bytes that are not valid UTF-8 are decoded with replacement characters, as
/// `String(decoding:as:)` does, and never match a cached string. Lives on the server
/// thread only; one per connection.
struct HeaderStringCache {
    /// How many positions are remembered (an APNs request has about a dozen fields).
    static let capacity = 32
    private var names: [String] = []
    private var values: [String] = []

    init() {
        names = Array(repeating: "", count: Self.capacity)
        values = Array(repeating: "", count: Self.capacity)
    }

    /// The name of the field at `position` in its header list.
    mutating func name(_ bytes: UnsafeBufferPointer<UInt8>, at position: Int) -> String {
        Self.string(bytes, slot: position, in: &names)
    }

    /// The value of the field at `position` in its header list.
    mutating func value(_ bytes: UnsafeBufferPointer<UInt8>, at position: Int) -> String {
        Self.string(bytes, slot: position, in: &values)
    }

    private static func string(_ bytes: UnsafeBufferPointer<UInt8>, slot: Int, in strings: inout [String]) -> String {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return "" }
        guard slot < capacity else { return String(decoding: bytes, as: UTF8.self) }
        let cached = strings[slot]
        if cached.utf8.count == bytes.count {
            let same = cached.utf8.withContiguousStorageIfAvailable { stored in
                memcmp(stored.baseAddress!, base, bytes.count) == 0
            } ?? cached.utf8.elementsEqual(bytes)
            if same { return cached }
        }
        let made = String(decoding: bytes, as: UTF8.self)
        strings[slot] = made
        return made
    }
}
