/// The APNs header policy of one HTTP/2 connection: decides how every request header
/// is indexed so that per-request values never churn the server's small dynamic
/// table, and encodes the header block with ``HPACKEncoder``.
///
/// APNs keeps a small HPACK dynamic table (4096 octets). Apple asks providers to keep
/// values that change with every request out of it
/// ([Sending Notification Requests to APNs](https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns)).
/// The decisions, per header name:
///
/// | header | decision |
/// |---|---|
/// | `:method`, `:scheme` | indexed: `POST` and `https` are static entries 3 and 7 |
/// | `:authority`, `apns-topic`, `apns-push-type`, `apns-priority` | incremental indexing: they repeat on a connection, so after the first request each is one octet |
/// | `:path` (carries the device token) | without indexing |
/// | `apns-id`, `apns-expiration`, `apns-collapse-id` | incremental indexing the first time the name appears on the connection (the name enters the table with that first value), without indexing afterwards, the name sent as an index |
/// | `authorization` | never indexed (see below) |
/// | any other name (`apns-channel-id`, `apns-request-id`, …) | without indexing |
///
/// Any field whose entry would take more than 3/4 of the table is written without
/// indexing, as nghttp2 does (it would evict everything else).
///
/// The invariant: `:path` never enters the dynamic table; `apns-id`, `apns-expiration`
/// and `apns-collapse-id` enter it at most once per connection each, the first time
/// the name is sent (normally with the first request; `apns-collapse-id` whenever it
/// first appears), and never again, so after that no per-request value is inserted;
/// the table only holds the handful of repeating values and stays bounded by its
/// maximum size.
///
/// `authorization` is never indexed. nghttp2 (the transport) writes it as never
/// indexed whatever flags it gets, so indexing it here would make this model of the
/// server's table wrong; a literal never indexed also stops every intermediary from
/// indexing the bearer token (RFC 7541 §7.1.3). The cost is the token's Huffman octets
/// (~165 for a 200-character JWT) on every request. Rotating the token therefore never touches the table.
///
/// The nghttp2 transport maps each decision with ``HPACKIndexing/requiresNoIndexFlag``:
/// ``HPACKIndexing/incrementalIndexing`` to no flag (nghttp2 indexes it, since the
/// policy never asks to index a name or size nghttp2 refuses to index), the two other
/// forms to `NGHTTP2_NV_FLAG_NO_INDEX` (nghttp2's only flag; it writes a literal never
/// indexed, which leaves the peer's table exactly as without indexing does). The peer's
/// table then evolves exactly as this encoder's does; the tests prove it against
/// nghttp2's deflater and inflater.
///
/// ```swift
/// var policy = APNsHeaderEncoder()
/// var block: [UInt8] = []
/// var decisions: [HPACKIndexing] = []
/// policy.encodeHeaderBlock(headers, into: &block, decisions: &decisions)
/// ```
public struct APNsHeaderEncoder: Sendable {
    private var encoder: HPACKEncoder
    /// The per-request names that have already entered the table once.
    private var introducedNames: PerRequestNames = []
    /// Whether ``decisions(for:into:)`` keeps the model of the peer's table (see
    /// ``init(tableSize:usesHuffmanCoding:modelsTable:)``).
    private let modelsTable: Bool

    /// The number of header blocks encoded on this connection.
    public private(set) var headerBlockCount = 0

    /// Creates the policy for a new connection.
    ///
    /// - Parameters:
    ///   - tableSize: The dynamic table size the peer starts with (4096 on a new
    ///     HTTP/2 connection); later `SETTINGS_HEADER_TABLE_SIZE` values go to
    ///     ``setPeerHeaderTableSize(_:)``.
    ///   - usesHuffmanCoding: Whether strings are Huffman-coded when shorter.
    public init(tableSize: Int = HPACKEncoder.defaultTableSize, usesHuffmanCoding: Bool = true) {
        self.init(tableSize: tableSize, usesHuffmanCoding: usesHuffmanCoding, modelsTable: true)
    }

