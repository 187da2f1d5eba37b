import APNsCore
import Foundation
import Testing
@testable import APNsMockServer

/// A P-256 provider key made by OpenSSL, whose tokens are signed by pyjwt: neither is our code.
struct IndependentKey {
    let keyID: String
    let privateKeyPath: String
    let publicKeyPEM: String

    static func make(keyID: String, in directory: String) async throws -> IndependentKey {
        let path = directory + "/\(keyID).p8"
        let generated = try await ExternalTool.run("openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path])
        try #require(generated.exitCode == 0, "\(generated.stderr)")
        let publicKey = try await ExternalTool.run("openssl", ["pkey", "-in", path, "-pubout"])
        try #require(publicKey.exitCode == 0, "\(publicKey.stderr)")
        return IndependentKey(keyID: keyID, privateKeyPath: path, publicKeyPEM: publicKey.stdout)
    }

    /// An ES256 provider token signed by pyjwt.
    func token(teamID: String = "DEF123GHIJ", issuedAt: Int = Int(Date().timeIntervalSince1970)) async throws -> String {
        let script = """
            import sys, jwt
            print(jwt.encode({"iss": sys.argv[2], "iat": int(sys.argv[3])}, open(sys.argv[1]).read(),
                             algorithm="ES256", headers={"kid": sys.argv[4]}))
            """
        let result = try await ExternalTool.run("python3", ["-c", script, privateKeyPath, teamID, String(issuedAt), keyID])
        try #require(result.exitCode == 0, "pyjwt: \(result.stderr)")
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// Makes keys in a temporary directory, runs `body` with a verifier that knows them, and
/// removes the directory.
func withIndependentKeys<T>(
    _ keyIDs: [String], _ body: ([IndependentKey], ProviderTokenVerifier) async throws -> T
) async throws -> T {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apns-keys-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    var keys: [IndependentKey] = []
    var verifier = ProviderTokenVerifier()
    for keyID in keyIDs {
        let key = try await IndependentKey.make(keyID: keyID, in: directory)
        try verifier.register(publicKeyPEM: key.publicKeyPEM, keyID: keyID, teamID: "DEF123GHIJ")
        keys.append(key)
    }
    return try await body(keys, verifier)
}

@Suite("Provider key rules: one key per connection, environment-scoped and topic-specific keys")
struct KeyRulesTests {
    @Test("a connection is bound to the key of its first token: another key there is 403 UnrelatedKeyIdInToken (curl, pyjwt)")
    func unrelatedKey() async throws {
        try await withIndependentKeys(["KEYAAAAAAA", "KEYBBBBBBB"]) { keys, verifier in
            let tokenA = try await keys[0].token()
            let tokenB = try await keys[1].token()
            let configuration = MockAPNsServer.Configuration(
                bundleIDs: ["com.example.app"], authentication: .providerToken(.signature(verifier)))
            try await withServerAndCurl(configuration) { server, curl in
                let statuses = try await ProviderTokenTests.statusesOnOneConnection([tokenA, tokenB, tokenA],
                                                                                    server: server, curl: curl)
                #expect(statuses == [200, 403, 200])
                #expect(server.recordedRequests.map(\.reason) == [nil, "UnrelatedKeyIdInToken", nil])
                // The other key is fine on a connection of its own.
                let fresh = try await ProviderTokenTests.statusesOnOneConnection([tokenB], server: server, curl: curl)
                #expect(fresh == [200])
                #expect(server.keyIDsByConnection == [0: ["KEYAAAAAAA", "KEYBBBBBBB"], 1: ["KEYBBBBBBB"]])
            }
        }
    }

    @Test("an environment-scoped key works in its environment only: 403 BadEnvironmentKeyIdInToken elsewhere", arguments: [
        (MockAPNsServer.Environment.sandbox, MockAPNsServer.KeyScope.sandboxOnly, 200, nil),
        (.sandbox, .productionOnly, 403, "BadEnvironmentKeyIdInToken"),
        (.production, .productionOnly, 200, nil),
        (.production, .sandboxOnly, 403, "BadEnvironmentKeyIdInToken"),
        (.production, .team, 200, nil),
    ] as [(MockAPNsServer.Environment, MockAPNsServer.KeyScope, Int, String?)])
    func environmentScopedKey(environment: MockAPNsServer.Environment, scope: MockAPNsServer.KeyScope,
                              status: Int, reason: String?) async throws {
        try await withIndependentKeys(["ENVKEY0001"]) { keys, verifier in
            let token = try await keys[0].token()
            let configuration = MockAPNsServer.Configuration(
                bundleIDs: ["com.example.app"], authentication: .providerToken(.signature(verifier)),
                environment: environment, keyScopes: ["ENVKEY0001": scope])
            try await withServerAndCurl(configuration) { server, curl in
                let response = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)",
                                                   headers: ["apns-topic: com.example.app", "authorization: bearer \(token)"])
                #expect(response.status == status, "\(response.body)")
                #expect(response.reason == reason)
            }
        }
    }

    @Test("a topic-specific key pushes to its topics (and their push-type suffixes) only: 400 TopicDisallowed for others")
    func topicSpecificKey() async throws {
        try await withIndependentKeys(["TOPICKEY01"]) { keys, verifier in
            let token = try await keys[0].token()
            let configuration = MockAPNsServer.Configuration(
                bundleIDs: ["com.example.app", "com.example.other"], authentication: .providerToken(.signature(verifier)),
                keyScopes: ["TOPICKEY01": .topics(["com.example.app"])])
            try await withServerAndCurl(configuration) { server, curl in
                for (topic, pushType, status, reason) in [
                    ("com.example.app", "alert", 200, nil),
                    ("com.example.app.voip", "voip", 200, nil),
                    ("com.example.other", "alert", 400, "TopicDisallowed"),
                    ("com.example.other.voip", "voip", 400, "TopicDisallowed"),
                ] as [(String, String, Int, String?)] {
                    let response = try await curl.send(
                        port: server.port, path: "/3/device/\(sampleDeviceToken)",
                        headers: ["apns-topic: \(topic)", "apns-push-type: \(pushType)", "authorization: bearer \(token)"])
                    #expect(response.status == status, "\(topic): \(response.body)")
                    #expect(response.reason == reason, "\(topic)")
                }
            }
        }
    }
}

/// The token rules as a pure function of tokens and time: no sockets, no threads.
@Suite("Token authorizer")
struct TokenAuthorizerTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let issuedAt = 1_800_000_000 - 60

