import APNsOpenSSL
import Foundation
import Testing
@testable import APNsCore

/// Our tokens, checked by implementations that are not ours (the openssl CLI, Foundation's
/// JSONSerialization), and tokens made by others, checked by our verifier.
@Suite("Provider token format (ES256 JWT)")
struct ProviderTokenFormatTests {
    static let iat: Int64 = 1_437_179_036 // Apple's example claims

    static func makeToken() throws -> ProviderToken {
        let key = try ProviderKey(contentsOfFile: AuthFixture.path("p256.p8"))
        let clock = FakeClock(Date(timeIntervalSince1970: Double(iat) + 0.75))
        let cache = try ProviderTokenCache(key: key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ", clock: clock.clock)
        return try cache.token()
    }

    static func decodePart(_ part: Substring) throws -> [String: Any] {
        var base64 = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        #expect(!base64.contains("="), "JWS base64url has no padding")
        while base64.count % 4 != 0 { base64 += "=" }
        let data = try #require(Data(base64Encoded: base64))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// A token source that states one key but holds another's JWT: APNs binds the
    /// connection to the key the JWT names, so that key chooses the connections.
    @Test func aWrappedJWTsOwnKidAndIssWinOverStatedOnes() {
        func part(_ json: String) -> String {
            Data(json.utf8).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        let jwt = part(#"{"alg":"ES256","kid":"KEYB000000"}"#) + "." + part(#"{"iss":"TEAMB00000","iat":1}"#) + ".c2ln"
        let token = ProviderToken(jwt: jwt, issuedAt: Date(timeIntervalSince1970: 1), keyID: "KEYA000000", teamID: "TEAMA00000")
        #expect(token.keyID == "KEYB000000")
        #expect(token.teamID == "TEAMB00000")
        // A JWT whose header and claims name neither: the stated values.
        let opaque = ProviderToken(jwt: part(#"{"alg":"ES256"}"#) + "." + part("{}") + ".c2ln",
                                   issuedAt: Date(timeIntervalSince1970: 1), keyID: "KEYA000000", teamID: "TEAMA00000")
        #expect(opaque.keyID == "KEYA000000")
        #expect(opaque.teamID == "TEAMA00000")
    }

    @Test func headerAndClaimsAreApplesJSON() throws {
        let token = try Self.makeToken()
        let parts = token.jwt.split(separator: ".", omittingEmptySubsequences: false)
        try #require(parts.count == 3)
        let header = try Self.decodePart(parts[0])
        #expect(header["alg"] as? String == "ES256")
        #expect(header["kid"] as? String == "ABC123DEFG")
        #expect(header.count == 2)
        let claims = try Self.decodePart(parts[1])
        #expect(claims["iss"] as? String == "DEF123GHIJ")
        // iat is a JSON number with an integral value, not a string (APNSwift's bug) and
        // not a fraction: whole seconds, rounded down.
        #expect(!(claims["iat"] is String))
        let iat = try #require(claims["iat"] as? NSNumber)
        #expect(iat.int64Value == Self.iat)
        #expect(iat.doubleValue == Double(Self.iat))
        #expect(claims.count == 2)
        #expect(token.issuedAt == Date(timeIntervalSince1970: Double(Self.iat)))
        #expect(token.authorizationValue == "bearer " + token.jwt)
        #expect(!token.description.contains(token.jwt))
    }

    /// `openssl dgst -sha256 -verify` accepts the signature (after conversion to DER) over
    /// the signing input, with the public key openssl itself derived from the .p8.
    @Test func opensslVerifiesOurSignature() throws {
        let token = try Self.makeToken()
        let parts = token.jwt.split(separator: ".", omittingEmptySubsequences: false)
        try #require(parts.count == 3)
        let raw = try #require(Base64.decode(Array(parts[2].utf8)))
        #expect(raw.count == 64, "ES256 signatures are r||s, 64 bytes")
        let der = try ECDSASignature.der(fromRaw: raw)
        try withTemporaryDirectory { directory in
            let input = directory.appendingPathComponent("input.txt")
            let tampered = directory.appendingPathComponent("tampered.txt")
            let signature = directory.appendingPathComponent("sig.der")
            try Data((parts[0] + "." + parts[1]).utf8).write(to: input)
            try Data((parts[0] + "." + parts[1] + "x").utf8).write(to: tampered)
            try Data(der).write(to: signature)
            let good = try OpenSSLCLI.run(["dgst", "-sha256", "-verify", AuthFixture.path("p256.pub.pem"),
                                           "-signature", signature.path, input.path])
            #expect(good.status == 0, "\(good.output)")
            #expect(good.output.contains("Verified OK"))
            let bad = try OpenSSLCLI.run(["dgst", "-sha256", "-verify", AuthFixture.path("p256.pub.pem"),
                                          "-signature", signature.path, tampered.path])
            #expect(bad.status != 0, "openssl must reject a signature over different bytes")
        }
    }

    /// Fresh keys from `openssl genpkey`, each signing a token that `openssl dgst` verifies.
    @Test func tokensFromFreshOpenSSLKeysVerifyWithOpenSSL() throws {
        try withTemporaryDirectory { directory in
            for index in 0..<4 {
                let keyFile = directory.appendingPathComponent("AuthKey_\(index).p8").path
                let pubFile = directory.appendingPathComponent("pub\(index).pem").path
                let gen = try OpenSSLCLI.run(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", keyFile])
                try #require(gen.status == 0, "\(gen.output)")
                let pub = try OpenSSLCLI.run(["pkey", "-in", keyFile, "-pubout", "-out", pubFile])
                try #require(pub.status == 0, "\(pub.output)")
                let cache = try ProviderTokenCache(key: try ProviderKey(contentsOfFile: keyFile),
                                                   keyID: "KEY000000\(index)", teamID: "TEAM000000")
                let parts = try cache.token().jwt.split(separator: ".", omittingEmptySubsequences: false)
                try #require(parts.count == 3)
                let raw = try #require(Base64.decode(Array(parts[2].utf8)))
                let input = directory.appendingPathComponent("input\(index).txt")
                let signature = directory.appendingPathComponent("sig\(index).der")
                try Data((parts[0] + "." + parts[1]).utf8).write(to: input)
                try Data(try ECDSASignature.der(fromRaw: raw)).write(to: signature)
                let verified = try OpenSSLCLI.run(["dgst", "-sha256", "-verify", pubFile, "-signature", signature.path, input.path])
                #expect(verified.status == 0, "\(verified.output)")
            }
        }
    }

    @Test func ourVerifierAcceptsOurToken() throws {
        let token = try Self.makeToken()
        var verifier = ProviderTokenVerifier()
        try verifier.register(publicKeyPEM: try AuthFixture.text("p256.pub.pem"), keyID: "ABC123DEFG")
        let verified = try verifier.verify(token.jwt)
        #expect(verified == VerifiedProviderToken(keyID: "ABC123DEFG", teamID: "DEF123GHIJ", issuedAtSeconds: Self.iat))
    }

    // MARK: Tokens from other implementations

    struct ExternalClaims: Decodable {
        var kid: String
        var iss: String
        var iat: Int64
    }

    /// A token signed by Python's joserfc (see Fixtures/auth/external_token.py).
    @Test func acceptsATokenSignedByJoserfc() throws {
        let jwt = try AuthFixture.text("external-es256.jwt").trimmingCharacters(in: .whitespacesAndNewlines)
        let expected = try JSONDecoder().decode(ExternalClaims.self, from: Data(try AuthFixture.bytes("external-es256.json")))
        var verifier = ProviderTokenVerifier()
        try verifier.register(publicKeyPEM: try AuthFixture.text("external-es256.pub.pem"), keyID: expected.kid)
        let verified = try verifier.verify(jwt)
        #expect(verified.keyID == expected.kid)
        #expect(verified.teamID == expected.iss)
        #expect(verified.issuedAtSeconds == expected.iat)
    }

    /// A key registered with its team id: the joserfc token's own `iss` passes, and the
    /// same correctly signed token is refused when the key belongs to another team.
    @Test func bindsAKeyToItsTeamID() throws {
        let jwt = try AuthFixture.text("external-es256.jwt").trimmingCharacters(in: .whitespacesAndNewlines)
        let expected = try JSONDecoder().decode(ExternalClaims.self, from: Data(try AuthFixture.bytes("external-es256.json")))
        let pem = try AuthFixture.text("external-es256.pub.pem")

        var sameTeam = ProviderTokenVerifier()
        try sameTeam.register(publicKeyPEM: pem, keyID: expected.kid, teamID: expected.iss)
        #expect(sameTeam.teamID(forKeyID: expected.kid) == expected.iss)
        #expect(try sameTeam.verify(jwt).teamID == expected.iss)

        let otherTeam = expected.iss == "ZZZ999TEAM" ? "YYY888TEAM" : "ZZZ999TEAM"
        var wrongTeam = ProviderTokenVerifier()
        try wrongTeam.register(publicKeyPEM: pem, keyID: expected.kid, teamID: otherTeam)
        let error = #expect(throws: ProviderTokenVerificationError.self) {
            _ = try wrongTeam.verify(jwt)
        }
        #expect(error?.code == .wrongTeamID, "\(error?.description ?? "")")
        #expect(error?.description.contains(otherTeam) == true)

        // Without a team id, as before: any iss.
        var anyTeam = ProviderTokenVerifier()
        try anyTeam.register(publicKeyPEM: pem, keyID: expected.kid)
        #expect(anyTeam.teamID(forKeyID: expected.kid) == nil)
        #expect(try anyTeam.verify(jwt).teamID == expected.iss)
    }

    /// The team check comes after the signature: a forged token for the right team is
    /// still a bad signature, and a token for another team signed by a `ProviderKey`
    /// registered with ``ProviderTokenVerifier/register(_:keyID:teamID:)`` is wrongTeamID.
    @Test func teamIDWithAProviderKey() throws {
        let key = try ProviderKey(contentsOfFile: AuthFixture.path("p256.p8"))
        var verifier = ProviderTokenVerifier()
        verifier.register(key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
        #expect(try verifier.verify(try Self.makeToken().jwt).teamID == "DEF123GHIJ")
        let otherTeam = try Self.sign(header: #"{"alg":"ES256","kid":"ABC123DEFG"}"#,
                                      claims: #"{"iss":"ZZZ999TEAM","iat":1437179036}"#)
        let error = #expect(throws: ProviderTokenVerificationError.self) { _ = try verifier.verify(otherTeam) }
        #expect(error?.code == .wrongTeamID)
        let parts = otherTeam.split(separator: ".", omittingEmptySubsequences: false)
        let forged = parts[0] + "." + Base64.encode(Array(#"{"iss":"DEF123GHIJ","iat":1437179036}"#.utf8)) + "." + parts[2]
        let forgedError = #expect(throws: ProviderTokenVerificationError.self) { _ = try verifier.verify(String(forged)) }
        #expect(forgedError?.code == .badSignature)
    }

    static func tampered(_ jwt: String) -> [(String, String)] {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let otherClaims = Base64.encode(Array(#"{"iss":"DEF123GHIJ","iat":1437179037}"#.utf8))
        var flipped = Array(parts[2])
        flipped[10] = flipped[10] == "A" ? "B" : "A"
        return [
            ("claims replaced", parts[0] + "." + otherClaims + "." + parts[2]),
            ("signature changed", parts[0] + "." + parts[1] + "." + String(flipped)),
            ("r and s swapped", parts[0] + "." + parts[1] + "." +
                Base64.encode(Array((Base64.decode(Array(parts[2].utf8)) ?? []).suffix(32) + (Base64.decode(Array(parts[2].utf8)) ?? []).prefix(32)))),
        ]
    }

    @Test func refusesTamperedCopiesOfTheJoserfcToken() throws {
        let jwt = try AuthFixture.text("external-es256.jwt").trimmingCharacters(in: .whitespacesAndNewlines)
        var verifier = ProviderTokenVerifier()
        try verifier.register(publicKeyPEM: try AuthFixture.text("external-es256.pub.pem"), keyID: "ABC123DEFG")
        for (name, token) in Self.tampered(jwt) {
            let error = #expect(throws: ProviderTokenVerificationError.self, "\(name)") {
                _ = try verifier.verify(token)
            }
            #expect(error?.code == .badSignature, "\(name)")
        }
    }

    /// RFC 7515 Appendix A.3: the ES256 example JWS verifies with the example's key.
    @Test func verifiesRFC7515AppendixA3() throws {
        let jws = try AuthFixture.text("rfc7515-a3.jws").trimmingCharacters(in: .whitespacesAndNewlines)
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        try #require(parts.count == 3)
        let blocks = try PEMBlock.parseAll(Array(try AuthFixture.text("rfc7515-a3.pub.pem").utf8))
        let block = try #require(blocks.first)
        let key = try #require(EVPKey.publicKey(der: block.der))
        let signature = try #require(Base64.decode(Array(parts[2].utf8)))
        let input = Array((parts[0] + "." + parts[1]).utf8)
        #expect(ES256.verify(signature: signature, signingInput: input, key: key))
        #expect(!ES256.verify(signature: signature, signingInput: input + [0x20], key: key))
    }

    // MARK: Verifier errors

    static func verifierWithOurKey() throws -> ProviderTokenVerifier {
        var verifier = ProviderTokenVerifier()
        try verifier.register(publicKeyPEM: try AuthFixture.text("p256.pub.pem"), keyID: "ABC123DEFG")
        return verifier
    }

    static func sign(header: String, claims: String) throws -> String {
        let key = try ProviderKey(contentsOfFile: AuthFixture.path("p256.p8"))
        return try ES256.compact(header: header, claims: claims, key: key.key)
    }

    @Test func refusesIatAsAString() throws {
        // APNSwift's bug: correctly signed, but APNs wants a number.
        let jwt = try Self.sign(header: #"{"alg":"ES256","kid":"ABC123DEFG"}"#,
                                claims: #"{"iss":"DEF123GHIJ","iat":"1437179036"}"#)
        let error = #expect(throws: ProviderTokenVerificationError.self) {
            _ = try Self.verifierWithOurKey().verify(jwt)
        }
        #expect(error?.code == .malformed)
        #expect(error?.description.contains("integer") == true)
    }

    @Test("Refuses tokens that are not APNs provider tokens", arguments: [
        (#"{"alg":"HS256","kid":"ABC123DEFG"}"#, ProviderTokenVerificationError.Code.unsupportedAlgorithm),
        (#"{"alg":"none","kid":"ABC123DEFG"}"#, .unsupportedAlgorithm),
        (#"{"alg":"ES256","kid":"ZZZ999ZZZZ"}"#, .unknownKeyID),
        (#"{"alg":"ES256"}"#, .malformed),
        (#"["ES256"]"#, .malformed),
    ])
    func refusesHeaders(header: String, kind: ProviderTokenVerificationError.Code) throws {
        let jwt = try Self.sign(header: header, claims: #"{"iss":"DEF123GHIJ","iat":1437179036}"#)
        let error = #expect(throws: ProviderTokenVerificationError.self) {
            _ = try Self.verifierWithOurKey().verify(jwt)
        }
        #expect(error?.code == kind, "\(error?.description ?? "")")
    }

    @Test("Refuses malformed compact serialisations", arguments: [
        "", "abc", "a.b", "a.b.c.d", "eyJhbGciOiJFUzI1NiJ9=.e30.AA", "!!.e30.AA",
    ])
    func refusesMalformed(_ jwt: String) throws {
        let error = #expect(throws: ProviderTokenVerificationError.self) {
            _ = try Self.verifierWithOurKey().verify(jwt)
        }
        #expect(error?.code == .malformed)
    }

    @Test func refusesADERSignature() throws {
        let token = try Self.makeToken()
        let parts = token.jwt.split(separator: ".", omittingEmptySubsequences: false)
        let der = try ECDSASignature.der(fromRaw: try #require(Base64.decode(Array(parts[2].utf8))))
        let jwt = parts[0] + "." + parts[1] + "." + Base64.encode(der)
        let error = #expect(throws: ProviderTokenVerificationError.self) {
            _ = try Self.verifierWithOurKey().verify(jwt)
        }
        #expect(error?.code == .badSignature)
        #expect(error?.description.contains("not DER") == true)
    }

    @Test func refusesAKeyFromAnotherPair() throws {
        var verifier = ProviderTokenVerifier()
        try verifier.register(publicKeyPEM: try AuthFixture.text("external-es256.pub.pem"), keyID: "ABC123DEFG")
        let error = #expect(throws: ProviderTokenVerificationError.self) {
            _ = try verifier.verify(try Self.makeToken().jwt)
        }
        #expect(error?.code == .badSignature)
    }

    @Test("Refuses public keys that are not P-256 PEM", arguments: ["p384.p8", "rsa2048.p8", "p256.p8", "garbage.p8"])
    func refusesBadPublicKeys(_ file: String) throws {
        var verifier = ProviderTokenVerifier()
        let pem: String
        if file == "p256.p8" || file == "garbage.p8" {
            pem = try AuthFixture.text(file) // a private key, or garbage, is not a PUBLIC KEY
        } else {
            // Derive the public key with the openssl CLI.
            let result = try OpenSSLCLI.run(["pkey", "-in", AuthFixture.path(file), "-pubout"])
            try #require(result.status == 0)
            pem = result.output
        }
        let error = #expect(throws: ProviderTokenVerificationError.self) {
            try verifier.register(publicKeyPEM: pem, keyID: "ABC123DEFG")
        }
        #expect(error?.code == .invalidPublicKey)
        #expect(verifier.keyIDs.isEmpty)
    }
}
