import Foundation
import Testing
@testable import APNsTransport

/// The code of Documentation/SwiftAPNs.docc/ConnectingWithACertificate.md, compiled and run
/// against the test PKI.
struct ConnectingWithACertificateArticleTests {
    @Test func articleCodeWorks() throws {
        let pki = try TestPKI.get()
        let p12Password = TestPKI.password
        let certificateText = try pki.text("client.pem")
        let keyText = try pki.text("client.enc.key")
        let keyPassphrase: String? = TestPKI.password
        let mockServerCAPEM = try pki.text("ca.pem")
        let proxyPassword = "secret"

        let identity = try ClientIdentity(pkcs12File: pki.path("client.p12"), password: p12Password)

        let fromPEM = try ClientIdentity(
            certificatePEM: certificateText,
            privateKeyPEM: keyText,
            password: keyPassphrase  // nil for an unencrypted key
        )

        print(identity.subjectCommonName ?? "")  // "Apple Push Services: com.example.app"
        print(identity.topics)                   // ["com.example.app", "com.example.app.voip", ...]
        if identity.notAfter < Date().addingTimeInterval(30 * 24 * 3600) {
            print("the APNs certificate expires on \(identity.notAfter): renew it")
        }

        let testing = TLSConfiguration(
            trustRoots: .certificates(mockServerCAPEM),
            clientIdentity: identity
        )

        let throughProxy = TLSConfiguration(
            clientIdentity: identity,
            proxy: ProxyConfiguration(host: "proxy.corp.example", port: 3128, username: "apns", password: proxyPassword)
        )
        let throughSOCKS = TLSConfiguration(
            clientIdentity: identity,
            proxy: .socks5(host: "10.0.0.7", port: 1080, username: "apns", password: proxyPassword)
        )
        #expect(throughSOCKS.proxy?.kind == .socks5)
        // The URL forms the article gives for APNS_PROXY.
        #expect(try ProxyConfiguration(url: "http://user:password@proxy.corp.example:3128") == ProxyConfiguration(host: "proxy.corp.example", port: 3128, username: "user", password: "password"))
        #expect(try ProxyConfiguration(url: "socks5://user:password@10.0.0.7:1080") == .socks5(host: "10.0.0.7", port: 1080, username: "user", password: "password"))

        #expect(fromPEM.subjectCommonName == "Apple Push Services: com.example.app")
        #expect(testing.trustRoots == .certificates(mockServerCAPEM))
        #expect(throughProxy.trustRoots == .system)
        #expect(throughProxy.proxy?.port == 3128)
    }
}
