import Foundation
import Synchronization
import Testing
@testable import APNsMockServer

/// Counts verifier calls, to prove a token is verified once, not per request.
final class VerificationCounter: Sendable {
    let calls = Mutex(0)
}

@Suite("Token-based authentication")
struct ProviderTokenTests {
    static let now = Int(Date().timeIntervalSince1970)
    static let goodToken = makeJWT(issuedAt: now - 60)
    static let otherGoodToken = makeJWT(issuedAt: now - 30)
    static let expiredToken = makeJWT(issuedAt: now - 3700)
    static let unknownToken = makeJWT(keyID: "ZZZZZZZZZZ", issuedAt: now)

    static func configuration(counter: VerificationCounter = VerificationCounter()) -> MockAPNsServer.Configuration {
        let accepted: Set<String> = [goodToken, otherGoodToken, expiredToken]
        return MockAPNsServer.Configuration(
            bundleIDs: ["com.example.app"],
            authentication: .providerToken(ProviderTokenCheck { token, _ in
                counter.calls.withLock { $0 += 1 }
                return accepted.contains(token)
            }),
            maxConcurrentStreams: 500)
    }

    @Test("authorization rules answer 403 with Apple's reasons", arguments: [
        (nil, 403, "MissingProviderToken"),
        ("bearer " + unknownToken, 403, "InvalidProviderToken"),
        ("bearer not.a.jwt", 403, "InvalidProviderToken"),
        ("basic " + goodToken, 403, "InvalidProviderToken"),
        ("bearer " + makeJWT(issuedAt: "\(now)"), 403, "InvalidProviderToken"),
        ("bearer " + expiredToken, 403, "ExpiredProviderToken"),
        ("bearer " + goodToken, 200, nil),
    ] as [(String?, Int, String?)])
    func authorization(header: String?, status: Int, reason: String?) async throws {
        try await withServerAndCurl(Self.configuration()) { server, curl in
            let headers = ["apns-topic: com.example.app"] + (header.map { ["authorization: \($0)"] } ?? [])
            let response = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)", headers: headers)
            #expect(response.status == status)
            #expect(response.reason == reason)
        }
    }

    /// Three requests with `tokens` on one connection (curl `--next` reuses it); the statuses.
    static func statusesOnOneConnection(_ tokens: [String], server: MockAPNsServer, curl: CurlClient) async throws -> [Int] {
        var arguments: [String] = []
        for (index, token) in tokens.enumerated() {
            if index > 0 { arguments.append("--next") }
            arguments += ["-sS", "--http2", "--cacert", curl.caFile, "-o", "/dev/null", "-w", "%{http_code}\n",
                          "-H", "apns-topic: com.example.app", "-H", "authorization: bearer \(token)",
                          "--data-binary", samplePayload,
                          "https://127.0.0.1:\(server.port)/3/device/\(sampleDeviceToken)"]
        }
        let result = try await curl.raw(arguments)
        return result.stdout.split(separator: "\n").compactMap { Int($0) }
    }

    @Test("a token is verified once, however many requests carry it")
    func verifiedOnce() async throws {
        let counter = VerificationCounter()
        try await withServerAndCurl(Self.configuration(counter: counter)) { server, curl in
            let statuses = try await Self.statusesOnOneConnection([Self.goodToken, Self.goodToken, Self.goodToken],
                                                                  server: server, curl: curl)
            #expect(statuses == [200, 200, 200])
            let again = try await Self.statusesOnOneConnection([Self.goodToken], server: server, curl: curl)
            #expect(again == [200])
            #expect(counter.calls.withLock { $0 } == 1)
            #expect(server.statistics.connections == 2)
        }
    }

    @Test("a new token on the same connection within 20 minutes is 429 TooManyProviderTokenUpdates")
    func tooManyTokenUpdates() async throws {
        try await withServerAndCurl(Self.configuration()) { server, curl in
            let statuses = try await Self.statusesOnOneConnection([Self.goodToken, Self.otherGoodToken],
                                                                  server: server, curl: curl)
            #expect(statuses == [200, 429])
            #expect(server.recordedRequests.last?.reason == "TooManyProviderTokenUpdates")
            // A new connection may use the new token.
            let fresh = try await Self.statusesOnOneConnection([Self.otherGoodToken], server: server, curl: curl)
            #expect(fresh == [200])
        }
    }

    @Test("the claims of the token are recorded")
    func claimsRecorded() async throws {
        try await withServerAndCurl(Self.configuration()) { server, curl in
            _ = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)",
                                    headers: ["apns-topic: com.example.app", "authorization: bearer \(Self.goodToken)"])
            let claims = try #require(server.recordedRequests.first?.providerToken)
            #expect(claims == ProviderTokenClaims(algorithm: "ES256", keyID: "ABC123DEFG", teamID: "DEF123GHIJ",
                                                  issuedAt: Int64(Self.now - 60)))
        }
    }

    /// The SETTINGS_MAX_CONCURRENT_STREAMS values nghttp received on one request.
    static func announcedStreamLimits(_ configuration: MockAPNsServer.Configuration, topic: String) async throws -> ([Int], String) {
        try await withServerAndCurl(configuration) { server, curl in
            let bodyFile = curl.caFile + ".body"
            try Data(samplePayload.utf8).write(to: URL(fileURLWithPath: bodyFile))
            defer { try? FileManager.default.removeItem(atPath: bodyFile) }
            let result = try await ExternalTool.run("nghttp", [
                "-nv", "-d", bodyFile, "-H", "apns-topic: \(topic)",
                "-H", "authorization: bearer \(Self.goodToken)",
                "https://127.0.0.1:\(server.port)/3/device/\(sampleDeviceToken)",
            ])
            // Only the SETTINGS frames nghttp received (it also prints those it sent).
            var receiving = false
            var limits: [Int] = []
            for line in result.stdout.split(separator: "\n") {
                if line.contains(" frame <") { receiving = line.contains("recv SETTINGS") }
                if receiving, let range = line.range(of: "SETTINGS_MAX_CONCURRENT_STREAMS(0x03):") {
                    limits.append(Int(line[range.upperBound...].prefix { $0.isNumber }) ?? -1)
                }
            }
            return (limits, result.stdout)
        }
    }

    @Test("token mode announces 1 stream, then the configured limit after a valid token (nghttp -v)")
    func streamLimitRaised() async throws {
        let (limits, output) = try await Self.announcedStreamLimits(Self.configuration(), topic: "com.example.app")
        #expect(limits == [1, 500], "\(output)")
        #expect(output.contains(":status: 200"))
    }

    @Test("with streamLimitAfterRejection, a rejection drops the limit again (nghttp -v)")
    func streamLimitDroppedAfterRejection() async throws {
        var configuration = Self.configuration()
        configuration.streamLimitAfterRejection = 1
        let (limits, output) = try await Self.announcedStreamLimits(configuration, topic: "com.other.app")
        #expect(limits == [1, 500, 1], "\(output)")
        #expect(output.contains(":status: 400"))
    }
}

