import APNsCore
import Foundation
import Synchronization

/// A token source that counts its calls and hands out a new JWT after each invalidation,
/// so a test sees which token each request carried.
final class CountingTokenSource: ProviderTokenSource {
    private let generation = Mutex(1)

    func token() throws -> ProviderToken {
        generation.withLock { ProviderToken(jwt: "header.claims.signature-\($0)", issuedAt: Date(timeIntervalSince1970: 0)) }
    }

    func invalidate(_ token: ProviderToken) {
        generation.withLock { if token.jwt == "header.claims.signature-\($0)" { $0 += 1 } }
    }
}

extension APNsClient {
    /// A sandbox client over `transport` with a certificate (no token) and a long timeout,
    /// so no test waits for it on a starved machine.
    static func testing(
        transport: any PushTransport, retryPolicy: RetryPolicy = .default, requestTimeout: Duration = .seconds(120)
    ) -> APNsClient {
        APNsClient(
            environment: .sandbox,
            credentials: .certificate,
            transport: transport,
            retryPolicy: retryPolicy,
            requestTimeout: requestTimeout
        )
    }
}

/// A distinct 32-byte device token for each `index`.
func mockToken(_ index: Int) -> DeviceToken {
    var raw = [UInt8](repeating: 0, count: 32)
    var value = UInt64(index)
    for position in (0..<8).reversed() {
        raw[position] = UInt8(truncatingIfNeeded: value)
        value >>= 8
    }
    raw[31] = 0xEE
    // Non-empty by construction.
    return (try? DeviceToken(bytes: raw)) ?? { preconditionFailure("unreachable") }()
}

let sampleAlert = PushNotification(payload: .alert(title: "Hello", body: "World"), topic: "com.example.app")
