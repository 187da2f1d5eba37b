import Foundation
import Testing

@testable import APNsCore

/// A device push keeps its parts and writes its header values into one buffer; these
/// tests hold it to Apple's listing and to a request built header by header.
@Suite struct HeaderBlockTests {
    static let token = "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0"

    static func devicePush() throws -> APNsRequest {
        try RequestBuildingTests.appleNotification().request(
            to: try DeviceToken(hex: token),
            environment: .custom(host: RequestBuildingTests.host, port: 443),
            authorization: RequestBuildingTests.authorization
        )
    }

    @Test func theBufferHoldsEveryNameAndValueOfTheListing() throws {
        let request = try Self.devicePush()
        var bytes: [UInt8] = []
        var fields: [WrittenHeader] = []
        request.writeHeaders(into: &bytes, fields: &fields)
        let written = fields.map { field in
            String(decoding: bytes[field.nameStart..<field.valueStart], as: UTF8.self) + ": "
                + String(decoding: bytes[field.valueStart..<field.valueEnd], as: UTF8.self)
        }
        // Seed 000 listing 8-2: the same pairs, in the same order.
        #expect(written == RequestBuildingTests.pairs(request))
        #expect(written.contains(":path: /3/device/\(Self.token)"))
        #expect(written.contains("apns-id: \(RequestBuildingTests.apnsID)"))
        #expect(fields.map(\.name) == request.headers.map(\.name))
        #expect(request.headerCount == fields.count)
        #expect(request.path == "/3/device/\(Self.token)")
        #expect(request.isDevicePush)
    }

    @Test func aDevicePushEqualsTheSameRequestBuiltHeaderByHeader() throws {
        let push = try Self.devicePush()
        let general = try APNsRequest(
            method: .post,
            authority: RequestBuildingTests.host,
            path: "/3/device/\(Self.token)",
            headers: push.headers.filter { !$0.name.hasPrefix(":") },
            body: Array(RequestBuildingTests.body.utf8),
            apnsID: try APNsID(RequestBuildingTests.apnsID),
            deviceToken: try DeviceToken(hex: Self.token)
        )
        #expect(!general.isDevicePush)
        #expect(push == general)
        #expect(push.hashValue == general.hashValue)
        var pushBytes: [UInt8] = []
        var generalBytes: [UInt8] = []
        var fields: [WrittenHeader] = []
        push.writeHeaders(into: &pushBytes, fields: &fields)
        general.writeHeaders(into: &generalBytes, fields: &fields)
        #expect(pushBytes == generalBytes)
    }

    @Test func theAuthorizationIsReadWithoutBuildingTheHeaderList() throws {
        let push = try Self.devicePush()
        #expect(push.authorization == RequestBuildingTests.authorization)
        #expect(push.authorization == push.headers.first { $0.name == "authorization" }?.value)
        let unauthenticated = try RequestBuildingTests.appleNotification().request(
            to: try DeviceToken(hex: Self.token),
            environment: .custom(host: RequestBuildingTests.host, port: 443)
        )
        #expect(unauthenticated.authorization == nil)
        #expect(!unauthenticated.headers.contains { $0.name == "authorization" })
    }

    @Test func reusedBuffersAreEmptiedFirst() throws {
        let request = try Self.devicePush()
        var bytes: [UInt8] = Array("left over".utf8)
        var fields: [WrittenHeader] = [WrittenHeader(name: "x", nameStart: 0, valueStart: 1, valueEnd: 2)]
        request.writeHeaders(into: &bytes, fields: &fields)
        let once = bytes
        request.writeHeaders(into: &bytes, fields: &fields)
        #expect(bytes == once)
        #expect(fields.first?.nameStart == 0)
        #expect(String(decoding: bytes.prefix(7), as: UTF8.self) == ":method")
    }

    @Test func aNotificationChangedAfterASendIsPreparedAgain() throws {
        var notification = try RequestBuildingTests.appleNotification()
        let token = try DeviceToken(hex: Self.token)
        let first = try notification.request(to: token, environment: .sandbox)
        let copy = notification
        notification.topic = .explicit("com.example.Other")
        notification.priority = .powerConsiderate
        let second = try notification.request(to: token, environment: .sandbox)
        #expect(first.header("apns-topic") == "com.example.MyApp")
        #expect(second.header("apns-topic") == "com.example.Other")
        #expect(second.header("apns-priority") == "5")
        // The copy made before the change keeps its own values.
        #expect(try copy.request(to: token, environment: .sandbox).header("apns-topic") == "com.example.MyApp")
        notification.body = .raw(Array(#"{"aps":{}}"#.utf8))
        #expect(try notification.request(to: token, environment: .sandbox).body == Array(#"{"aps":{}}"#.utf8))
    }
}
