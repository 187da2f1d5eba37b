import Foundation
import Testing

/// `apns send --dry-run`: the request each token would get, checked against Apple's rules
/// for topics and priorities, with the payload read back by JSONSerialization.
@Suite("apns send --dry-run")
struct DryRunTests {
    struct Case: Sendable, CustomStringConvertible {
        var flags: [String]
        var topic: String
        var pushType: String
        var priority: String
        var description: String { flags.joined(separator: " ") }
    }

    // Apple: "Sending notification requests to APNs" — the topic suffixes per push type,
    // and background notifications must be sent with priority 5.
    static let cases: [Case] = [
        Case(flags: ["--title", "Hi"], topic: "com.example.app", pushType: "alert", priority: "10"),
        Case(flags: ["--content-available", "--custom", "sync=\"inbox\""], topic: "com.example.app", pushType: "background", priority: "5"),
        Case(flags: ["--push-type", "voip", "--custom", "caller=\"Jenna\""], topic: "com.example.app.voip", pushType: "voip", priority: "10"),
        Case(flags: ["--push-type", "complication", "--body", "Hi"], topic: "com.example.app.complication", pushType: "complication", priority: "10"),
        Case(flags: ["--push-type", "voip", "--topic", "com.example.app.voip", "--custom", "id=1"], topic: "com.example.app.voip", pushType: "voip", priority: "10"),
        // A topic that already ends in a suffix is used as given, never stacked.
        Case(flags: ["--push-type", "pushtotalk", "--topic", "com.example.app.voip-ptt", "--custom", "id=1"],
             topic: "com.example.app.voip-ptt", pushType: "pushtotalk", priority: "10"),
        // Apple's "Updating widgets with WidgetKit push notifications": push type widgets,
        // topic <bundle ID>.push-type.widgets, aps.content-changed true; controls likewise.
        Case(flags: ["--content-changed"], topic: "com.example.app.push-type.widgets", pushType: "widgets", priority: "10"),
        Case(flags: ["--content-changed", "--push-type", "controls"], topic: "com.example.app.push-type.controls",
             pushType: "controls", priority: "10"),
        Case(flags: ["--push-type", "liveactivity", "--topic", "com.example.app.push-type.liveactivity", "--event", "end",
                     "--content-state", "{}"],
             topic: "com.example.app.push-type.liveactivity", pushType: "liveactivity", priority: "10"),
    ]

