import Foundation
import Testing
@testable import APNsCore

@Suite("Loading the .p8 provider key")
struct ProviderKeyTests {
    /// The public key the openssl CLI derived from p256.p8: loading must give the same key.
    static func expectedPublicKey() throws -> String {
        try AuthFixture.text("p256.pub.pem")
    }

    @Test func loadsApplesFormatFromAFile() throws {
        let key = try ProviderKey(contentsOfFile: AuthFixture.path("p256.p8"))
        #expect(key.publicKeyPEM == (try Self.expectedPublicKey()))
    }

    @Test func loadsDERFromAFileAndFromBytes() throws {
        let fromFile = try ProviderKey(contentsOfFile: AuthFixture.path("p256.p8.der"))
        #expect(fromFile.publicKeyPEM == (try Self.expectedPublicKey()))
        let fromBytes = try ProviderKey(derRepresentation: try AuthFixture.bytes("p256.p8.der"))
        #expect(fromBytes.publicKeyPEM == (try Self.expectedPublicKey()))
    }

    @Test func loadsSEC1ECPrivateKey() throws {
        let key = try ProviderKey(contentsOfFile: AuthFixture.path("p256.sec1.pem"))
        #expect(key.publicKeyPEM == (try Self.expectedPublicKey()))
    }

    /// The ways people mangle a PEM file when they paste it into an environment variable.
    static func mangled(_ pem: String) -> [(String, String)] {
        let lines = pem.split(separator: "\n").map(String.init)
        let body = lines.dropFirst().dropLast().joined()
        return [
            ("as is", pem),
            ("CRLF line ends", lines.joined(separator: "\r\n") + "\r\n"),
            ("literal \\n sequences", lines.joined(separator: "\\n")),
            ("literal \\r\\n sequences", lines.joined(separator: "\\r\\n")),
            ("surrounding whitespace", "\n\n   " + pem + "  \n\t"),
            ("surrounding double quotes", "\"" + lines.joined(separator: "\\n") + "\""),
            ("one line with spaces", lines.joined(separator: " ")),
            ("body without BEGIN/END lines", body),
            ("EC PARAMETERS block first (openssl ecparam -genkey)",
             "-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n" + pem),
        ]
    }

    @Test func loadsPEMTextHoweverItWasPasted() throws {
        let expected = try Self.expectedPublicKey()
        for (name, text) in Self.mangled(try AuthFixture.text("p256.p8")) {
            let key = try ProviderKey(pemRepresentation: text)
            #expect(key.publicKeyPEM == expected, "\(name)")
        }
    }

    @Test func loadsFromAnEnvironmentVariable() throws {
        let name = "SWIFT_APNS_TEST_KEY_\(UInt32.random(in: 0...UInt32.max))"
        let escaped = try AuthFixture.text("p256.p8").replacingOccurrences(of: "\n", with: "\\n")
        setenv(name, escaped, 1)
        defer { unsetenv(name) }
        let key = try ProviderKey(environmentVariable: name)
        #expect(key.publicKeyPEM == (try Self.expectedPublicKey()))
    }

