import Foundation
import APNsMockServer
import Logging
import Testing
@testable import APNsTransport

/// The environment is stated once, on the transport; a client told another one sends
/// nothing and says why (issue: a `.production` client over a `.custom(127.0.0.1)`
/// transport tried to resolve api.push.apple.com).
@Suite("The client takes its environment from the transport")
struct EnvironmentOnceTests {
    static let token = "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0"

    @Test("APNsClient(credentials:transport:) sends to the transport's host: the mock server accepts")
    func clientWithoutEnvironmentUsesTheTransports() async throws {
        try await withMockAPNsServer { server in
            let transport = try mockTransport(server)
            let client = APNsClient(credentials: .certificate, transport: transport)
            #expect(client.environment == .custom(host: "127.0.0.1", port: server.port))
            let accepted = try await client.send(
                PushNotification(payload: .alert(body: "Hi"), topic: "com.example.app"),
                to: DeviceToken(hex: Self.token)
            )
            #expect(accepted.apnsID != nil)
            // The mock stands for the sandbox by default, whose answers carry apns-unique-id.
            #expect(accepted.uniqueID.flatMap(UUID.init(uuidString:)) != nil, "\(accepted)")
            #expect(server.statistics.accepted == 1)
            await client.shutdown()
        }
    }

    @Test("a production client over a local transport: invalid, environmentMismatch naming both, nothing sent")
    func mismatchIsAClearErrorAndNothingIsSent() async throws {
        try await withMockAPNsServer { server in
            let transport = try mockTransport(server)
            let client = APNsClient(environment: .production, credentials: .certificate, transport: transport)
            let notification = PushNotification(payload: .alert(body: "Hi"), topic: "com.example.app")
            let token = try DeviceToken(hex: Self.token)
            do throws(APNsError) {
                _ = try await client.send(notification, to: token)
                Issue.record("the send succeeded")
            } catch {
                guard case .invalid(let problem) = error else {
                    Issue.record("expected invalid, got \(error)")
                    return
                }
                #expect(problem.code == .environmentMismatch)
                #expect(problem.description.contains("api.push.apple.com:443"), "\(problem)")
                #expect(problem.description.contains("127.0.0.1:\(server.port)"), "\(problem)")
            }
            // The batch forms say the same for every device.
            let outcomes = await client.send(notification, to: [token, token], maxConcurrency: 2)
            #expect(outcomes.count == 2)
            #expect(outcomes.allSatisfy { if case .invalid(let problem)? = $0.error { problem.code == .environmentMismatch } else { false } })
            // Nothing reached the server, and no connection went anywhere else.
            #expect(server.statistics.requests == 0)
            #expect(transport.statistics.connectionsOpened == 0)
            #expect(transport.statistics.connectionFailures == 0)
            await client.shutdown()
        }
    }
}
