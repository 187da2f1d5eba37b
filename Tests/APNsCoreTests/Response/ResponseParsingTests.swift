import Foundation
import Testing

@testable import APNsCore

@Suite struct ResponseParsingTests {
    /// Apple's status/reason table (seed 000 table 8-6, plus the reasons Apple added since),
    /// with the string as Apple spells it.
    static let appleTable: [(Int, String, APNsReason)] = [
        (400, "BadCollapseId", .badCollapseID),
        (400, "BadDeviceToken", .badDeviceToken),
        (400, "BadExpirationDate", .badExpirationDate),
        (400, "BadMessageId", .badMessageID),
        (400, "BadPriority", .badPriority),
        (400, "BadTopic", .badTopic),
        (400, "DeviceTokenNotForTopic", .deviceTokenNotForTopic),
        (400, "DuplicateHeaders", .duplicateHeaders),
        (400, "IdleTimeout", .idleTimeout),
        (400, "InvalidPushType", .invalidPushType),
        (400, "MissingDeviceToken", .missingDeviceToken),
        (400, "MissingTopic", .missingTopic),
        (400, "PayloadEmpty", .payloadEmpty),
        (400, "TopicDisallowed", .topicDisallowed),
        (403, "BadCertificate", .badCertificate),
        (403, "BadCertificateEnvironment", .badCertificateEnvironment),
        (403, "ExpiredProviderToken", .expiredProviderToken),
        (403, "Forbidden", .forbidden),
        (403, "InvalidProviderToken", .invalidProviderToken),
        (403, "MissingProviderToken", .missingProviderToken),
        (403, "UnrelatedKeyIdInToken", .unrelatedKeyIDInToken),
        (403, "BadEnvironmentKeyIdInToken", .badEnvironmentKeyIDInToken),
        (403, "BadEnvironmentKeyInToken", .badEnvironmentKeyInToken),
        (404, "BadPath", .badPath),
        (405, "MethodNotAllowed", .methodNotAllowed),
        (410, "ExpiredToken", .expiredToken),
        (410, "Unregistered", .unregistered),
        (413, "PayloadTooLarge", .payloadTooLarge),
        (429, "TooManyProviderTokenUpdates", .tooManyProviderTokenUpdates),
        (429, "TooManyRequests", .tooManyRequests),
        (500, "InternalServerError", .internalServerError),
        (503, "ServiceUnavailable", .serviceUnavailable),
        (503, "Shutdown", .shutdown),
    ]

    static let broadcastReasons: [(String, APNsReason)] = [
        ("FeatureNotEnabled", .featureNotEnabled), ("MissingChannelId", .missingChannelID),
        ("BadChannelId", .badChannelID), ("ChannelNotRegistered", .channelNotRegistered),
        ("BadRequestParams", .badRequestParams), ("BadRequestPayload", .badRequestPayload),
        ("MissingPushType", .missingPushType), ("CannotCreateChannelConfig", .cannotCreateChannelConfig),
        ("TopicMismatch", .topicMismatch),
    ]

    /// The body APNs sends, written by Foundation's encoder (not ours).
    static func body(_ object: [String: Any]) throws -> [UInt8] {
        Array(try JSONSerialization.data(withJSONObject: object))
    }

    @Test func everyReasonInApplesTableParses() throws {
        for (status, string, reason) in Self.appleTable {
            #expect(reason.rawValue == string)
            #expect(reason.status == status, "\(string)")
            let response = APNsResponse(
                status: status,
                headers: [HeaderField(name: "apns-id", value: "EABEAE54-14A8-11E5-B60B-1697F925EC7B")],
                body: try Self.body(["reason": string])
            )
            let rejection = try #require(APNsRejection(response: response))
            #expect(rejection.status == status)
            #expect(rejection.reason == reason)
            #expect(rejection.apnsID?.uuidString == "eabeae54-14a8-11e5-b60b-1697f925ec7b")
            #expect(rejection.timestamp == nil)
        }
        for (string, reason) in Self.broadcastReasons {
            #expect(reason.rawValue == string)
        }
        #expect(APNsReason.documented.count == Self.appleTable.count + Self.broadcastReasons.count)
        #expect(Set(APNsReason.documented.map(\.reason)).count == APNsReason.documented.count)
    }

    @Test func appleListing8_5ErrorResponse() throws {
        // Seed 000 listing 8-5, spacing as printed.
        let response = APNsResponse(
            status: 400,
            headers: [HeaderField(name: "content-type", value: "application/json")],
            body: Array(#"{ "reason" : "BadDeviceToken" }"#.utf8)
        )
        let rejection = try #require(APNsRejection(response: response))
        #expect(rejection.reason == .badDeviceToken)
        #expect(rejection.remedy == .fixRequest)
    }

    @Test func goAwayDebugDataCarriesTheSameJSON() {
        // APNs may send the error JSON as a GOAWAY frame's debug data (seed 000, table 8-5).
        #expect(APNsReason(errorBody: Array(#"{"reason":"Shutdown"}"#.utf8)) == .shutdown)
        #expect(APNsReason(errorBody: Array("not json".utf8)) == nil)
        #expect(APNsReason(errorBody: Array(#"{"timestamp":1}"#.utf8)) == nil)
    }

    @Test func unknownReasonSurvivesAsItsString() throws {
        let response = APNsResponse(status: 400, body: try Self.body(["reason": "SomethingNew"]))
        let rejection = try #require(APNsRejection(response: response))
        #expect(rejection.reason?.rawValue == "SomethingNew")
        #expect(rejection.reason?.status == nil)
        #expect(rejection.remedy == .fixRequest)
        let gone = try #require(
            APNsRejection(response: APNsResponse(status: 410, body: try Self.body(["reason": "Vanished"])))
        )
        #expect(gone.remedy == .removeDeviceToken)
    }

