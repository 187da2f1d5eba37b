/// An HPACK encoder: turns header fields into a header block and keeps the dynamic
/// table the peer's decoder will hold.
///
/// Implements [RFC 7541](https://www.rfc-editor.org/rfc/rfc7541) completely: every
/// representation of §6 (indexed, literal with incremental indexing, without
/// indexing and never indexed, each with an indexed or a literal name), integers
/// (§5.1), Huffman-coded strings unless that is longer (§5.2), the static table (Appendix A),
/// the dynamic table with eviction (§4) and dynamic table size updates (§6.3) when
/// the peer's `SETTINGS_HEADER_TABLE_SIZE` changes.
///
/// The caller chooses the literal form of each field (``HPACKIndexing``); the encoder
/// chooses by itself between a full index, an indexed name and a literal name, and
/// prefers static indices. Encoding appends to a caller-owned buffer, works on the
/// UTF-8 bytes of the strings and, once the tables are warm, allocates nothing when
/// the buffer has capacity.
///
/// One encoder belongs to one HTTP/2 connection (the dynamic table is connection
/// state); it is a value type, so a connection owns it like any other field.
///
/// ```swift
/// var encoder = HPACKEncoder()
/// var block: [UInt8] = []
/// encoder.beginHeaderBlock(into: &block)
/// encoder.append(HeaderField(name: ":method", value: "POST"), indexing: .incrementalIndexing, into: &block)
/// ```
public struct HPACKEncoder: Sendable {
    /// The table size both sides start with when nothing else was agreed:
    /// the HTTP/2 default of `SETTINGS_HEADER_TABLE_SIZE` (RFC 9113 §6.5.2).
    public static let defaultTableSize = 4096

    private var table: DynamicHeaderTable
    /// The largest table this encoder is willing to use, whatever the peer allows.
    private let tableSizeLimit: Int
    /// A size change not yet signalled: the smallest size since the last block and
    /// the size to end with (§4.2).
    private var pendingSizeUpdate: (minimum: Int, final: Int)?

    /// Whether string literals are Huffman-coded unless that is longer (§5.2).
    /// `false` writes every string raw; meant for tests against raw vectors.
    public var usesHuffmanCoding: Bool

    /// Creates an encoder.
    ///
    /// - Parameters:
    ///   - tableSize: The dynamic table size both sides already agree on, which needs
    ///     no size update: 4096 on a new HTTP/2 connection.
    ///   - tableSizeLimit: The largest dynamic table this encoder will use even if the
    ///     peer allows more (memory is ours to spend). Defaults to `tableSize`.
    ///   - usesHuffmanCoding: Whether strings are Huffman-coded when shorter.
    public init(tableSize: Int = HPACKEncoder.defaultTableSize, tableSizeLimit: Int? = nil, usesHuffmanCoding: Bool = true) {
        let limit = max(0, tableSizeLimit ?? tableSize)
        self.tableSizeLimit = limit
        self.table = DynamicHeaderTable(maximumSize: max(0, min(tableSize, limit)))
        self.usesHuffmanCoding = usesHuffmanCoding
        if tableSize > limit {
            // The peer's decoder starts at `tableSize`; tell it we use less.
            pendingSizeUpdate = (table.maximumSize, table.maximumSize)
        }
    }

    // MARK: Table state

    /// The current maximum size of the dynamic table, as last signalled to the peer
    /// (§4.2); a pending change applies at the next ``beginHeaderBlock(into:)``.
    public var maximumTableSize: Int { table.maximumSize }

    /// The size of the dynamic table in octets: the sum of name + value + 32 over its
    /// entries (§4.1).
    public var tableSize: Int { table.size }

    /// The entries of the dynamic table, newest first: element 0 is HPACK index 62.
    /// Meant for tests and diagnostics; it allocates.
    public var tableEntries: [HeaderField] { table.fields }

    /// Whether the dynamic table holds an entry named `name`.
    public func tableContainsName(_ name: String) -> Bool {
        withUTF8(of: name) { table.find(name: name, nameHash: hpackNameHash($0), value: nil).name != nil }
    }

