import Foundation
import Testing
@testable import APNsMockServer

/// A request and the answer Apple documents for it.
struct ValidationCase: Sendable, CustomTestStringConvertible {
    var name: String
    var path = "/3/device/\(sampleDeviceToken)"
    var method = "POST"
    var headers = ["apns-topic: com.example.app"]
    var body: String? = samplePayload
    var status: Int
    var reason: String?

    var testDescription: String { name }
}

/// `{"aps":{"alert":"xxx…"}}` of exactly `size` bytes.
func payload(ofSize size: Int) -> String {
    let frame = #"{"aps":{"alert":""}}"#
    return #"{"aps":{"alert":""# + String(repeating: "x", count: size - frame.utf8.count) + #""}}"#
}

// Statuses and reasons from Apple's "Handling notification responses from APNs" table and
// the header rules of "Sending notification requests to APNs".
let validationCases: [ValidationCase] = [
    ValidationCase(name: "valid alert", status: 200),
    ValidationCase(name: "GET", method: "GET", body: nil, status: 405, reason: "MethodNotAllowed"),
    ValidationCase(name: "path outside /3/device", path: "/3/devices/\(sampleDeviceToken)", status: 404, reason: "BadPath"),
    ValidationCase(name: "root path", path: "/", status: 404, reason: "BadPath"),
    ValidationCase(name: "no device token", path: "/3/device/", status: 400, reason: "MissingDeviceToken"),
    ValidationCase(name: "non-hex token", path: "/3/device/xyz1", status: 400, reason: "BadDeviceToken"),
    ValidationCase(name: "odd-length token", path: "/3/device/abc", status: 400, reason: "BadDeviceToken"),
    ValidationCase(name: "no topic", headers: [], status: 400, reason: "MissingTopic"),
    ValidationCase(name: "foreign topic", headers: ["apns-topic: com.other.app"], status: 400, reason: "BadTopic"),
    ValidationCase(name: "voip without .voip", headers: ["apns-topic: com.example.app", "apns-push-type: voip"],
                   status: 400, reason: "DeviceTokenNotForTopic"),
    ValidationCase(name: ".voip topic for alert", headers: ["apns-topic: com.example.app.voip", "apns-push-type: alert"],
                   status: 400, reason: "DeviceTokenNotForTopic"),
    ValidationCase(name: "unknown push type", headers: ["apns-topic: com.example.app", "apns-push-type: banana"],
                   status: 400, reason: "InvalidPushType"),
    ValidationCase(name: "priority 7", headers: ["apns-topic: com.example.app", "apns-priority: 7"], status: 400, reason: "BadPriority"),
    ValidationCase(name: "background at priority 10",
                   headers: ["apns-topic: com.example.app", "apns-push-type: background", "apns-priority: 10"],
                   body: #"{"aps":{"content-available":1}}"#, status: 400, reason: "BadPriority"),
    // "If you omit this header, APNs sets the notification priority to 10", and 10 is an
    // error for a background push: omitted, the same answer as sent.
    ValidationCase(name: "background without apns-priority (APNs sets 10)",
                   headers: ["apns-topic: com.example.app", "apns-push-type: background"],
                   body: #"{"aps":{"content-available":1}}"#, status: 400, reason: "BadPriority"),
    ValidationCase(name: "background at priority 5",
                   headers: ["apns-topic: com.example.app", "apns-push-type: background", "apns-priority: 5"],
                   body: #"{"aps":{"content-available":1}}"#, status: 200),
    ValidationCase(name: "priority 1", headers: ["apns-topic: com.example.app", "apns-priority: 1"], status: 200),
    ValidationCase(name: "negative expiration", headers: ["apns-topic: com.example.app", "apns-expiration: -1"],
                   status: 400, reason: "BadExpirationDate"),
    ValidationCase(name: "fractional expiration", headers: ["apns-topic: com.example.app", "apns-expiration: 1.5"],
                   status: 400, reason: "BadExpirationDate"),
    ValidationCase(name: "expiration 0", headers: ["apns-topic: com.example.app", "apns-expiration: 0"], status: 200),
    ValidationCase(name: "apns-id not a UUID", headers: ["apns-topic: com.example.app", "apns-id: nope"],
                   status: 400, reason: "BadMessageId"),
    ValidationCase(name: "apns-id mixed case",
                   headers: ["apns-topic: com.example.app", "apns-id: 123e4567-E89B-12d3-a456-426614174000"],
                   status: 400, reason: "BadMessageId"),
    ValidationCase(name: "apns-id upper case",
                   headers: ["apns-topic: com.example.app", "apns-id: 123E4567-E89B-12D3-A456-426614174000"], status: 200),
    ValidationCase(name: "collapse id of 65 bytes",
                   headers: ["apns-topic: com.example.app", "apns-collapse-id: " + String(repeating: "c", count: 65)],
                   status: 400, reason: "BadCollapseId"),
    ValidationCase(name: "collapse id of 64 bytes",
                   headers: ["apns-topic: com.example.app", "apns-collapse-id: " + String(repeating: "c", count: 64)], status: 200),
    ValidationCase(name: "repeated apns-topic", headers: ["apns-topic: com.example.app", "apns-topic: com.example.app"],
                   status: 400, reason: "DuplicateHeaders"),
    ValidationCase(name: "empty body", body: "", status: 400, reason: "PayloadEmpty"),
    ValidationCase(name: "4096 bytes", body: payload(ofSize: 4096), status: 200),
    ValidationCase(name: "4097 bytes", body: payload(ofSize: 4097), status: 413, reason: "PayloadTooLarge"),
    ValidationCase(name: "voip 5120 bytes", headers: ["apns-topic: com.example.app.voip", "apns-push-type: voip"],
                   body: payload(ofSize: 5120), status: 200),
    ValidationCase(name: "voip 5121 bytes", headers: ["apns-topic: com.example.app.voip", "apns-push-type: voip"],
                   body: payload(ofSize: 5121), status: 413, reason: "PayloadTooLarge"),
    ValidationCase(name: "not JSON", body: "hello", status: 400, reason: "BadRequestPayload"),
    ValidationCase(name: "JSON array", body: "[1]", status: 400, reason: "BadRequestPayload"),
    ValidationCase(name: "object without aps", body: #"{"foo":1}"#, status: 400, reason: "BadRequestPayload"),
    ValidationCase(name: "trailing comma", body: #"{"aps":{},}"#, status: 400, reason: "BadRequestPayload"),
    ValidationCase(name: "VoIP payload without aps (PushKit reads the whole dictionary)",
                   headers: ["apns-topic: com.example.app.voip", "apns-push-type: voip"],
                   body: #"{"caller":"Jenna","call-id":"4711"}"#, status: 200),
    ValidationCase(name: "MDM payload without aps", headers: ["apns-topic: com.example.app", "apns-push-type: mdm"],
                   body: #"{"mdm":"00000000-1111-3333-4444-555555555555"}"#, status: 200),
    // Apple's own request in "Creating a Push to Talk app" (Receive audio): custom keys, no aps.
    ValidationCase(name: "Push to Talk payload without aps, as Apple's example sends it",
                   headers: ["apns-topic: com.example.app.voip-ptt", "apns-push-type: pushtotalk",
                             "apns-priority: 10", "apns-expiration: 0"],
                   body: #"{"activeSpeaker":"The name of the active speaker"}"#, status: 200),
]

/// Each push type with the topic suffix Apple requires for it.
let pushTypeTopics: [(String, String)] = [
    ("alert", ""), ("background", ""), ("mdm", ""), ("voip", ".voip"), ("complication", ".complication"),
    ("fileprovider", ".pushkit.fileprovider"), ("location", ".location-query"),
    ("liveactivity", ".push-type.liveactivity"), ("pushtotalk", ".voip-ptt"),
    ("widgets", ".push-type.widgets"), ("controls", ".push-type.controls"),
]

@Suite("Validation, as seen by curl")
struct ValidationTests {
    @Test("each rule answers Apple's status and reason", arguments: validationCases)
    func rule(_ testCase: ValidationCase) async throws {
        try await withServerAndCurl { server, curl in
            let response = try await curl.send(port: server.port, path: testCase.path, method: testCase.method,
                                               headers: testCase.headers, body: testCase.body)
            #expect(response.exitCode == 0, "\(response.stderr)")
            #expect(response.status == testCase.status)
            if let reason = testCase.reason {
                #expect(response.reason == reason, "body: \(response.body)")
                #expect(response.json?.keys.sorted() == ["reason"])
            } else {
                #expect(response.body.isEmpty)
            }
            let recorded = server.recordedRequests
            #expect(recorded.count == 1)
            #expect(recorded.first?.status == testCase.status)
            #expect(recorded.first?.reason == testCase.reason)
        }
    }

    @Test("HEAD (curl -I, a readiness probe) is answered 405 MethodNotAllowed with the header fields and no content, on device and channel paths")
    func headHasNoContent() async throws {
        try await withServerAndCurl { server, curl in
            for path in ["/3/device/\(sampleDeviceToken)", "/", "/1/apps/com.example.app/channels"] {
                // -I: curl sends HEAD and prints the header fields; an answer that carries
                // DATA is a stream error to it (exit 92), as to any HTTP/2 client.
                let response = try await curl.send(port: server.port, path: path, method: "HEAD",
                                                   headers: ["apns-topic: com.example.app"], body: nil, extra: ["-I"])
                #expect(response.exitCode == 0, "\(path): \(response.stderr)")
                #expect(response.status == 405, "\(path)")
                let fields = response.body.lowercased()
                #expect(fields.contains("content-type: application/json"), "\(path): \(response.body)")
                #expect(!fields.contains("{\"reason\""), "\(path): \(response.body)")
            }
            #expect(server.recordedRequests.map(\.reason) == Array(repeating: "MethodNotAllowed", count: 3))
        }
    }

    @Test("each documented push type is accepted with its topic suffix and refused without it",
          arguments: pushTypeTopics)
    func pushTypeSuffix(pushType: String, suffix: String) async throws {
        try await withServerAndCurl { server, curl in
            let body = pushType == "mdm" ? #"{"mdm":"magic"}"# : samplePayload
            let priority = pushType == "background" ? ["apns-priority: 5"] : []
            let good = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)",
                                           headers: ["apns-topic: com.example.app\(suffix)", "apns-push-type: \(pushType)"] + priority,
                                           body: body)
            #expect(good.status == 200, "\(good.body)")
            let wrongTopic = suffix.isEmpty ? "com.example.app.voip" : "com.example.app"
            let bad = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)",
                                          headers: ["apns-topic: \(wrongTopic)", "apns-push-type: \(pushType)"] + priority,
                                          body: body)
            #expect(bad.status == 400)
            #expect(bad.reason == "DeviceTokenNotForTopic")
        }
    }

    @Test("apns-id is echoed; without one the server makes a lowercase UUID")
    func apnsIDEchoed() async throws {
        try await withServerAndCurl { server, curl in
            let id = "123e4567-e89b-12d3-a456-426614174000"
            let echoed = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)",
                                             headers: ["apns-topic: com.example.app", "apns-id: \(id)"], extra: ["-D", "-"])
            #expect(echoed.body.lowercased().contains("apns-id: \(id)"))
            let generated = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)",
                                                headers: ["apns-topic: com.example.app"], extra: ["-D", "-"])
            let line = generated.body.split(separator: "\r\n").first { $0.hasPrefix("apns-id: ") }
            let value = line.map { String($0.dropFirst("apns-id: ".count)) } ?? ""
            #expect(UUID(uuidString: value) != nil)
            #expect(value == value.lowercased())
        }
    }

    /// The fields of a `curl -D -` header dump, lowercased names.
    static func headerValue(_ name: String, in dump: String) -> String? {
        dump.split(separator: "\r\n").first { $0.lowercased().hasPrefix(name + ": ") }
            .map { String($0.dropFirst(name.count + 2)) }
    }

    @Test("a sandbox server adds apns-unique-id (a UUID, new in every answer) to an accepted push; production does not",
          arguments: [MockAPNsServer.Environment.sandbox, .production])
    func uniqueID(environment: MockAPNsServer.Environment) async throws {
        var configuration = MockAPNsServer.Configuration(bundleIDs: ["com.example.app"])
        configuration.environment = environment
        for recorded in [true, false] {
            // Recording on: each answer takes the full path; off: the second is a fast answer.
            configuration.recordedRequestLimit = recorded ? 100 : 0
            try await withServerAndCurl(configuration) { server, curl in
                let url = "https://127.0.0.1:\(server.port)/3/device/\(sampleDeviceToken)"
                let one = ["-sS", "--http2", "--cacert", curl.caFile, "-D", "-", "-o", "/dev/null",
                           "-H", "apns-topic: com.example.app", "--data-binary", samplePayload, url]
                let result = try await curl.raw(one + ["--next"] + one)
                #expect(result.exitCode == 0, "\(result.stderr)")
                let answers = result.stdout.components(separatedBy: "\r\n\r\n").filter { $0.contains("HTTP/2 ") }
                try #require(answers.count == 2, "\(result.stdout)")
                let ids = answers.map { Self.headerValue("apns-unique-id", in: $0) }
                if environment == .sandbox {
                    #expect(ids.allSatisfy { $0.flatMap(UUID.init(uuidString:)) != nil }, "\(answers)")
                    #expect(ids[0] != ids[1])
                    #expect(ids.allSatisfy { $0 == $0?.lowercased() })
                } else {
                    #expect(ids == [nil, nil], "\(answers)")
                }
                #expect(recorded || server.statistics.fastAnswers == 1)
                // A rejection carries none.
                let rejected = try await curl.send(port: server.port, path: "/3/device/abc",
                                                   headers: ["apns-topic: com.example.app"], extra: ["-D", "-"])
                #expect(rejected.status == 400)
                #expect(Self.headerValue("apns-unique-id", in: rejected.body) == nil)
            }
        }
    }

    @Test("a token scripted in lower case answers for the same token in upper case, and the other way round")
    func tokenCase() async throws {
        try await withServerAndCurl { server, curl in
            let lower = String(repeating: "ab", count: 32), upper = String(repeating: "CD", count: 32)
            server.respond(toDeviceToken: lower, with: .unregistered(since: Date(timeIntervalSince1970: 1_700_000_000)))
            server.respond(toDeviceToken: upper, with: .unregistered(since: Date(timeIntervalSince1970: 1_700_000_000)))
            for token in [lower.uppercased(), lower, upper.lowercased(), upper] {
                let response = try await curl.send(port: server.port, path: "/3/device/\(token)",
                                                   headers: ["apns-topic: com.example.app"])
                #expect(response.status == 410, "\(token)")
                #expect(response.reason == "Unregistered")
            }
        }
    }
}

