import APNsCore
import COpenSSL

/// The APNs topics a client certificate may push to, as APNs reads them.
///
/// Apple's push certificates list their topics in the extension
/// `1.2.840.113635.100.6.3.6`: a DER SEQUENCE in which each topic is a UTF8String
/// followed by a SEQUENCE naming its kind (`app`, `voip`, `complication`…). A
/// certificate without it (the older single-topic kind) pushes to the bundle id in its
/// subject's `UID` attribute.
enum CertificateTopics {
    /// The topics of `certificate` (an `X509 *`): those of the extension if it has one,
    /// else the subject's `UID`; empty when it has neither.
    static func topics(of certificate: OpaquePointer) -> [String] {
        if let object = OBJ_txt2obj(APNsCertificateTopics.extensionOID, 1) {
            defer { ASN1_OBJECT_free(object) }
            let index = X509_get_ext_by_OBJ(certificate, object, -1)
            if index >= 0, let ext = X509_get_ext(certificate, index), let data = X509_EXTENSION_get_data(ext),
               let bytes = ASN1_STRING_get0_data(data) {
                let der = Array(UnsafeBufferPointer(start: bytes, count: Int(ASN1_STRING_length(data))))
                let topics = APNsCertificateTopics.parse(der)
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
}
