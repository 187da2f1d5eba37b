import APNsCore
import APNsPayload
import Foundation

/// APNs responses: any status, headers and body give a rejection exactly when the status
/// is not 200, and the reason read from an error body (or from GOAWAY debug data, which
/// the transport reads with the same `APNsReason(errorBody:)`) is the one Foundation's
/// parser finds.
enum ResponseTarget {
    static let name = "response"
    static let statuses = [200, 400, 403, 404, 405, 410, 413, 429, 500, 503]

    static func run(_ data: [UInt8]) {
        var input = FuzzInput(data)
        let status = input.int(below: 4) == 0 ? Int(input.byte()) << 8 | Int(input.byte()) : statuses.pick(&input)
        var headers: [HeaderField] = []
        if input.bool() { headers.append(HeaderField(name: "apns-id", value: input.bool() ? "5D8C9A2E-3F1B-4A2C-9D8E-7F6A5B4C3D2E" : input.string(maxLength: 40))) }
        if input.bool() { headers.append(HeaderField(name: "apns-request-id", value: input.string(maxLength: 40))) }
        let body = input.bytes(data.count)
        let response = APNsResponse(status: status, headers: headers, body: body)

        let rejection = APNsRejection(response: response)
        require((rejection == nil) == (status == 200), name, "status \(status): rejection \(String(describing: rejection))")
        let reason = APNsReason(errorBody: body)
        if let rejection {
            require(rejection.reason == reason, name, "rejection reason \(String(describing: rejection.reason)) differs from the error body's \(String(describing: reason))")
            _ = rejection.remedy
            _ = "\(rejection)"
            if let timestamp = rejection.timestamp {
                require(timestamp.timeIntervalSince1970.isFinite, name, "a timestamp that is not finite")
            }
        }

        // Against Foundation. Repeated "reason" keys or escaped key names could make the
        // two readers pick different members legitimately; those bodies are skipped.
        let foundation = FoundationJSON.parse(body)
        if reason != nil, !hasNumberBeyondDouble(body) {
            require(foundation is [String: Any], name, "we read a reason from a body JSONSerialization refuses as an object: \(String(decoding: body, as: UTF8.self))")
        }
        let ambiguous = occurrences(of: Array("eason".utf8), in: body) > 1 || occurrences(of: Array("\\u".utf8), in: body) > 0
        // Foundation is lenient (it accepts a trailing comma, `{"reason":"x",}`, which
        // RFC 8259 §4 does not), so it is trusted only where our strict JSON parser, a
        // separate implementation in APNsPayload, agrees the body is JSON.
        let strict = (try? JSONValue(jsonBytes: body)) != nil
        if !ambiguous, strict, let dictionary = foundation as? [String: Any] {
            let theirs = dictionary["reason"] as? String
            require(reason?.rawValue == theirs, name, "reason \(String(describing: reason?.rawValue)) but JSONSerialization reads \(String(describing: theirs)) in \(String(decoding: body, as: UTF8.self))")
        }
    }

    /// Whether `body` holds a number Foundation refuses for its range (a 3-digit
    /// exponent, or 300 digits or more in a row), though its grammar is JSON's: RFC 8259 §6
    /// lets a reader limit the range, and an APNs timestamp like `1e400` is read as absent
    /// while the reason is kept (found by this target: `"timestamp":1111008e7734100`).
    static func hasNumberBeyondDouble(_ body: [UInt8]) -> Bool {
        var digitRun = 0
        for index in body.indices {
            let byte = body[index]
            if byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
                digitRun += 1
                if digitRun >= 300 { return true }
                continue
            }
            if (byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")), digitRun > 0 {
                var next = index + 1
                if next < body.count, body[next] == UInt8(ascii: "+") || body[next] == UInt8(ascii: "-") { next += 1 }
                var exponentDigits = 0
                while next < body.count, body[next] >= UInt8(ascii: "0"), body[next] <= UInt8(ascii: "9") {
                    exponentDigits += 1
                    next += 1
                }
                if exponentDigits >= 3 { return true }
            }
            digitRun = 0
        }
        return false
    }

    static func occurrences(of needle: [UInt8], in haystack: [UInt8]) -> Int {
        guard haystack.count >= needle.count else { return 0 }
        var count = 0
        for start in 0...(haystack.count - needle.count) where haystack[start..<start + needle.count].elementsEqual(needle) {
            count += 1
        }
        return count
    }
}