    @Test func unregisteredTimestampIsMilliseconds() throws {
        let response = APNsResponse(
            status: 410,
            body: try Self.body(["reason": "Unregistered", "timestamp": 1_454_402_113_000])
        )
        let rejection = try #require(APNsRejection(response: response))
        #expect(rejection.reason == .unregistered)
        #expect(rejection.remedy == .removeDeviceToken)
        let formatter = ISO8601DateFormatter()
        // 2016-02-02T08:35:13Z, computed independently with Python's datetime.
        #expect(formatter.string(from: try #require(rejection.timestamp)) == "2016-02-02T08:35:13Z")
        // A fractional timestamp is accepted too.
        let fractional = try #require(
            APNsRejection(
                response: APNsResponse(
                    status: 410,
                    body: Array(#"{"reason":"ExpiredToken","timestamp":1700000000500.0}"#.utf8)
                )
            )
        )
        #expect(fractional.timestamp == Date(timeIntervalSince1970: 1_700_000_000.5))
    }

    @Test(arguments: [
        ("", 503),
        ("<html>Service Unavailable</html>", 503),
        ("{\"reason\":", 500),
        ("{}", 400),
        ("{\"timestamp\":1}", 410),
        ("[\"reason\",\"BadTopic\"]", 400),
        ("{\"reason\":42}", 403),
        ("\"BadTopic\"", 400),
        ("{\"reason\":\"BadTopic\"} trailing", 400),
    ])
    func bodyWithoutAReasonStillYieldsTheStatus(body: String, status: Int) throws {
        let rejection = try #require(APNsRejection(response: APNsResponse(status: status, body: Array(body.utf8))))
        #expect(rejection.status == status)
        #expect(rejection.reason == nil)
        #expect(rejection.remedy == APNsRemedy(reason: nil, status: status))
    }

    @Test func successCarriesIDAndUniqueID() throws {
        let request = try PushNotification(body: .raw(Array("{}".utf8)), topic: "a")
            .request(to: DeviceToken(hex: "abcd"), environment: .sandbox)
        // Seed 000 listing 8-4.
        let response = APNsResponse(
            status: 200,
            headers: [
                HeaderField(name: "apns-id", value: "eabeae54-14a8-11e5-b60b-1697f925ec7b"),
                HeaderField(name: "apns-unique-id", value: "a8b9a1c2-0000-4000-8000-000000000001"),
            ]
        )
        let accepted = try #require(APNsAccepted(response: response, request: request))
        #expect(accepted.apnsID?.uuidString == "eabeae54-14a8-11e5-b60b-1697f925ec7b")
        #expect(accepted.uniqueID == "a8b9a1c2-0000-4000-8000-000000000001")
        #expect(APNsRejection(response: response) == nil)
        // Without an echoed apns-id, the request's stands in.
        let bare = try #require(APNsAccepted(response: APNsResponse(status: 200), request: request))
        #expect(bare.apnsID == request.apnsID)
        #expect(bare.uniqueID == nil)
        #expect(APNsAccepted(response: APNsResponse(status: 410), request: request) == nil)
    }

    // The remedy table in APNsRemedy's documentation, following Apple's retry guidance.
    @Test func remedies() {
        let table: [(APNsReason, APNsRemedy)] = [
            (.unregistered, .removeDeviceToken), (.expiredToken, .removeDeviceToken),
            (.tooManyRequests, .retryLater), (.internalServerError, .retryLater),
            (.serviceUnavailable, .retryLater), (.shutdown, .retryLater), (.idleTimeout, .retryLater),
            (.expiredProviderToken, .fixCredentials), (.invalidProviderToken, .fixCredentials),
            (.forbidden, .fixCredentials), (.badCertificate, .fixCredentials),
            (.tooManyProviderTokenUpdates, .fixCredentials),
            // The 2025 key rules (environment-scoped, topic-specific keys; keys pinned per connection).
            (.badEnvironmentKeyIDInToken, .fixCredentials), (.badEnvironmentKeyInToken, .fixCredentials),
            (.unrelatedKeyIDInToken, .fixCredentials), (.topicDisallowed, .fixRequest),
            (.badDeviceToken, .fixRequest), (.deviceTokenNotForTopic, .fixRequest),
            (.payloadTooLarge, .fixRequest), (.badTopic, .fixRequest), (.methodNotAllowed, .fixRequest),
        ]
        for (reason, remedy) in table {
            #expect(APNsRemedy(reason: reason, status: reason.status ?? 400) == remedy, "\(reason)")
        }
        #expect(APNsRemedy(reason: nil, status: 502) == .retryLater)
        #expect(APNsRemedy(reason: nil, status: 429) == .retryLater)
        #expect(APNsRemedy(reason: nil, status: 403) == .fixCredentials)
    }

