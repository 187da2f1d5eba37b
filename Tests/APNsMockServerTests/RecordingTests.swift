import Foundation
import Testing
@testable import APNsMockServer

@Suite("Recorded requests")
struct RecordingTests {
    @Test("headers in order, never-indexed flags as nghttp2's encoder sends them, body, header block size")
    func recordsWhatArrived() async throws {
        try await withServerAndCurl { server, curl in
            let result = try await nghttpVerbose(server: server, curl: curl, extraHeaders: [
                "apns-push-type: alert", "apns-priority: 10", "authorization: bearer abc.def.ghi",
            ])
            #expect(result.exitCode == 0)
            let request = try #require(server.recordedRequests.first)
            let names = request.headers.map(\.name)
            // nghttp sends pseudo-headers first, then its own headers, then ours in order.
            #expect(Array(names.prefix(4)) == [":method", ":path", ":scheme", ":authority"])
            let ours = names.filter { $0.hasPrefix("apns-") || $0 == "authorization" }
            #expect(ours == ["apns-topic", "apns-push-type", "apns-priority", "authorization"])
            // nghttp2's HPACK encoder always sends `authorization` as never-indexed (RFC 7541 §7.1.3).
            #expect(request.headers.first { $0.name == "authorization" }?.neverIndexed == true)
            #expect(request.headers.first { $0.name == "apns-topic" }?.neverIndexed == false)
            #expect(request.body == Array(samplePayload.utf8))
            #expect(request.deviceToken == sampleDeviceToken)
            #expect(request.value(of: "apns-topic") == "com.example.app")
            // The HEADERS frame length nghttp printed for its request.
            let sent = result.stdout.split(separator: "\n").first { $0.contains("send HEADERS frame <length=") }
            let length = sent.flatMap { line in
                line.range(of: "length=").map { Int(line[$0.upperBound...].prefix { $0.isNumber }) } ?? nil
            }
            #expect(request.headerBlockLength == length)
            #expect(request.status == 200)
            #expect(request.streamID == respondedStreamID(result.stdout))
        }
    }

    @Test("the request stream delivers each request as it is answered")
    func stream() async throws {
        try await withServerAndCurl { server, curl in
            let requests = server.requests()
            let response = try await curl.send(port: server.port, path: "/3/device/", headers: ["apns-topic: com.example.app"])
            #expect(response.status == 400)
            var iterator = requests.makeAsyncIterator()
            let first = await iterator.next()
            #expect(first?.reason == "MissingDeviceToken")
            #expect(first?.sequenceNumber == 0)
        }
    }

    @Test("stopping the server ends an open request stream (no lock re-entry)")
    func streamEndsAtStop() async throws {
        let server = MockAPNsServer(configuration: .init(bundleIDs: ["com.example.app"]))
        try await server.start()
        let requests = server.requests()
        await server.stop()
        var iterator = requests.makeAsyncIterator()
        #expect(await iterator.next() == nil)
    }

    @Test("the API is usable from many tasks while traffic flows")
    func concurrentUse() async throws {
        try await withServerAndCurl { server, curl in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<4 {
                    group.addTask {
                        let token = String(repeating: String(format: "%02x", index), count: 32)
                        server.respond(toDeviceToken: token, with: .unregistered())
                        _ = server.recordedRequests
                        _ = server.statistics
                        let answer = try await curl.send(port: server.port, path: "/3/device/\(token)",
                                                         headers: ["apns-topic: com.example.app"])
                        #expect(answer.status == 410)
                    }
                }
                try await group.waitForAll()
            }
            #expect(server.statistics.requests == 4)
            #expect(server.recordedRequests.count == 4)
            #expect(Set(server.recordedRequests.map(\.sequenceNumber)) == [0, 1, 2, 3])
        }
    }

    @Test("the record keeps only the newest requests beyond its limit, oldest first")
    func limit() async throws {
        try await withServerAndCurl(.init(bundleIDs: ["com.example.app"], recordedRequestLimit: 2)) { server, curl in
            for _ in 0..<3 {
                _ = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)", headers: ["apns-topic: com.example.app"])
            }
            #expect(server.recordedRequests.map(\.sequenceNumber) == [1, 2])
            server.removeRecordedRequests()
            #expect(server.recordedRequests.isEmpty)
            #expect(server.statistics.requests == 3)
        }
    }
}
