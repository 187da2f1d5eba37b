import COpenSSL
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An OpenSSL `X509_STORE` of trust roots: the one type that owns an `X509_STORE *`.
///
/// The system trust store is made once per process and shared by every connection
/// through ``system``; a change to the system store is seen after a restart. It looks
/// certificates up in the system's hashed certificate directory when it has one, reading
/// a root from disk only when a handshake needs it, instead of parsing the whole CA
/// bundle up front (about 140 certificates, 20 to 30 ms of CPU in a release build: more
/// than the rest of a command-line tool's start); see ``SystemTrustLocations``.
///
/// It follows the module's lifetime rule (see `OwnershipRules.swift`). The handle sits in a
/// `Mutex`, which makes the class `Sendable` without `@unchecked`; the store is filled once,
/// before it is shared, and OpenSSL shares it between `SSL_CTX`s by reference count.
package final class X509Store: Sendable {
    private let handle: Mutex<OpaquePointer>

    /// Takes ownership of `handle` (freed with `X509_STORE_free`).
    private init(taking handle: OpaquePointer) {
        nonisolated(unsafe) let adopted = handle
        self.handle = Mutex(adopted)
    }

    deinit {
        handle.withLock { X509_STORE_free($0) }
    }

    /// The system trust store, from ``SystemTrustLocations/current(environment:)``.
    package static let system: Result<X509Store, LibCryptoError> = loading(.current())

    /// A store of the roots at `locations`: each hashed directory is searched when a
    /// handshake needs a root; the bundle file is read now only when it was named
    /// explicitly (`SSL_CERT_FILE`, another bundle than the default) or no directory holds
    /// hashed certificates (a system with a bundle only, such as Red Hat's), as
    /// `X509_STORE_set_default_paths` would.
    package static func loading(_ locations: SystemTrustLocations) -> Result<X509Store, LibCryptoError> {
        ERR_clear_error()
        guard let store = X509_STORE_new() else {
            return .failure(.current("X509_STORE_new"))
        }
        let owned = X509Store(taking: store)
        var hashedDirectory = false
        for directory in locations.directories where SystemTrustLocations.holdsHashedCertificates(directory) {
            guard X509_STORE_load_path(store, directory) == 1 else {
                return .failure(.current("X509_STORE_load_path(\(directory))"))
            }
            hashedDirectory = true
        }
        if locations.fileIsExplicit || !hashedDirectory, let file = locations.file, access(file, R_OK) == 0 {
            guard X509_STORE_load_file(store, file) == 1 else {
                return .failure(.current("X509_STORE_load_file(\(file))"))
            }
        }
        ERR_clear_error()
        return .success(owned)
    }

    /// Whether this store makes `certificate` (with `intermediates`) verify, at the current
    /// time, as a TLS handshake's chain check would (for tests and diagnostics).
    package func verifies(_ certificate: X509Certificate, intermediates: [X509Certificate] = []) -> Bool {
        handle.withLock { store -> Bool in
            guard let context = X509_STORE_CTX_new() else { return false }
            defer {
                X509_STORE_CTX_free(context)
                ERR_clear_error()
            }
            guard let chain = OPENSSL_sk_new_null() else { return false }
            defer { OPENSSL_sk_free(chain) }
            for intermediate in intermediates {
                intermediate.withUnsafeHandle { _ = OPENSSL_sk_push(chain, UnsafeRawPointer(UnsafeMutableRawPointer($0))) }
            }
            return certificate.withUnsafeHandle { leaf -> Bool in
                guard X509_STORE_CTX_init(context, store, leaf, chain) == 1 else { return false }
                return X509_verify_cert(context) == 1
            }
        }
    }

    /// Makes `context` verify peers against this store (the context takes its own reference).
    package func install(in context: SSLContext) {
        handle.withLock { store in
            context.withUnsafeHandle { context in
                X509_STORE_up_ref(store)
                SSL_CTX_set_cert_store(context, store)
            }
        }
    }
}