    @Test("a token as Xcode's console prints it (quoted, or split by the shell between brackets) is read as its hex digits; short ones draw a warning")
    func xcodeForm() async throws {
        let spaced = "<00fc13ad ff785122 b4ad2880 9a342098 23412414 21348097 878e577c 991de8f0>"
        let hex = "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0"
        for arguments in [[spaced], spaced.split(separator: " ").map(String.init)] {
            let result = try await CLI.run(["send", "--no-auth", "--dry-run", "--json", "--topic", Fixtures.topic, "--body", "Hi"] + arguments)
            #expect(result.status == 0, "\(result)")
            #expect(result.lines.count == 1, "\(result)")
            let object = try CLI.jsonObject(try #require(result.lines.first))
            #expect(object["url"] as? String == "https://api.sandbox.push.apple.com/3/device/\(hex)")
            #expect(result.stderr.isEmpty, "\(result.stderr)")
        }
        // Unbracketed fragments are sent as given (Apple fixes no length) with one warning.
        let fragments = try await CLI.run(["send", "--no-auth", "--dry-run", "--topic", Fixtures.topic, "--body", "Hi", "00fc13ad", "ff785122"])
        #expect(fragments.errorLines.count == 1 && fragments.stderr.contains("2 tokens shorter than 32 bytes"), "\(fragments)")
    }

    @Test("times in milliseconds are usage errors that give the seconds; an expiration in the past draws one warning")
    func millisecondTimes() async throws {
        let base = ["send", "--no-auth", "--dry-run", "--topic", Fixtures.topic]
        let expiration = try await CLI.run(base + ["--body", "Hi", "--expiration", "1893456000000", Fixtures.goodToken])
        #expect(expiration.status == 2 && expiration.stderr.contains("give UNIX seconds (1893456000)"), "\(expiration)")
        let stale = try await CLI.run(base + ["--event", "update", "--content-state", "{}", "--stale-date", "1893456000000", Fixtures.goodToken])
        #expect(stale.status == 2 && stale.stderr.contains("--stale-date 1893456000000"), "\(stale)")
        let past = try await CLI.run(base + ["--body", "Hi", "--expiration", "1000", Fixtures.goodToken])
        #expect(past.status == 0 && past.errorLines.count == 1 && past.stderr.contains("in the past"), "\(past)")
    }

    @Test("an --expiration from now past the year 2286, or past a 64-bit number, is a usage error, not a crash",
          arguments: ["+9223372036854775807", "+99999999999"])
    func expirationFromNowTooLate(_ value: String) async throws {
        let result = try await CLI.run(["send", "--no-auth", "--dry-run", "--topic", Fixtures.topic, "--body", "Hi",
                                        "--expiration", value, Fixtures.goodToken])
        #expect(result.status == 2, "\(result)")
        #expect(result.errorLines.count == 1 && result.stderr.contains("--expiration \(value) is after the year 2286"), "\(result)")
        #expect(result.stdout.isEmpty, "\(result)")
    }

    @Test("--sound on a Live Activity push without an alert is a usage error, not silently dropped; with --body it is in the alert")
    func liveActivitySound() async throws {
        let base = ["send", "--no-auth", "--dry-run", "--json", "--topic", Fixtures.topic, "--event", "update", "--content-state", "{}",
                    "--sound", "chime.aiff"]
        let alone = try await CLI.run(base + [Fixtures.goodToken])
        #expect(alone.status == 2, "\(alone)")
        #expect(alone.errorLines.count == 1 && alone.stderr.contains("--sound on a Live Activity push needs an alert"), "\(alone)")
        let withAlert = try await CLI.run(base + ["--body", "Goal", Fixtures.goodToken])
        #expect(withAlert.status == 0, "\(withAlert)")
        let line = try #require(withAlert.lines.first)
        let payload = try #require(try CLI.jsonObject(line)["payload"] as? [String: Any])
        let alert = try #require((payload["aps"] as? [String: Any])?["alert"] as? [String: Any])
        #expect(alert["sound"] as? String == "chime.aiff", "\(withAlert)")
    }

    @Test("a negative --stale-date or --dismissal-date is a usage error, as a negative --expiration is",
          arguments: [["--event", "update", "--stale-date=-5"], ["--event", "end", "--dismissal-date=-100"]])
    func negativeLiveActivityDates(_ flags: [String]) async throws {
        let result = try await CLI.run(["send", "--no-auth", "--dry-run", "--topic", Fixtures.topic, "--content-state", "{}"] + flags + [Fixtures.goodToken])
        #expect(result.status == 2, "\(result)")
        #expect(result.errorLines.count == 1 && result.stderr.contains("it must not be negative"), "\(result)")
    }

    @Test("a private key on the command line (--key-pem) is refused, as other users can read it; APNS_KEY with the same key works")
    func keyOnCommandLine() async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let pem = try String(contentsOfFile: try await Fixtures.makeKey(in: directory).privateKeyPath, encoding: .utf8)
        let base = ["send", "--dry-run", "--key-id", Fixtures.keyID, "--team-id", Fixtures.teamID, "--topic", Fixtures.topic, "--body", "Hi"]
        let flag = try await CLI.run(base + ["--key-pem=\(pem)", Fixtures.goodToken])
        #expect(flag.status == 2, "\(flag)")
        #expect(flag.errorLines.count == 1 && flag.stderr.contains("not taken on the command line"), "\(flag)")
        #expect(flag.stdout.isEmpty, "\(flag)")
        let variable = try await CLI.run(base + [Fixtures.goodToken], environment: ["APNS_KEY": pem])
        #expect(variable.status == 0, "\(variable)")
    }

