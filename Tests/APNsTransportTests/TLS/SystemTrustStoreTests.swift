import APNsOpenSSL
import Foundation
import Testing

/// The system trust store reads a hashed certificate directory lazily and the CA bundle
/// only when it must. The directories are hashed by `openssl rehash` (OpenSSL's own tool,
/// not this code), and the certificates come from ``TestPKI`` (the `openssl` command).
@Suite("The system trust store")
struct SystemTrustStoreTests {
    /// A fresh directory under the test PKI's, removed by the caller.
    private func directory(_ name: String, holding certificates: [String], pki: TestPKI) throws -> String {
        let path = pki.path("trust-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        for certificate in certificates {
            try FileManager.default.copyItem(atPath: pki.path(certificate), toPath: path + "/" + certificate)
        }
        if !certificates.isEmpty { _ = try run("openssl", ["rehash", path]) }
        return path
    }

    private func certificate(_ name: String, pki: TestPKI) throws -> X509Certificate {
        try #require(X509Certificate.all(pem: pki.text(name)).first)
    }

    @Test("hashed names: eight hex digits, a dot, a sequence number")
    func hashedNames() {
        let table: [(String, Bool)] = [
            ("002c0b4f.0", true), ("9d04f354.1", true), ("ABCDEF01.12", true),
            ("002c0b4f.r0", false),  // a revocation list
            ("002c0b4f", false), ("002c0b4.0", false), ("002c0b4g.0", false),
            ("ca-certificates.crt", false), ("ISRG_Root_X1.pem", false), (".", false), ("..", false),
        ]
        for (name, expected) in table {
            #expect(SystemTrustLocations.isHashedCertificateName(name) == expected, "\(name)")
        }
    }

    @Test("a hashed directory verifies a chain whose root it holds, and not another's")
    func hashedDirectory() throws {
        let pki = try TestPKI.get()
        let trusting = try directory("ca", holding: ["ca.pem"], pki: pki)
        let other = try directory("other", holding: ["otherca.pem"], pki: pki)
        defer {
            try? FileManager.default.removeItem(atPath: trusting)
            try? FileManager.default.removeItem(atPath: other)
        }
        #expect(SystemTrustLocations.holdsHashedCertificates(trusting))
        let server = try certificate("server.pem", pki: pki)
        let untrusted = try certificate("untrusted.pem", pki: pki)

        let store = try X509Store.loading(SystemTrustLocations(file: nil, fileIsExplicit: false, directories: [trusting])).get()
        #expect(store.verifies(server))
        #expect(!store.verifies(untrusted))

        let otherStore = try X509Store.loading(SystemTrustLocations(file: nil, fileIsExplicit: false, directories: [other])).get()
        #expect(!otherStore.verifies(server))
        #expect(otherStore.verifies(untrusted))
    }

    @Test("the bundle is read only when it is named, or no directory is hashed")
    func bundleWhenNeeded() throws {
        let pki = try TestPKI.get()
        let bundle = pki.path("ca.pem")
        let hashedOther = try directory("other", holding: ["otherca.pem"], pki: pki)
        let empty = try directory("empty", holding: [], pki: pki)
        defer {
            try? FileManager.default.removeItem(atPath: hashedOther)
            try? FileManager.default.removeItem(atPath: empty)
        }
        #expect(!SystemTrustLocations.holdsHashedCertificates(empty))
        #expect(!SystemTrustLocations.holdsHashedCertificates(pki.path("no-such-directory")))
        let server = try certificate("server.pem", pki: pki)

        // A hashed directory: the default bundle is not parsed (its root is not found).
        let lazy = try X509Store.loading(SystemTrustLocations(file: bundle, fileIsExplicit: false, directories: [hashedOther])).get()
        #expect(!lazy.verifies(server))
        // SSL_CERT_FILE named it: read.
        let explicit = try X509Store.loading(SystemTrustLocations(file: bundle, fileIsExplicit: true, directories: [hashedOther])).get()
        #expect(explicit.verifies(server))
        // No hashed directory (a bundle-only system): read.
        let bundleOnly = try X509Store.loading(SystemTrustLocations(file: bundle, fileIsExplicit: false, directories: [empty])).get()
        #expect(bundleOnly.verifies(server))
        // Nothing anywhere: an empty store, which verifies nothing.
        let nothing = try X509Store.loading(SystemTrustLocations(file: pki.path("missing.pem"), fileIsExplicit: false, directories: [empty])).get()
        #expect(!nothing.verifies(server))
    }

    @Test("locations: SSL_CERT_FILE and SSL_CERT_DIR over OpenSSL's defaults")
    func locations() throws {
        let defaults = SystemTrustLocations.current(environment: { _ in nil })
        // OpenSSL's compiled-in defaults, as its own command reports the directory.
        let reported = try run("openssl", ["version", "-d"])  // OPENSSLDIR: "/usr/lib/ssl"
        let openSSLDirectory = try #require(reported.split(separator: "\"").dropFirst().first.map(String.init))
        #expect(defaults.directories == [openSSLDirectory + "/certs"])
        #expect(defaults.file == openSSLDirectory + "/cert.pem")
        #expect(!defaults.fileIsExplicit)

        let named = SystemTrustLocations.current(environment: { name in
            ["SSL_CERT_FILE": "/srv/roots.pem", "SSL_CERT_DIR": "/srv/a:/srv/b"][name]
        })
        #expect(named == SystemTrustLocations(file: "/srv/roots.pem", fileIsExplicit: true, directories: ["/srv/a", "/srv/b"]))
        // Empty variables count as unset.
        let empty = SystemTrustLocations.current(environment: { _ in "" })
        #expect(empty == defaults)
    }

    @Test("SSL_CERT_FILE naming the default bundle under another name is not explicit")
    func defaultBundleByAnotherName() throws {
        let pki = try TestPKI.get()
        let folder = try directory("names", holding: [], pki: pki)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let bundle = folder + "/ca-certificates.crt"
        try FileManager.default.copyItem(atPath: pki.path("ca.pem"), toPath: bundle)
        let link = folder + "/cert.pem"  // as /usr/lib/ssl/cert.pem links to the bundle
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: bundle)
        let copy = folder + "/copy.pem"  // the same bytes, another file
        try FileManager.default.copyItem(atPath: bundle, toPath: copy)

        func locations(_ named: String) -> SystemTrustLocations {
            SystemTrustLocations.current(
                environment: { $0 == "SSL_CERT_FILE" ? named : nil },
                defaultFile: link,
                defaultDirectory: folder
            )
        }
        #expect(locations(bundle) == SystemTrustLocations(file: link, fileIsExplicit: false, directories: [folder]))
        #expect(locations(link) == SystemTrustLocations(file: link, fileIsExplicit: false, directories: [folder]))
        #expect(locations(copy) == SystemTrustLocations(file: copy, fileIsExplicit: true, directories: [folder]))
        #expect(locations(folder + "/missing.pem").fileIsExplicit)
    }
}