    /// Creates the policy for a new connection whose header blocks another encoder
    /// (nghttp2's) writes.
    ///
    /// The decisions never depend on what the table holds, only on each header's name,
    /// the table's maximum size and which per-request names were already sent; so with
    /// `modelsTable: false` ``decisions(for:into:)`` skips keeping the model of the peer's
    /// table (``tableEntries`` then stays empty) and costs a few comparisons per header.
    /// ``encodeHeaderBlock(_:into:decisions:)`` always keeps it: it needs it to encode.
    package init(tableSize: Int = HPACKEncoder.defaultTableSize, usesHuffmanCoding: Bool = true, modelsTable: Bool) {
        self.encoder = HPACKEncoder(tableSize: tableSize, usesHuffmanCoding: usesHuffmanCoding)
        self.modelsTable = modelsTable
    }

    /// Records a new `SETTINGS_HEADER_TABLE_SIZE` from the server; the next header
    /// block starts with the size update (RFC 7541 §4.2).
    public mutating func setPeerHeaderTableSize(_ size: Int) {
        encoder.setPeerHeaderTableSize(size)
    }

    /// The entries of the peer's dynamic table as this connection left it, newest
    /// first (HPACK index 62 first). Meant for tests and diagnostics; it allocates.
    public var tableEntries: [HeaderField] { encoder.tableEntries }

    /// The size of the peer's dynamic table in octets (RFC 7541 §4.1).
    public var tableSize: Int { encoder.tableSize }

    /// The maximum size of the peer's dynamic table, as last signalled.
    public var maximumTableSize: Int { encoder.maximumTableSize }

    /// Encodes the header block of one request and records how each header was indexed.
    ///
    /// - Parameters:
    ///   - headers: The request's headers in the order the request model builds them.
    ///   - buffer: Receives the header block (appended; clear it to reuse it).
    ///   - decisions: Receives one ``HPACKIndexing`` per header, in order (replacing
    ///     its contents): what an nghttp2 transport maps to its header flags.
    public mutating func encodeHeaderBlock(
        _ headers: [HeaderField],
        into buffer: inout [UInt8],
        decisions: inout [HPACKIndexing]
    ) {
        var noOffsets: [Int]? = nil
        encodeHeaderBlock(headers, into: &buffer, decisions: &decisions, fieldEnds: &noOffsets)
    }

    /// ``encodeHeaderBlock(_:into:decisions:)`` that also records where each field's
    /// representation ends in `buffer` (for measuring the octets each header costs).
    @inline(__always)
    mutating func encodeHeaderBlock(
        _ headers: [HeaderField],
        into buffer: inout [UInt8],
        decisions: inout [HPACKIndexing],
        fieldEnds: inout [Int]?
    ) {
        decisions.removeAll(keepingCapacity: true)
        encoder.beginHeaderBlock(into: &buffer)
        fieldEnds?.append(buffer.count)
        for field in headers {
            let indexing = decide(field)
            decisions.append(indexing)
            encoder.append(field, indexing: indexing, into: &buffer)
            fieldEnds?.append(buffer.count)
        }
        headerBlockCount += 1
    }

    /// Decides the indexing of each header of one request and updates the model of
    /// the peer's table, for a transport whose HPACK encoder is not ours (nghttp2).
    ///
    /// Equivalent to ``encodeHeaderBlock(_:into:decisions:)`` without handing out the
    /// bytes; every request on the connection must go through one of the two.
    public mutating func decisions(for headers: [HeaderField]) -> [HPACKIndexing] {
        var decisions: [HPACKIndexing] = []
        decisions.reserveCapacity(headers.count)
        self.decisions(for: headers, into: &decisions)
        return decisions
    }

    /// ``decisions(for:)`` into a caller's array (its contents replaced), so a transport
    /// can reuse one array for every request instead of allocating one per request.
    ///
    /// No header block is written: the model of the peer's table changes exactly as
    /// encoding would change it (a field the tables hold in full is an index and inserts
    /// nothing), which is all the decisions depend on.
    package mutating func decisions(for headers: [HeaderField], into decisions: inout [HPACKIndexing]) {
        decisions.removeAll(keepingCapacity: true)
        encoder.beginHeaderBlockWithoutEncoding()
        if modelsTable {
            for field in headers {
                let indexing = decide(field)
                decisions.append(indexing)
                encoder.recordWithoutEncoding(field, indexing: indexing)
            }
        } else {
            for field in headers { decisions.append(decide(field)) }
        }
        headerBlockCount += 1
    }