/// A clock a test moves forward by hand.
final class ManualClock: Sendable {
    let offset = Mutex(0.0)
    func now() -> Date { Date() + offset.withLock { $0 } }
    func advance(by seconds: Double) { offset.withLock { $0 += seconds } }
}

@Suite("Token rules on the server's clock")
struct ProviderTokenClockTests {
    static func configuration(_ clock: ManualClock) -> MockAPNsServer.Configuration {
        MockAPNsServer.Configuration(
            bundleIDs: ["com.example.app"],
            authentication: .providerToken(.acceptingUnsigned(keyID: "ABC123DEFG", teamID: "DEF123GHIJ")),
            now: { clock.now() })
    }

    @Test("a token turns expired once the server's clock passes iat + 1 hour")
    func expiresWithTheClock() async throws {
        let clock = ManualClock()
        let token = makeJWT(issuedAt: Int(Date().timeIntervalSince1970))
        try await withServerAndCurl(Self.configuration(clock)) { server, curl in
            let fresh = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)",
                                            headers: ["apns-topic: com.example.app", "authorization: bearer \(token)"])
            #expect(fresh.status == 200)
            clock.advance(by: 3601 + 5)
            let stale = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)",
                                            headers: ["apns-topic: com.example.app", "authorization: bearer \(token)"])
            #expect(stale.status == 403)
            #expect(stale.reason == "ExpiredProviderToken")
        }
    }

    @Test("a keyID the verifier does not know is InvalidProviderToken")
    func unknownKey() async throws {
        let clock = ManualClock()
        try await withServerAndCurl(Self.configuration(clock)) { server, curl in
            let token = makeJWT(keyID: "OTHERKEY00", issuedAt: Int(Date().timeIntervalSince1970))
            let response = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)",
                                               headers: ["apns-topic: com.example.app", "authorization: bearer \(token)"])
            #expect(response.reason == "InvalidProviderToken")
        }
    }
}
