import APNsTesting
import Foundation
import Testing

@testable import APNsCore

/// ``APNsClient/statistics`` checked against the requests the mock transport received:
/// every request after the first of a notification is one retry, counted once, under
/// the answer that caused it.
extension RetryTests {
    @Test func acceptedAtOnceCountsNoRetry() async throws {
        let mock = MockTransport()
        let client = APNsClient.testing(transport: mock)
        _ = try await client.send(sampleAlert, to: Self.device)
        #expect(mock.requests.count == 1)
        #expect(client.statistics == APNsClient.Statistics())
        #expect(client.statistics.retries == 0)
    }

    @Test func retriedRejectionsAreCountedByReason() async throws {
        let mock = MockTransport()
        mock.respond(
            to: Self.device,
            with: [.rejected(.serviceUnavailable), .rejected(.tooManyRequests), .rejected(.serviceUnavailable), .accepted]
        )
        let client = APNsClient.testing(transport: mock, retryPolicy: RetryPolicy(maxAttempts: 5))
        _ = try await client.send(sampleAlert, to: Self.device)
        let statistics = client.statistics
        #expect(mock.requests.count == 4)
        #expect(statistics.retriesByReason == ["ServiceUnavailable": 2, "TooManyRequests": 1])
        #expect(statistics.retriesByFailureCode.isEmpty)
        #expect(statistics.providerTokenRefreshes == 0)
        #expect(statistics.retries == mock.requests.count - 1)
    }

    @Test func aRejectionWithoutReasonIsCountedUnderNoReason() async throws {
        let mock = MockTransport()
        mock.respond(to: Self.device, with: [.response(APNsResponse(status: 503)), .accepted])
        let client = APNsClient.testing(transport: mock)
        _ = try await client.send(sampleAlert, to: Self.device)
        #expect(mock.requests.count == 2)
        #expect(client.statistics.retriesByReason == [APNsClient.Statistics.noReason: 1])
    }

    @Test func retriedTransportFailuresAreCountedByCode() async throws {
        let mock = MockTransport()
        mock.respond(
            to: Self.device,
            with: [.failure(.connectionFailed()), .failure(.streamRefused()), .accepted]
        )
        let client = APNsClient.testing(transport: mock)
        _ = try await client.send(sampleAlert, to: Self.device)
        let statistics = client.statistics
        #expect(mock.requests.count == 3)
        #expect(statistics.retriesByFailureCode == ["connectionFailed": 1, "streamRefused": 1])
        #expect(statistics.retriesByReason.isEmpty)
        #expect(statistics.retries == mock.requests.count - 1)
    }

    @Test func theLastFailedAttemptIsNotARetry() async throws {
        let mock = MockTransport()
        mock.respond(to: Self.device, with: .rejected(.serviceUnavailable))
        let client = APNsClient.testing(transport: mock, retryPolicy: RetryPolicy(maxAttempts: 3))
        await #expect(throws: APNsError.self) { _ = try await client.send(sampleAlert, to: Self.device) }
        #expect(mock.requests.count == 3)
        #expect(client.statistics.retriesByReason == ["ServiceUnavailable": 2])
    }

    @Test func aRejectionThatIsNotRetriedCountsNothing() async throws {
        let mock = MockTransport()
        mock.respond(to: Self.device, with: [.rejected(.badDeviceToken), .accepted])
        let client = APNsClient.testing(transport: mock)
        await #expect(throws: APNsError.self) { _ = try await client.send(sampleAlert, to: Self.device) }
        #expect(mock.requests.count == 1)
        #expect(client.statistics == APNsClient.Statistics())
    }

    @Test func anExpiredProviderTokenRefreshIsCounted() async throws {
        let mock = MockTransport()
        mock.respond(to: Self.device, with: [.rejected(.expiredProviderToken), .rejected(.tooManyRequests), .accepted])
        let source = CoreCountingTokenSource()
        let client = APNsClient.testing(transport: mock, credentials: .providerToken(source))
        _ = try await client.send(sampleAlert, to: Self.device)
        let statistics = client.statistics
        #expect(mock.requests.count == 3)
        #expect(source.invalidated.count == 1)
        #expect(statistics.providerTokenRefreshes == source.invalidated.count)
        #expect(statistics.retriesByReason == ["TooManyRequests": 1])
        #expect(statistics.retries == mock.requests.count - 1)
    }

    // Apple: a provider token may be refreshed at most once every 20 minutes. A batch gives
    // an expired token back at once (so that its next requests carry a new one) and the
    // attempt loop then only asks for the new token: the source hears of the expired
    // answer once, not once by the batch and again by the loop.
    @Test func aBatchGivesAnExpiredTokenBackOnce() async throws {
        let mock = MockTransport()
        let expired = mockToken(7)
        mock.respond(to: expired, with: [.rejected(.expiredProviderToken), .accepted])
        let source = CoreCountingTokenSource()
        let client = APNsClient.testing(transport: mock, credentials: .providerToken(source), retryPolicy: .never)
        let outcomes = await client.send(sampleAlert, to: [expired], maxConcurrency: 1)
        #expect(outcomes.first?.accepted != nil)
        #expect(mock.requests.map { $0.header("authorization") } == [
            "bearer header.claims.signature-1", "bearer header.claims.signature-2",
        ])
        #expect(source.invalidated == ["header.claims.signature-1"])
        #expect(client.statistics.providerTokenRefreshes == 1)
    }

    @Test func aBatchCountsEveryRetryOnce() async throws {
        let mock = MockTransport()
        let tokens = (0..<50).map { mockToken(100 + $0) }
        for (index, token) in tokens.enumerated() {
            switch index % 5 {
            case 0: mock.respond(to: token, with: [.rejected(.serviceUnavailable), .accepted])
            case 1: mock.respond(to: token, with: [.failure(.queueFull()), .failure(.goAway()), .accepted])
            case 2: mock.respond(to: token, with: [.rejected(.unregistered)])
            default: mock.respond(to: token, with: .accepted)
            }
        }
        let client = APNsClient.testing(transport: mock)
        let outcomes = await client.send(sampleAlert, to: tokens, maxConcurrency: 8)
        let statistics = client.statistics
        #expect(outcomes.count == tokens.count)
        #expect(statistics.retriesByReason == ["ServiceUnavailable": 10])
        #expect(statistics.retriesByFailureCode == ["queueFull": 10, "goAway": 10])
        #expect(statistics.retries == mock.requests.count - tokens.count)
    }
}