    /// Whether `field` could be sent as an index into the static or dynamic table.
    public func tablesContain(_ field: HeaderField) -> Bool {
        withUTF8(of: field.name) { name in
            withUTF8(of: field.value) { value in
                let nameHash = hpackNameHash(name)
                return StaticHeaderTable.find(name: field.name, nameHash: nameHash, value: field.value)?.field != nil
                    || table.find(name: field.name, nameHash: nameHash, value: value).field != nil
            }
        }
    }

    /// Records a new `SETTINGS_HEADER_TABLE_SIZE` from the peer (RFC 9113 §6.5.2).
    ///
    /// The encoder uses `min(size, tableSizeLimit)`; the change is signalled by a
    /// dynamic table size update at the start of the next header block (§4.2, §6.3).
    /// If the size shrank and grew again before that block, both the smallest value
    /// and the final value are signalled, so the peer evicts what it must.
    public mutating func setPeerHeaderTableSize(_ size: Int) {
        let effective = max(0, min(size, tableSizeLimit))
        if pendingSizeUpdate == nil, effective == table.maximumSize { return }
        let minimum = min(pendingSizeUpdate?.minimum ?? table.maximumSize, effective)
        pendingSizeUpdate = (minimum, effective)
    }

    // MARK: Encoding

    /// Starts a header block: writes the pending dynamic table size updates, if any
    /// (§4.2, §6.3). Call it once before the first field of every block.
    public mutating func beginHeaderBlock(into buffer: inout [UInt8]) {
        guard let update = pendingSizeUpdate else { return }
        pendingSizeUpdate = nil
        if update.minimum < update.final {
            IntegerCoding.encode(update.minimum, prefixBits: 5, flags: 0x20, into: &buffer)
            table.setMaximumSize(update.minimum)
        }
        IntegerCoding.encode(update.final, prefixBits: 5, flags: 0x20, into: &buffer)
        table.setMaximumSize(update.final)
    }

    /// Applies the pending dynamic table size updates to the table, as
    /// ``beginHeaderBlock(into:)`` does, without writing them: for a caller that keeps
    /// this encoder as a model of a table another encoder (nghttp2's) fills.
    package mutating func beginHeaderBlockWithoutEncoding() {
        guard let update = pendingSizeUpdate else { return }
        pendingSizeUpdate = nil
        if update.minimum < update.final { table.setMaximumSize(update.minimum) }
        table.setMaximumSize(update.final)
    }

    /// Changes the dynamic table exactly as ``append(_:indexing:into:)`` would for
    /// `field`, without encoding it: a field the tables hold in full is sent as an index
    /// and changes nothing; otherwise ``HPACKIndexing/incrementalIndexing`` inserts it.
    package mutating func recordWithoutEncoding(_ field: HeaderField, indexing: HPACKIndexing) {
        guard indexing == .incrementalIndexing else { return }
        withUTF8(of: field.name) { name in
            withUTF8(of: field.value) { value in
                let nameHash = hpackNameHash(name)
                if StaticHeaderTable.find(name: field.name, nameHash: nameHash, value: field.value)?.field != nil { return }
                if table.find(name: field.name, nameHash: nameHash, value: value).field != nil { return }
                table.insert(field, size: name.count + value.count + DynamicHeaderTable.entryOverhead, nameHash: nameHash)
            }
        }
    }

    /// Encodes one header field into `buffer`.
    ///
    /// A field the tables hold in full is sent as an index (§6.1) unless it is
    /// ``HPACKIndexing/neverIndexed``; otherwise as the literal form `indexing`, with
    /// the name as an index when a table holds it (§6.2). With
    /// ``HPACKIndexing/incrementalIndexing`` the field is added to the dynamic table.
    ///
    /// - Returns: The representation written, so callers can record or check it.
    @discardableResult
    public mutating func append(_ field: HeaderField, indexing: HPACKIndexing, into buffer: inout [UInt8]) -> HPACKRepresentation {
        withUTF8(of: field.name) { name in
            withUTF8(of: field.value) { value in
                append(field, name: name, value: value, indexing: indexing, into: &buffer)
            }
        }
    }

