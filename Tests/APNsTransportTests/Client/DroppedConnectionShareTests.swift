import APNsMockServer
import Foundation
import Testing
@testable import APNsTransport

/// What share of a burst a connection that dies in flight costs (issue #18 §4; the figures
/// are quoted in Reliability.md). A batch through ``APNsClient`` over one connection to
/// ``MockAPNsServer``, which closes the connection abruptly (no GOAWAY) when the middle
/// request arrives. RFC 9113 gives the client no way to know which of the streams open at
/// that moment the server processed, so each of them must fail with
/// `mayHaveReachedAPNs == true`, and the default retry policy leaves them to the caller;
/// everything not yet written goes out on a new connection. The share is therefore bounded
/// by what was in flight: `maxConcurrency` (or the stream limit, if lower).
@Suite("A connection lost mid-burst: how many notifications may have reached APNs")
struct DroppedConnectionShareTests {
    static let burst = 3_000

    /// A distinct 32-byte device token per index.
    static func token(_ index: Int) throws -> DeviceToken {
        var bytes = [UInt8](repeating: 0xA5, count: 32)
        withUnsafeBytes(of: UInt32(index).bigEndian) { bytes.replaceSubrange(0..<4, with: $0) }
        return try DeviceToken(bytes: bytes)
    }

    @Test(
        "the requests in flight when the connection dies fail as possibly delivered; no more, none twice",
        arguments: [(100, 0), (100, 20), (1_000, 20)]
    )
    func shareOfABurst(maxConcurrency: Int, responseDelayMilliseconds: Int) async throws {
        try await withMockAPNsServer { server in
            let transport = try mockTransport(server) { $0.connectionCount = 1 }
            let client = APNsClient(credentials: .certificate, transport: transport)
            // A delay stands for the round trip of a real network, where the window of
            // `maxConcurrency` requests is always full.
            server.setResponseDelay(.milliseconds(responseDelayMilliseconds))
            server.dropConnection(atRequest: Self.burst / 2)
            let tokens = try (0..<Self.burst).map(Self.token)
            let outcomes = await client.send(
                PushNotification(payload: .alert(body: "Hi"), topic: "com.example.app"),
                to: tokens,
                maxConcurrency: maxConcurrency
            )
            await client.shutdown()

            #expect(outcomes.count == Self.burst)
            var accepted = 0
            var mayHaveReached = 0
            var notReached = 0
            var other: [String] = []
            for outcome in outcomes {
                switch outcome.result {
                case .success: accepted += 1
                case .failure(.failed(let failure)) where failure.mayHaveReachedAPNs: mayHaveReached += 1
                case .failure(.failed): notReached += 1
                case .failure(let error): other.append("\(error)")
                }
            }
            // What the server processed, by device token: nothing twice.
            var arrivals: [String: Int] = [:]
            for record in server.recordedRequests {
                if let token = record.deviceToken { arrivals[token, default: 0] += 1 }
            }
            let processedOfPossiblyDelivered = outcomes.filter {
                $0.error?.transportError?.mayHaveReachedAPNs == true && arrivals[$0.deviceToken.hexString] != nil
            }.count
            print(
                "DROPPED-CONNECTION burst=\(Self.burst) maxConcurrency=\(maxConcurrency) delay=\(responseDelayMilliseconds)ms"
                    + " accepted=\(accepted) mayHaveReachedAPNs=\(mayHaveReached) (processed by the server: \(processedOfPossiblyDelivered))"
                    + " notReached=\(notReached) share=\(String(format: "%.2f", 100 * Double(mayHaveReached) / Double(Self.burst)))%"
            )
            #expect(other.isEmpty, "\(other.prefix(3))")
            #expect(mayHaveReached >= 1)
            #expect(mayHaveReached <= maxConcurrency)
            #expect(accepted + mayHaveReached + notReached == Self.burst)
            #expect(arrivals.values.allSatisfy { $0 == 1 })
            #expect(transport.statistics.connectionsLost == 1)
        }
    }
}