    @Test func missingEnvironmentVariableIsATypedError() {
        let error = #expect(throws: ProviderKeyError.self) {
            _ = try ProviderKey(environmentVariable: "SWIFT_APNS_TEST_SURELY_UNSET_\(UInt32.random(in: 0...UInt32.max))")
        }
        #expect(error?.code == .environmentVariableNotSet)
        #expect(error?.description.contains("SWIFT_APNS_TEST_SURELY_UNSET_") == true)
    }

    @Test func missingFileIsATypedError() {
        let error = #expect(throws: ProviderKeyError.self) {
            _ = try ProviderKey(contentsOfFile: "/nonexistent/AuthKey_ABC123DEFG.p8")
        }
        #expect(error?.code == .fileNotReadable)
        #expect(error?.description.contains("/nonexistent/AuthKey_ABC123DEFG.p8") == true)
    }

    static let refused: [(String, ProviderKeyError.Code, String)] = [
        ("p384.p8", .unsupportedKeyType, "secp384r1"),
        ("secp256k1.p8", .unsupportedKeyType, "secp256k1"),
        ("rsa2048.p8", .unsupportedKeyType, "RSA"),
        ("ed25519.p8", .unsupportedKeyType, "ED25519"),
        ("p256.pub.pem", .publicKey, "public"),
        ("p256.encrypted.p8", .encryptedKey, "passphrase"),
        ("p256.encrypted.sec1.pem", .encryptedKey, "passphrase"),
        ("garbage.p8", .malformed, "neither"),
        ("external-es256.jwt", .malformed, "neither"),
    ]

    @Test("Refuses keys APNs would not accept, saying what they are", arguments: refused)
    func refuses(file: String, kind: ProviderKeyError.Code, mention: String) throws {
        let error = #expect(throws: ProviderKeyError.self) {
            _ = try ProviderKey(contentsOfFile: AuthFixture.path(file))
        }
        #expect(error?.code == kind)
        #expect(error?.description.contains(mention) == true, "\(error?.description ?? "")")
        // The same through the PEM-text path.
        let text = try AuthFixture.text(file)
        let textError = #expect(throws: ProviderKeyError.self) {
            _ = try ProviderKey(pemRepresentation: text)
        }
        #expect(textError?.code == kind)
    }

    @Test("A key whose private scalar was damaged (a mistyped character) no longer matches its stored public key: refused, as openssl pkey -check refuses it")
    func refusesAKeyWhosePrivateHalfWasDamaged() throws {
        // Apple's form: PKCS#8 PEM, the EC key inside with its public key.
        let body = try AuthFixture.text("p256.p8").split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        let der = try #require(Data(base64Encoded: body)).map { $0 }
        // The ECPrivateKey's privateKey OCTET STRING (04 20, then the 32-byte scalar);
        // Apple's .p8, like openssl's, stores the public key after it.
        let marker: [UInt8] = [0x02, 0x01, 0x01, 0x04, 0x20]
        let start = try #require((0...(der.count - marker.count)).first { Array(der[$0..<($0 + marker.count)]) == marker }) + marker.count
        var damaged = der
        damaged[start + 7] ^= 0x04
        let base64 = damaged.withUnsafeBytes { Data($0) }.base64EncodedString(options: .lineLength64Characters)
        let pem = "-----BEGIN PRIVATE KEY-----\n\(base64)\n-----END PRIVATE KEY-----\n"
        try withTemporaryDirectory { directory in
            // The independent check: OpenSSL's own command refuses the damaged key and
            // accepts the original.
            let path = directory.appendingPathComponent("damaged.p8").path
            try Data(pem.utf8).write(to: URL(fileURLWithPath: path))
            #expect(try OpenSSLCLI.run(["pkey", "-in", path, "-check", "-noout"]).status != 0)
            #expect(try OpenSSLCLI.run(["pkey", "-in", AuthFixture.path("p256.p8"), "-check", "-noout"]).status == 0)
            for load in [{ try ProviderKey(pemRepresentation: pem) }, { try ProviderKey(derRepresentation: damaged) }, { try ProviderKey(contentsOfFile: path) }] {
                let error = #expect(throws: ProviderKeyError.self) { _ = try load() }
                #expect(error?.code == .malformed)
                #expect(error?.description.contains("damaged") == true, "\(String(describing: error))")
            }
        }
        // The undamaged key still loads.
        _ = try ProviderKey(derRepresentation: der)
    }

    @Test("Two private keys in one text (an old and a new key pasted into one secret) are refused, not the first one used")
    func refusesTwoPrivateKeys() throws {
        let first = try AuthFixture.text("p256.p8")
        let second = try ProviderKey.generate().key.privateKeyPEM()
        for text in [first + second, second + first, first + "\n" + first.replacingOccurrences(of: "PRIVATE KEY", with: "EC PRIVATE KEY")] {
            let error = #expect(throws: ProviderKeyError.self) { _ = try ProviderKey(pemRepresentation: text) }
            #expect(error?.code == .malformed)
            #expect(error?.description.contains("2 private keys") == true, "\(String(describing: error))")
        }
        // A public key or a certificate beside the one private key is no such mistake.
        let withPublic = try Self.expectedPublicKey() + first
        #expect(try ProviderKey(pemRepresentation: withPublic).publicKeyPEM == Self.expectedPublicKey())
    }

    @Test("A path where the key's text goes (APNS_KEY=/etc/apns/AuthKey.p8) is named as a path", arguments: [
        "/etc/apns/AuthKey_ABC123DEFG.p8", "./AuthKey_ABC123DEFG.p8", "~/keys/push.pem", "AuthKey_ABC123DEFG.p8", "  \"/run/secrets/apns.p8\"\n",
    ])
    func namesAPathGivenAsTheKey(_ text: String) {
        let error = #expect(throws: ProviderKeyError.self) { _ = try ProviderKey(pemRepresentation: text) }
        #expect(error?.code == .malformed)
        #expect(error?.description.contains("holds a file path, not a key") == true, "\(String(describing: error))")
    }

    @Test func refusesDERPublicKeyAndEncryptedKey() throws {
        try withTemporaryDirectory { directory in
            let pub = directory.appendingPathComponent("pub.der").path
            let enc = directory.appendingPathComponent("enc.der").path
            let pubResult = try OpenSSLCLI.run(["pkey", "-in", AuthFixture.path("p256.p8"), "-pubout", "-outform", "DER", "-out", pub])
            #expect(pubResult.status == 0)
            let encResult = try OpenSSLCLI.run(["pkcs8", "-topk8", "-in", AuthFixture.path("p256.p8"), "-outform", "DER",
                                                "-v2", "aes-256-cbc", "-passout", "pass:x", "-out", enc])
            #expect(encResult.status == 0)
            let pubError = #expect(throws: ProviderKeyError.self) {
                _ = try ProviderKey(derRepresentation: try Data(contentsOf: URL(fileURLWithPath: pub)))
            }
            #expect(pubError?.code == .publicKey)
            let encError = #expect(throws: ProviderKeyError.self) {
                _ = try ProviderKey(derRepresentation: try Data(contentsOf: URL(fileURLWithPath: enc)))
            }
            #expect(encError?.code == .encryptedKey)
        }
    }

    @Test("Refuses truncated or empty input", arguments: [
        "",
        "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n",
        "-----BEGIN PRIVATE KEY-----\nMIGH!!!\n-----END PRIVATE KEY-----\n",
        "-----BEGIN CERTIFICATE REQUEST-----\nMIGH\n-----END CERTIFICATE REQUEST-----\n",
    ])
    func refusesBrokenText(_ text: String) {
        let error = #expect(throws: ProviderKeyError.self) {
            _ = try ProviderKey(pemRepresentation: text)
        }
        #expect(error?.code == .malformed)
    }

    @Test("A BEGIN line missing its closing dashes is refused without quoting the key", arguments: [
        "-----BEGIN PRIVATE KEY----", "-----BEGIN PRIVATE KEY", "-----BEGIN PRIVATE KEY-", "-----BEGIN PRIVATE KEY ----",
    ])
    func truncatedBeginLineNeverQuotesTheKey(_ beginLine: String) throws {
        let pem = try AuthFixture.text("p256.p8")
        let body = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }
        let broken = ([beginLine] + body.map(String.init) + ["-----END PRIVATE KEY-----", ""]).joined(separator: "\n")
        let error = #expect(throws: ProviderKeyError.self) {
            _ = try ProviderKey(pemRepresentation: broken)
        }
        #expect(error?.code == .malformed)
        let message = "\(String(describing: error)) \(String(reflecting: error))"
        // No run of 8 characters of the key's base64 body appears in the error.
        for line in body {
            for start in stride(from: 0, to: max(1, line.count - 8), by: 4) {
                let run = line.dropFirst(start).prefix(8)
                #expect(!message.contains(run), "the error quotes the key: \(message)")
            }
        }
        #expect(message.contains("BEGIN line"), "\(message)")
    }

    @Test func generatedKeysAreP256AndDiffer() throws {
        let a = try ProviderKey.generate()
        let b = try ProviderKey.generate()
        #expect(a.key.algorithm.isP256)
        #expect(a.publicKeyPEM != b.publicKeyPEM)
        // openssl reads our public key PEM as a P-256 key.
        try withTemporaryDirectory { directory in
            let file = directory.appendingPathComponent("pub.pem")
            try a.publicKeyPEM.write(to: file, atomically: true, encoding: .utf8)
            let result = try OpenSSLCLI.run(["pkey", "-pubin", "-in", file.path, "-text", "-noout"])
            #expect(result.status == 0)
            #expect(result.output.contains("prime256v1"), "\(result.output)")
        }
    }
}
