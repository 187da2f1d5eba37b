import APNsCore
import Foundation
import Testing
@testable import APNsMockServer

/// The mock server with real ES256 verification: tokens from APNsCore's cache are
/// accepted when their key is registered, and refused when signed by another key.
@Suite("ES256 token check")
struct ES256SignatureCheckTests {
    @Test("tokens signed by the registered key for its team pass; another key's, or another team's, are InvalidProviderToken")
    func signatureCheck() async throws {
        let providerKey = try ProviderKey.generate()
        let stranger = try ProviderKey.generate()
        // As IntegrationTestingWithTheMockServer.md shows it:
        var keys = ProviderTokenVerifier()
        keys.register(providerKey, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
        let configuration = MockAPNsServer.Configuration(
            bundleIDs: ["com.example.app"], authentication: .providerToken(.signature(keys)))

        let good = try ProviderTokenCache(key: providerKey, keyID: "ABC123DEFG", teamID: "DEF123GHIJ").token()
        let forged = try ProviderTokenCache(key: stranger, keyID: "ABC123DEFG", teamID: "DEF123GHIJ").token()
        let unknownKeyID = try ProviderTokenCache(key: providerKey, keyID: "ZZZ999ZZZZ", teamID: "DEF123GHIJ").token()
        // Signed by the registered key, so the signature verifies, but issued for a team
        // the key does not belong to.
        let wrongTeam = try ProviderTokenCache(key: providerKey, keyID: "ABC123DEFG", teamID: "ZZZ999TEAM").token()

        try await withServerAndCurl(configuration) { server, curl in
            for (token, status, reason) in [
                (good, 200, nil),
                (forged, 403, "InvalidProviderToken"),
                (unknownKeyID, 403, "InvalidProviderToken"),
                (wrongTeam, 403, "InvalidProviderToken"),
            ] as [(ProviderToken, Int, String?)] {
                // One curl process per token: each is a new connection, so no token
                // update rule (TooManyProviderTokenUpdates) is involved.
                let response = try await curl.send(
                    port: server.port, path: "/3/device/\(sampleDeviceToken)",
                    headers: ["apns-topic: com.example.app", "authorization: \(token.authorizationValue)"])
                #expect(response.status == status, "\(token.jwt.prefix(20))")
                #expect(response.reason == reason)
            }
            // What the server saw of the refused token: the wrong team, as sent.
            let refused = server.recordedRequests.last
            #expect(refused?.providerToken?.teamID == "ZZZ999TEAM")
            #expect(refused?.reason == "InvalidProviderToken")
        }
    }

    @Test("a key registered without a team id accepts a token for any team, as before")
    func keyWithoutTeamID() async throws {
        let key = try ProviderKey.generate()
        var keys = ProviderTokenVerifier()
        keys.register(key, keyID: "ABC123DEFG")
        let configuration = MockAPNsServer.Configuration(
            bundleIDs: ["com.example.app"], authentication: .providerToken(.signature(keys)))
        let token = try ProviderTokenCache(key: key, keyID: "ABC123DEFG", teamID: "ZZZ999TEAM").token()
        try await withServerAndCurl(configuration) { server, curl in
            let response = try await curl.send(
                port: server.port, path: "/3/device/\(sampleDeviceToken)",
                headers: ["apns-topic: com.example.app", "authorization: \(token.authorizationValue)"])
            #expect(response.status == 200, "\(response.body)")
        }
    }
}
