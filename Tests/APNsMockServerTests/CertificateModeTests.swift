import Foundation
import APNsOpenSSL
import Testing
@testable import APNsMockServer

/// Client certificates made by the `openssl` command-line tool (not by our code): a CA,
/// an Apple-style push certificate listing two topics in extension
/// 1.2.840.113635.100.6.3.6, an older single-topic certificate (topic in the subject's
/// UID), and a certificate from a CA the server does not trust.
struct ClientCertificates {
    let directory: URL
    var caPEM: String { (try? String(contentsOf: directory.appendingPathComponent("ca.pem"), encoding: .utf8)) ?? "" }
    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    static func make() async throws -> ClientCertificates {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apns-client-certs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let config = """
            [req]
            distinguished_name = dn
            [dn]
            [multi]
            basicConstraints = CA:FALSE
            extendedKeyUsage = clientAuth
            1.2.840.113635.100.6.3.6 = ASN1:SEQUENCE:topics
            [topics]
            t1 = UTF8String:com.example.app
            k1 = SEQUENCE:kindApp
            t2 = UTF8String:com.example.app.voip
            k2 = SEQUENCE:kindVoIP
            [kindApp]
            k = UTF8String:app
            [kindVoIP]
            k = UTF8String:voip
            [single]
            basicConstraints = CA:FALSE
            extendedKeyUsage = clientAuth
            """
        let script = """
            set -e
            cd "$1"
            for ca in ca rogue; do
              openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout $ca.key -out $ca.pem \\
                -days 2 -subj "/CN=Test $ca CA" 2>/dev/null
            done
            issue() { # name ca section subject
              openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout $1.key -out $1.csr \\
                -subj "$4" -config openssl.cnf 2>/dev/null
              openssl x509 -req -in $1.csr -CA $2.pem -CAkey $2.key -CAcreateserial -days 2 \\
                -extfile openssl.cnf -extensions $3 -out $1.pem 2>/dev/null
            }
            issue multi ca multi "/UID=com.example.app/CN=Apple Push Services: com.example.app"
            issue single ca single "/UID=com.example.app/CN=Apple Production IOS Push Services: com.example.app"
            issue stranger rogue single "/UID=com.example.app/CN=Apple Push Services: com.example.app"
            """
        let certificates = ClientCertificates(directory: directory)
        do {
            try config.write(to: directory.appendingPathComponent("openssl.cnf"), atomically: true, encoding: .utf8)
            let result = try await ExternalTool.run("sh", ["-c", script, "sh", directory.path])
            guard result.exitCode == 0 else {
                throw ExternalTool.Timeout(command: "openssl could not make the client certificates: \(result.stderr)")
            }
        } catch {
            certificates.remove()  // the caller removes it only once it has it
            throw error
        }
        return certificates
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }
}

@Suite("Certificate-based authentication")
struct CertificateModeTests {
    @Test("the extension's topics are read as APNs reads them (DER built by openssl)")
    func topicsFromExtension() async throws {
        let certificates = try await ClientCertificates.make()
        defer { certificates.remove() }
        let pem = try String(contentsOfFile: certificates.path("multi.pem"), encoding: .utf8)
        let certificate = try #require(X509Certificate.all(pem: pem).first)
        #expect(CertificateTopics.topics(of: certificate) == ["com.example.app", "com.example.app.voip"])
        // The older kind has no extension: its one topic is the subject's UID (openssl -subj "/UID=…").
        let singlePEM = try String(contentsOfFile: certificates.path("single.pem"), encoding: .utf8)
        let single = try #require(X509Certificate.all(pem: singlePEM).first)
        #expect(CertificateTopics.topics(of: single) == ["com.example.app"])
    }

    @Test("requests are checked against the certificate's topics")
    func topicRules() async throws {
        let certificates = try await ClientCertificates.make()
        defer { certificates.remove() }
        let configuration = MockAPNsServer.Configuration(authentication: .certificate(trustedCAPEM: certificates.caPEM))
        try await withServerAndCurl(configuration) { server, curl in
            let path = "/3/device/\(sampleDeviceToken)"
            func send(_ certificate: String, _ headers: [String]) async throws -> CurlClient.Response {
                try await curl.send(port: server.port, path: path, headers: headers,
                                    extra: ["--cert", certificates.path("\(certificate).pem"),
                                            "--key", certificates.path("\(certificate).key")])
            }
            var response = try await send("multi", ["apns-topic: com.example.app"])
            #expect(response.status == 200)
            response = try await send("multi", ["apns-topic: com.example.app.voip", "apns-push-type: voip"])
            #expect(response.status == 200)
            response = try await send("multi", ["apns-topic: com.other.app"])
            #expect(response.status == 400)
            #expect(response.reason == "TopicDisallowed")
            response = try await send("multi", [])
            #expect(response.status == 400)
            #expect(response.reason == "MissingTopic")
            // A single-topic certificate: its UID is the default topic.
            response = try await send("single", [])
            #expect(response.status == 200)
            response = try await send("single", ["apns-topic: com.example.app.voip", "apns-push-type: voip"])
            #expect(response.reason == "TopicDisallowed")
        }
    }

    @Test("no client certificate, or one from an untrusted CA, fails the TLS handshake")
    func handshakeRequiresTrustedCertificate() async throws {
        let certificates = try await ClientCertificates.make()
        defer { certificates.remove() }
        let configuration = MockAPNsServer.Configuration(authentication: .certificate(trustedCAPEM: certificates.caPEM))
        try await withServerAndCurl(configuration) { server, curl in
            let path = "/3/device/\(sampleDeviceToken)"
            let anonymous = try await curl.send(port: server.port, path: path, headers: ["apns-topic: com.example.app"])
            #expect(anonymous.exitCode != 0)
            #expect(anonymous.status == 0)
            let stranger = try await curl.send(port: server.port, path: path, headers: ["apns-topic: com.example.app"],
                                               extra: ["--cert", certificates.path("stranger.pem"),
                                                       "--key", certificates.path("stranger.key")])
            #expect(stranger.exitCode != 0)
            #expect(stranger.status == 0)
            #expect(server.recordedRequests.isEmpty)
        }
    }
}