    @Test func descriptionRedactsTheDeviceToken() throws {
        let token = try DeviceToken(hex: "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0")
        let rejection = APNsRejection(status: 410, reason: .unregistered, deviceToken: token)
        #expect(rejection.description == "410 Unregistered for device token 00fc13ad…")
        // With the apns-id Apple's developer support asks for.
        let identified = APNsRejection(
            status: 400, reason: .badDeviceToken, apnsID: try APNsID("123e4567-e89b-12d3-a456-4266554400a0"), deviceToken: token)
        #expect(identified.description == "400 BadDeviceToken for device token 00fc13ad… (apns-id 123e4567-e89b-12d3-a456-4266554400a0)")
    }
}

/// Fuzz finding (scripts/fuzz.sh, target response): the error-body reader turned invalid
/// UTF-8 inside a string into U+FFFD and reported a reason. RFC 8259 §8.1 requires UTF-8,
/// and Python's json module, an independent parser, refuses these bytes too; the body is
/// not a JSON object, so no reason is read (the status still is).
@Suite struct ErrorBodyUTF8Tests {
    static let invalid: [[UInt8]] = [
        Array(#"{"reason":"ServiceUnavai"#.utf8) + [0x85, 0x85] + Array(#"lable"}"#.utf8),  // stray continuation bytes
        Array(#"{"reason":"Bad"#.utf8) + [0xC3] + Array(#""}"#.utf8),  // truncated sequence
        Array(#"{"reason":"x","other":""#.utf8) + [0xFF] + Array(#""}"#.utf8),  // in a skipped member
        Array(#"{"reason":""#.utf8) + [0xED, 0xA0, 0x80] + Array(#""}"#.utf8),  // encoded surrogate
    ]

    @Test(arguments: invalid)
    func invalidUTF8IsNotAReason(body: [UInt8]) throws {
        #expect(APNsReason(errorBody: body) == nil)
        let rejection = try #require(APNsRejection(response: APNsResponse(status: 503, body: body)))
        #expect(rejection.status == 503)
        #expect(rejection.reason == nil)
    }

    @Test func validMultibyteTextIsStillRead() {
        #expect(APNsReason(errorBody: Array(#"{"reason":"Café ☕ 😀"}"#.utf8))?.rawValue == "Café ☕ 😀")
    }
}

@Suite struct ResponseAsReadTests {
    static let id = "eabeae54-14a8-11e5-b60b-1697f925ec7b"

    /// A response as the transport reads it (the apns-id as 128 bits, the error body parsed
    /// once) reads like the same response built from header strings.
    @Test func aResponseReadByTheTransportEqualsTheOneBuiltFromStrings() throws {
        let body = Array(#"{"reason":"Unregistered","timestamp":1700000000000}"#.utf8)
        let read = APNsResponse(
            status: 410,
            apnsID: try APNsID(Self.id),
            apnsIDIndex: 1,
            otherHeaders: [HeaderField(name: "apns-unique-id", value: "u1"), HeaderField(name: "x-extra", value: "2")],
            body: body
        )
        let built = APNsResponse(
            status: 410,
            headers: [
                HeaderField(name: "apns-unique-id", value: "u1"),
                HeaderField(name: "apns-id", value: Self.id),
                HeaderField(name: "x-extra", value: "2"),
            ],
            body: body
        )
        #expect(read.headers == built.headers)
        #expect(read == built)
        #expect(read.hashValue == built.hashValue)
        #expect(read.header("apns-id") == Self.id)
        #expect(read.apnsID == built.apnsID)
        #expect(read.errorBody?.reason == "Unregistered")
        let rejection = try #require(APNsRejection(response: read))
        #expect(rejection == APNsRejection(response: built))
        #expect(rejection.reason == .unregistered)
        #expect(rejection.apnsID == (try APNsID(Self.id)))
        #expect(rejection.timestamp == Date(timeIntervalSince1970: 1_700_000_000))
    }

    @Test func aChangedBodyIsParsedAgain() {
        var response = APNsResponse(
            status: 400,
            apnsID: nil,
            apnsIDIndex: 0,
            otherHeaders: [],
            body: Array(#"{"reason":"BadTopic"}"#.utf8)
        )
        #expect(APNsRejection(response: response)?.reason == .badTopic)
        response.body = Array(#"{"reason":"MissingTopic"}"#.utf8)
        #expect(APNsRejection(response: response)?.reason == .missingTopic)
        response.headers = [HeaderField(name: "apns-id", value: Self.id)]
        #expect(response.header("apns-id") == Self.id)
    }
}