    @Test("--json gives the body as the bytes sent (the file's key order), with their count, beside the payload read back")
    func jsonBodyIsTheBytesSent() async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("payload.json")
        // Keys out of alphabetical order, as a server might build them: the bytes keep this order.
        try Data(#"{"zeta":"a/b","aps":{"alert":"Hi"},"alpha":1}"#.utf8).write(to: file)
        let text = try await CLI.run(["send", "--no-auth", "--dry-run", "--topic", Fixtures.topic, "--payload-file", file.path, Fixtures.goodToken])
        let json = try await CLI.run(["send", "--no-auth", "--dry-run", "--json", "--topic", Fixtures.topic, "--payload-file", file.path, Fixtures.goodToken])
        #expect(text.status == 0 && json.status == 0, "\(text) \(json)")
        let object = try CLI.jsonObject(try #require(json.lines.first))
        let body = try #require(object["body"] as? String, "\(json)")
        let zeta = try #require(body.range(of: "\"zeta\"")), alpha = try #require(body.range(of: "\"alpha\""))
        #expect(zeta.lowerBound < alpha.lowerBound, "\(body)")
        #expect(object["bytes"] as? Int == body.utf8.count, "\(json)")
        // The text form prints the same bytes, followed by their count.
        #expect(text.lines.contains("\(body)  (\(body.utf8.count) bytes)"), "\(text)")
        #expect((object["payload"] as? [String: Any])?["zeta"] as? String == "a/b", "\(json)")
    }

    @Test("--json's payload is the body as sent: 1.0 stays a fraction, -0.0 keeps its sign, true stays true, a leading U+FEFF stays")
    func jsonPayloadIsTheBodyVerbatim() async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("payload.json")
        // Read back and written again by JSONSerialization, the payload member said 1, 0
        // (an integer, sign lost) and "x" for these: not what the body sends.
        // Compact and in the SDK's key order already: the body sent is these bytes.
        let sent = #"{"aps":{"alert":"Hi","content-available":true},"ratio":1.0,"neg":-0.0,"on":true,"one":1,"bom":"\#u{FEFF}x","big":1e+21}"#
        try Data(sent.utf8).write(to: file)
        let json = try await CLI.run(["send", "--no-auth", "--dry-run", "--json", "--topic", Fixtures.topic, "--payload-file", file.path, Fixtures.goodToken])
        #expect(json.status == 0, "\(json)")
        let line = try #require(json.lines.first)
        // Compared as bytes: JSONSerialization on Linux drops a U+FEFF when it reads a string.
        #expect(line.contains(#""bytes":\#(sent.utf8.count),"#), "\(line)")
        #expect(line.contains(#""payload":"# + sent + ","), "\(line)")
        let object = try CLI.jsonObject(line)
        // Still one JSON object whose keys are sorted, with payload in its place.
        let keys = ["body", "bytes", "headers", "method", "payload", "token", "url"]
        let offsets = keys.map { line.range(of: "\"\($0)\":")?.lowerBound }
        #expect(offsets.allSatisfy { $0 != nil } && offsets.map { $0! } == offsets.map { $0! }.sorted(), "\(line)")
        #expect(object["payload"] is [String: Any], "\(line)")
    }

