import Foundation
import Testing

@testable import APNsCore

/// The error-body reader agrees with Foundation's JSONSerialization (an independent parser).
@Suite struct ErrorBodyReaderTests {
    static let bodies: [String] = [
        #"{"reason":"BadDeviceToken"}"#,
        #"  {  "reason"  :  "BadDeviceToken"  }  "#,
        "{\n\t\"reason\":\r\n\"Unregistered\",\n\"timestamp\":1454402113000\n}",
        #"{"timestamp":1454402113000,"reason":"Unregistered"}"#,
        #"{"reason":"Bad\"Quote\\Back\/slash\n\t\b\f\r"}"#,
        #"{"reason":"\u00e9\u4e2d\ud83d\ude00"}"#,
        #"{"reason":"é中😀"}"#,
        #"{"extra":{"a":[1,2,{"b":null}],"c":true,"d":false},"reason":"X","more":[]}"#,
        #"{"reason":"X","timestamp":1.5e3}"#,
        #"{"reason":"X","timestamp":-0.25E-1}"#,
        #"{"reason":"X","timestamp":0}"#,
        #"{"reason":"X","timestamp":"1454402113000"}"#,
        #"{"reason":null}"#,
        #"{"reason":"first","reason":"second"}"#,
        #"{}"#,
    ]

    static let malformed: [String] = [
        "", "   ", "{", "}", "[]", "null", "\"reason\"", "{\"reason\"}", "{\"reason\":}",
        "{reason:\"x\"}", "{'reason':'x'}", "{\"reason\":\"x\"}{}", "{\"reason\":\"\\x\"}", "{\"reason\":\"\\u12\"}",
        "{\"reason\":\"x\",\"timestamp\":01}", "{\"reason\":\"x\",\"timestamp\":1.}",
        "{\"reason\":\"x\",\"timestamp\":.5}",
        "{\"reason\":\"x\",\"timestamp\":+1}", "{\"a\":tru}", "{\"reason\":\"a\u{01}b\"}",
        "{\"reason\":\"\\ud83d\"}",
    ]

    @Test(arguments: bodies)
    func agreesWithJSONSerialization(body: String) throws {
        let data = Data(body.utf8)
        let foundation = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let ours = try #require(APNsErrorBody(parsing: Array(body.utf8)))
        #expect(ours.reason == foundation["reason"] as? String)
        let foundationTimestamp = (foundation["timestamp"] as? NSNumber)?.doubleValue
        if foundation["timestamp"] is String {
            #expect(ours.timestamp == nil)
        } else {
            // The reader keeps only timestamps an APNs answer can carry (2008 to 2100).
            let plausible = foundationTimestamp.flatMap { APNsErrorBody.plausibleTimestamps.contains($0) ? $0 : nil }
            #expect(ours.timestamp == plausible)
        }
    }

    /// A 410 whose `timestamp` is negative, absurd or beyond `Double` keeps its reason and
    /// has no timestamp, never a `Date` in year 10^289 (RFC 8259 §6 allows any such number).
    @Test(arguments: ["-1", "-1454402113000", "1e20", "1e300", "1e400", "-1e400", "5e-324", "0"])
    func implausibleTimestampIsAbsentAndTheReasonStays(timestamp: String) throws {
        let body = #"{"reason":"Unregistered","timestamp":"# + timestamp + "}"
        let parsed = try #require(APNsErrorBody(parsing: Array(body.utf8)))
        #expect(parsed.reason == "Unregistered")
        #expect(parsed.timestamp == nil)
        let response = APNsResponse(status: 410, headers: [], body: Array(body.utf8))
        let rejection = try #require(APNsRejection(response: response))
        #expect(rejection.reason == .unregistered)
        #expect(rejection.timestamp == nil)
    }

    /// Apple's example timestamp (the *Local and Remote Notification Programming Guide*'s
    /// 410 body) is kept: 1454402113000 ms is 2016-02-02 08:35:13 UTC.
    @Test func applesExampleTimestampIsKept() throws {
        let body = Array(#"{"reason":"Unregistered","timestamp":1454402113000}"#.utf8)
        let rejection = try #require(APNsRejection(response: APNsResponse(status: 410, headers: [], body: body)))
        let expected = try #require(ISO8601DateFormatter().date(from: "2016-02-02T08:35:13Z"))
        #expect(rejection.timestamp == expected)
    }

    @Test(arguments: malformed)
    func rejectsWhatJSONSerializationRejects(body: String) {
        let foundation = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
        #expect(foundation == nil, "Foundation accepted \(body.debugDescription)")
        #expect(APNsErrorBody(parsing: Array(body.utf8)) == nil)
    }

    @Test func trailingCommaIsRejectedAsRFC8259Says() {
        // RFC 8259 §4: members are separated by commas; Foundation on Linux tolerates a
        // trailing one, so this case is checked against the RFC's grammar only.
        #expect(APNsErrorBody(parsing: Array("{\"reason\":\"x\",}".utf8)) == nil)
        #expect(APNsErrorBody(parsing: Array("{\"a\":[1,],\"reason\":\"x\"}".utf8)) == nil)
    }

    @Test func deepNestingDoesNotCrash() {
        let deep =
            "{\"a\":" + String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
            + ",\"reason\":\"X\"}"
        #expect(APNsErrorBody(parsing: Array(deep.utf8)) == nil)
        let fine =
            "{\"a\":" + String(repeating: "[", count: 20) + String(repeating: "]", count: 20) + ",\"reason\":\"X\"}"
        #expect(APNsErrorBody(parsing: Array(fine.utf8))?.reason == "X")
    }

    @Test func arbitraryBytesNeverCrash() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("{}[]\":,\\u0123456789.eE+-truefalsnl reason timestamp".utf8) + [0xFF, 0xC3, 0x00]
        for _ in 0..<2000 {
            let length = Int.random(in: 0...40, using: &generator)
            let bytes = (0..<length).map { _ in alphabet.randomElement(using: &generator) ?? 0 }
            _ = APNsErrorBody(parsing: bytes)
        }
    }
}
