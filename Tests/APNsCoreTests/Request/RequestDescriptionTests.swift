import Foundation
import Testing
@testable import APNsCore

/// What a failed expectation, a log line or `dump(_:)` shows of a request and a provider
/// token: enough to see which request it was, never a credential or a whole device token.
@Suite("Descriptions of requests and provider tokens")
struct RequestDescriptionTests {
    static let tokenHex = "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0"

    static func signedToken() throws -> ProviderToken {
        let cache = try ProviderTokenCache(key: try ProviderKey.generate(), keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
        return try cache.token()
    }

    static func request(authorization: String?) throws -> APNsRequest {
        var notification = PushNotification(payload: .alert(body: "Hello"), topic: "com.example.app")
        notification.apnsID = try APNsID("123E4567-E89B-12D3-A456-4266554400A0")
        return try notification.request(
            to: try DeviceToken(hex: tokenHex), environment: .production, authorization: authorization)
    }

    @Test("a request's description names its method, redacted path, topic, push type and apns-id")
    func requestDescription() throws {
        let jwt = try Self.signedToken().jwt
        let request = try Self.request(authorization: "bearer " + jwt)
        let text = request.description
        #expect(text.hasPrefix("POST /3/device/00fc13ad"), "\(text)")
        #expect(text.contains("apns-topic: com.example.app"), "\(text)")
        #expect(text.contains("apns-push-type: alert"), "\(text)")
        #expect(text.contains("apns-id: 123e4567-e89b-12d3-a456-4266554400a0") || text.contains("apns-id: 123E4567-E89B-12D3-A456-4266554400A0"), "\(text)")
        #expect(text.contains("\(request.body.count)-byte body"), "\(text)")
        #expect(!text.contains(Self.tokenHex), "\(text)")
        #expect(!text.contains(jwt), "\(text)")
        #expect(text.contains("authorization: bearer <redacted>"), "\(text)")
    }

    @Test("dump() of a request or a provider token shows neither the JWT nor the whole device token")
    func dumpHidesSecrets() throws {
        let token = try Self.signedToken()
        var dumped = ""
        dump(token, to: &dumped)
        #expect(!dumped.contains(token.jwt), "\(dumped)")
        #expect(dumped.contains("ABC123DEFG"), "\(dumped)")
        // The JWT's signature alone (its third part) must not show either.
        let signature = try #require(token.jwt.split(separator: ".").last)
        let request = try Self.request(authorization: "bearer " + token.jwt)
        var dumpedRequest = ""
        dump(request, to: &dumpedRequest)
        #expect(!dumpedRequest.contains(signature), "\(dumpedRequest)")
        #expect(!dumpedRequest.contains(Self.tokenHex), "\(dumpedRequest)")
        #expect(dumpedRequest.contains("com.example.app"), "\(dumpedRequest)")
        #expect(!String(reflecting: request).contains(signature))
    }
}
