import Foundation
import Testing
@testable import APNsMockServer

/// nghttp (nghttp2's own client) with verbose frames, for what curl does not show.
func nghttpVerbose(server: MockAPNsServer, curl: CurlClient, token: String = sampleDeviceToken,
                   extraHeaders: [String] = []) async throws -> ExternalTool.Result {
    let bodyFile = curl.caFile + ".\(UUID().uuidString).body"
    try Data(samplePayload.utf8).write(to: URL(fileURLWithPath: bodyFile))
    defer { try? FileManager.default.removeItem(atPath: bodyFile) }
    var arguments = ["-nv", "-d", bodyFile, "-H", "apns-topic: com.example.app"]
    for header in extraHeaders { arguments += ["-H", header] }
    arguments.append("https://127.0.0.1:\(server.port)/3/device/\(token)")
    return try await ExternalTool.run("nghttp", arguments)
}

/// The stream id nghttp's request used, read from its `recv (stream_id=N) :status` line.
func respondedStreamID(_ output: String) -> Int? {
    guard let range = output.range(of: "recv (stream_id=") else { return nil }
    return Int(output[range.upperBound...].prefix { $0.isNumber })
}

/// Waits (bounded) until the server has decided on `count` requests.
func waitForRequests(_ server: MockAPNsServer, count: Int) async throws {
    for _ in 0..<1000 where server.statistics.requests < count {
        try await Task.sleep(for: .milliseconds(10))
    }
}

@Suite("Scripted faults")
struct ScriptedFaultTests {
    @Test("closeAfterRejections 3: GOAWAY (NO_ERROR, no debug data) at the third rejection on a connection; what it had received is answered, then it closes (nghttp)")
    func closeAfterRejections() async throws {
        var configuration = MockAPNsServer.Configuration(bundleIDs: ["com.example.app"])
        configuration.closeAfterRejections = 3
        try await withServerAndCurl(configuration) { server, curl in
            // Six requests for a token that is not hexadecimal, on one connection, at once.
            let bodyFile = curl.caFile + ".\(UUID().uuidString).body"
            try Data(samplePayload.utf8).write(to: URL(fileURLWithPath: bodyFile))
            defer { try? FileManager.default.removeItem(atPath: bodyFile) }
            let uris = (0..<6).map { "https://127.0.0.1:\(server.port)/3/device/not-hex-\($0)" }
            let result = try await ExternalTool.run("nghttp", ["-nv", "--no-dep", "-d", bodyFile, "-H", "apns-topic: com.example.app"] + uris)
            let lines = result.stdout.split(whereSeparator: \.isNewline).map(String.init)
            let goAways = lines.filter { $0.contains("recv GOAWAY frame") }
            try #require(goAways.count == 1, "\(result.stdout)")
            // Found outside the macro: a closure inside #require's argument and the filter's
            // below came out as one and the same closure (Swift 6.3.1).
            let goAwayLine = lines.first(where: { $0.contains("(last_stream_id=") })
            let detail = try #require(goAwayLine, "\(result.stdout)")
            #expect(detail.contains("error_code=NO_ERROR(0x00)") && detail.contains("opaque_data(0)=[]"), "\(detail)")
            let lastStreamIDText = detail.range(of: "last_stream_id=").map { detail[$0.upperBound...].prefix { $0.isNumber } }
            let lastStreamID = try #require(lastStreamIDText.flatMap { Int($0) })
            // Every stream up to the last-stream-id answered 400, none above it.
            let answered = lines.filter { $0.contains("recv (stream_id=") && $0.contains(":status: ") }
            let answeredIDs = answered.compactMap { line in
                line.range(of: "stream_id=").flatMap { Int(line[$0.upperBound...].prefix { $0.isNumber }) }
            }
            #expect(answered.count >= 3 && answered.allSatisfy { $0.hasSuffix(":status: 400") }, "\(result.stdout)")
            #expect(answeredIDs.allSatisfy { $0 <= lastStreamID } && answeredIDs.contains(lastStreamID), "\(answeredIDs) \(lastStreamID)")
            #expect(server.statistics.rejected == answered.count)
            #expect(server.statistics.connections == 1)
            #expect(server.statistics.goAways == 1)
        }
    }