    @Test("a byte order mark at the start of --tokens-file is not part of the first token")
    func tokensFileWithByteOrderMark() async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let tokens = directory.appendingPathComponent("tokens.txt")
        try Data([0xEF, 0xBB, 0xBF] + Array("\(Fixtures.goodToken)\n\(Fixtures.otherToken)\n".utf8)).write(to: tokens)
        let result = try await CLI.run(["send", "--no-auth", "--dry-run", "--json", "--topic", Fixtures.topic, "--body", "Hi",
                                        "--tokens-file", tokens.path])
        #expect(result.status == 0, "\(result)")
        let urls = try result.lines.map { try CLI.jsonObject($0)["url"] as? String }
        #expect(urls == [Fixtures.goodToken, Fixtures.otherToken].map { "https://api.sandbox.push.apple.com/3/device/\($0)" }, "\(result)")
    }

    @Test("a topic ending in another push type's suffix is sent as given, with a warning that APNs will refuse it",
          arguments: [(["--push-type", "voip", "--custom", "id=1"], "com.example.app.complication", "complication", "voip"),
                      (["--body", "Hi"], "com.example.app.voip", "voip", "alert")])
    func mismatchedSuffix(_ flags: [String], _ topic: String, _ suffixOf: String, _ pushType: String) async throws {
        let result = try await CLI.run(["send", "--no-auth", "--dry-run", "--json", "--topic", topic] + flags + [Fixtures.goodToken])
        #expect(result.status == 0, "\(result)")
        let object = try CLI.jsonObject(try #require(result.lines.first))
        let headers = try #require(object["headers"] as? [[String]])
        #expect(headers.first { $0.first == "apns-topic" }?.last == topic)
        #expect(result.errorLines.count == 1, "\(result)")
        #expect(result.stderr.contains("the suffix of \(suffixOf) pushes") && result.stderr.contains("\(pushType) push"), "\(result.stderr)")
        #expect(result.stderr.contains("DeviceTokenNotForTopic"))
    }

    @Test("headers follow Apple's topic and priority rules", arguments: cases)
    func headers(_ testCase: Case) async throws {
        var arguments = ["send", "--no-auth", "--dry-run", "--json"] + testCase.flags
        if !testCase.flags.contains("--topic") { arguments += ["--topic", "com.example.app"] }
        let result = try await CLI.run(arguments + [Fixtures.goodToken])
        #expect(result.status == 0, "\(result)")
        let object = try CLI.jsonObject(try #require(result.lines.first))
        #expect(object["url"] as? String == "https://api.sandbox.push.apple.com/3/device/\(Fixtures.goodToken)")
        let headers = try #require(object["headers"] as? [[String]])
        func value(_ name: String) -> String? { headers.first { $0.first == name }?.last }
        #expect(value("apns-topic") == testCase.topic)
        #expect(value("apns-push-type") == testCase.pushType)
        #expect(value("apns-priority") == testCase.priority)
        #expect(value(":method") == "POST")
        #expect(UUID(uuidString: value("apns-id") ?? "") != nil)
        #expect(value("authorization") == nil)
        let payload = try #require(object["payload"] as? [String: Any])
        #expect(payload["aps"] is [String: Any], "APNs asks for an aps dictionary in every payload")
        if testCase.flags.contains("--content-changed") {
            #expect((payload["aps"] as? [String: Any])?["content-changed"] as? Bool == true, "\(payload)")
        }
    }

    @Test("custom keys alone get one empty aps dictionary, written once (a JSON object's names should be unique, RFC 8259 4)",
          arguments: ["voip", "pushtotalk", "location", "complication"])
    func customKeysOnly(_ pushType: String) async throws {
        let result = try await CLI.run(["send", "--no-auth", "--dry-run", "--topic", Fixtures.topic, "--push-type", pushType,
                                        "--custom", "caller=\"Ann\"", Fixtures.goodToken])
        #expect(result.status == 0, "\(result)")
        // The body line as Apple's examples write it: compact, aps first.
        #expect(result.lines.contains { $0.hasPrefix(#"{"aps":{},"caller":"Ann"}"#) }, "\(result)")
        #expect(result.stdout.components(separatedBy: #""aps""#).count == 2, "aps written more than once: \(result)")
    }

    @Test("with a .p8 key the authorization header is described, never signed or shown")
    func authorizationIsNotShown() async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = try await Fixtures.makeKey(in: directory)
        let result = try await CLI.run([
            "send", "--key-file", key.privateKeyPath, "--key-id", Fixtures.keyID, "--team-id", Fixtures.teamID,
            "--production", "--dry-run", "--topic", Fixtures.topic, "--body", "Hi", Fixtures.goodToken,
        ])
        #expect(result.status == 0, "\(result)")
        let authorization = try #require(result.lines.first { $0.hasPrefix("authorization: ") })
        #expect(authorization.contains(Fixtures.keyID) && authorization.contains(Fixtures.teamID))
        // A compact JWT starts with the base64url of `{"` (eyJ) and has two dots.
        #expect(!result.stdout.contains("eyJ"), "\(result)")
        #expect(result.lines.first == "POST https://api.push.apple.com/3/device/\(Fixtures.goodToken)")
    }

    @Test("a malformed token is reported in its place; an oversized payload once, before anything (exit 1)")
    func invalid() async throws {
        let malformed = try await CLI.run(["send", "--no-auth", "--dry-run", "--topic", Fixtures.topic, "--body", "Hi", "zz"])
        #expect(malformed.status == 1, "\(malformed)")
        #expect(malformed.stdout.contains("zz  invalid:"), "\(malformed)")
        let huge = try await CLI.run(["send", "--no-auth", "--dry-run", "--topic", Fixtures.topic,
                                      "--body", String(repeating: "x", count: 5000), Fixtures.goodToken, Fixtures.otherToken])
        #expect(huge.status == 1, "\(huge)")
        #expect(huge.stdout.isEmpty, "\(huge)")
        #expect(huge.errorLines.count == 1 && huge.stderr.contains("4096"), "\(huge)")
    }
}
