import APNsCore
import APNsOpenSSL

/// The APNs topics a client certificate may push to, as APNs reads them.
///
/// Apple's push certificates list their topics in the extension
/// `1.2.840.113635.100.6.3.6`: a DER SEQUENCE in which each topic is a UTF8String
/// followed by a SEQUENCE naming its kind (`app`, `voip`, `complication`…). A
/// certificate without it (the older single-topic kind) pushes to the bundle id in its
/// subject's `UID` attribute.
enum CertificateTopics {
    /// The topics of `certificate`: those of the extension if it has one, else the
    /// subject's `UID`; empty when it has neither.
    static func topics(of certificate: X509Certificate) -> [String] {
        if let der = certificate.extensionValue(oid: APNsCertificateTopics.extensionOID) {
            let topics = APNsCertificateTopics.parse(der)
            if !topics.isEmpty { return topics }
        }
        return certificate.subjectUserID.map { [$0] } ?? []
    }
}