    @Test("closeAfterRejections nil (the default): a thousand rejections on one connection, no GOAWAY")
    func noCloseByDefault() async throws {
        try await withServerAndCurl { server, curl in
            let bodyFile = curl.caFile + ".\(UUID().uuidString).body"
            try Data(samplePayload.utf8).write(to: URL(fileURLWithPath: bodyFile))
            defer { try? FileManager.default.removeItem(atPath: bodyFile) }
            let result = try await ExternalTool.run("h2load", [
                "-n", "1000", "-c", "1", "-m", "100", "-d", bodyFile, "-H", "apns-topic: com.example.app",
                "https://127.0.0.1:\(server.port)/3/device/not-hex",
            ], timeout: .seconds(120))
            #expect(result.stdout.contains("1000 done") && result.stdout.contains("1000 4xx"), "\(result.stdout)")
            #expect(server.statistics.connections == 1)
            #expect(server.statistics.goAways == 0)
        }
    }

    @Test("a device token scripted as unregistered gets 410 with the timestamp in milliseconds")
    func unregistered() async throws {
        try await withServerAndCurl { server, curl in
            let goneToken = String(repeating: "ab", count: 32)
            let since = Date(timeIntervalSince1970: 1_700_000_000.123)
            server.respond(toDeviceToken: goneToken, with: .unregistered(since: since))
            let gone = try await curl.send(port: server.port, path: "/3/device/\(goneToken)", headers: ["apns-topic: com.example.app"])
            #expect(gone.status == 410)
            #expect(gone.reason == "Unregistered")
            #expect((gone.json?["timestamp"] as? NSNumber)?.int64Value == 1_700_000_000_123)
            let other = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)", headers: ["apns-topic: com.example.app"])
            #expect(other.status == 200)
            server.respond(toDeviceToken: goneToken, with: nil)
            let back = try await curl.send(port: server.port, path: "/3/device/\(goneToken)", headers: ["apns-topic: com.example.app"])
            #expect(back.status == 200)
        }
    }

    @Test("the next N valid requests fail with the scripted status, then requests succeed",
          arguments: [ScriptedResponse.tooManyRequests, .internalServerError, .serviceUnavailable])
    func failNext(response: ScriptedResponse) async throws {
        try await withServerAndCurl { server, curl in
            server.failNextRequests(2, with: response)
            var statuses: [Int] = []
            var reasons: [String?] = []
            for _ in 0..<3 {
                let answer = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)",
                                                 headers: ["apns-topic: com.example.app"])
                statuses.append(answer.status)
                reasons.append(answer.reason)
            }
            #expect(statuses == [response.status, response.status, 200])
            #expect(reasons == [response.reason, response.reason, nil])
        }
    }

    @Test("a scripted failure does not hide a validation error")
    func validationFirst() async throws {
        try await withServerAndCurl { server, curl in
            server.failNextRequests(1, with: .serviceUnavailable)
            let bad = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)", headers: [])
            #expect(bad.reason == "MissingTopic")
            let next = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)", headers: ["apns-topic: com.example.app"])
            #expect(next.status == 503)
        }
    }

    @Test("GOAWAY after N requests carries the reason JSON and the last processed stream id")
    func goAwayAfterRequests() async throws {
        try await withServerAndCurl { server, curl in
            server.sendGoAway(afterRequests: 1, reason: "Shutdown")
            let result = try await nghttpVerbose(server: server, curl: curl)
            let streamID = try #require(respondedStreamID(result.stdout), "\(result.stdout)")
            #expect(result.stdout.contains(":status: 200"))
            #expect(result.stdout.contains("recv GOAWAY frame"))
            #expect(result.stdout.contains("last_stream_id=\(streamID), error_code=NO_ERROR(0x00)"), "\(result.stdout)")
            #expect(result.stdout.contains(#"[{"reason":"Shutdown"}]"#), "\(result.stdout)")
            #expect(server.statistics.goAways == 1)
        }
    }

    @Test("a new delay applies to answers already waiting: zero releases them at once")
    func zeroDelayReleasesWaitingAnswers() async throws {
        try await withServerAndCurl { server, curl in
            server.setResponseDelay(.seconds(600))
            // curl gives up after 15 s: only the release can answer in time.
            async let response = curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)", headers: ["apns-topic: com.example.app"])
            try await waitForRequests(server, count: 1)
            server.setResponseDelay(.zero)
            let answered = try await response
            #expect(answered.status == 200, "\(answered)")
        }
    }

    @Test("GOAWAY now, while a delayed answer is pending: the answer still arrives, then GOAWAY")
    func goAwayNowWithDelay() async throws {
        try await withServerAndCurl { server, curl in
            // The delay holds the stream open while the test acts, however slow the
            // machine; setting it to zero then releases the answer.
            server.setResponseDelay(.seconds(60))
            async let output = nghttpVerbose(server: server, curl: curl)
            try await waitForRequests(server, count: 1)
            server.sendGoAwayNow(reason: "Shutdown")
            server.setResponseDelay(.zero)
            let result = try await output
            let streamID = try #require(respondedStreamID(result.stdout), "\(result.stdout)")
            #expect(result.stdout.contains(":status: 200"))
            #expect(result.stdout.contains("recv GOAWAY frame"), "\(result.stdout)")
            // nghttp prints GOAWAY's opaque data: the reason as APNs sends it.
            #expect(result.stdout.contains("last_stream_id=\(streamID), error_code=NO_ERROR(0x00)"), "\(result.stdout)")
            #expect(result.stdout.contains(#"[{"reason":"Shutdown"}]"#), "\(result.stdout)")
            #expect(server.statistics.goAways == 1)
        }
    }

    @Test("GOAWAY now carries the reason given to sendGoAwayNow as its debug data")
    func goAwayNowReason() async throws {
        try await withServerAndCurl { server, curl in
            server.setResponseDelay(.seconds(60))  // held, then released: see goAwayNowWithDelay
            async let output = nghttpVerbose(server: server, curl: curl)
            try await waitForRequests(server, count: 1)
            server.sendGoAwayNow(reason: "ServiceUnavailable")
            server.setResponseDelay(.zero)
            let result = try await output
            let goAway = result.stdout.split(separator: "\n").first { $0.contains("recv GOAWAY frame") }
            #expect(goAway != nil, "\(result.stdout)")
            let reason = #"{"reason":"ServiceUnavailable"}"#
            #expect(result.stdout.contains("opaque_data(\(reason.utf8.count))=[\(reason)]"), "\(result.stdout)")
        }
    }

    @Test("a lowered stream limit is announced on open connections")
    func lowerStreamLimit() async throws {
        try await withServerAndCurl { server, curl in
            server.setResponseDelay(.seconds(60))  // held, then released: see goAwayNowWithDelay
            async let output = nghttpVerbose(server: server, curl: curl)
            try await waitForRequests(server, count: 1)
            server.setMaxConcurrentStreams(3)
            server.setResponseDelay(.zero)
            let result = try await output
            #expect(result.stdout.contains("[SETTINGS_MAX_CONCURRENT_STREAMS(0x03):3]"), "\(result.stdout)")
            #expect(result.stdout.contains(":status: 200"))
        }
    }

    @Test("a dropped connection loses its request; the next connection works")
    func drop() async throws {
        try await withServerAndCurl { server, curl in
            server.dropConnection(atRequest: 1)
            let dropped = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)", headers: ["apns-topic: com.example.app"])
            #expect(dropped.exitCode != 0)
            #expect(dropped.status == 0)
            let next = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)", headers: ["apns-topic: com.example.app"])
            #expect(next.status == 200)
            #expect(server.statistics.requests == 2)
        }
    }

    @Test("refused connections are accepted again once the refusal runs out, without a reset")
    func refusalRunsOut() async throws {
        try await withServerAndCurl { server, curl in
            let refusal = Duration.seconds(2)
            let began = ContinuousClock.now
            server.refuseConnections(for: refusal)
            let first = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)", headers: ["apns-topic: com.example.app"])
            if first.status == 200 {
                // Only possible when starting curl took longer than the refusal (the server
                // reads the same monotonic clock): no flake, but nothing was refused to see.
                #expect(ContinuousClock.now - began >= refusal)
            } else {
                #expect(first.exitCode != 0)
                #expect(server.statistics.connectionsRefused >= 1)
            }
            // No timed assertion: poll (bounded, about 30 s at most) until a connection is
            // accepted; the refusal must end on its own, long before that.
            var accepted: CurlClient.Response?
            for _ in 0..<60 {
                let attempt = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)", headers: ["apns-topic: com.example.app"])
                if attempt.status == 200 {
                    accepted = attempt
                    break
                }
                try await Task.sleep(for: .milliseconds(500))
            }
            #expect(accepted?.status == 200)
            // Once accepted, it stays so.
            let again = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)", headers: ["apns-topic: com.example.app"])
            #expect(again.status == 200)
        }
    }

    @Test("refused connections fail until the script is reset")
    func refuse() async throws {
        try await withServerAndCurl { server, curl in
            server.refuseConnections(for: .seconds(600))
            let refused = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)", headers: ["apns-topic: com.example.app"])
            #expect(refused.exitCode != 0)
            #expect(server.statistics.connectionsRefused == 1)
            server.resetScript()
            let accepted = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)", headers: ["apns-topic: com.example.app"])
            #expect(accepted.status == 200)
        }
    }
}

