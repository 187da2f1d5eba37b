import Foundation
import Testing
@testable import APNsCore

/// The code of Documentation/SwiftAPNs.docc/Authentication.md, compiled and run against
/// the fixture key (paths and variables substituted).
@Suite("Authentication article code")
struct AuthenticationArticleTests {
    @Test func articleCodeRuns() throws {
        let path = AuthFixture.path("p256.p8")
        let secretText = try AuthFixture.text("p256.p8")
        let variable = "SWIFT_APNS_ARTICLE_KEY_\(UInt32.random(in: 0...UInt32.max))"
        setenv(variable, secretText, 1)
        defer { unsetenv(variable) }

        // Loading the key
        let key = try ProviderKey(contentsOfFile: path)
        let keyFromEnvironment = try ProviderKey(environmentVariable: variable)
        let keyFromSecretStore = try ProviderKey(pemRepresentation: secretText)
        #expect(keyFromEnvironment.publicKeyPEM == key.publicKeyPEM)
        #expect(keyFromSecretStore.publicKeyPEM == key.publicKeyPEM)

        // Key id and team id
        let tokens = try ProviderTokenCache(key: key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
        let authorization = try tokens.token().authorizationValue
        #expect(authorization.hasPrefix("bearer eyJ"))

        // Refresh rules
        let custom = try ProviderTokenCache(
            key: key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ",
            refreshInterval: .seconds(40 * 60),
            clock: ProviderTokenClock { Date() }
        )
        _ = try custom.token()

        // Verifying tokens
        var verifier = ProviderTokenVerifier()
        try verifier.register(publicKeyPEM: key.publicKeyPEM, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
        let verified = try verifier.verify(tokens.token().jwt)
        #expect(verified.teamID == "DEF123GHIJ")
        let otherTeam = try ProviderTokenCache(key: key, keyID: "ABC123DEFG", teamID: "ZZZ999TEAM").token()
        let refused = #expect(throws: ProviderTokenVerificationError.self) { _ = try verifier.verify(otherTeam.jwt) }
        #expect(refused?.code == .wrongTeamID)
    }
}