    @inline(__always)
    private mutating func append(
        _ field: HeaderField,
        name: UnsafeBufferPointer<UInt8>,
        value: UnsafeBufferPointer<UInt8>,
        indexing: HPACKIndexing,
        into buffer: inout [UInt8]
    ) -> HPACKRepresentation {
        let nameHash = hpackNameHash(name)
        let mayIndex = indexing != .neverIndexed
        // Static table first: its indices are the smallest (§2.3.3).
        let staticMatch = StaticHeaderTable.find(name: field.name, nameHash: nameHash, value: mayIndex ? field.value : nil)
        if let index = staticMatch?.field {
            IntegerCoding.encode(index, prefixBits: 7, flags: 0x80, into: &buffer)
            return .indexed(index)
        }
        let dynamicMatch = table.find(name: field.name, nameHash: nameHash, value: mayIndex ? value : nil)
        if let dynamicIndex = dynamicMatch.field {
            let index = StaticHeaderTable.count + dynamicIndex
            IntegerCoding.encode(index, prefixBits: 7, flags: 0x80, into: &buffer)
            return .indexed(index)
        }
        let nameIndex = staticMatch?.name ?? dynamicMatch.name.map { StaticHeaderTable.count + $0 } ?? 0
        let (flags, prefixBits): (UInt8, Int) = switch indexing {
        case .incrementalIndexing: (0x40, 6) // §6.2.1: '01' + 6-bit name index
        case .withoutIndexing: (0x00, 4)     // §6.2.2: '0000' + 4-bit name index
        case .neverIndexed: (0x10, 4)        // §6.2.3: '0001' + 4-bit name index
        }
        // Size everything first, grow the buffer once, then write in place.
        let nameLiteral = nameIndex == 0 ? stringLiteral(name) : nil
        let valueLiteral = stringLiteral(value)
        var length = IntegerCoding.encodedLength(of: nameIndex, prefixBits: prefixBits) + valueLiteral.size
        if let nameLiteral { length += nameLiteral.size }
        let start = buffer.count
        HuffmanCoding.grow(&buffer, by: length)
        buffer.withUnsafeMutableBufferPointer { output in
            var out = output.baseAddress! + start
            IntegerCoding.write(nameIndex, prefixBits: prefixBits, flags: flags, to: &out)
            if let nameLiteral { write(name, as: nameLiteral, to: &out) }
            write(value, as: valueLiteral, to: &out)
            assert(out == output.baseAddress! + start + length)
        }
        if indexing == .incrementalIndexing {
            let size = name.count + value.count + DynamicHeaderTable.entryOverhead
            table.insert(field, size: size, nameHash: nameHash)
        }
        return .literal(indexing, nameIndex: nameIndex == 0 ? nil : nameIndex)
    }

    /// Encodes a whole header block: the pending size updates, then every field with
    /// the same literal form.
    public mutating func encodeHeaderBlock(_ fields: [HeaderField], indexing: HPACKIndexing, into buffer: inout [UInt8]) {
        beginHeaderBlock(into: &buffer)
        for field in fields {
            append(field, indexing: indexing, into: &buffer)
        }
    }

    /// How a string literal will be written (§5.2): Huffman-coded unless that is
    /// longer (at equal length Huffman is used, as in the RFC's examples, §C.6.2).
    private struct StringLiteral {
        var huffman: Bool
        /// The length of the string data.
        var dataLength: Int
        /// The octets of the whole literal: length prefix and data.
        var size: Int
    }

    @inline(__always)
    private func stringLiteral(_ bytes: UnsafeBufferPointer<UInt8>) -> StringLiteral {
        var huffman = false
        var dataLength = bytes.count
        if usesHuffmanCoding {
            let huffmanLength = HuffmanCoding.encodedLength(of: bytes)
            if huffmanLength <= bytes.count {
                huffman = true
                dataLength = huffmanLength
            }
        }
        return StringLiteral(
            huffman: huffman,
            dataLength: dataLength,
            size: IntegerCoding.encodedLength(of: dataLength, prefixBits: 7) + dataLength
        )
    }

    /// Writes a string literal: 'H' + 7-bit length, then the (Huffman-coded) octets.
    @inline(__always)
    private func write(_ bytes: UnsafeBufferPointer<UInt8>, as literal: StringLiteral, to output: inout UnsafeMutablePointer<UInt8>) {
        IntegerCoding.write(literal.dataLength, prefixBits: 7, flags: literal.huffman ? 0x80 : 0x00, to: &output)
        if literal.huffman {
            HuffmanCoding.write(bytes, to: &output)
        } else if let base = bytes.baseAddress {
            output.update(from: base, count: bytes.count)
            output += bytes.count
        }
    }
}
