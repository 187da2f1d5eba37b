import APNsMockServer
import Foundation
import Testing

/// Keys and tokens for the tests, made by OpenSSL's command-line tool (an implementation
/// independent of ours), so the tool reads a `.p8` exactly as Apple issues it: an
/// unencrypted PKCS#8 P-256 private key in PEM.
enum Fixtures {
    static let goodToken = "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f1"
    static let otherToken = "7b5e0f6c8a3d4e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f"
    static let unregisteredToken = "11fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f1"
    static let keyID = "ABC123DEFG"
    static let teamID = "DEF123GHIJ"
    static let topic = "com.example.app"

    /// A mock server that requires a client certificate (and allows `maxConcurrentStreams`
    /// streams per connection when given), and a folder with one it trusts
    /// (``makeClientCertificate(in:)``): `body` gets the folder, the flags that point
    /// `apns` at the server (`--host`, `--port`, `--ca-file`) and the server.
    static func withCertificateServer(
        maxConcurrentStreams: Int? = nil, _ body: (URL, [String], MockAPNsServer) async throws -> Void
    ) async throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await makeClientCertificate(in: directory)
        let clientCA = try String(contentsOf: directory.appendingPathComponent("ca.pem"), encoding: .utf8)
        var configuration = MockAPNsServer.Configuration(authentication: .certificate(trustedCAPEM: clientCA))
        if let maxConcurrentStreams { configuration.maxConcurrentStreams = maxConcurrentStreams }
        try await withMockAPNsServer(configuration: configuration) { server in
            let serverCA = directory.appendingPathComponent("server-ca.pem").path
            try server.writeCertificateAuthority(to: serverCA)
            try await body(directory, ["--host", "127.0.0.1", "--port", String(server.port), "--ca-file", serverCA], server)
        }
    }

    struct KeyPair {
        var privateKeyPath: String
        var publicKeyPEM: String
        var privateKeyPEM: String
    }

    /// A new P-256 key in a `.p8` file with `mode`, and its public half.
    static func makeKey(in directory: URL, mode: Int = 0o600) async throws -> KeyPair {
        let keyPath = directory.appendingPathComponent("AuthKey_\(keyID).p8").path
        let publicPath = directory.appendingPathComponent("public.pem").path
        let generated = try await CLI.tool("/usr/bin/openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", keyPath])
        #expect(generated.status == 0, "\(generated)")
        let exported = try await CLI.tool("/usr/bin/openssl", ["pkey", "-in", keyPath, "-pubout", "-out", publicPath])
        #expect(exported.status == 0, "\(exported)")
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: keyPath)
        return KeyPair(
            privateKeyPath: keyPath,
            publicKeyPEM: try String(contentsOfFile: publicPath, encoding: .utf8),
            privateKeyPEM: try String(contentsOfFile: keyPath, encoding: .utf8)
        )
    }
}

extension Fixtures {
    /// A client certificate for `com.example.app` (in Apple's topics extension and in the
    /// subject's UID), issued by a CA made for the test, all by the
    /// `openssl` tool: `ca.pem`, `client.pem`, `client.key`, and `client.p12` (password
    /// ``p12Password``).
    static func makeClientCertificate(in directory: URL) async throws {
        let script = """
            set -e
            cd "$1"
            openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem \\
              -days 2 -subj "/CN=apns CLI test CA" 2>/dev/null
            openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout client.key -out client.csr \\
              -subj "/UID=com.example.app/CN=Apple Development IOS Push Services: com.example.app" -config openssl.cnf 2>/dev/null
            openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \\
              -extfile openssl.cnf -extensions client -out client.pem 2>/dev/null
            openssl pkcs12 -export -inkey client.key -in client.pem -out client.p12 -passout pass:$2
            chmod 600 client.key client.p12
            """
        // Apple's topics extension: SEQUENCE { UTF8String topic, SEQUENCE { UTF8String kind } }.
        let config = """
            [req]
            distinguished_name = dn
            [dn]
            [client]
            basicConstraints = CA:FALSE
            extendedKeyUsage = clientAuth
            1.2.840.113635.100.6.3.6 = ASN1:SEQUENCE:topics
            [topics]
            topic = UTF8String:com.example.app
            kinds = SEQUENCE:kinds
            [kinds]
            kind = UTF8String:app
            """
        try config.write(to: directory.appendingPathComponent("openssl.cnf"), atomically: true, encoding: .utf8)
        let result = try await CLI.tool("/bin/sh", ["-c", script, "sh", directory.path, p12Password])
        #expect(result.status == 0, "openssl could not make the client certificate: \(result)")
    }

    static let p12Password = "s3cret-p12"

    /// A server certificate for `localhost` and `127.0.0.1`, issued by a CA made for the
    /// test, by the `openssl` tool: `server-ca.pem`, `server.pem`, `server.key`.
    static func makeServerCertificate(in directory: URL) async throws {
        let script = """
            set -e
            cd "$1"
            openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server-ca.key -out server-ca.pem \\
              -days 2 -subj "/CN=apns CLI test server CA" 2>/dev/null
            openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key -out server.csr \\
              -subj "/CN=localhost" 2>/dev/null
            printf 'basicConstraints=CA:FALSE\\nsubjectAltName=DNS:localhost,IP:127.0.0.1\\nextendedKeyUsage=serverAuth\\n' > server.ext
            openssl x509 -req -in server.csr -CA server-ca.pem -CAkey server-ca.key -CAcreateserial -days 2 \\
              -extfile server.ext -out server.pem 2>/dev/null
            chmod 600 server.key
            """
        let result = try await CLI.tool("/bin/sh", ["-c", script, "sh", directory.path])
        #expect(result.status == 0, "openssl could not make the server certificate: \(result)")
    }
}