@Suite("Scripted faults on open connections")
struct OpenConnectionFaultTests {
    @Test("dropping all connections loses the pending answer")
    func dropAll() async throws {
        try await withServerAndCurl { server, curl in
            // Far longer than the drop takes on any machine: the answer is never due.
            server.setResponseDelay(.seconds(60))
            async let output = nghttpVerbose(server: server, curl: curl)
            try await waitForRequests(server, count: 1)
            server.dropAllConnections()
            let result = try await output
            #expect(!result.stdout.contains(":status:"), "\(result.stdout)")
            #expect(result.stdout.contains("Connected"))
        }
    }

    @Test("breaking HTTP/2: nghttp2's own client answers the DATA frame on stream 0 with GOAWAY PROTOCOL_ERROR")
    func breakProtocol() async throws {
        try await withServerAndCurl { server, curl in
            server.breakProtocol(atRequest: 1)
            let result = try await nghttpVerbose(server: server, curl: curl)
            // The request is never answered; the client reports the connection error it found.
            #expect(!result.stdout.contains(":status:"), "\(result.stdout)")
            let goAway = result.stdout.split(separator: "\n").first { $0.contains("send GOAWAY frame") }
            #expect(goAway != nil, "\(result.stdout)")
            #expect(result.stdout.contains("error_code=PROTOCOL_ERROR(0x01)"), "\(result.stdout)")
            // nghttp2 names what it objected to in the GOAWAY's debug data.
            #expect(result.stdout.contains("DATA: stream_id == 0"), "\(result.stdout)")
            // The server read that GOAWAY (bounded wait: nghttp closes right after it).
            for _ in 0..<2_000 where server.statistics.goAwaysReceived.isEmpty {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(server.statistics.goAwaysReceived == [1: 1])
            #expect(server.statistics.requests == 1)
            #expect(server.statistics.goAways == 0)
            // The trigger is spent: the next connection is served as usual.
            let next = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)", headers: ["apns-topic: com.example.app"])
            #expect(next.status == 200)
        }
    }

