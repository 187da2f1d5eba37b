import Foundation
import Testing
@testable import APNsTransport

/// The connection keeps a response's `apns-id` as 128 bits; what the caller reads must be
/// exactly what an nghttp2 server session sent, whether it echoes the request's id or not.
@Suite("A response's apns-id, read without a String, against an nghttp2 server session")
struct ResponseAPNsIDTests {
    static let sent = "eabeae54-14a8-11e5-b60b-1697f925ec7b"

    /// A device push built by the client's path (its parts, not header strings).
    static func push() throws -> APNsRequest {
        try PushNotification(
            body: .raw(Array(#"{"aps":{"alert":"Hello"}}"#.utf8)),
            topic: .explicit("com.example.app"),
            apnsID: try APNsID(sent)
        ).request(
            to: try DeviceToken(hex: String(repeating: "ab", count: 32)),
            environment: .custom(host: "api.push.apple.com", port: 443),
            authorization: "bearer eyJhbGciOiJFUzI1NiIsImtpZCI6IkFCQzEyMzRERUYifQ.e30.sig"
        )
    }

    @Test(
        "the echo, another id, an uppercase id and a malformed one each read back as sent",
        arguments: [
            sent,  // the echo of the request's id
            "00000000-0000-4000-8000-000000000001",  // another id
            "EABEAE54-14A8-11E5-B60B-1697F925EC7B",  // uppercase: kept as text
            "not-a-uuid",  // kept as text; no id
        ]
    )
    func apnsIDReadsBackAsSent(answer: String) throws {
        let client = try HTTP2ConnectionStateMachine()
        let server = InMemoryHTTP2Server(maxConcurrentStreams: 10)
        try exchange(client, server)
        let request = try Self.push()
        let stream = try client.submit(request)
        try exchange(client, server)
        server.respond(stream, status: 200, headers: [("apns-unique-id", "u-1"), ("apns-id", answer)])
        let events = try exchange(client, server)
        let response = try #require(
            events.lazy.compactMap { event -> APNsResponse? in
                if case .response(stream, let response) = event { return response }
                return nil
            }.first
        )
        // What the server sent, in its order, as strings.
        #expect(response.headers == [HeaderField(name: "apns-unique-id", value: "u-1"), HeaderField(name: "apns-id", value: answer)])
        #expect(response.header("apns-id") == answer)
        #expect(response == APNsResponse(status: 200, headers: response.headers))
        let accepted = try #require(APNsAccepted(response: response, request: request))
        // Foundation decides what is a UUID; an answer that is none leaves the request's id.
        let expected = Foundation.UUID(uuidString: answer).map { APNsID($0) } ?? request.apnsID
        #expect(accepted.apnsID == expected)
        #expect(accepted.uniqueID == "u-1")
    }
}
