import APNsCore
import APNsMockServer
import Foundation
import Testing

/// `apns channel …` and `apns broadcast` against an in-process mock APNs server, which
/// serves channel management and broadcasts on the same port.
@Suite("apns channel and apns broadcast")
struct ChannelCommandTests {
    /// The first output line as a JSON object.
    static func firstObject(_ result: CLI.Result) throws -> [String: Any] {
        try CLI.jsonObject(result.lines.first ?? "")
    }

    /// Runs `body` with a mock server for the bundle ID and the flags that point the
    /// tool at it (no credentials, its CA, the bundle ID).
    static func withChannelServer(_ body: (MockAPNsServer, [String]) async throws -> Void) async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withMockAPNsServer(configuration: .init(bundleIDs: [Fixtures.topic])) { server in
            let caPath = directory.appendingPathComponent("ca.pem").path
            try server.writeCertificateAuthority(to: caPath)
            try await body(server, [
                "--no-auth", "--host", "127.0.0.1", "--port", String(server.port), "--ca-file", caPath,
                "--bundle-id", Fixtures.topic,
            ])
        }
    }

    @Test("a bundle ID the credentials do not cover is 403 TopicMismatch, and the advice says what to check")
    func topicMismatchAdvice() async throws {
        try await Self.withChannelServer { _, flags in
            var other = flags
            other[other.count - 1] = "com.example.other"
            let result = try await CLI.run(["channel", "list"] + other)
            #expect(result.status == 1, "\(result)")
            #expect(result.stderr.contains("403 TopicMismatch"), "\(result)")
            #expect(result.stderr.contains("the bundle ID is not one these credentials cover: check --bundle-id"), "\(result)")
        }
    }

    @Test("create, list, read, broadcast, delete; then the deleted channel is refused with exit 1")
    func lifecycle() async throws {
        try await Self.withChannelServer { server, flags in
            let common = flags + ["--json"]

            /// The request ID an output object reports is the one the server saw last.
            func expectRequestIDOfLastRequest(_ result: CLI.Result) throws {
                let reported = try Self.firstObject(result)["apns-request-id"] as? String
                #expect(reported != nil && reported == server.recordedRequests.last?.value(of: "apns-request-id"), "\(result)")
            }

            let created = try await CLI.run(["channel", "create", "--storage", "most-recent"] + common)
            #expect(created.status == 0, "\(created)")
            try expectRequestIDOfLastRequest(created)
            let channel = try #require(Self.firstObject(created)["channel"] as? String)
            #expect(Data(base64Encoded: channel) != nil, "a channel ID is base64")
            #expect(server.channels(bundleID: Fixtures.topic).map(\.id) == [channel])

            let listed = try await CLI.run(["channel", "list"] + common)
            #expect(listed.status == 0, "\(listed)")
            #expect(try Self.firstObject(listed)["channels"] as? [String] == [channel])
            try expectRequestIDOfLastRequest(listed)

            let read = try await CLI.run(["channel", "read", channel] + common)
            #expect(read.status == 0, "\(read)")
            #expect(try Self.firstObject(read)["storage"] as? String == "most-recent")
            try expectRequestIDOfLastRequest(read)

            let sent = try await CLI.run(["broadcast", "--channel", channel, "--content-state", #"{"score":"2-1"}"#,
                                          "--alert-title", "Goal", "--expiration", "0"] + common.filter { $0 != "--bundle-id" && $0 != Fixtures.topic } + ["--bundle-id", Fixtures.topic])
            #expect(sent.status == 0, "\(sent)")
            #expect(try Self.firstObject(sent)["outcome"] as? String == "accepted")
            try expectRequestIDOfLastRequest(sent)
            // The mock server, like APNs in the sandbox, answers with an apns-unique-id.
            let uniqueID = try #require(Self.firstObject(sent)["apns-unique-id"] as? String)
            #expect(UUID(uuidString: uniqueID) != nil, "\(sent)")
            let broadcast = try #require(server.recordedRequests.first { $0.value(of: ":path") == "/4/broadcasts/apps/\(Fixtures.topic)" })
            #expect(broadcast.value(of: "apns-channel-id") == channel)
            #expect(broadcast.value(of: "apns-push-type") == "liveactivity")
            let body = try #require(try JSONSerialization.jsonObject(with: Data(broadcast.body)) as? [String: Any])
            let aps = try #require(body["aps"] as? [String: Any])
            #expect(aps["event"] as? String == "update")
            #expect((aps["content-state"] as? [String: Any])?["score"] as? String == "2-1")

            let deleted = try await CLI.run(["channel", "delete", channel] + common)
            #expect(deleted.status == 0, "\(deleted)")
            try expectRequestIDOfLastRequest(deleted)
            #expect(server.channels(bundleID: Fixtures.topic).isEmpty)

            let gone = try await CLI.run(["channel", "read", channel] + common)
            #expect(gone.status == 1)
            #expect(gone.stdout.contains("ChannelNotRegistered"), "\(gone)")
            try expectRequestIDOfLastRequest(gone)
        }
    }

    @Test("broadcast --payload-file skips a byte order mark, as send does; the body sent keeps true, 1 and 1.0 as written")
    func broadcastPayloadFileWithByteOrderMark() async throws {
        try await Self.withChannelServer { server, flags in
            let created = try await CLI.run(["channel", "create"] + flags)
            #expect(created.status == 0, "\(created)")
            let channel = try #require(server.channels(bundleID: Fixtures.topic).first?.id)
            let directory = try CLI.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let file = directory.appendingPathComponent("payload.json")
            // Compact and in the SDK's key order: the body sent is these bytes.
            let payload = #"{"aps":{"timestamp":1700000000,"event":"update","content-state":{"live":true,"score":1,"ratio":1.0}},"flag":true}"#
            try Data([0xEF, 0xBB, 0xBF] + Array(payload.utf8)).write(to: file)
            let sent = try await CLI.run(["broadcast", "--channel", channel, "--payload-file", file.path] + flags)
            #expect(sent.status == 0, "\(sent)")
            let broadcast = server.recordedRequests.last { $0.value(of: ":path") == "/4/broadcasts/apps/\(Fixtures.topic)" }
            #expect(broadcast.map { String(decoding: $0.body, as: UTF8.self) } == payload, "\(sent)")
        }
    }

    @Test("text output ends each result with the apns-request-id (and a broadcast's apns-unique-id); --request-id chooses it")
    func requestIDInText() async throws {
        try await Self.withChannelServer { server, common in
            let ids = (0..<4).map { _ in UUID().uuidString.lowercased() }

            let created = try await CLI.run(["channel", "create", "--request-id", ids[0].uppercased()] + common)
            #expect(created.status == 0, "\(created)")
            let channel = try #require(server.channels(bundleID: Fixtures.topic).first?.id)
            #expect(created.lines == ["\(channel) apns-request-id \(ids[0])"], "\(created)")
            #expect(server.recordedRequests.last?.value(of: "apns-request-id") == ids[0])

            let listed = try await CLI.run(["channel", "list", "--request-id", ids[1]] + common)
            #expect(listed.lines == [channel, "apns-request-id \(ids[1])"], "\(listed)")

            let read = try await CLI.run(["channel", "read", channel, "--request-id", ids[2]] + common)
            #expect(read.lines == ["\(channel) storage none push-type LiveActivity apns-request-id \(ids[2])"], "\(read)")

            let requestID = UUID().uuidString.lowercased()
            let sent = try await CLI.run(["broadcast", "--channel", channel, "--content-state", #"{"score":"2-1"}"#,
                                          "--request-id", requestID] + common)
            #expect(sent.status == 0, "\(sent)")
            let line = try #require(sent.lines.first)
            let prefix = "accepted apns-request-id \(requestID) apns-unique-id "
            #expect(sent.lines.count == 1 && line.hasPrefix(prefix), "\(sent)")
            #expect(UUID(uuidString: String(line.dropFirst(prefix.count))) != nil, "\(sent)")
            #expect(server.recordedRequests.last?.value(of: "apns-request-id") == requestID)

            let deleted = try await CLI.run(["channel", "delete", channel, "--request-id", ids[3]] + common)
            #expect(deleted.lines == ["deleted \(channel) apns-request-id \(ids[3])"], "\(deleted)")

            // Without --request-id, the client's random one, as the server saw it.
            let empty = try await CLI.run(["channel", "list"] + common)
            let randomID = try #require(server.recordedRequests.last?.value(of: "apns-request-id"))
            #expect(empty.lines == ["apns-request-id \(randomID)"], "\(empty)")
        }
    }

    @Test("bad channel flags exit 2 with one line", arguments: [
        ["channel", "read", "not base64!", "--no-auth", "--bundle-id", "com.example.app"],
        ["channel", "create", "--storage", "forever", "--no-auth", "--bundle-id", "com.example.app"],
        ["channel", "list", "--request-id", "not-a-uuid", "--no-auth", "--bundle-id", "com.example.app"],
        ["broadcast", "--no-auth", "--bundle-id", "com.example.app", "--channel", "Zm9vYmFy"],
        ["broadcast", "--no-auth", "--bundle-id", "com.example.app", "--channel", "Zm9vYmFy", "--content-state", "{}", "--request-id", "42"],
        ["broadcast", "--no-auth", "--bundle-id", "com.example.app", "--channel", "Zm9vYmFy", "--content-state", "[1]"],
    ])
    func usage(arguments: [String]) async throws {
        let result = try await CLI.run(arguments)
        #expect(result.status == 2, "\(result)")
        #expect(result.errorLines.filter { $0.hasPrefix("Error:") || $0.hasPrefix("apns:") }.count >= 1, "\(result)")
    }

    @Test("a broadcast APNs refuses, or one that cannot be made, is one line on standard error; the latter's advice is about the broadcast")
    func broadcastErrorsOnStandardError() async throws {
        try await Self.withChannelServer { _, common in
            let refused = try await CLI.run(["broadcast", "--channel", "dHN0LTEyMzQ1Njc4OTA=", "--content-state", "{}"] + common)
            #expect(refused.status == 1, "\(refused)")
            #expect(refused.stdout.isEmpty, "\(refused)")
            #expect(refused.errorLines.count == 1 && refused.stderr.hasPrefix("apns: rejected "), "\(refused)")

            let oversized = try await CLI.run(["broadcast", "--channel", "dHN0LTEyMzQ1Njc4OTA=", "--content-state", "{}",
                                               "--alert-body", String(repeating: "x", count: 6000)] + common)
            #expect(oversized.status == 1, "\(oversized)")
            #expect(oversized.stdout.isEmpty, "\(oversized)")
            #expect(oversized.errorLines.count == 1 && oversized.stderr.hasPrefix("apns: invalid: "), "\(oversized)")
            #expect(oversized.stderr.contains("fix the broadcast's payload"), "\(oversized)")
            #expect(!oversized.stderr.contains("device token"), "a broadcast has no device token: \(oversized)")
        }
    }

    @Test("a refusal in text ends with the apns-request-id, as --json has it")
    func requestIDOfRefusalInText() async throws {
        try await Self.withChannelServer { server, common in
            let channel = "dHN0LTEyMzQ1Njc4OTA="
            let readID = UUID().uuidString.lowercased()
            let read = try await CLI.run(["channel", "read", channel, "--request-id", readID] + common)
            #expect(read.status == 1, "\(read)")
            #expect(read.errorLines.count == 1 && read.stderr.hasSuffix(" (apns-request-id \(readID))\n"), "\(read)")
            let broadcastID = UUID().uuidString.lowercased()
            let broadcast = try await CLI.run(["broadcast", "--channel", channel, "--content-state", "{}", "--request-id", broadcastID] + common)
            #expect(broadcast.status == 1, "\(broadcast)")
            #expect(broadcast.errorLines.count == 1 && broadcast.stderr.hasSuffix(" (apns-request-id \(broadcastID))\n"), "\(broadcast)")
            #expect(server.recordedRequests.last?.value(of: "apns-request-id") == broadcastID)
        }
    }

    @Test("a broadcast's --expiration gets send's checks: milliseconds and negative times are usage errors, before anything is sent",
          arguments: [["--expiration", "99999999999999"], ["--expiration=-5"]])
    func broadcastExpiration(_ flags: [String]) async throws {
        try await Self.withChannelServer { server, common in
            let result = try await CLI.run(["broadcast", "--channel", "dHN0LTEyMzQ1Njc4OTA=", "--content-state", "{}"] + flags + common)
            #expect(result.status == 2, "\(result)")
            #expect(result.errorLines.count == 1 && result.stderr.hasPrefix("apns: --expiration "), "\(result)")
            #expect(server.recordedRequests.isEmpty)
        }
    }
}
