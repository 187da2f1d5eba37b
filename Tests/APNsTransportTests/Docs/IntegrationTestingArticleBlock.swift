// The code block of Documentation/SwiftAPNs.docc/IntegrationTestingWithTheMockServer.md,
// line for line from the next line on (ArticleBlocksTests checks it), so it compiles here
// as the article shows it, imports included; ArticleBlocksTests also runs it.
import APNsMockServer
import Foundation

func sendThroughTheMock() async throws {
    let configuration = MockAPNsServer.Configuration(bundleIDs: ["com.example.app"])
    try await withMockAPNsServer(configuration: configuration) { server in
        // Point the client at the server.
        let caFile = FileManager.default.temporaryDirectory.appendingPathComponent("mock-ca.pem").path
        try server.writeCertificateAuthority(to: caFile)
        let url = "https://localhost:\(server.port)/3/device/<token>"
        _ = url  // your client connects here, trusting caFile (or server.certificateAuthorityPEM)

        // Script what APNs should answer.
        server.respond(toDeviceToken: "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0",
                       with: .unregistered())
        server.failNextRequests(2, with: .serviceUnavailable)

        // Read what arrived.
        let received = server.recordedRequests
        _ = received.map { ($0.deviceToken, $0.status, $0.reason) }
    }
}
