import APNsCore
import Foundation
import Testing
@testable import APNsMockServer

/// The code blocks of IntegrationTestingWithTheMockServer.md about keys and link
/// emulation, compiled and run as the article shows them (see ArticleBlocksTests).
@Suite("Integration-testing article: keys and link emulation")
struct KeyAndLinkArticleBlocks {
    @Test("a client with a connection per key leaves one key per connection in keyIDsByConnection")
    func oneKeyPerConnection() async throws {
        try await withIndependentKeys(["KEYAAAAAAA", "KEYBBBBBBB"]) { signers, keys in
            let tokens = [try await signers[0].token(), try await signers[1].token()]
            let configuration = MockAPNsServer.Configuration(
                bundleIDs: ["com.example.app"], authentication: .providerToken(.signature(keys)))
            try await withServerAndCurl(configuration) { server, curl in
                for token in tokens {
                    // Each curl process is a connection of its own.
                    let statuses = try await ProviderTokenTests.statusesOnOneConnection([token, token], server: server, curl: curl)
                    #expect(statuses == [200, 200])
                }
                #expect(server.keyIDsByConnection.values.allSatisfy { $0.count == 1 })
                #expect(server.keyIDsByConnection.count == 2)
            }
        }
    }

    @Test("environment-scoped and topic-specific keys as the article registers them")
    func keyScopes() async throws {
        try await withIndependentKeys(["SANDBOX001", "TOPICKEY01"]) { signers, keys in
            var configuration = MockAPNsServer.Configuration(
                bundleIDs: ["com.example.app", "com.example.other"],
                authentication: .providerToken(.signature(keys)))
            configuration.environment = .production
            configuration.keyScopes = [
                "SANDBOX001": .sandboxOnly,                  // here: 403 BadEnvironmentKeyIdInToken
                "TOPICKEY01": .topics(["com.example.app"]),  // com.example.other: 400 TopicDisallowed
            ]
            let sandboxToken = try await signers[0].token()
            let topicToken = try await signers[1].token()
            try await withServerAndCurl(configuration) { server, curl in
                let sandbox = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)",
                                                  headers: ["apns-topic: com.example.app", "authorization: bearer \(sandboxToken)"])
                #expect(sandbox.status == 403)
                #expect(sandbox.reason == "BadEnvironmentKeyIdInToken")
                let other = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)",
                                                headers: ["apns-topic: com.example.other", "authorization: bearer \(topicToken)"])
                #expect(other.status == 400)
                #expect(other.reason == "TopicDisallowed")
                let own = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)",
                                              headers: ["apns-topic: com.example.app", "authorization: bearer \(topicToken)"])
                #expect(own.status == 200)
            }
        }
    }

    @Test("the article's link emulation is accepted, and removing it leaves the server answering")
    func linkEmulation() async throws {
        try await withServerAndCurl { server, curl in
            server.setLinkEmulation(.init(
                oneWayDelay: .milliseconds(100),                                // a 100 ms round trip
                bytesPerSecond: 1_000_000,                                      // 1 MB/s per connection
                stalls: .init(every: .seconds(10), length: .milliseconds(500))  // half a second in ten
            ))
            // ...
            server.setLinkEmulation(nil)  // what waits leaves at once
            let response = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)",
                                               headers: ["apns-topic: com.example.app"])
            #expect(response.status == 200)
        }
    }
}
