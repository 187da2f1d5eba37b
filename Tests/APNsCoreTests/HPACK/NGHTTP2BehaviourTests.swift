import CNGHTTP2
import Testing
@testable import APNsCore

/// What nghttp2 1.52's deflater does by itself, which the policy and the article
/// rely on: the facts behind the mapping of ``HPACKIndexing`` to nghttp2's flags.
@Suite("nghttp2 deflater behaviour the policy relies on")
struct NGHTTP2BehaviourTests {
    @Test("Without flags, nghttp2 writes authorization never indexed")
    func authorizationIsNeverIndexed() throws {
        let deflater = try NGHTTP2Deflater()
        let inflater = try NGHTTP2Inflater()
        let field = HeaderField(name: "authorization", value: "bearer " + String(repeating: "x", count: 200))
        for _ in 0..<3 {
            let decoded = try inflater.decode(deflater.encode([field], noIndex: [false]))
            #expect(decoded == [DecodedField(field: field, neverIndexed: true)])
        }
        #expect(inflater.tableEntries.isEmpty)
    }

    @Test("Without flags, nghttp2 writes a short cookie never indexed")
    func shortCookie() throws {
        let deflater = try NGHTTP2Deflater()
        let inflater = try NGHTTP2Inflater()
        let cookie = HeaderField(name: "cookie", value: "abc")
        #expect(try inflater.decode(deflater.encode([cookie], noIndex: [false])) == [DecodedField(field: cookie, neverIndexed: true)])
        #expect(inflater.tableEntries.isEmpty)
    }

    @Test("Without flags, nghttp2 never indexes these names", arguments: [
        ":path", "age", "content-length", "etag", "if-modified-since", "if-none-match", "location", "set-cookie",
    ])
    func namesNeverIndexed(name: String) throws {
        let deflater = try NGHTTP2Deflater()
        let inflater = try NGHTTP2Inflater()
        let field = HeaderField(name: name, value: "value-1234")
        _ = try inflater.decode(deflater.encode([field], noIndex: [false]))
        #expect(inflater.tableEntries.isEmpty)
        #expect(deflater.tableEntries.isEmpty)
    }

    @Test("Without flags, nghttp2 indexes other fields up to 3/4 of the table")
    func threeQuartersBound() throws {
        let deflater = try NGHTTP2Deflater()
        // 3/4 of 4096 is 3072: name (1) + value + 32 must not exceed it.
        let fits = HeaderField(name: "x", value: String(repeating: "a", count: 3072 - 33))
        let tooBig = HeaderField(name: "y", value: String(repeating: "b", count: 3072 - 32))
        _ = try deflater.encode([fits, tooBig], noIndex: [false, false])
        #expect(deflater.tableEntries == [fits])
    }

    @Test("NGHTTP2_NV_FLAG_NO_INDEX gives a literal never indexed, adding nothing to the table")
    func noIndexFlag() throws {
        let deflater = try NGHTTP2Deflater()
        let inflater = try NGHTTP2Inflater()
        let field = HeaderField(name: "apns-topic", value: "com.example.app")
        let decoded = try inflater.decode(deflater.encode([field], noIndex: [true]))
        #expect(decoded == [DecodedField(field: field, neverIndexed: true)])
        #expect(inflater.tableEntries.isEmpty)
    }

    /// The code of the article "How headers are encoded", compiled and run.
    @Test("The article's example")
    func articleExample() throws {
        var policy = APNsHeaderEncoder()        // one per HTTP/2 connection
        policy.setPeerHeaderTableSize(4096)     // the server's SETTINGS_HEADER_TABLE_SIZE

        let headers = [
            HeaderField(name: ":method", value: "POST"),
            HeaderField(name: ":scheme", value: "https"),
            HeaderField(name: ":path", value: "/3/device/" + String(repeating: "ab", count: 32)),
            HeaderField(name: ":authority", value: "api.push.apple.com"),
            HeaderField(name: "apns-topic", value: "com.example.app"),
            HeaderField(name: "apns-push-type", value: "alert"),
            HeaderField(name: "apns-id", value: "2f1d0f4e-8a53-4c1b-9f7e-3c2a1b0d9e8f"),
        ]
        var block: [UInt8] = []
        var decisions: [HPACKIndexing] = []
        policy.encodeHeaderBlock(headers, into: &block, decisions: &decisions)

        // An nghttp2 transport sets NGHTTP2_NV_FLAG_NO_INDEX where this is true.
        let noIndex = decisions.map(\.requiresNoIndexFlag)

        #expect(noIndex == [false, false, true, false, false, false, false])
        #expect(try NGHTTP2Inflater().decodeFields(block) == headers)
        // The transport path: nghttp2 with those flags builds the same server table.
        let inflater = try NGHTTP2Inflater()
        _ = try inflater.decode(NGHTTP2Deflater().encode(headers, noIndex: noIndex))
        #expect(inflater.tableEntries == policy.tableEntries)
        // decisions(for:) keeps the model in step for the next request.
        var second = headers
        second[6] = HeaderField(name: "apns-id", value: "0b6e2a41-7d3c-4f5e-8a9b-1c2d3e4f5a6b")
        #expect(policy.decisions(for: second).map(\.requiresNoIndexFlag) == [false, false, true, false, false, false, true])
    }
}