    /// ``decisions(for:into:)`` for a header list a transport wrote itself (see
    /// ``APNsRequest/writeHeaders(into:fields:)``): the decisions depend on the names and
    /// the values' sizes only, so no value needs to be a `String`. Only for a policy that
    /// keeps no model of the table (`modelsTable == false`, the nghttp2 transport's).
    package mutating func decisions(for fields: [WrittenHeader], into decisions: inout [HPACKIndexing]) {
        precondition(!modelsTable, "a policy that models the table needs the values")
        decisions.removeAll(keepingCapacity: true)
        encoder.beginHeaderBlockWithoutEncoding()
        for field in fields { decisions.append(decide(name: field.name, valueLength: field.valueLength)) }
        headerBlockCount += 1
    }

    /// The decision for one field, given what the table holds now.
    @inline(__always)
    private mutating func decide(_ field: HeaderField) -> HPACKIndexing {
        decide(name: field.name, valueLength: field.value.utf8.count)
    }

    /// The decision for a field named `name` whose value has `valueLength` octets.
    @inline(__always)
    private mutating func decide(name: String, valueLength: Int) -> HPACKIndexing {
        switch HeaderClass(name: name) {
        case .authorization:
            return .neverIndexed
        case .perRequestValue:
            return .withoutIndexing
        case .repeating:
            return fitsInTable(name: name, valueLength: valueLength) ? .incrementalIndexing : .withoutIndexing
        case .perRequestName(let perRequestName):
            // Decided once per connection: a name too large for the table the first
            // time is never indexed later with another request's value.
            guard !introducedNames.contains(perRequestName) else { return .withoutIndexing }
            introducedNames.insert(perRequestName)
            return fitsInTable(name: name, valueLength: valueLength) ? .incrementalIndexing : .withoutIndexing
        case .other:
            return .withoutIndexing
        }
    }

    /// Whether indexing the field keeps it within 3/4 of the table, nghttp2's own bound
    /// (`hd_deflate_decide_indexing`), so both sides make the same choice.
    @inline(__always)
    private func fitsInTable(name: String, valueLength: Int) -> Bool {
        // RFC 7541 §4.1: an entry's size is its name's and value's octets plus 32.
        name.utf8.count + valueLength + DynamicHeaderTable.entryOverhead <= encoder.maximumTableSize * 3 / 4
    }
}

/// The per-request header names whose name enters the table once.
private struct PerRequestNames: OptionSet, Sendable {
    let rawValue: UInt8
    init(rawValue: UInt8) { self.rawValue = rawValue }

    static let apnsID = PerRequestNames(rawValue: 1)
    static let apnsExpiration = PerRequestNames(rawValue: 2)
    static let apnsCollapseID = PerRequestNames(rawValue: 4)
}

/// What the policy knows about a header name. Matched on the length first, so each
/// name costs at most two comparisons with a literal.
private enum HeaderClass {
    case authorization
    /// `:path`: the device token, different on every request.
    case perRequestValue
    /// Values that repeat on a connection.
    case repeating
    /// `apns-id`, `apns-expiration`, `apns-collapse-id`.
    case perRequestName(PerRequestNames)
    case other

    @inline(__always)
    init(name: String) {
        switch name.utf8.count {
        case 5 where name == ":path":
            self = .perRequestValue
        case 7:
            if name == "apns-id" {
                self = .perRequestName(.apnsID)
            } else {
                self = name == ":method" || name == ":scheme" ? .repeating : .other
            }
        case 10:
            self = name == ":authority" || name == "apns-topic" ? .repeating : .other
        case 13:
            if name == "authorization" {
                self = .authorization
            } else {
                self = name == "apns-priority" ? .repeating : .other
            }
        case 14 where name == "apns-push-type":
            self = .repeating
        case 15 where name == "apns-expiration":
            self = .perRequestName(.apnsExpiration)
        case 16 where name == "apns-collapse-id":
            self = .perRequestName(.apnsCollapseID)
        default:
            self = .other
        }
    }
}
