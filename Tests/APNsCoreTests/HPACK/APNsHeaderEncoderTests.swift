import CNGHTTP2
import Testing
@testable import APNsCore

/// The APNs header policy checked against Apple's guidance (seed 000, "HTTP/2 requests
/// to APNs": `:path` and per-request headers without indexing, `apns-id`,
/// `apns-expiration`, `apns-collapse-id` indexed the first time only) and against
/// nghttp2: its inflater shows what the server's table holds, its deflater shows the
/// transport reaches the same table with the flags the policy hands out.
@Suite("APNs header policy")
struct APNsHeaderEncoderTests {
    static let host = "api.push.apple.com"

    /// The headers of one device request, in the order the request model builds them.
    static func request(
        deviceToken: String,
        apnsID: String,
        jwt: String?,
        expiration: String = "0",
        collapseID: String? = nil,
        pushType: String = "alert",
        priority: String = "10",
        topic: String = "com.example.app"
    ) -> [HeaderField] {
        var fields = [
            HeaderField(name: ":method", value: "POST"),
            HeaderField(name: ":scheme", value: "https"),
            HeaderField(name: ":path", value: "/3/device/" + deviceToken),
            HeaderField(name: ":authority", value: host),
        ]
        if let jwt { fields.append(HeaderField(name: "authorization", value: "bearer " + jwt)) }
        fields += [
            HeaderField(name: "apns-topic", value: topic),
            HeaderField(name: "apns-push-type", value: pushType),
            HeaderField(name: "apns-priority", value: priority),
            HeaderField(name: "apns-expiration", value: expiration),
        ]
        if let collapseID { fields.append(HeaderField(name: "apns-collapse-id", value: collapseID)) }
        fields.append(HeaderField(name: "apns-id", value: apnsID))
        return fields
    }

    static func hex(_ count: Int, using generator: inout SeededGenerator) -> String {
        let digits = Array("0123456789abcdef")
        return String((0..<count).map { _ in digits[Int.random(in: 0..<16, using: &generator)] })
    }

    /// A lowercase canonical UUID, 8-4-4-4-12.
    static func uuid(using generator: inout SeededGenerator) -> String {
        [8, 4, 4, 4, 12].map { hex($0, using: &generator) }.joined(separator: "-")
    }

