import APNsCore
import Foundation
import Testing
@testable import APNsMockServer

/// The mock server with real ES256 verification: tokens from APNsCore's cache are
/// accepted when their key is registered, and refused when signed by another key.
@Suite("ES256 token check")
struct ES256SignatureCheckTests {
    @Test("tokens signed by the registered key pass; another key's tokens are InvalidProviderToken")
    func signatureCheck() async throws {
        let registered = try ProviderKey.generate()
        let stranger = try ProviderKey.generate()
        var keys = ProviderTokenVerifier()
        keys.register(registered, keyID: "ABC123DEFG")
        let configuration = MockAPNsServer.Configuration(
            bundleIDs: ["com.example.app"],
            authentication: .providerToken(.signature(keys)))

        let good = try ProviderTokenCache(key: registered, keyID: "ABC123DEFG", teamID: "DEF123GHIJ").token()
        let forged = try ProviderTokenCache(key: stranger, keyID: "ABC123DEFG", teamID: "DEF123GHIJ").token()
        let unknownKeyID = try ProviderTokenCache(key: registered, keyID: "ZZZ999ZZZZ", teamID: "DEF123GHIJ").token()

        try await withServerAndCurl(configuration) { server, curl in
            for (token, status, reason) in [
                (good, 200, nil),
                (forged, 403, "InvalidProviderToken"),
                (unknownKeyID, 403, "InvalidProviderToken"),
            ] as [(ProviderToken, Int, String?)] {
                let response = try await curl.send(
                    port: server.port, path: "/3/device/\(sampleDeviceToken)",
                    headers: ["apns-topic: com.example.app", "authorization: \(token.authorizationValue)"])
                #expect(response.status == status)
                #expect(response.reason == reason)
            }
        }
    }
}
