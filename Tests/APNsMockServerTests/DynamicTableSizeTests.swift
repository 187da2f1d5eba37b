import Foundation
import Testing
@testable import APNsMockServer

/// The header blocks nghttp says it sent (`nghttp -v`: a `send HEADERS frame` line, then
/// the fields, one `name: value` a line), in the order it sent them.
func sentHeaderBlocks(_ output: String) -> [(streamID: Int, fields: [(name: String, value: String)])] {
    var blocks: [(streamID: Int, fields: [(name: String, value: String)])] = []
    var current: (streamID: Int, fields: [(name: String, value: String)])?
    for line in output.split(separator: "\n", omittingEmptySubsequences: false) {
        if line.hasPrefix("[") {
            if let current { blocks.append(current) }
            current = nil
            if line.contains("send HEADERS frame"), let range = line.range(of: "stream_id=") {
                current = (Int(line[range.upperBound...].prefix { $0.isNumber }) ?? -1, [])
            }
            continue
        }
        guard current != nil else { continue }
        let text = line.drop { $0 == " " }
        guard !text.isEmpty, !text.hasPrefix(";"), !text.hasPrefix("(") else { continue }
        // A pseudo-header's name starts with ":", so look for ": " after the first character.
        guard let separator = text.dropFirst().range(of: ": ") else { continue }
        current?.fields.append((String(text[..<separator.lowerBound]), String(text[separator.upperBound...])))
    }
    if let current { blocks.append(current) }
    return blocks
}

/// An HPACK encoder's dynamic table as RFC 7541 defines it, fed with the fields a client
/// sent, to predict the size of the server's decoder table (the two stay equal, §2.3.2).
///
/// Which fields a client adds is the client's choice (§6.2); this one makes nghttp2's
/// (lib/nghttp2_hd.c, `hd_deflate_decide_indexing`): a field that matches a static or
/// dynamic entry exactly is sent indexed, `:path`, `content-length` and a few response
/// fields are never added, nor is an entry larger than 3/4 of the table; any other field
/// is added.
struct HPACKTableModel {
    /// RFC 7541 Appendix A: the static entries that have a value (all others have none,
    /// so no field with a value matches them exactly).
    static let staticPairs: Set<String> = [
        ":method\u{0}GET", ":method\u{0}POST", ":path\u{0}/", ":path\u{0}/index.html", ":scheme\u{0}http",
        ":scheme\u{0}https", ":status\u{0}200", ":status\u{0}204", ":status\u{0}206", ":status\u{0}304",
        ":status\u{0}400", ":status\u{0}404", ":status\u{0}500", "accept-encoding\u{0}gzip, deflate",
    ]
    static let neverAdded: Set<String> = [
        ":path", "age", "content-length", "etag", "if-modified-since", "if-none-match", "location", "set-cookie",
    ]

    let maximum: Int
    /// Newest first, as §2.3.3 numbers them.
    private(set) var entries: [(name: String, value: String)] = []

    init(maximum: Int) { self.maximum = maximum }

    /// §4.1: the sum of each entry's name and value length in octets, plus 32.
    static func size(_ name: String, _ value: String) -> Int { name.utf8.count + value.utf8.count + 32 }

    var size: Int { entries.reduce(0) { $0 + Self.size($1.name, $1.value) } }

    mutating func encode(_ name: String, _ value: String) {
        if Self.staticPairs.contains(name + "\u{0}" + value) { return }
        if entries.contains(where: { $0.name == name && $0.value == value }) { return }
        if Self.neverAdded.contains(name) || Self.size(name, value) > maximum * 3 / 4 { return }
        // §4.4: evict from the end until the new entry fits, then add it at the front.
        while !entries.isEmpty, size + Self.size(name, value) > maximum { entries.removeLast() }
        if Self.size(name, value) <= maximum { entries.insert((name, value), at: 0) }
    }
}

@Suite("The inflater's dynamic table size")
struct DynamicTableSizeTests {
    @Test("each request records the HPACK decoder table size that nghttp's fields imply under RFC 7541",
          arguments: [nil, 0, 100] as [Int?])
    func sizesFromNghttp(encoderTableSize: Int?) async throws {
        try await withServerAndCurl { server, curl in
            let bodyFile = curl.caFile + ".body"
            try Data(samplePayload.utf8).write(to: URL(fileURLWithPath: bodyFile))
            defer { try? FileManager.default.removeItem(atPath: bodyFile) }
            // Two requests on one connection: the second repeats all fields but `:path`.
            var arguments = ["-nv", "-d", bodyFile, "-H", "apns-topic: com.example.app"]
            if let encoderTableSize { arguments.append("--encoder-header-table-size=\(encoderTableSize)") }
            arguments += [
                "https://127.0.0.1:\(server.port)/3/device/\(sampleDeviceToken)",
                "https://127.0.0.1:\(server.port)/3/device/\(String(sampleDeviceToken.reversed()))",
            ]
            let result = try await ExternalTool.run("nghttp", arguments)
            #expect(result.exitCode == 0, "\(result.stderr)")
            let blocks = sentHeaderBlocks(result.stdout)
            try #require(blocks.count == 2, "\(result.stdout)")
            let recorded = server.recordedRequests
            try #require(recorded.count == 2)
            #expect(Set(recorded.map(\.connectionNumber)).count == 1)

            // The server leaves SETTINGS_HEADER_TABLE_SIZE at 4096 (RFC 9113 §6.5.2); a
            // client may use less, and nghttp2 then tells the server with a table size update.
            let maximum = min(encoderTableSize ?? 4096, 4096)
            var model = HPACKTableModel(maximum: maximum)
            for block in blocks {
                for field in block.fields { model.encode(field.name, field.value) }
                let request = try #require(recorded.first { $0.streamID == block.streamID }, "stream \(block.streamID)")
                #expect(request.inflaterDynamicTableSize == model.size,
                        "stream \(block.streamID), table of \(maximum): \(model.entries)")
                #expect(request.inflaterDynamicTableSize <= maximum)
            }
            if maximum == 4096 {
                // Nothing was evicted: what nghttp sent with incremental indexing (as the
                // server's own reading of the wire says) is exactly what the table holds.
                let first = try #require(recorded.first { $0.streamID == blocks[0].streamID })
                let indexed = first.headers.filter { $0.representation == .incrementalIndexing }
                #expect(!indexed.isEmpty)
                #expect(first.inflaterDynamicTableSize == indexed.reduce(0) { $0 + HPACKTableModel.size($1.name, $1.value) })
                #expect(first.inflaterDynamicTableSize > 0)
                let second = try #require(recorded.first { $0.streamID == blocks[1].streamID })
                #expect(second.inflaterDynamicTableSize == first.inflaterDynamicTableSize)
            }
            if maximum == 0 {
                #expect(recorded.allSatisfy { $0.inflaterDynamicTableSize == 0 })
            }
        }
    }

    @Test("a new connection starts with an empty table")
    func perConnection() async throws {
        try await withServerAndCurl { server, curl in
            for _ in 0..<2 {
                let response = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)",
                                                   headers: ["apns-topic: com.example.app"])
                #expect(response.status == 200)
            }
            let recorded = server.recordedRequests
            try #require(recorded.count == 2)
            #expect(recorded[0].connectionNumber != recorded[1].connectionNumber)
            // Each curl process sends the same fields on a fresh connection, so each
            // connection's table ends the first request at the same size.
            #expect(recorded[0].inflaterDynamicTableSize > 0)
            #expect(recorded[0].inflaterDynamicTableSize == recorded[1].inflaterDynamicTableSize)
        }
    }
}