    /// A JWT-shaped token of exactly `count` characters (base64url alphabet, two dots).
    static func jwt(_ count: Int, using generator: inout SeededGenerator) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        var characters = (0..<count).map { _ in alphabet[Int.random(in: 0..<64, using: &generator)] }
        characters[36] = "."
        characters[count - 87] = "."
        return String(characters)
    }

    static let perRequestNames: Set<String> = [":path", "apns-id", "apns-expiration", "apns-collapse-id", "authorization"]

    @Test("Decisions follow Apple's guidance: first request, then every later one")
    func decisions() throws {
        var generator = SeededGenerator(seed: 1)
        var policy = APNsHeaderEncoder()
        let inflater = try NGHTTP2Inflater()
        let token = Self.jwt(200, using: &generator)
        let first = Self.request(deviceToken: Self.hex(64, using: &generator), apnsID: Self.uuid(using: &generator),
                                 jwt: token, expiration: "1700000000", collapseID: "game-42")
        var block: [UInt8] = []
        var decisions: [HPACKIndexing] = []
        policy.encodeHeaderBlock(first, into: &block, decisions: &decisions)
        #expect(decisions == [
            .incrementalIndexing, .incrementalIndexing, // :method, :scheme (static entries)
            .withoutIndexing,                           // :path
            .incrementalIndexing,                       // :authority
            .neverIndexed,                              // authorization
            .incrementalIndexing, .incrementalIndexing, .incrementalIndexing, // topic, push type, priority
            .incrementalIndexing, .incrementalIndexing, .incrementalIndexing, // first expiration, collapse id, apns-id
        ])
        let decoded = try inflater.decode(block)
        #expect(decoded.map(\.field) == first)
        #expect(decoded.map(\.neverIndexed) == first.map { $0.name == "authorization" })
        // The server's table: the repeating values and the three names (with their first values).
        #expect(Set(inflater.tableEntries.map(\.name)) == [":authority", "apns-topic", "apns-push-type", "apns-priority", "apns-expiration", "apns-collapse-id", "apns-id"])
        #expect(inflater.tableEntries == policy.tableEntries)
        let tableAfterFirst = inflater.tableEntries

        for _ in 0..<3 {
            let next = Self.request(deviceToken: Self.hex(64, using: &generator), apnsID: Self.uuid(using: &generator),
                                    jwt: token, expiration: "1700000100", collapseID: "game-43")
            block = []
            policy.encodeHeaderBlock(next, into: &block, decisions: &decisions)
            #expect(decisions == [
                .incrementalIndexing, .incrementalIndexing, .withoutIndexing, .incrementalIndexing, .neverIndexed,
                .incrementalIndexing, .incrementalIndexing, .incrementalIndexing,
                .withoutIndexing, .withoutIndexing, .withoutIndexing,
            ])
            #expect(try inflater.decodeFields(block) == next)
            #expect(inflater.tableEntries == tableAfterFirst)
        }
        #expect(policy.headerBlockCount == 4)
        #expect(policy.tableSize == inflater.tableSize && policy.maximumTableSize == 4096)
    }

    @Test("Broadcast and unknown headers are written without indexing")
    func unknownNames() throws {
        var policy = APNsHeaderEncoder()
        let inflater = try NGHTTP2Inflater()
        let broadcast = [
            HeaderField(name: ":method", value: "POST"),
            HeaderField(name: ":scheme", value: "https"),
            HeaderField(name: ":path", value: "/4/broadcasts/apps/com.example.app"),
            HeaderField(name: ":authority", value: Self.host),
            HeaderField(name: "apns-channel-id", value: "dHN0LXNyY2gtY2hubA=="),
            HeaderField(name: "apns-request-id", value: "5fa1c2d4-0000-4000-8000-00000000000a"),
            HeaderField(name: "x-something", value: "y"),
        ]
        var block: [UInt8] = []
        var decisions: [HPACKIndexing] = []
        policy.encodeHeaderBlock(broadcast, into: &block, decisions: &decisions)
        #expect(Array(decisions.suffix(3)) == [.withoutIndexing, .withoutIndexing, .withoutIndexing])
        #expect(try inflater.decodeFields(block) == broadcast)
        #expect(inflater.tableEntries == [HeaderField(name: ":authority", value: Self.host)])
    }

    @Test("A field larger than 3/4 of the table is never indexed, as nghttp2 decides")
    func largeFieldsAreNotIndexed() throws {
        var policy = APNsHeaderEncoder()
        let longTopic = String(repeating: "t", count: 3100)
        var block: [UInt8] = []
        var decisions: [HPACKIndexing] = []
        policy.encodeHeaderBlock([HeaderField(name: "apns-topic", value: longTopic)], into: &block, decisions: &decisions)
        #expect(decisions == [.withoutIndexing])
        #expect(policy.tableEntries.isEmpty)
    }

    /// Encodes the same requests through the policy and through nghttp2's deflater with
    /// the policy's flags; both decoded by their own nghttp2 inflater.
    @Test("nghttp2's deflater with the policy's flags builds the same server table, over a long run")
    func nghttp2DeflaterAgrees() throws {
        var generator = SeededGenerator(seed: 2)
        var policy = APNsHeaderEncoder()
        // The transport's path: decisions only, no header block written.
        var decidingPolicy = APNsHeaderEncoder()
        // The transport's configuration: decisions without a table model.
        var unmodelledPolicy = APNsHeaderEncoder(usesHuffmanCoding: false, modelsTable: false)
        let deflater = try NGHTTP2Deflater()
        let ourPeer = try NGHTTP2Inflater()
        let theirPeer = try NGHTTP2Inflater()
        var jwt = Self.jwt(200, using: &generator)
        let tokens = (0..<50).map { _ in Self.hex(64, using: &generator) }
        var block: [UInt8] = []
        var decisions: [HPACKIndexing] = []
        for number in 1...3000 {
            // SETTINGS_HEADER_TABLE_SIZE changes on the way, including to 0 and back.
            let settings: [Int] = switch number {
            case 700: [1024]
            case 1400: [0, 4096]
            case 2100: [256]
            case 2600: [4096]
            default: []
            }
            for size in settings {
                policy.setPeerHeaderTableSize(size)
                decidingPolicy.setPeerHeaderTableSize(size)
                unmodelledPolicy.setPeerHeaderTableSize(size)
                try deflater.changeTableSize(size)
                try ourPeer.changeTableSize(size)
                try theirPeer.changeTableSize(size)
            }
            if number % 500 == 0 { jwt = Self.jwt(200, using: &generator) } // token rotation
            let headers = Self.request(
                deviceToken: tokens.randomElement(using: &generator)!,
                apnsID: Self.uuid(using: &generator),
                jwt: jwt,
                expiration: String(1_700_000_000 + number),
                collapseID: number >= 10 && number % 3 == 0 ? "c\(number % 7)" : nil,
                pushType: ["alert", "background"].randomElement(using: &generator)!,
                priority: ["10", "5"].randomElement(using: &generator)!,
                topic: ["com.example.app", "com.example.other"].randomElement(using: &generator)!
            )
            block.removeAll(keepingCapacity: true)
            policy.encodeHeaderBlock(headers, into: &block, decisions: &decisions)
            #expect(decidingPolicy.decisions(for: headers) == decisions, "request \(number)")
            #expect(unmodelledPolicy.decisions(for: headers) == decisions, "request \(number)")
            let theirs = try deflater.encode(headers, noIndex: decisions.map(\.requiresNoIndexFlag))
            #expect(try ourPeer.decodeFields(block) == headers)
            #expect(try theirPeer.decodeFields(theirs) == headers)
            let ourTable = ourPeer.tableEntries
            #expect(ourTable == policy.tableEntries, "request \(number)")
            #expect(theirPeer.tableEntries == ourTable, "request \(number)")
            #expect(deflater.tableEntries == ourTable, "request \(number)")
            #expect(decidingPolicy.tableEntries == ourTable, "request \(number)")
            #expect(decidingPolicy.tableSize == policy.tableSize, "request \(number)")
            #expect(theirPeer.tableSize == ourPeer.tableSize, "request \(number)")
            if theirPeer.tableEntries != ourTable { break }
        }
    }

    /// The proof: 10,000 requests, 1,000 device tokens, unique apns-ids, a 200-character
    /// bearer token, one connection; with device tokens of 64 hex digits (32 bytes, what
    /// devices send today) and of 32 (a shorter shape, for comparison with figures
    /// measured on it).
    @Test("10,000 requests: the server table stays bounded and holds no per-request value", arguments: [64, 32])
    func tenThousandRequests(tokenHexDigits: Int) throws {
        var generator = SeededGenerator(seed: 3)
        var policy = APNsHeaderEncoder()
        let peer = try NGHTTP2Inflater()
        let nghttp2Deflater = try NGHTTP2Deflater()
        let nghttp2Peer = try NGHTTP2Inflater()
        let jwt = Self.jwt(200, using: &generator)
        let tokens = (0..<1000).map { _ in Self.hex(tokenHexDigits, using: &generator) }
        var block: [UInt8] = []
        var decisions: [HPACKIndexing] = []
        var tableAfterFirst: [HeaderField] = []
        var maximumTableSize = 0, maximumEntries = 0, nghttp2MaximumTableSize = 0
        var ourFirst = 0, ourLater = 0, ourLaterMaximum = 0, theirFirst = 0, theirLater = 0
        var firstCosts: [Int] = [], laterCosts: [Int] = []
        var seenIDs = Set<String>()
        let count = 10_000
        let headersShape = Self.request(deviceToken: "", apnsID: "", jwt: "")
        for number in 1...count {
            let apnsID = Self.uuid(using: &generator)
            seenIDs.insert(apnsID)
            let headers = Self.request(
                deviceToken: tokens[number % tokens.count],
                apnsID: apnsID,
                jwt: jwt,
                expiration: String(1_700_000_000 + number)
            )
            block.removeAll(keepingCapacity: true)
            var ends: [Int]? = []
            policy.encodeHeaderBlock(headers, into: &block, decisions: &decisions, fieldEnds: &ends)
            #expect(try peer.decodeFields(block) == headers)
            let table = peer.tableEntries
            maximumTableSize = max(maximumTableSize, peer.tableSize)
            maximumEntries = max(maximumEntries, table.count)
            if number == 1 {
                tableAfterFirst = table
                ourFirst = block.count
                firstCosts = zip(ends!.dropFirst(), ends!).map { $0 - $1 }
            } else {
                // Nothing was inserted after the first request.
                #expect(table == tableAfterFirst, "request \(number)")
                ourLater += block.count
                ourLaterMaximum = max(ourLaterMaximum, block.count)
                if number == 2 { laterCosts = zip(ends!.dropFirst(), ends!).map { $0 - $1 } }
            }
            // nghttp2's deflater with its default choices (no flags), measured alongside.
            let theirs = try nghttp2Deflater.encode(headers)
            #expect(try nghttp2Peer.decodeFields(theirs) == headers)
            nghttp2MaximumTableSize = max(nghttp2MaximumTableSize, nghttp2Peer.tableSize)
            if number == 1 { theirFirst = theirs.count } else { theirLater += theirs.count }
        }
        #expect(seenIDs.count == count)
        // The first request put only the repeating values and the per-request names in.
        #expect(tableAfterFirst.filter { $0.name == ":path" || $0.name == "authorization" }.isEmpty)
        #expect(tableAfterFirst.filter { $0.name == "apns-id" }.count == 1)
        #expect(tableAfterFirst.filter { $0.name == "apns-expiration" }.count == 1)
        #expect(maximumTableSize <= 4096)
        #expect(maximumTableSize == tableAfterFirst.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 32 })
        let ourMean = Double(ourLater) / Double(count - 1)
        let theirMean = Double(theirLater) / Double(count - 1)
        // Every repeating header is one octet from request 2 on: an indexed field (§6.1).
        for name in [":method", ":scheme", ":authority", "apns-topic", "apns-push-type", "apns-priority"] {
            let position = headersShape.firstIndex { $0.name == name }!
            #expect(laterCosts[position] == 1, "\(name)")
        }
        #expect(ourFirst <= theirFirst)
        #expect(ourMean <= theirMean)
        let names = headersShape.map(\.name)
        print("""
            HPACK proof (10,000 requests, \(tokenHexDigits)-digit device tokens): table max \(maximumTableSize) octets, \(maximumEntries) entries \
            (nghttp2 default: max \(nghttp2MaximumTableSize)); \
            request 1: \(ourFirst) octets (nghttp2 \(theirFirst)); requests 2...n: mean \(ourMean), max \(ourLaterMaximum) \
            (nghttp2 mean \(theirMean))
            per header, request 1: \(zip(names, firstCosts).map { "\($0) \($1)" }.joined(separator: ", "))
            per header, request 2: \(zip(names, laterCosts).map { "\($0) \($1)" }.joined(separator: ", "))
            """)
    }

    @Test("Rotating the provider token never changes the server's table")
    func tokenRotation() throws {
        var generator = SeededGenerator(seed: 4)
        var policy = APNsHeaderEncoder()
        let peer = try NGHTTP2Inflater()
        var block: [UInt8] = []
        var decisions: [HPACKIndexing] = []
        var tableAfterFirst: [HeaderField]?
        for rotation in 0..<40 {
            let jwt = Self.jwt(200, using: &generator)
            for _ in 0..<5 {
                let headers = Self.request(deviceToken: Self.hex(64, using: &generator), apnsID: Self.uuid(using: &generator), jwt: jwt)
                block.removeAll(keepingCapacity: true)
                policy.encodeHeaderBlock(headers, into: &block, decisions: &decisions)
                let decoded = try peer.decode(block)
                #expect(decoded.map(\.field) == headers)
                // RFC 7541 §6.2.3: the token arrives as a literal never indexed.
                #expect(decoded.first { $0.field.name == "authorization" }?.neverIndexed == true)
                if tableAfterFirst == nil { tableAfterFirst = peer.tableEntries }
                #expect(peer.tableEntries == tableAfterFirst, "rotation \(rotation)")
            }
        }
        #expect(tableAfterFirst?.contains { $0.name == "authorization" } == false)
    }

    @Test("The policy is Sendable: one per connection, used from its own task")
    func sendable() async throws {
        let requests = (0..<4).map { index in
            Self.request(deviceToken: String(repeating: "ab", count: 32), apnsID: "00000000-0000-4000-8000-00000000000\(index)", jwt: nil)
        }
        let blocks = await withTaskGroup(of: [UInt8].self) { group in
            for _ in 0..<4 {
                group.addTask {
                    var policy = APNsHeaderEncoder()
                    var all: [UInt8] = []
                    var decisions: [HPACKIndexing] = []
                    for headers in requests {
                        var block: [UInt8] = []
                        policy.encodeHeaderBlock(headers, into: &block, decisions: &decisions)
                        all += block
                    }
                    return all
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        // Four connections, four identical histories.
        #expect(Set(blocks).count == 1)
    }
}
