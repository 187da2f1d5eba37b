import Foundation
import TestTools
import Testing
@testable import APNsCore

/// The full RFC 7541 encoder on real traffic: the 32 stories of the http2jp
/// hpack-test-case corpus (`raw-data`: 3,384 header lists, 39,359 fields captured from
/// requests and responses of real sites; see `Fixtures/hpack-test-case/README.md`),
/// each story one compression context, encoded block by block and decoded by two decoders
/// that are not ours: nghttp2's inflater, and Python's `hpack` package (the decoder of
/// Python's `h2`, installed with it by `scripts/bootstrap.sh --test`).
///
/// Four ways to encode: Huffman-coded strings or literal ones with the default 4,096-octet
/// table; Huffman with a 256-octet table that the decoder advertised before the first block
/// (so the encoder must signal the size, §4.2, and evicts constantly, §4.4); and every
/// representation of §6.2 in turn (with and without indexing, never indexed).
@Suite("HPACK encoder on the hpack-test-case corpus, decoded by nghttp2 and Python's hpack")
struct HPACKCorpusTests {
    /// One story of the corpus: its name and its header lists in order.
    struct Story: Sendable {
        let name: String
        let blocks: [[HeaderField]]
    }

    /// How the stories are encoded.
    struct Setting: Sendable, CustomTestStringConvertible {
        let name: String
        let usesHuffmanCoding: Bool
        /// SETTINGS_HEADER_TABLE_SIZE as the decoder advertised it, acknowledged before the
        /// story's first block.
        let tableSize: Int
        /// Fields alternate between incremental indexing, without indexing and never indexed.
        let mixedForms: Bool

        var testDescription: String { name }

        func indexing(ofField position: Int) -> HPACKIndexing {
            guard mixedForms else { return .incrementalIndexing }
            return [HPACKIndexing.incrementalIndexing, .withoutIndexing, .neverIndexed][position % 3]
        }
    }

    static let settings = [
        Setting(name: "Huffman, 4,096-octet table", usesHuffmanCoding: true, tableSize: 4096, mixedForms: false),
        Setting(name: "literal strings, 4,096-octet table", usesHuffmanCoding: false, tableSize: 4096, mixedForms: false),
        Setting(name: "Huffman, 256-octet table", usesHuffmanCoding: true, tableSize: 256, mixedForms: false),
        Setting(name: "every representation in turn", usesHuffmanCoding: true, tableSize: 4096, mixedForms: true),
    ]

    /// The corpus's size, counted by Python's `json` on the original files.
    static let corpusBlocks = 3_384
    static let corpusFields = 39_359

    /// The fixture directory: the copy SwiftPM puts in the test bundle, or the source tree.
    static let directory: URL = {
        if let url = Bundle.module.url(forResource: "Fixtures", withExtension: nil)?
            .appendingPathComponent("hpack-test-case/raw-data"),
            FileManager.default.fileExists(atPath: url.path)
        {
            return url
        }
        return URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/hpack-test-case/raw-data")
    }()

