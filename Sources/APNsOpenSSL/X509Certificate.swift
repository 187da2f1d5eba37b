import COpenSSL
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An OpenSSL `X509` certificate: the one type that owns an `X509 *`.
///
/// It follows the module's lifetime rule (see `OwnershipRules.swift`): it frees the handle
/// in `deinit` and lends it out only inside ``withUnsafeHandle(_:)``. The handle sits inside
/// a `Mutex` (OpenSSL caches derived data inside an `X509` lazily), which makes the class
/// `Sendable` without `@unchecked`: no two threads touch it at once.
package final class X509Certificate: Sendable {
    private let handle: Mutex<OpaquePointer>

    /// Takes ownership of `handle` (freed with `X509_free`): a certificate fresh from
    /// OpenSSL, or one the caller took a reference to for this object (`X509_up_ref`).
    package init(taking handle: OpaquePointer) {
        // The caller gives its reference up: no other owner can reach it through us.
        nonisolated(unsafe) let adopted = handle
        self.handle = Mutex(adopted)
    }

    deinit {
        handle.withLock { X509_free($0) }
    }

    /// Lends the `X509 *` to `body`; it must not escape (OpenSSL functions that keep it,
    /// such as `SSL_CTX_use_certificate`, take their own reference).
    package func withUnsafeHandle<R: Sendable, E: Error>(_ body: (OpaquePointer) throws(E) -> R) throws(E) -> R {
        try handle.withLock { (pointer: inout OpaquePointer) throws(E) -> R in try body(pointer) }
    }

    /// Every certificate in `pem`, in order, or `[]` when it holds none.
    package static func all(pem bytes: UnsafeRawBufferPointer) -> [X509Certificate] {
        let certificates = MemoryBIO.reading(bytes) { bio -> [X509Certificate]? in
            var certificates: [X509Certificate] = []
            while let x509 = PEM_read_bio_X509(bio, nil, nil, nil) {
                certificates.append(X509Certificate(taking: x509))
            }
            // The last read fails with "no start line"; that is the end, not an error.
            ERR_clear_error()
            return certificates
        }
        return certificates ?? []
    }

    /// Takes the certificates of `stack` (a `STACK_OF(X509) *`, such as `PKCS12_parse`'s
    /// chain), in order, and frees the stack: each certificate's reference moves into its
    /// wrapper, so the caller owns neither the stack nor the certificates afterwards.
    package static func adoptingStack(_ stack: OpaquePointer?) -> [X509Certificate] {
        var certificates: [X509Certificate] = []
        while let next = capns_sk_X509_shift(stack) {
            certificates.append(X509Certificate(taking: next))
        }
        capns_sk_X509_free_all(stack)
        return certificates
    }

    /// Every certificate in the PEM text `pem`, in order, or `[]` when it holds none.
    package static func all(pem: String) -> [X509Certificate] {
        var bytes = Array(pem.utf8)
        return bytes.withUnsafeMutableBytes { all(pem: UnsafeRawBufferPointer($0)) }
    }

    /// The certificate as PEM (`-----BEGIN CERTIFICATE-----`).
    package func pem() throws(LibCryptoError) -> String {
        try withUnsafeHandle { x509 throws(LibCryptoError) in
            try MemoryBIO.write("PEM_write_bio_X509") { PEM_write_bio_X509($0, x509) }
        }
    }

    /// The subject's common name (OID 2.5.4.3), if it has one.
    package var subjectCommonName: String? {
        withUnsafeHandle { x509 -> String? in
            guard let name = X509_get_subject_name(x509) else { return nil }
            let index = X509_NAME_get_index_by_NID(name, NID_commonName, -1)
            guard index >= 0, let entry = X509_NAME_get_entry(name, index),
                  let data = X509_NAME_ENTRY_get_data(entry)
            else { return nil }
            return Self.string(data)
        }
    }

    /// The subject's user ID (`UID`, OID 0.9.2342.19200300.100.1.1, RFC 4519 §2.39), if it
    /// has one: where Apple's older single-topic push certificates name their bundle id.
    package var subjectUserID: String? {
        withUnsafeHandle { x509 -> String? in
            guard let name = X509_get_subject_name(x509) else { return nil }
            let index = X509_NAME_get_index_by_NID(name, NID_userId, -1)
            guard index >= 0, let entry = X509_NAME_get_entry(name, index),
                  let data = X509_NAME_ENTRY_get_data(entry)
            else { return nil }
            return Self.string(data)
        }
    }

    /// The end of the validity period (RFC 5280 §4.1.2.5).
    package var notAfter: Date? {
        withUnsafeHandle { x509 in X509_get0_notAfter(x509).flatMap { Self.date($0) } }
    }

    /// The start of the validity period (RFC 5280 §4.1.2.5).
    package var notBefore: Date? {
        withUnsafeHandle { x509 in X509_get0_notBefore(x509).flatMap { Self.date($0) } }
    }

    /// The DNS names and IP addresses in subjectAltName (RFC 5280 §4.2.1.6): what
    /// hostname verification compares against (the subject's common name is not; RFC 9525
    /// §6.3).
    package var names: [String] {
        var result: [String] = []
        withUnsafeHandle { x509 in
            guard let raw = X509_get_ext_d2i(x509, NID_subject_alt_name, nil, nil) else { return }
            let altNames = OpaquePointer(raw)
            defer { capns_GENERAL_NAMES_free(altNames) }
            for index in 0..<capns_sk_GENERAL_NAME_num(altNames) {
                guard let name = capns_sk_GENERAL_NAME_value(altNames, index) else { continue }
                if let dns = capns_GENERAL_NAME_dns(name), let text = Self.string(dns) {
                    result.append(text)
                } else if let ip = capns_GENERAL_NAME_ip(name) {
                    result.append(Self.ipAddress(ip))
                }
            }
        }
        return result
    }

    /// The DER bytes of the extension with the dotted OID `oid`, if present.
    package func extensionValue(oid: String) -> [UInt8]? {
        withUnsafeHandle { x509 -> [UInt8]? in
            guard let object = OBJ_txt2obj(oid, 1) else {
                ERR_clear_error()
                return nil
            }
            defer { ASN1_OBJECT_free(object) }
            let index = X509_get_ext_by_OBJ(x509, object, -1)
            guard index >= 0, let ext = X509_get_ext(x509, index),
                  let data = X509_EXTENSION_get_data(ext),
                  let bytes = ASN1_STRING_get0_data(data)
            else { return nil }
            return Array(UnsafeBufferPointer(start: bytes, count: Int(ASN1_STRING_length(data))))
        }
    }

    // MARK: ASN.1 helpers

    /// An ASN.1 string as UTF-8.
    private static func string(_ asn1: UnsafePointer<ASN1_STRING>) -> String? {
        var out: UnsafeMutablePointer<UInt8>?
        let count = ASN1_STRING_to_UTF8(&out, asn1)
        guard count >= 0, let out else {
            ERR_clear_error()
            return nil
        }
        defer { CRYPTO_free(out, #fileID, #line) }
        return String(decoding: UnsafeBufferPointer(start: out, count: Int(count)), as: UTF8.self)
    }

    /// An iPAddress SAN (4 or 16 bytes) in text form.
    private static func ipAddress(_ octets: UnsafePointer<ASN1_STRING>) -> String {
        let count = Int(ASN1_STRING_length(octets))
        guard let bytes = ASN1_STRING_get0_data(octets) else { return "" }
        let raw = Array(UnsafeBufferPointer(start: bytes, count: count))
        let family = count == 16 ? AF_INET6 : AF_INET
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard count == 4 || count == 16, inet_ntop(family, raw, &text, socklen_t(text.count)) != nil else {
            return raw.map { String($0) }.joined(separator: ".")
        }
        return String(decoding: text.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// An `ASN1_TIME` (UTCTime or GeneralizedTime, always UTC in certificates) as a `Date`.
    package static func date(_ time: UnsafePointer<ASN1_TIME>) -> Date? {
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else {
            ERR_clear_error()
            return nil
        }
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }
}