    @Test("a black-holed connection answers nothing and closes when the client leaves; other connections are served")
    func blackHole() async throws {
        try await withServerAndCurl { server, curl in
            server.blackHoleConnection(atRequest: 1)
            // nghttp gives up on its request after a second (a bound on the wait, not a measurement).
            let bodyFile = curl.caFile + ".\(UUID().uuidString).body"
            try Data(samplePayload.utf8).write(to: URL(fileURLWithPath: bodyFile))
            defer { try? FileManager.default.removeItem(atPath: bodyFile) }
            let result = try await ExternalTool.run("nghttp", [
                "-nv", "-t", "1", "-d", bodyFile, "-H", "apns-topic: com.example.app",
                "https://127.0.0.1:\(server.port)/3/device/\(sampleDeviceToken)",
            ])
            #expect(!result.stdout.contains(":status:"), "\(result.stdout)")
            #expect(!result.stdout.contains("recv GOAWAY"), "\(result.stdout)")
            #expect(server.statistics.requests == 1)
            // The server closes its side once the client has gone (bounded wait).
            for _ in 0..<2_000 where server.statistics.openConnections > 0 {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(server.statistics.openConnections == 0)
            let next = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)", headers: ["apns-topic: com.example.app"])
            #expect(next.status == 200)
        }
    }

    @Test("a given certificate and key are served as they are")
    func givenCertificate() async throws {
        // Generate a chain with the openssl CLI, then serve it.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("given-cert-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = directory.appendingPathComponent("key.pem").path
        let cert = directory.appendingPathComponent("cert.pem").path
        let made = try await ExternalTool.run("openssl", [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key,
            "-out", cert, "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ])
        try #require(made.exitCode == 0, "\(made.stderr)")
        let configuration = MockAPNsServer.Configuration(
            bundleIDs: ["com.example.app"],
            certificate: .pem(certificateChain: try String(contentsOfFile: cert, encoding: .utf8),
                              privateKey: try String(contentsOfFile: key, encoding: .utf8)))
        try await withMockAPNsServer(configuration: configuration) { server in
            #expect(server.certificateAuthorityPEM == nil)
            let result = try await ExternalTool.run("curl", [
                "-sS", "--http2", "--cacert", cert, "-o", "/dev/null", "-w", "%{http_code}",
                "-H", "apns-topic: com.example.app", "--data-binary", samplePayload,
                "https://localhost:\(server.port)/3/device/\(sampleDeviceToken)",
            ])
            #expect(result.stdout == "200", "\(result.stderr)")
        }
    }

    @Test("a broken PEM makes start() throw a typed error and leaves nothing listening")
    func brokenPEM() async throws {
        let server = MockAPNsServer(configuration: .init(certificate: .pem(certificateChain: "nope", privateKey: "nope")))
        await #expect(throws: MockAPNsServerError.self) { try await server.start() }
        #expect(server.port == 0)
        await server.stop()
    }
}