    static let stories: Result<[Story], HarnessFailure> = {
        do {
            let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
                .filter { $0.hasPrefix("story_") && $0.hasSuffix(".json") }.sorted()
            return .success(try names.map { name in
                let data = try Data(contentsOf: directory.appendingPathComponent(name))
                guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any],
                    let cases = object["cases"] as? [[String: Any]]
                else { throw HarnessFailure(description: "\(name): not a story") }
                let blocks = try cases.map { entry -> [HeaderField] in
                    guard let headers = entry["headers"] as? [[String: String]] else {
                        throw HarnessFailure(description: "\(name): a case without headers")
                    }
                    return try headers.map { header in
                        guard header.count == 1, let (name, value) = header.first else {
                            throw HarnessFailure(description: "\(name): a header that is not one name and value")
                        }
                        return HeaderField(name: name, value: value)
                    }
                }
                return Story(name: name, blocks: blocks)
            })
        } catch let failure as HarnessFailure {
            return .failure(failure)
        } catch {
            return .failure(HarnessFailure(description: "\(error)"))
        }
    }()

    struct HarnessFailure: Error, CustomStringConvertible {
        var description: String
    }

    /// Encodes `story` as `setting` says, calling `inspect` with each block, its fields and
    /// the encoder after it.
    static func encode(
        _ story: Story, _ setting: Setting,
        inspect: (_ block: [UInt8], _ fields: [HeaderField], _ encoder: HPACKEncoder) throws -> Void
    ) rethrows {
        var encoder = HPACKEncoder(usesHuffmanCoding: setting.usesHuffmanCoding)
        if setting.tableSize != HPACKEncoder.defaultTableSize { encoder.setPeerHeaderTableSize(setting.tableSize) }
        for fields in story.blocks {
            var block: [UInt8] = []
            encoder.beginHeaderBlock(into: &block)
            for (position, field) in fields.enumerated() {
                encoder.append(field, indexing: setting.indexing(ofField: position), into: &block)
            }
            try inspect(block, fields, encoder)
        }
    }

    @Test("the corpus is all there: 32 stories, 3,384 header lists, 39,359 fields")
    func corpusLoaded() throws {
        let stories = try Self.stories.get()
        #expect(stories.count == 32)
        #expect(stories.map(\.blocks.count).reduce(0, +) == Self.corpusBlocks)
        #expect(stories.flatMap(\.blocks).map(\.count).reduce(0, +) == Self.corpusFields)
    }

    @Test("every block decodes back with nghttp2, and both dynamic tables stay equal", arguments: settings)
    func nghttp2DecodesEveryStory(setting: Setting) throws {
        var mismatches: [String] = []
        var blocks = 0, octets = 0, plain = 0
        for story in try Self.stories.get() {
            let inflater = try NGHTTP2Inflater()
            if setting.tableSize != HPACKEncoder.defaultTableSize { try inflater.changeTableSize(setting.tableSize) }
            try Self.encode(story, setting) { block, fields, encoder in
                let decoded = try inflater.decode(block)
                let place = "\(story.name) block \(blocks)"
                if decoded.map(\.field) != fields { mismatches.append("\(place): the fields differ") }
                let never = fields.indices.map { setting.indexing(ofField: $0) == .neverIndexed }
                if decoded.map(\.neverIndexed) != never { mismatches.append("\(place): the never-indexed flags differ") }
                if inflater.tableEntries != encoder.tableEntries || inflater.tableSize != encoder.tableSize {
                    mismatches.append("\(place): the dynamic tables differ (\(inflater.tableSize) and \(encoder.tableSize) octets)")
                }
                if encoder.tableSize > setting.tableSize { mismatches.append("\(place): the table outgrew \(setting.tableSize)") }
                blocks += 1
                octets += block.count
                plain += fields.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count }
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.count) mismatches: \(mismatches.prefix(10))")
        #expect(blocks == Self.corpusBlocks)
        // Not a bound, a sanity check: real traffic compresses (the names and values alone
        // take `plain` octets).
        #expect(octets < plain)
        print("hpack corpus, \(setting.name): \(blocks) blocks, \(octets) octets for \(plain) of names and values")
    }

    /// The Python side: reads `[{"name", "table_size", "blocks": [{"wire", "headers", "never"}]}]`,
    /// decodes each story's blocks in order with one `hpack.Decoder`, and prints a JSON
    /// summary: the blocks decoded and the first mismatches.
    static let pythonDecoder = #"""
        import json, sys
        import hpack
        runs = json.load(open(sys.argv[1]))
        blocks, mismatches = 0, []
        for run in runs:
            decoder = hpack.Decoder(max_header_list_size=1 << 20)
            decoder.max_allowed_table_size = run["table_size"]
            for number, block in enumerate(run["blocks"]):
                place = "%s block %d" % (run["name"], number)
                try:
                    fields = decoder.decode(bytes.fromhex(block["wire"]), raw=True)
                except Exception as error:
                    mismatches.append("%s: %s: %s" % (place, type(error).__name__, error)); break
                got = [[n.decode("utf-8"), v.decode("utf-8")] for n, v in fields]
                if got != block["headers"]:
                    mismatches.append(place + ": the fields differ")
                never = [isinstance(f, hpack.NeverIndexedHeaderTuple) for f in fields]
                if never != block["never"]:
                    mismatches.append(place + ": the never-indexed flags differ")
                blocks += 1
        print(json.dumps({"blocks": blocks, "mismatches": mismatches[:10], "count": len(mismatches)}))
        """#

    @Test("every block decodes back with Python's hpack", arguments: settings)
    func pythonDecodesEveryStory(setting: Setting) async throws {
        let python = "/usr/bin/python3"
        guard FileManager.default.isExecutableFile(atPath: python) else {
            Issue.record("python3 is missing at \(python): scripts/bootstrap.sh --test installs it with python3-h2 (and hpack)")
            return
        }
        var runs: [[String: Any]] = []
        for story in try Self.stories.get() {
            var blocks: [[String: Any]] = []
            Self.encode(story, setting) { block, fields, _ in
                blocks.append([
                    "wire": block.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined(),
                    "headers": fields.map { [$0.name, $0.value] },
                    "never": fields.indices.map { setting.indexing(ofField: $0) == .neverIndexed },
                ])
            }
            runs.append(["name": story.name, "table_size": setting.tableSize, "blocks": blocks])
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("swift-apns-hpack-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("blocks.json"), script = directory.appendingPathComponent("decode.py")
        try JSONSerialization.data(withJSONObject: runs).write(to: input)
        try Self.pythonDecoder.write(to: script, atomically: true, encoding: .utf8)

        // Python decodes for seconds: wait for it off the cooperative pool (see offThePool).
        let (printed, complaint, status) = try await offThePool { [script, input] () throws -> (Data, String, Int32) in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: python)
            process.arguments = [script.path, input.path]
            let output = Pipe(), errors = Pipe()
            process.standardOutput = output
            process.standardError = errors
            try process.run()
            let printed = output.fileHandleForReading.readDataToEndOfFile()
            let complaint = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            return (printed, complaint, exitStatus(of: process, seconds: 120))
        }
        try #require(status == 0, "python3 failed (is python3-hpack installed? scripts/bootstrap.sh --test): \(complaint)")
        let summary = try #require(try JSONSerialization.jsonObject(with: printed) as? [String: Any])
        #expect(summary["count"] as? Int == 0, "\(summary["count"] ?? "?") mismatches: \(summary["mismatches"] ?? "")")
        #expect(summary["blocks"] as? Int == Self.corpusBlocks)
    }
}
