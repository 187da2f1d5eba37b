import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import APNsMockServer

/// The rules as a pure function, without sockets: cases curl cannot send or that need
/// another configuration.
@Suite("RequestValidator")
struct RequestValidatorTests {
    static func request(topic: String?, pushType: String?) -> RequestValidator.Request {
        var headers: [(name: String, value: String)] = [(":method", "POST"), (":path", "/3/device/\(sampleDeviceToken)")]
        if let topic { headers.append(("apns-topic", topic)) }
        if let pushType { headers.append(("apns-push-type", pushType)) }
        return RequestValidator.Request(headers: headers, body: Array(samplePayload.utf8))
    }

    @Test("with no bundle identifiers configured, any topic passes if its suffix fits the push type", arguments: [
        ("com.any.app", "alert", nil),
        ("com.any.app.voip", "voip", nil),
        ("com.any.app", "voip", "DeviceTokenNotForTopic"),
        ("com.any.app.voip", "alert", "DeviceTokenNotForTopic"),
        (".voip", "voip", "DeviceTokenNotForTopic"),
        ("com.any.app.push-type.liveactivity", "liveactivity", nil),
    ] as [(String, String, String?)])
    func anyBundle(topic: String, pushType: String, reason: String?) {
        let validator = RequestValidator(bundleIDs: [], malformedPayloadReason: "BadRequestPayload")
        let result = validator.validate(Self.request(topic: topic, pushType: pushType)) { _ in nil }
        switch result {
        case .success: #expect(reason == nil)
        case .failure(let rejection): #expect(rejection.reason == reason)
        }
    }

    @Test("the authorization check runs after method and path, before the headers", arguments: [
        ([(":method", "GET"), (":path", "/3/device/00")], "MethodNotAllowed"),
        ([(":method", "POST"), (":path", "/nope")], "BadPath"),
        ([(":method", "POST"), (":path", "/3/device/zz")], "MissingProviderToken"),
    ] as [([(String, String)], String)])
    func authorizationOrder(headers: [(String, String)], reason: String) {
        let validator = RequestValidator(bundleIDs: ["com.example.app"], malformedPayloadReason: "BadRequestPayload")
        let request = RequestValidator.Request(headers: headers.map { (name: $0.0, value: $0.1) }, body: [])
        let result = validator.validate(request) { _ in .init(status: 403, reason: "MissingProviderToken") }
        guard case .failure(let rejection) = result else {
            Issue.record("expected a rejection")
            return
        }
        #expect(rejection.reason == reason)
    }

    @Test("canonical UUIDs: 8-4-4-4-12 hex, one case", arguments: [
        ("123e4567-e89b-12d3-a456-426614174000", true), ("123E4567-E89B-12D3-A456-426614174000", true),
        ("123e4567-E89B-12d3-a456-426614174000", false), ("123e4567e89b12d3a456426614174000", false),
        ("123e4567-e89b-12d3-a456-42661417400g", false), ("{123e4567-e89b-12d3-a456-426614174000}", false),
    ])
    func uuid(text: String, valid: Bool) {
        #expect(RequestValidator.isCanonicalUUID(text) == valid)
    }

    /// The word-at-a-time check of the fast path against the C library's `isxdigit` (the
    /// "C" locale's hex digits: `0`–`9`, `A`–`F`, `a`–`f`): every byte value at every
    /// position of a word and of the tail, and seeded random runs with few non-digits.
    @Test("areHexDigits agrees with isxdigit for every byte, in a word and in the tail")
    func hexDigitsAgainstLibc() {
        func reference(_ bytes: [UInt8]) -> Bool { bytes.allSatisfy { isxdigit(Int32($0)) != 0 } }
        var disagreements: [String] = []
        for length in [1, 7, 8, 9, 16, 19, 64] {
            for position in 0..<length {
                for byte in UInt8.min...UInt8.max {
                    var bytes = [UInt8](repeating: UInt8(ascii: "7"), count: length)
                    bytes[position] = byte
                    if bytes.withUnsafeBufferPointer(RequestValidator.areHexDigits) != reference(bytes) {
                        disagreements.append("byte \(byte) at \(position) of \(length)")
                    }
                }
            }
        }
        var generator = SplitMix(seed: 0x5eed)
        let alphabet = Array("0123456789abcdefABCDEF".utf8)
        for _ in 0..<20_000 {
            let length = Int(generator.next() % 80)
            var bytes = (0..<length).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] }
            if length > 0, generator.next() % 2 == 0 {
                bytes[Int(generator.next() % UInt64(length))] = UInt8(truncatingIfNeeded: generator.next())
            }
            if bytes.withUnsafeBufferPointer(RequestValidator.areHexDigits) != reference(bytes) {
                disagreements.append("\(bytes)")
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(10))")
    }
}

/// SplitMix64 (Steele, Lea and Flood 2014), for seeded inputs.
private struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
