import APNsTesting
import Foundation
import Logging
import Synchronization
import Testing

@testable import APNsCore

/// A provider token source that counts calls and issues `jwt-1`, `jwt-2`, … (a new one
/// only after the current one is invalidated).
final class CoreCountingTokenSource: ProviderTokenSource {
    private struct State {
        var generation = 1
        var tokenCalls = 0
        var invalidated: [String] = []
    }
    private let state = Mutex(State())

    func token() throws -> ProviderToken {
        state.withLock { state in
            state.tokenCalls += 1
            return ProviderToken(
                jwt: "header.claims.signature-\(state.generation)",
                issuedAt: Date(timeIntervalSince1970: 0)
            )
        }
    }

    func invalidate(_ token: ProviderToken) {
        state.withLock { state in
            state.invalidated.append(token.jwt)
            if token.jwt == "header.claims.signature-\(state.generation)" { state.generation += 1 }
        }
    }

    var tokenCalls: Int { state.withLock { $0.tokenCalls } }
    var invalidated: [String] { state.withLock { $0.invalidated } }
}

/// A token source whose signer always fails.
struct CoreFailingTokenSource: ProviderTokenSource {
    struct SigningFailed: Error {}
    func token() throws -> ProviderToken { throw SigningFailed() }
    func invalidate(_ token: ProviderToken) {}
}

/// Records requested sleeps instead of sleeping.
final class CoreRecordingSleeper: Sendable {
    private let slept = Mutex<[Duration]>([])
    var durations: [Duration] { slept.withLock { $0 } }
    func sleep(_ duration: Duration) async throws {
        slept.withLock { $0.append(duration) }
        try Task.checkCancellation()
    }
}

/// A swift-log handler that keeps every message and its metadata.
struct CoreCapturingLogHandler: LogHandler {
    final class Store: Sendable {
        let lines = Mutex<[String]>([])
        var all: [String] { lines.withLock { $0 } }
    }
    let store: Store
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        store.lines.withLock { $0.append("\(event.level) \(event.message) \(merged)") }
    }
}

extension APNsClient {
    /// A client with a recording sleeper and fixed jitter.
    static func testing(
        transport: any PushTransport,
        credentials: APNsCredentials = .certificate,
        retryPolicy: RetryPolicy = .default,
        sleeper: CoreRecordingSleeper = CoreRecordingSleeper(),
        jitter: Double = 1,
        logger: Logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
    ) -> APNsClient {
        APNsClient(
            environment: .sandbox,
            credentials: credentials,
            transport: transport,
            retryPolicy: retryPolicy,
            requestTimeout: .seconds(120),  // no test waits for it: long enough for a starved machine
            logger: logger,
            sleep: { try await sleeper.sleep($0) },
            jitter: { jitter }
        )
    }
}

func mockToken(_ index: Int, bytes: Int = 32) -> DeviceToken {
    var raw = [UInt8](repeating: 0, count: bytes)
    var value = UInt64(index)
    for position in (0..<min(8, bytes)).reversed() {
        raw[position] = UInt8(truncatingIfNeeded: value)
        value >>= 8
    }
    raw[bytes - 1] = 0xEE
    // Non-empty by construction.
    return (try? DeviceToken(bytes: raw)) ?? { preconditionFailure("unreachable") }()
}

let sampleAlert = PushNotification(payload: .alert(title: "Hello", body: "World"), topic: "com.example.app")

/// Scripts `mock`'s answers by index: index % 10 == 0 Unregistered, 1 the connection
/// closed, 2 TooManyRequests then accepted; the rest accepted.
func scriptTenthsOfAnswers(_ mock: MockTransport, _ tokens: [DeviceToken]) {
    for (index, token) in tokens.enumerated() {
        switch index % 10 {
        case 0: mock.respond(to: token, with: .rejected(.unregistered))
        case 1: mock.respond(to: token, with: .failure(.connectionClosed()))
        case 2: mock.respond(to: token, with: [.rejected(.tooManyRequests), .accepted])
        default: break
        }
    }
}

/// An outcome as a word to compare: accepted, rejected with its reason, or failed with
/// its transport code.
func outcomeKind(_ outcome: APNsOutcome) -> String {
    switch outcome.result {
    case .success: "accepted"
    case .failure(.rejected(let rejection)): "rejected \(rejection.reason.map { "\($0)" } ?? "-")"
    case .failure(let error): "failed \(error.transportError?.code.description ?? "\(error)")"
    }
}

/// The outcomes a streaming send handed over, by index, each kept as often as it came.
final class ReceivedOutcomes: Sendable {
    private let outcomes = Mutex<[Int: [APNsOutcome]]>([:])

    func record(_ index: Int, _ outcome: APNsOutcome) {
        outcomes.withLock { $0[index, default: []].append(outcome) }
    }

    /// Checks that every index of `expected` (the collecting batch's outcomes for the same
    /// `tokens` and answers) came exactly once, with its token and the same kind of outcome.
    func expectSame(as expected: [APNsOutcome], tokens: [DeviceToken]) {
        let received = outcomes.withLock { $0 }
        #expect(received.count == expected.count)
        #expect(received.values.allSatisfy { $0.count == 1 })
        for (index, outcome) in expected.enumerated() {
            #expect(received[index]?.first?.deviceToken == tokens[index])
            #expect(received[index].map { outcomeKind($0[0]) } == outcomeKind(outcome), "index \(index)")
        }
    }
}
