/// The topics an APNs client certificate may push to, from Apple's extension
/// `1.2.840.113635.100.6.3.6`: a DER SEQUENCE in which each topic is a UTF8String followed
/// by a SEQUENCE naming its kind (`app`, `voip`, `complication`…).
///
/// Shared by the transport (which reads the client's own certificate) and the mock server
/// (which reads its clients' certificates), so both read topics the same way.
package enum APNsCertificateTopics {
    /// The extension's object identifier.
    package static let extensionOID = "1.2.840.113635.100.6.3.6"

    /// The UTF8String elements directly inside the outer SEQUENCE of the extension's DER
    /// value (the nested SEQUENCEs are skipped); what could be read before any malformation.
    package static func parse(_ der: [UInt8]) -> [String] {
        var reader = DERReader(der)
        guard let outer = reader.next(), outer.tag == 0x30 else { return [] }
        var inner = DERReader(outer.value)
        var topics: [String] = []
        while let element = inner.next() {
            if element.tag == 0x0C { topics.append(String(decoding: element.value, as: UTF8.self)) }
        }
        return topics
    }
}

/// A minimal DER TLV reader (ITU-T X.690 §8.1): single-byte tags, definite lengths of at
/// most four octets; it stops (returns `nil`) at the end or at malformed input.
package struct DERReader {
    private let bytes: [UInt8]
    private var offset = 0

    /// A reader over `bytes`.
    package init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The next element, or `nil` at the end or on malformed input.
    package mutating func next() -> (tag: UInt8, value: [UInt8])? {
        guard offset + 2 <= bytes.count else { return nil }
        let tag = bytes[offset]
        var length = Int(bytes[offset + 1])
        var cursor = offset + 2
        if length & 0x80 != 0 {
            let count = length & 0x7F
            guard count >= 1, count <= 4, cursor + count <= bytes.count else { return nil }
            length = 0
            for byte in bytes[cursor..<cursor + count] { length = length << 8 | Int(byte) }
            cursor += count
        }
        guard length >= 0, cursor + length <= bytes.count else { return nil }
        offset = cursor + length
        return (tag, Array(bytes[cursor..<cursor + length]))
    }
}
