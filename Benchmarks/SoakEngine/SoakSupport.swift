import APNsCore
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A seeded SplitMix64 generator: the same seed gives the same fault sequence.
package typealias SeededGenerator = SplitMix64

/// The soak's identifiers: notification `n` goes to device token `n` (64 hex digits)
/// with `apns-id` `50a4c000-0000-4000-8000-<n in 12 hex digits>`, so the server side can
/// map an `apns-id` back to `n` without keeping any string.
package enum SoakIDs {
    /// The fixed part of every soak `apns-id` (a canonical lowercase UUID prefix).
    static let prefix = Array("50a4c000-0000-4000-8000-".utf8)
    private static let digits = Array("0123456789abcdef".utf8)

    /// `value` as `width` lowercase hex digits, zero-padded.
    static func hex(_ value: Int, width: Int) -> String {
        String(unsafeUninitializedCapacity: width) { buffer in
            var rest = UInt64(value)
            for index in stride(from: width - 1, through: 0, by: -1) {
                buffer[index] = digits[Int(rest & 0xF)]
                rest >>= 4
            }
            return width
        }
    }

    /// The device token of notification `sequence`.
    package static func deviceToken(_ sequence: Int) -> String { hex(sequence, width: 64) }

    /// The `apns-id` of notification `sequence`.
    package static func apnsID(_ sequence: Int) -> String {
        String(decoding: prefix, as: UTF8.self) + hex(sequence, width: 12)
    }

    /// The sequence number in a soak device token (64 hex digits), or `nil` for any other string.
    package static func sequence(ofDeviceToken token: String) -> Int? {
        var token = token
        return token.withUTF8 { bytes -> Int? in
            guard bytes.count == 64 else { return nil }
            var value = 0
            for (index, byte) in bytes.enumerated() {
                let digit: Int
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = Int(byte - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = Int(byte - UInt8(ascii: "a") + 10)
                default: return nil
                }
                // A soak sequence fits in the last 12 digits; anything above is foreign.
                if index < 52, digit != 0 { return nil }
                value = value << 4 | digit
            }
            return value
        }
    }

    /// The sequence number in a soak `apns-id`, or `nil` for any other string.
    package static func sequence(of apnsID: String) -> Int? {
        var apnsID = apnsID
        return apnsID.withUTF8 { bytes -> Int? in
            guard bytes.count == 36 else { return nil }
            for index in 0..<24 where bytes[index] != prefix[index] { return nil }
            var value = 0
            for index in 24..<36 {
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): value = value << 4 | Int(byte - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): value = value << 4 | Int(byte - UInt8(ascii: "a") + 10)
                default: return nil
                }
            }
            return value
        }
    }
}

/// Figures of this process read from /proc.
package enum ProcessMetrics {
    /// Resident set size (VmRSS of /proc/self/status) in bytes; 0 if unreadable.
    package static func residentBytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            let number = line.dropFirst(6).trimmingCharacters(in: .whitespaces).split(separator: " ").first
            return (number.flatMap { Int($0) } ?? 0) * 1024
        }
        return 0
    }

    /// Open file descriptors (entries of /proc/self/fd); -1 if unreadable.
    package static func openDescriptors() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
    }

    /// Threads of this process (entries of /proc/self/task); -1 if unreadable.
    package static func threads() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? -1
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

/// `bytes` in MiB, for printing.
func mebibytes(_ bytes: Int) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
