import Foundation
import Testing
@testable import APNsTransport

/// Loading client identities made by the `openssl` tool, and the typed errors for the
/// mistakes people make with them.
@Suite(.blockingIO)
struct ClientIdentityTests {
    @Test func pemAndPKCS12LoadTheSameIdentity() throws {
        let pki = try TestPKI.get()
        let pem = try ClientIdentity(certificatePEM: pki.text("client.pem"), privateKeyPEM: pki.text("client.key"))
        let encrypted = try ClientIdentity(certificatePEM: pki.text("client.pem"), privateKeyPEM: pki.text("client.enc.key"), password: TestPKI.password)
        let p12 = try ClientIdentity(pkcs12File: pki.path("client.p12"), password: TestPKI.password)
        let data = try Data(contentsOf: URL(fileURLWithPath: pki.path("client-legacy.p12")))
        let legacy = try ClientIdentity(pkcs12Data: data, password: TestPKI.password)
        for identity in [pem, encrypted, p12, legacy] {
            #expect(identity.subjectCommonName == "Apple Push Services: com.example.app")
            #expect(identity.notAfter == pem.notAfter)
        }
    }

    /// notAfter/notBefore against what `openssl x509 -dates` prints (as epoch seconds via `date`).
    @Test func validityDatesMatchOpenSSL() throws {
        let pki = try TestPKI.get()
        let identity = try ClientIdentity(certificatePEM: pki.text("client.pem"), privateKeyPEM: pki.text("client.key"))
        let dates = try run("openssl", ["x509", "-in", pki.path("client.pem"), "-noout", "-dates"])
        func epoch(_ field: String) throws -> Double {
            let value = dates.split(separator: "\n").first { $0.hasPrefix(field + "=") }.map { String($0.dropFirst(field.count + 1)) } ?? ""
            return Double(try run("date", ["-u", "-d", value, "+%s"]).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        }
        #expect(identity.notAfter.timeIntervalSince1970 == (try epoch("notAfter")))
        #expect(identity.notBefore.timeIntervalSince1970 == (try epoch("notBefore")))
    }

    /// The topics extension written by OpenSSL's ASN.1 generator (`ASN1:SEQUENCE:` in the
    /// extension file), in Apple's layout: topic, then the kinds it may push.
    @Test func topicsComeFromApplesExtension() throws {
        let pki = try TestPKI.get()
        let identity = try ClientIdentity(pkcs12File: pki.path("client.p12"), password: TestPKI.password)
        #expect(identity.topics == ["com.example.app", "com.example.app.voip"])
        // The extension is really in the certificate, as OpenSSL prints it.
        let text = try run("openssl", ["x509", "-in", pki.path("client.pem"), "-noout", "-text"])
        #expect(text.contains("1.2.840.113635.100.6.3.6"))
    }

    @Test func topicsParserReadsHandEncodedDER() {
        // SEQUENCE { UTF8String "a.b", SEQUENCE { UTF8String "app" } }, per X.690.
        let der: [UInt8] = [0x30, 0x0C, 0x0C, 0x03, 0x61, 0x2E, 0x62, 0x30, 0x05, 0x0C, 0x03, 0x61, 0x70, 0x70]
        #expect(APNsCertificateTopics.parse(der) == ["a.b"])
        #expect(APNsCertificateTopics.parse([0x30, 0x7F]) == [])
        #expect(APNsCertificateTopics.parse([]) == [])
    }

    /// Truncated and random DER never crashes the topics parser.
    @Test func topicsParserSurvivesMalformedInput() {
        let valid: [UInt8] = [0x30, 0x0C, 0x0C, 0x03, 0x61, 0x2E, 0x62, 0x30, 0x05, 0x0C, 0x03, 0x61, 0x70, 0x70]
        for end in 0..<valid.count { _ = APNsCertificateTopics.parse(Array(valid[..<end])) }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let count = Int.random(in: 0..<64, using: &generator)
            var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if !bytes.isEmpty { bytes[0] = 0x30 }
            _ = APNsCertificateTopics.parse(bytes)
        }
        // Long-form lengths (X.690 §8.1.3.5): 0x81 0x05 is the length 5.
        #expect(APNsCertificateTopics.parse([0x30, 0x81, 0x05, 0x0C, 0x03, 0x61, 0x62, 0x63]) == ["abc"])
    }

    @Test func descriptionNamesTheCertificateAndHidesTheKey() throws {
        let pki = try TestPKI.get()
        let identity = try ClientIdentity(certificatePEM: pki.text("client.pem"), privateKeyPEM: pki.text("client.key"))
        let text = "\(identity)" + String(reflecting: identity)
        #expect(text.contains("'Apple Push Services: com.example.app'"))
        #expect(text.contains("com.example.app.voip"))
        let keyBody = try pki.text("client.key").split(separator: "\n").dropFirst().first.map(String.init) ?? "?"
        #expect(!text.contains(keyBody))
        #expect(!text.contains("PRIVATE KEY"))
    }

    @Test func pkcs12WithoutAPasswordLoadsWithAnEmptyOne() throws {
        let pki = try TestPKI.get()
        let identity = try ClientIdentity(pkcs12File: pki.path("client-nopass.p12"), password: "")
        #expect(identity.subjectCommonName == "Apple Push Services: com.example.app")
    }