    static func authorizer(environment: MockAPNsServer.Environment = .sandbox,
                           scopes: [String: MockAPNsServer.KeyScope] = [:]) -> TokenAuthorizer {
        // Every readable token "verifies": these tests are about the rules after the signature.
        TokenAuthorizer(verdicts: TokenVerdictCache(check: ProviderTokenCheck { _, _ in true }),
                        environment: environment, keyScopes: scopes)
    }

    @Test("binds to the first accepted key; another key is UnrelatedKeyIdInToken and does not rebind")
    func binding() {
        var authorizer = Self.authorizer()
        let keyA = "bearer " + makeJWT(keyID: "KEYAAAAAAA", issuedAt: Self.issuedAt)
        let keyB = "bearer " + makeJWT(keyID: "KEYBBBBBBB", issuedAt: Self.issuedAt)
        let first = authorizer.authorize(keyA, now: Self.now)
        #expect(first.rejection == nil)
        #expect(first.newKeyID == "KEYAAAAAAA")
        let other = authorizer.authorize(keyB, now: Self.now + 3000)
        #expect(other.rejection?.reason == "UnrelatedKeyIdInToken")
        #expect(other.rejection?.status == 403)
        #expect(other.newKeyID == "KEYBBBBBBB")
        #expect(authorizer.authorize(keyA, now: Self.now).rejection == nil)
        #expect(authorizer.boundKeyID == "KEYAAAAAAA")
        #expect(authorizer.keyIDs == ["KEYAAAAAAA", "KEYBBBBBBB"])
    }

    @Test("a rejected first token does not bind the connection")
    func rejectedTokenDoesNotBind() {
        var authorizer = Self.authorizer(scopes: ["PRODKEY001": .productionOnly])
        let production = "bearer " + makeJWT(keyID: "PRODKEY001", issuedAt: Self.issuedAt)
        let expired = "bearer " + makeJWT(keyID: "OLDKEY0001", issuedAt: Self.issuedAt - 4000)
        let team = "bearer " + makeJWT(keyID: "TEAMKEY001", issuedAt: Self.issuedAt)
        #expect(authorizer.authorize(production, now: Self.now).rejection?.reason == "BadEnvironmentKeyIdInToken")
        #expect(authorizer.authorize(expired, now: Self.now).rejection?.reason == "ExpiredProviderToken")
        #expect(authorizer.boundKeyID == nil)
        #expect(authorizer.authorize(team, now: Self.now).rejection == nil)
        #expect(authorizer.boundKeyID == "TEAMKEY001")
    }

    @Test("a new token of the bound key: 429 within 20 minutes of the previous one, accepted after")
    func tokenUpdates() {
        var authorizer = Self.authorizer()
        let old = "bearer " + makeJWT(keyID: "KEYAAAAAAA", issuedAt: Self.issuedAt)
        let new = "bearer " + makeJWT(keyID: "KEYAAAAAAA", issuedAt: Self.issuedAt + 1)
        #expect(authorizer.authorize(old, now: Self.now).rejection == nil)
        let tooSoon = authorizer.authorize(new, now: Self.now + 19 * 60)
        #expect(tooSoon.rejection == RequestValidator.Rejection(status: 429, reason: "TooManyProviderTokenUpdates"))
        #expect(authorizer.authorize(new, now: Self.now + 21 * 60).rejection == nil)
        #expect(authorizer.keyIDs == ["KEYAAAAAAA"])
    }

    @Test("missing, non-bearer and unreadable values", arguments: [
        (nil, "MissingProviderToken"), ("", "MissingProviderToken"), ("basic abc", "InvalidProviderToken"),
        ("bearer ", "InvalidProviderToken"), ("bearer not.a.jwt", "InvalidProviderToken"),
    ] as [(String?, String)])
    func malformed(value: String?, reason: String) {
        var authorizer = Self.authorizer()
        #expect(authorizer.authorize(value, now: Self.now).rejection?.reason == reason)
        #expect(authorizer.boundKeyID == nil)
    }

    @Test("`Bearer` is matched without regard to case")
    func bearerCase() {
        var authorizer = Self.authorizer()
        #expect(authorizer.authorize("BeArEr " + makeJWT(issuedAt: Self.issuedAt), now: Self.now).rejection == nil)
    }

    @Test("topics of a topic-specific key, with the push type's suffix")
    func topicMatching() {
        let topics: Set<String> = ["com.example.app"]
        #expect(RequestValidator.topic("com.example.app", suffix: "", isIn: topics))
        #expect(RequestValidator.topic("com.example.app.voip", suffix: ".voip", isIn: topics))
        #expect(!RequestValidator.topic("com.example.app.voip", suffix: "", isIn: topics))
        #expect(!RequestValidator.topic("com.example.other", suffix: "", isIn: topics))
        #expect(!RequestValidator.topic("com.example.apps", suffix: "", isIn: topics))
    }
}