/// Where the system's trust roots are: OpenSSL's defaults (on Debian the directory
/// `/usr/lib/ssl/certs`, a link to `/etc/ssl/certs`, and the bundle `/usr/lib/ssl/cert.pem`),
/// or what `SSL_CERT_FILE` and `SSL_CERT_DIR` name, as OpenSSL reads them.
package struct SystemTrustLocations: Sendable, Equatable {
    /// The CA bundle (PEM), if any.
    package var file: String?
    /// Whether ``file`` was named by `SSL_CERT_FILE` (then it is always read).
    package var fileIsExplicit: Bool
    /// Directories of certificates named by subject hash (`SSL_CERT_DIR` may list several,
    /// separated by colons).
    package var directories: [String]

    /// Locations as given.
    package init(file: String?, fileIsExplicit: Bool, directories: [String]) {
        self.file = file
        self.fileIsExplicit = fileIsExplicit
        self.directories = directories
    }

    /// The locations for `environment` (the process's own by default): `SSL_CERT_FILE` and
    /// `SSL_CERT_DIR` when set and not empty, OpenSSL's compiled-in defaults
    /// (`defaultFile`, `defaultDirectory`) otherwise.
    ///
    /// An `SSL_CERT_FILE` that is the default bundle under another name (Debian's
    /// `/etc/ssl/certs/ca-certificates.crt`, which `/usr/lib/ssl/cert.pem` links to, as
    /// some images set it) adds nothing to the defaults, so it does not count as explicit.
    package static func current(
        environment: (String) -> String? = { name in getenv(name).map { String(cString: $0) } },
        defaultFile: String = String(cString: X509_get_default_cert_file()),
        defaultDirectory: String = String(cString: X509_get_default_cert_dir())
    ) -> SystemTrustLocations {
        let fileVariable = String(cString: X509_get_default_cert_file_env())
        let directoryVariable = String(cString: X509_get_default_cert_dir_env())
        let namedFile = environment(fileVariable).flatMap { $0.isEmpty ? nil : $0 }
        let explicitFile = namedFile.flatMap { named in sameFile(named, defaultFile) ? nil : named }
        let directoryList = environment(directoryVariable).flatMap { $0.isEmpty ? nil : $0 } ?? defaultDirectory
        return SystemTrustLocations(
            file: explicitFile ?? defaultFile,
            fileIsExplicit: explicitFile != nil,
            directories: directoryList.split(separator: ":").map(String.init)
        )
    }

    /// Whether `a` and `b` name one existing file (links resolved: same device and inode).
    static func sameFile(_ a: String, _ b: String) -> Bool {
        var first = stat(), second = stat()
        guard stat(a, &first) == 0, stat(b, &second) == 0 else { return false }
        return first.st_dev == second.st_dev && first.st_ino == second.st_ino
    }

    /// Whether `directory` holds at least one certificate named as OpenSSL looks it up:
    /// eight hexadecimal digits of the subject hash, a dot and a sequence number
    /// (`002c0b4f.0`); `c_rehash`, `openssl rehash` and Debian's `update-ca-certificates`
    /// make these names.
    package static func holdsHashedCertificates(_ directory: String) -> Bool {
        guard let stream = opendir(directory) else { return false }
        defer { closedir(stream) }
        while let entry = readdir(stream) {
            // The name is read in place, up to its NUL: a `dirent` from readdir(3) is only as
            // long as its name, so copying the whole 256-byte `d_name` field could read past
            // the end of the directory buffer.
            let name = withUnsafePointer(to: &entry.pointee.d_name) { field in
                field.withMemoryRebound(to: CChar.self, capacity: 1) { String(cString: $0) }
            }
            if isHashedCertificateName(name) { return true }
        }
        return false
    }

    /// Whether `name` is a hashed certificate's file name: eight hexadecimal digits, a
    /// dot, and a decimal sequence number (a revocation list's `.r0` is not one).
    package static func isHashedCertificateName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard bytes.count >= 10, bytes[8] == UInt8(ascii: "."), bytes.count <= 8 + 1 + 9 else { return false }
        let hex = bytes[0..<8].allSatisfy { byte in
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
                || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
        }
        let sequence = bytes[9...].allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
        return hex && sequence
    }
}
