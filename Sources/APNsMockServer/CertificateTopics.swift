import COpenSSL

/// The APNs topics a client certificate may push to, as APNs reads them.
///
/// Apple's push certificates list their topics in the extension
/// `1.2.840.113635.100.6.3.6`: a DER SEQUENCE in which each topic is a UTF8String
/// followed by a SEQUENCE naming its kind (`app`, `voip`, `complication`…). A
/// certificate without it (the older single-topic kind) pushes to the bundle id in its
/// subject's `UID` attribute.
enum CertificateTopics {
    /// The topics extension's object identifier.
    static let extensionOID = "1.2.840.113635.100.6.3.6"

    /// The topics of `certificate` (an `X509 *`): those of the extension if it has one,
    /// else the subject's `UID`; empty when it has neither.
    static func topics(of certificate: OpaquePointer) -> [String] {
        if let object = OBJ_txt2obj(extensionOID, 1) {
            defer { ASN1_OBJECT_free(object) }
            let index = X509_get_ext_by_OBJ(certificate, object, -1)
            if index >= 0, let ext = X509_get_ext(certificate, index), let data = X509_EXTENSION_get_data(ext),
               let bytes = ASN1_STRING_get0_data(data) {
                let der = Array(UnsafeBufferPointer(start: bytes, count: Int(ASN1_STRING_length(data))))
                let topics = topics(inExtensionValue: der)
                if !topics.isEmpty { return topics }
            }
        }
        guard let subject = X509_get_subject_name(certificate) else { return [] }
        let index = X509_NAME_get_index_by_NID(subject, NID_userId, -1)
        guard index >= 0, let entry = X509_NAME_get_entry(subject, index),
              let value = X509_NAME_ENTRY_get_data(entry), let bytes = ASN1_STRING_get0_data(value)
        else { return [] }
        return [String(decoding: UnsafeBufferPointer(start: bytes, count: Int(ASN1_STRING_length(value))), as: UTF8.self)]
    }

    /// The UTF8String elements of the DER SEQUENCE `der` (the nested SEQUENCEs are skipped).
    /// Returns what it could read before any malformation.
    static func topics(inExtensionValue der: [UInt8]) -> [String] {
        guard let (tag, body, _) = element(der, at: 0), tag == 0x30 else { return [] }
        var topics: [String] = []
        var offset = body.lowerBound
        while offset < body.upperBound, let (tag, content, next) = element(der, at: offset), next <= body.upperBound {
            if tag == 0x0C { topics.append(String(decoding: der[content], as: UTF8.self)) }
            offset = next
        }
        return topics
    }

    /// The DER element at `offset`: its tag, the range of its contents, and where the next
    /// element starts. Definite lengths only (DER), up to four length octets.
    private static func element(_ der: [UInt8], at offset: Int) -> (UInt8, Range<Int>, Int)? {
        guard offset + 2 <= der.count else { return nil }
        let tag = der[offset]
        var length = Int(der[offset + 1])
        var start = offset + 2
        if length & 0x80 != 0 {
            let octets = length & 0x7F
            guard octets >= 1, octets <= 4, start + octets <= der.count else { return nil }
            length = der[start..<start + octets].reduce(0) { $0 << 8 | Int($1) }
            start += octets
        }
        guard start + length <= der.count else { return nil }
        return (tag, start..<start + length, start + length)
    }
}