    @Test func wrongPKCS12PasswordIsReported() throws {
        let pki = try TestPKI.get()
        let error = #expect(throws: ClientIdentityError.self) {
            try ClientIdentity(pkcs12File: pki.path("client.p12"), password: "not it")
        }
        #expect(error?.code == .wrongPassword)
        #expect(error?.description.contains("not it") == false)
    }

    @Test func wrongPEMPasswordAndMissingPasswordAreReported() throws {
        let pki = try TestPKI.get()
        let wrong = #expect(throws: ClientIdentityError.self) {
            try ClientIdentity(certificatePEM: pki.text("client.pem"), privateKeyPEM: pki.text("client.enc.key"), password: "nope")
        }
        #expect(wrong?.code == .wrongPassword)
        let missing = #expect(throws: ClientIdentityError.self) {
            try ClientIdentity(certificatePEM: pki.text("client.pem"), privateKeyPEM: pki.text("client.enc.key"))
        }
        #expect(missing?.code == .passwordRequired)
    }

    @Test func keyThatDoesNotMatchIsReported() throws {
        let pki = try TestPKI.get()
        let error = #expect(throws: ClientIdentityError.self) {
            try ClientIdentity(certificatePEM: pki.text("client.pem"), privateKeyPEM: pki.text("stray.key"))
        }
        #expect(error?.code == .keyMismatch)
        #expect(error?.description.contains("PRIVATE KEY") == false)
    }

    @Test(arguments: ["pem", "p12"])
    func expiredCertificateIsReportedWithItsDate(format: String) throws {
        let pki = try TestPKI.get()
        let error = #expect(throws: ClientIdentityError.self) {
            if format == "pem" {
                _ = try ClientIdentity(certificatePEM: pki.text("expiredclient.pem"), privateKeyPEM: pki.text("expiredclient.key"))
            } else {
                _ = try ClientIdentity(pkcs12File: pki.path("expiredclient.p12"), password: TestPKI.password)
            }
        }
        #expect(error?.code == .expired)
        let end = try run("openssl", ["x509", "-in", pki.path("expiredclient.pem"), "-noout", "-enddate", "-dateopt", "iso_8601"])
        let stamp = end.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "notAfter=", with: "").replacingOccurrences(of: " ", with: "T")
        #expect(error?.description.contains("'Expired Push Services' expired on \(stamp)") == true, "\(String(describing: error)) vs \(stamp)")
    }

    @Test func notYetValidCertificateIsReported() throws {
        let pki = try TestPKI.get()
        let error = #expect(throws: ClientIdentityError.self) {
            try ClientIdentity(certificatePEM: pki.text("futureclient.pem"), privateKeyPEM: pki.text("futureclient.key"))
        }
        #expect(error?.code == .notYetValid)
        #expect(error?.description.contains("is not valid until 2099-12-31T00:00:00Z") == true, "\(String(describing: error))")
    }

    @Test func garbageIsMalformed() throws {
        let garbage = Data("this is not a certificate".utf8)
        let p12 = #expect(throws: ClientIdentityError.self) { try ClientIdentity(pkcs12Data: garbage, password: "x") }
        #expect(p12?.code == .malformed)
        let noCertificate = #expect(throws: ClientIdentityError.self) {
            try ClientIdentity(certificatePEM: "garbage", privateKeyPEM: "garbage")
        }
        #expect(noCertificate?.code == .missingCertificate)
        let pki = try TestPKI.get()
        let noKey = #expect(throws: ClientIdentityError.self) {
            try ClientIdentity(certificatePEM: pki.text("client.pem"), privateKeyPEM: "garbage")
        }
        #expect(noKey?.code == .missingPrivateKey)
        // A certificate block whose body is damaged: malformed, not missing.
        let damaged = try pki.text("client.pem").replacingOccurrences(of: "\nMII", with: "\nMI!")
        let malformed = #expect(throws: ClientIdentityError.self) {
            try ClientIdentity(certificatePEM: damaged, privateKeyPEM: pki.text("client.key"))
        }
        #expect(malformed?.code == .malformed, "\(String(describing: malformed))")
        // A .p12 made by openssl with -nokeys: a certificate and no key.
        let p12WithoutKey = #expect(throws: ClientIdentityError.self) {
            try ClientIdentity(pkcs12File: pki.path("nokey.p12"), password: TestPKI.password)
        }
        #expect(p12WithoutKey?.code == .missingPrivateKey, "\(String(describing: p12WithoutKey))")
        let unreadable = #expect(throws: ClientIdentityError.self) {
            try ClientIdentity(pkcs12File: "/nonexistent/apns.p12", password: "x")
        }
        #expect(unreadable?.code == .fileNotReadable)
    }

    /// The identity is `Sendable`: load once, use from many tasks.
    @Test func identityIsUsableFromDetachedTasks() async throws {
        let pki = try TestPKI.get()
        let identity = try ClientIdentity(pkcs12File: pki.path("client.p12"), password: TestPKI.password)
        let names = await withTaskGroup(of: String?.self) { group in
            for _ in 0..<8 { group.addTask { identity.certificate.subjectCommonName } }
            return await group.reduce(into: [String?]()) { $0.append($1) }
        }
        #expect(names.allSatisfy { $0 == "Apple Push Services: com.example.app" })
    }
}
