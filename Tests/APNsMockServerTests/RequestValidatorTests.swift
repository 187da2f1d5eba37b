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
    /// position of a word and of the tail, and runs of mixed digits with one byte changed.
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
        // Runs up to 80 long of mixed digits (all 22 in any run of 22 or more), each also
        // with one byte replaced by each value, at a place that moves with the value.
        let alphabet = Array("0123456789abcdefABCDEF".utf8)
        for length in 1..<80 {
            let run = (0..<length).map { alphabet[($0 * 7 + length) % alphabet.count] }
            if run.withUnsafeBufferPointer(RequestValidator.areHexDigits) != reference(run) {
                disagreements.append("\(run)")
            }
            for byte in UInt8.min...UInt8.max {
                var bytes = run
                bytes[(length * 13 + Int(byte)) % length] = byte
                if bytes.withUnsafeBufferPointer(RequestValidator.areHexDigits) != reference(bytes) {
                    disagreements.append("\(bytes)")
                }
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(10))")
    }
}
