import Foundation
import Testing
@testable import APNsMockServer

/// Not a check: `APNS_MOCK_SERVE=<seconds> swift test --filter manualServer` keeps a server
/// up for poking at it by hand (port in /tmp/apns-mock-port, CA in /tmp/apns-mock-ca.pem;
/// both removed when it stops).
@Test(.enabled(if: ProcessInfo.processInfo.environment["APNS_MOCK_SERVE"] != nil))
func manualServer() async throws {
    let seconds = Int(ProcessInfo.processInfo.environment["APNS_MOCK_SERVE"] ?? "") ?? 30
    try await withMockAPNsServer(configuration: .init(bundleIDs: ["com.example.app"], recordedRequestLimit: 0)) { server in
        defer {
            try? FileManager.default.removeItem(atPath: "/tmp/apns-mock-ca.pem")
            try? FileManager.default.removeItem(atPath: "/tmp/apns-mock-port")
        }
        try server.writeCertificateAuthority(to: "/tmp/apns-mock-ca.pem")
        try Data(String(server.port).utf8).write(to: URL(fileURLWithPath: "/tmp/apns-mock-port"))
        try await Task.sleep(for: .seconds(seconds))
    }
}