/// The fast path (a connection answering a push like the last one it accepted without the
/// full rules) must never change an answer: every rule of Apple's table is sent on a
/// connection that has just accepted, and fast-answered, a valid alert.
///
/// One server and one case at a time (each on a connection of its own): run as 36
/// parallel cases, each with a server and curl processes of its own, it loaded the
/// parallel test run enough to make timing tests elsewhere miss their deadlines.
@Suite("Validation after a fast answer, as seen by curl")
struct FastPathValidationTests {
    @Test("each rule answers Apple's status and reason on a connection that learnt a push's shape")
    func rulesAfterFastAnswer() async throws {
        var configuration = MockAPNsServer.Configuration(bundleIDs: ["com.example.app"])
        configuration.recordedRequestLimit = 0  // recording would close the fast path
        try await withServerAndCurl(configuration) { server, curl in
            let url = "https://127.0.0.1:\(server.port)"
            let valid = ["-sS", "--http2", "--cacert", curl.caFile, "-o", "/dev/null", "-w", "%{http_code}\n",
                         "-H", "apns-topic: com.example.app", "--data-binary", samplePayload,
                         "\(url)/3/device/\(sampleDeviceToken)"]
            for testCase in validationCases {
                let fastBefore = server.statistics.fastAnswers
                // One connection (curl --next reuses it): a valid alert on the full path, the
                // same again on the fast path, then the case.
                var arguments = valid + ["--next"] + valid + ["--next", "-sS", "--http2", "--cacert", curl.caFile,
                                                              "-X", testCase.method, "-w", "\n%{http_code}\n"]
                for header in testCase.headers { arguments += ["-H", header] }
                if let body = testCase.body { arguments += ["--data-binary", body] }
                arguments.append(url + testCase.path)
                let result = try await curl.raw(arguments)
                #expect(result.exitCode == 0, "\(testCase.name): \(result.stderr)")
                let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
                // "200", "200", the case's body (one line, maybe empty), its status, "".
                guard lines.count >= 4 else {
                    Issue.record("\(testCase.name): \(result.stdout)")
                    continue
                }
                #expect(lines[0] == "200", "\(testCase.name)")
                #expect(lines[1] == "200", "\(testCase.name)")
                #expect(Int(lines[lines.count - 2]) == testCase.status, "\(testCase.name): \(result.stdout)")
                let body = lines[2..<(lines.count - 2)].joined(separator: "\n")
                if let reason = testCase.reason {
                    let json = (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any]
                    #expect(json?["reason"] as? String == reason, "\(testCase.name): body \(body)")
                } else {
                    #expect(body.isEmpty, "\(testCase.name)")
                }
                // Not vacuous: the second alert was answered on the fast path.
                #expect(server.statistics.fastAnswers > fastBefore, "\(testCase.name)")
            }
        }
    }

