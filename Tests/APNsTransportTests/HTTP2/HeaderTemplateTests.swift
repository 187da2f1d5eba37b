import CNGHTTP2
import Foundation
import Testing
@testable import APNsCore
@testable import APNsTransport

/// The header blocks a connection keeps per notification (``HeaderTemplates``): the next
/// request of a notification overwrites only its token's digits and its `apns-id`. What
/// an nghttp2 server session decodes must be exactly what each request says, whatever
/// the order of notifications, tokens, provider tokens and table sizes.
@Suite("Header templates: each request arrives with its own path and apns-id")
struct HeaderTemplateTests {
    /// The path a device push must have, written here without the SDK.
    static func expectedPath(_ bytes: [UInt8]) -> String {
        "/3/device/" + bytes.map { String(format: "%02x", $0) }.joined()
    }

    /// `count` device tokens of `length` bytes, different from each other.
    static func tokens(_ count: Int, length: Int = 32, seed: UInt8 = 0) -> [[UInt8]] {
        (0..<count).map { index in
            (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index &* 7 &+ Int(seed)) }
        }
    }

    /// One request to send and what the server must receive for it.
    struct Case {
        var request: APNsRequest
        var path: String
        var apnsID: UUID
        var authorization: String
    }

    static func makeCase(
        _ notification: PushNotification,
        token bytes: [UInt8],
        authorization: String = "bearer eyJhbGciOiJFUzI1NiJ9.e30.first"
    ) throws -> Case {
        var notification = notification
        let uuid = UUID()
        notification.apnsID = APNsID(uuid)
        let request = try notification.request(
            to: DeviceToken(bytes: bytes),
            environment: .production,
            authorization: authorization
        )
        return Case(request: request, path: expectedPath(bytes), apnsID: uuid, authorization: authorization)
    }

    /// The same request as a general one (path and headers given as strings), which the
    /// connection always writes in full: the reference for names, values and flags.
    static func general(_ request: APNsRequest) throws -> APNsRequest {
        let headers = request.headers.filter { !$0.name.hasPrefix(":") }
        return try APNsRequest(method: request.method, authority: request.authority, path: request.path, headers: headers, body: request.body)
    }

    /// Sends `requests` one connection, each exchanged with the server at once, and
    /// returns what the server decoded for each, in order.
    static func send(
        _ requests: [APNsRequest],
        headerTableSize: UInt32? = nil,
        changeTableSize: (after: Int, to: UInt32)? = nil
    ) throws -> [[InMemoryHTTP2Server.ReceivedHeader]] {
        let client = try HTTP2ConnectionStateMachine()
        let server = InMemoryHTTP2Server(maxConcurrentStreams: 1_000, headerTableSize: headerTableSize)
        try exchange(client, server)
        var received: [[InMemoryHTTP2Server.ReceivedHeader]] = []
        for (index, request) in requests.enumerated() {
            if let change = changeTableSize, change.after == index {
                server.submitSettings(headerTableSize: change.to)
                try exchange(client, server)
            }
            let id = try client.submit(request)
            try exchange(client, server)
            received.append(try #require(server.headers[id]))
            #expect(server.bodies[id] == request.body)
        }
        return received
    }

    /// Checks what the server decoded against the case, and against the reference.
    static func check(
        _ received: [InMemoryHTTP2Server.ReceivedHeader],
        _ reference: [InMemoryHTTP2Server.ReceivedHeader],
        _ testCase: Case,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let values = Dictionary(received.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
        #expect(values[":path"] == testCase.path, sourceLocation: sourceLocation)
        #expect(values["apns-id"]?.lowercased() == testCase.apnsID.uuidString.lowercased(), sourceLocation: sourceLocation)
        #expect(values["authorization"] == testCase.authorization, sourceLocation: sourceLocation)
        #expect(received == reference, sourceLocation: sourceLocation)
    }

    @Test("one notification to 50 devices, then a new provider token, on one connection")
    func oneNotificationManyDevices() throws {
        let notification = PushNotification(payload: .alert(title: "Game Request", body: "Bob wants to play poker"), topic: "com.example.app")
        let tokens = Self.tokens(50)
        var cases = try tokens[..<30].map { try Self.makeCase(notification, token: $0) }
        cases += try tokens[30...].map { try Self.makeCase(notification, token: $0, authorization: "bearer eyJhbGciOiJFUzI1NiJ9.e30.second") }
        let received = try Self.send(cases.map(\.request))
        let reference = try Self.send(cases.map { try Self.general($0.request) })
        for index in cases.indices {
            Self.check(received[index], reference[index], cases[index])
        }
        // The policy's flags (Apple's advice: per-request values stay out of the table).
        for headers in received.dropFirst() {
            let flagged = Set(headers.filter(\.neverIndexed).map(\.name))
            #expect(flagged.isSuperset(of: [":path", "authorization", "apns-id"]))
            #expect(flagged.isDisjoint(with: [":method", ":scheme", ":authority", "apns-topic", "apns-push-type", "apns-priority"]))
        }
    }

    @Test("six notifications in turn (more than a connection keeps), tokens of 32 and 80 bytes")
    func notificationsInTurn() throws {
        var notifications: [PushNotification] = []
        for index in 0..<6 {
            let topic: Topic = index % 2 == 0 ? "com.example.app" : "com.example.other"
            let date = Date(timeIntervalSince1970: 1_900_000_000 + Double(index))
            let expiration: Expiration = index % 3 == 0 ? .none : .at(date)
            let collapseID: String? = index == 4 ? "score" : nil
            notifications.append(
                PushNotification(payload: .alert(body: "Message \(index)"), topic: topic, expiration: expiration, collapseID: collapseID)
            )
        }
        let short = Self.tokens(18, length: 32, seed: 1)
        let long = Self.tokens(18, length: 80, seed: 2)
        var cases: [Case] = []
        for round in 0..<3 {
            for (index, notification) in notifications.enumerated() {
                let bytes = (round + index) % 2 == 0 ? short[round * 6 + index] : long[round * 6 + index]
                cases.append(try Self.makeCase(notification, token: bytes))
            }
        }
        let received = try Self.send(cases.map(\.request))
        let reference = try Self.send(cases.map { try Self.general($0.request) })
        for index in cases.indices {
            Self.check(received[index], reference[index], cases[index])
        }
    }

    @Test("a new SETTINGS_HEADER_TABLE_SIZE mid-connection: later requests follow the new table's decisions")
    func tableSizeChange() throws {
        let notification = PushNotification(payload: .alert(body: "Hello"), topic: "com.example.app")
        let cases = try Self.tokens(8).map { try Self.makeCase(notification, token: $0) }
        let received = try Self.send(cases.map(\.request), changeTableSize: (after: 4, to: 0))
        let reference = try Self.send(cases.map { try Self.general($0.request) }, changeTableSize: (after: 4, to: 0))
        for index in cases.indices {
            Self.check(received[index], reference[index], cases[index])
        }
        // With no table, nothing is indexed any more: every field outside the static
        // table's exact entries is a literal the server may not index.
        let after = Set(received[7].filter(\.neverIndexed).map(\.name))
        let before = Set(received[3].filter(\.neverIndexed).map(\.name))
        #expect(after.isStrictSuperset(of: before), "before: \(before), after: \(after)")
    }
}
