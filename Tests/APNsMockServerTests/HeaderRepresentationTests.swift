import Foundation
import Testing
@testable import APNsMockServer

@Suite("How headers were represented on the wire")
struct HeaderRepresentationTests {
    typealias R = RecordedRequest.HeaderRepresentation

    static func walk(_ hex: String) -> [R] {
        let digits = Array(hex.replacingOccurrences(of: " ", with: "").utf8)
        let bytes = stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)! }
        return HeaderBlockTap.walk(bytes)
    }

    @Test("RFC 7541 Appendix C header blocks", arguments: [
        // §C.2.1 literal with indexing
        ("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572", [R.incrementalIndexing]),
        // §C.2.2 literal without indexing (indexed name)
        ("040c 2f73 616d 706c 652f 7061 7468", [R.withoutIndexing]),
        // §C.2.3 literal never indexed
        ("1008 7061 7373 776f 7264 0673 6563 7265 74", [R.neverIndexed]),
        // §C.2.4 indexed
        ("82", [R.indexed]),
        // §C.3.1 first request without Huffman
        ("8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d", [R.indexed, .indexed, .indexed, .incrementalIndexing]),
        // §C.4.3 third request with Huffman
        ("8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
         [R.indexed, .indexed, .indexed, .indexed, .incrementalIndexing]),
        // a dynamic table size update (§6.3) carries no field
        ("3f e1 1f 82", [R.indexed]),
    ] as [(String, [R])])
    func rfcVectors(hex: String, expected: [R]) {
        #expect(Self.walk(hex) == expected)
    }

    @Test("frames split anywhere, padded and with priority, are reassembled")
    func framing() {
        // Preface, SETTINGS (empty), then HEADERS (stream 1, PADDED|PRIORITY, no END_HEADERS)
        // carrying C.3.1's first two fields, then CONTINUATION with the rest.
        var bytes = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
        bytes += [0, 0, 0, 0x4, 0, 0, 0, 0, 0]
        let first: [UInt8] = [0x82, 0x86]
        let rest: [UInt8] = [0x84, 0x41, 0x0f] + Array("www.example.com".utf8)
        let padding = 3
        let headersPayload: [UInt8] = [UInt8(padding)] + [0, 0, 0, 0, 16] + first + Array(repeating: 0, count: padding)
        bytes += [0, 0, UInt8(headersPayload.count), 0x1, 0x8 | 0x20, 0, 0, 0, 1] + headersPayload
        bytes += [0, 0, UInt8(rest.count), 0x9, 0x4, 0, 0, 0, 1] + rest
        for chunk in [1, 2, 7, 100] {
            var tap = HeaderBlockTap()
            var index = 0
            while index < bytes.count {
                let end = min(index + chunk, bytes.count)
                bytes[index..<end].withUnsafeBytes { tap.feed($0) }
                index = end
            }
            #expect(tap.take(stream: 1) == [.indexed, .indexed, .indexed, .incrementalIndexing])
        }
    }

    /// Header blocks whose stream never closes nor becomes a request (streams libnghttp2
    /// refuses unopened, from a client that never acknowledges SETTINGS) do not pile up:
    /// 100,000 of them leave at most the cap, and the newest are the ones kept.
    @Test("records of streams that never close are bounded, the newest kept")
    func unclaimedRecordsAreBounded() {
        var tap = HeaderBlockTap()
        let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
        preface.withUnsafeBytes { tap.feed($0) }
        // One HEADERS frame (END_HEADERS) per odd stream ID: RFC 7541 C.3.1's first field, indexed.
        let streams = 100_000
        var bytes: [UInt8] = []
        bytes.reserveCapacity(streams * 10)
        for index in 0..<streams {
            let id = UInt32(2 * index + 1)
            bytes += [0, 0, 1, 0x1, 0x4, UInt8(id >> 24), UInt8(id >> 16 & 0xFF), UInt8(id >> 8 & 0xFF), UInt8(id & 0xFF), 0x82]
        }
        bytes.withUnsafeBytes { tap.feed($0) }
        #expect(tap.representations.count <= HeaderBlockTap.maxKept)
        #expect(tap.representations.count >= HeaderBlockTap.maxKept / 2)
        let last = Int32(2 * streams - 1)
        #expect(tap.take(stream: last) == [.indexed])
        #expect(tap.take(stream: 1) == nil)
    }

    @Test("requests from nghttp record each representation, agreeing with nghttp2's never-indexed flag")
    func recordedFromNghttp() async throws {
        let token = makeJWT(issuedAt: Int(Date().timeIntervalSince1970))
        // No token mode: its stream limit of 1 until the first answer would refuse nghttp's
        // second concurrent stream. The authorization header is still sent (and ignored).
        let configuration = MockAPNsServer.Configuration(bundleIDs: ["com.example.app"])
        try await withServerAndCurl(configuration) { server, curl in
            let bodyFile = curl.caFile + ".body"
            try Data(samplePayload.utf8).write(to: URL(fileURLWithPath: bodyFile))
            defer { try? FileManager.default.removeItem(atPath: bodyFile) }
            // Two requests on one connection (nghttp sends its URIs over one connection).
            let result = try await ExternalTool.run("nghttp", [
                "-n", "-d", bodyFile, "-H", "apns-topic: com.example.app", "-H", "authorization: bearer \(token)",
                "https://127.0.0.1:\(server.port)/3/device/\(sampleDeviceToken)",
                "https://127.0.0.1:\(server.port)/3/device/\(String(sampleDeviceToken.reversed()))",
            ])
            #expect(result.exitCode == 0, "\(result.stderr)")
            #expect(server.recordedRequests.count == 2)
            #expect(Set(server.recordedRequests.map(\.connectionNumber)).count == 1)
            // The article's example (IntegrationTestingWithTheMockServer.md):
            for request in server.recordedRequests.dropFirst() {
                for header in request.headers where [":path", "apns-id"].contains(header.name) {
                    #expect(header.representation != .incrementalIndexing)
                }
            }
            let request = try #require(server.recordedRequests.first)
            func representation(_ name: String) -> R? { request.headers.first { $0.name == name }?.representation }
            // nghttp2's deflater: static-table hits are indexed, it never indexes :path,
            // it always sends authorization never-indexed, and indexes other new fields.
            #expect(representation(":method") == .indexed)
            #expect(representation(":path") == .withoutIndexing)
            #expect(representation("authorization") == .neverIndexed)
            #expect(representation("apns-topic") == .incrementalIndexing)
            for header in request.headers {
                #expect(header.representation != nil)
                #expect((header.representation == .neverIndexed) == header.neverIndexed, "\(header.name)")
            }
        }
    }
}