    @Test("after background pushes at priority 5 were fast-answered, one without apns-priority is BadPriority")
    func backgroundWithoutPriorityAfterFastAnswer() async throws {
        var configuration = MockAPNsServer.Configuration(bundleIDs: ["com.example.app"])
        configuration.recordedRequestLimit = 0
        try await withServerAndCurl(configuration) { server, curl in
            let url = "https://127.0.0.1:\(server.port)/3/device/\(sampleDeviceToken)"
            func push(_ priority: [String]) -> [String] {
                var arguments = ["-sS", "--http2", "--cacert", curl.caFile, "-w", "%{http_code}\n",
                                 "-H", "apns-topic: com.example.app", "-H", "apns-push-type: background"]
                for header in priority { arguments += ["-H", header] }
                return arguments + ["--data-binary", #"{"aps":{"content-available":1}}"#, url]
            }
            let result = try await curl.raw(push(["apns-priority: 5"]) + ["--next"] + push(["apns-priority: 5"])
                                            + ["--next"] + push([]))
            #expect(result.exitCode == 0, "\(result.stderr)")
            #expect(result.stdout.hasPrefix("200\n200\n"), "\(result.stdout)")
            #expect(result.stdout.hasSuffix(#"{"reason":"BadPriority"}400"# + "\n"), "\(result.stdout)")
            #expect(server.statistics.fastAnswers == 1)
        }
    }
}
