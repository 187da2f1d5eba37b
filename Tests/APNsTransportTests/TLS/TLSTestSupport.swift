import Foundation
import Logging
import TestTools
import Testing
@testable import APNsTransport
#if canImport(Glibc)
import Glibc
#endif

/// Errors of the test harness itself (a tool failed), never of the code under test.
struct HarnessError: Error, CustomStringConvertible {
    let description: String
}

/// Runs a command-line tool to completion; throws when it fails.
@discardableResult
func run(_ tool: String, _ arguments: [String], in directory: URL? = nil) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: tool.hasPrefix("/") ? tool : "/usr/bin/\(tool)")
    process.arguments = arguments
    if let directory { process.currentDirectoryURL = directory }
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    let status = exitStatus(of: process)
    let text = String(decoding: data, as: UTF8.self)
    guard status == 0 else {
        throw HarnessError(description: "\(tool) \(arguments.joined(separator: " ")) failed: \(text)")
    }
    return text
}

/// Certificates and keys made once per test run with the `openssl` command-line tool
/// (an implementation independent of the code under test) in a temporary directory,
/// removed when the test process exits.
struct TestPKI: Sendable {
    let directory: URL

    /// Where ``shared`` is made; a static, so the exit handler can read it without capturing.
    private static let sharedDirectory = FileManager.default.temporaryDirectory
        .appendingPathComponent("apns-tls-\(UUID().uuidString)")

    static let shared: Result<TestPKI, HarnessError> = {
        // Registered before anything is written, so a half-made PKI goes too.
        atexit { try? FileManager.default.removeItem(at: TestPKI.sharedDirectory) }
        do { return .success(try TestPKI(directory: sharedDirectory)) } catch {
            return .failure(HarnessError(description: "\(error)"))
        }
    }()

    static func get() throws -> TestPKI { try shared.get() }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
    func text(_ name: String) throws -> String { try String(contentsOfFile: path(name), encoding: .utf8) }

    /// The password of `client.p12`, `client-legacy.p12` and `client.enc.key`.
    static let password = "p12 secret"

    private init(directory: URL) throws {
        self.directory = directory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try generate()
    }

    private func openssl(_ arguments: [String]) throws {
        try run("openssl", arguments, in: directory)
    }

    private func write(_ name: String, _ text: String) throws {
        try text.write(toFile: path(name), atomically: true, encoding: .utf8)
    }

    private func generate() throws {
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        // Two CAs: the one tests trust, and one they do not.
        for ca in ["ca", "otherca"] {
            try openssl(["req", "-x509"] + ec + ["-keyout", "\(ca).key", "-out", "\(ca).pem", "-subj", "/CN=Test \(ca)", "-days", "3",
                         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        }
        try write("server.ext", "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\nextendedKeyUsage=serverAuth\n")
        try write("example.ext", "subjectAltName=DNS:example.com\nextendedKeyUsage=serverAuth\n")
        // No subjectAltName at all: the name is only in the subject's common name.
        try write("nosan.ext", "extendedKeyUsage=serverAuth\n")
        try write("client.ext", """
            extendedKeyUsage=clientAuth
            1.2.840.113635.100.6.3.6=ASN1:SEQUENCE:apns_topics

            [apns_topics]
            topic1=UTF8:com.example.app
            kinds1=SEQUENCE:kinds_app
            topic2=UTF8:com.example.app.voip
            kinds2=SEQUENCE:kinds_voip

            [kinds_app]
            kind=UTF8:app

            [kinds_voip]
            kind=UTF8:voip

            """)
        //  name, CN, extension file, issuing CA, days (-1: expired yesterday)
        let leaves: [(String, String, String, String, String)] = [
            ("server", "localhost", "server.ext", "ca", "2"),
            ("example", "example.com", "example.ext", "ca", "2"),
            ("expired", "localhost", "server.ext", "ca", "-1"),
            ("nosan", "localhost", "nosan.ext", "ca", "2"),
            ("untrusted", "localhost", "server.ext", "otherca", "2"),
            ("client", "Apple Push Services: com.example.app", "client.ext", "ca", "2"),
            ("expiredclient", "Expired Push Services", "client.ext", "ca", "-1"),
        ]
        for (name, commonName, ext, ca, days) in leaves {
            try openssl(["req", "-new"] + ec + ["-keyout", "\(name).key", "-out", "\(name).csr", "-subj", "/CN=\(commonName)"])
            try openssl(["x509", "-req", "-in", "\(name).csr", "-CA", "\(ca).pem", "-CAkey", "\(ca).key", "-CAcreateserial",
                         "-days", days, "-extfile", ext, "-out", "\(name).pem"])
        }
        // An intermediate CA under "ca", and a client certificate it issued: the server
        // trusts only "ca", so the client must send the intermediate.
        try write("intermediate.ext", "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n")
        try openssl(["req", "-new"] + ec + ["-keyout", "intermediate.key", "-out", "intermediate.csr", "-subj", "/CN=Test intermediate"])
        try openssl(["x509", "-req", "-in", "intermediate.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                     "-days", "2", "-extfile", "intermediate.ext", "-out", "intermediate.pem"])
        try openssl(["req", "-new"] + ec + ["-keyout", "chainclient.key", "-out", "chainclient.csr", "-subj", "/CN=Chained Push Services"])
        try openssl(["x509", "-req", "-in", "chainclient.csr", "-CA", "intermediate.pem", "-CAkey", "intermediate.key", "-CAcreateserial",
                     "-days", "2", "-extfile", "client.ext", "-out", "chainclient.pem"])
        try write("chainclient-with-intermediate.pem", try text("chainclient.pem") + text("intermediate.pem"))
        // A server certificate the intermediate issued, for a client that trusts the
        // intermediate alone.
        try openssl(["req", "-new"] + ec + ["-keyout", "chainserver.key", "-out", "chainserver.csr", "-subj", "/CN=localhost"])
        try openssl(["x509", "-req", "-in", "chainserver.csr", "-CA", "intermediate.pem", "-CAkey", "intermediate.key", "-CAcreateserial",
                     "-days", "2", "-extfile", "server.ext", "-out", "chainserver.pem"])
        try openssl(["pkcs12", "-export", "-in", "chainclient.pem", "-inkey", "chainclient.key", "-certfile", "intermediate.pem",
                     "-out", "chainclient.p12", "-passout", "pass:\(Self.password)"])
        // The usual Keychain export mistake: the certificate without its key.
        try openssl(["pkcs12", "-export", "-nokeys", "-in", "client.pem", "-out", "nokey.p12", "-passout", "pass:\(Self.password)"])
        // A client certificate valid only from 2099 (`openssl ca` sets any start date).
        try write("ca.cnf", """
            [ca]
            default_ca = test
            [test]
            database = index.txt
            new_certs_dir = .
            serial = serial.txt
            default_md = sha256
            policy = anything
            unique_subject = no
            [anything]
            commonName = supplied

            """)
        try write("index.txt", "")
        try write("serial.txt", "1000\n")
        try openssl(["req", "-new"] + ec + ["-keyout", "futureclient.key", "-out", "futureclient.csr", "-subj", "/CN=Future Push Services"])
        try openssl(["ca", "-batch", "-config", "ca.cnf", "-cert", "ca.pem", "-keyfile", "ca.key", "-notext",
                     "-startdate", "20991231000000Z", "-enddate", "21000101000000Z", "-in", "futureclient.csr", "-out", "futureclient.pem"])
        // A key that belongs to no certificate here.
        try openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "stray.key"])
        // The client key encrypted with a passphrase (PKCS#8, AES-256-CBC).
        try openssl(["pkcs8", "-topk8", "-in", "client.key", "-out", "client.enc.key", "-v2", "aes-256-cbc", "-passout", "pass:\(Self.password)"])
        // PKCS#12: OpenSSL 3's default (AES, PBKDF2) and the legacy RC2/3DES that Keychain Access exports.
        try openssl(["pkcs12", "-export", "-in", "client.pem", "-inkey", "client.key", "-out", "client.p12", "-passout", "pass:\(Self.password)"])
        try openssl(["pkcs12", "-export", "-legacy", "-in", "client.pem", "-inkey", "client.key", "-out", "client-legacy.p12", "-passout", "pass:\(Self.password)"])
        try openssl(["pkcs12", "-export", "-in", "client.pem", "-inkey", "client.key", "-out", "client-nopass.p12", "-passout", "pass:"])
        try openssl(["pkcs12", "-export", "-in", "expiredclient.pem", "-inkey", "expiredclient.key", "-out", "expiredclient.p12", "-passout", "pass:\(Self.password)"])
    }
}

/// A loopback port that nothing listens on (bound by the OS, then released).
func unusedLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw HarnessError(description: "socket failed") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else { throw HarnessError(description: "bind failed") }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// A background process (an `openssl s_server` or `tinyproxy`) whose output goes to a
/// file; terminated by ``stop()`` or when it is deinitialised.
final class BackgroundProcess: @unchecked Sendable {
    // @unchecked: used by one test at a time; `Process` is only touched in init and stop.
    let process = Process()
    let logURL: URL
    /// Kept open so that servers reading standard input (s_server) never see EOF on it.
    private let input = Pipe()

    init(_ tool: String, _ arguments: [String], log name: String) throws {
        logURL = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)
        let handle = try FileHandle(forWritingTo: logURL)
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = input
        try process.run()
    }

    /// Everything the process has written so far.
    var log: String { (try? String(contentsOf: logURL, encoding: .utf8)) ?? "" }

    /// Writes `text` to the process's standard input (s_server reads commands there: a
    /// line `r` asks the client to renegotiate).
    func type(_ text: String) {
        input.fileHandleForWriting.write(Data(text.utf8))
    }

    /// Waits up to `seconds` for `condition` on the log.
    func waitForLog(seconds: Double = 10, _ condition: (String) -> Bool) -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if condition(log) { return true }
            if !process.isRunning { return condition(log) }
            usleep(20_000)
        }
        return false
    }

    /// Waits up to `seconds` for a line `PORT <n>` (how the Python and Go test servers
    /// say where they listen) and returns `n`, or `nil` if none came.
    func waitForPortLine(seconds: Double = 20) -> Int? {
        var found: Int?
        _ = waitForLog(seconds: seconds) { log in
            guard let line = log.split(separator: "\n").first(where: { $0.hasPrefix("PORT ") }) else { return false }
            found = Int(line.dropFirst(5))
            return true
        }
        return found
    }

    /// Waits up to `seconds` for the process to exit; `true` if it did.
    /// Whether the process has ended (or is a zombie) within `seconds`. Read from
    /// `/proc`, not `Process.isRunning`, whose record a busy dispatch pool holds up: a
    /// fresh clone's whole run saw s_server "still running" 10 s after it had exited.
    func waitForExit(seconds: Double = 10) -> Bool {
        let end = Date().addingTimeInterval(seconds)
        let pid = process.processIdentifier
        while isAlive(pid: pid), Date() < end { usleep(20_000) }
        return !isAlive(pid: pid)
    }

    func stop() {
        let pid = process.processIdentifier
        guard isAlive(pid: pid) else { return }
        // SIGKILL: the child inherits the test thread's blocked signals, SIGTERM among them.
        kill(pid, SIGKILL)
        // Until it is dead (a zombie is), not until Foundation has recorded it: that record
        // is made on a dispatch queue, and with every thread of the pool in a test that
        // waits here (parallel cases stopping their servers) it would never come.
        let end = Date().addingTimeInterval(10)
        while isAlive(pid: pid), Date() < end { usleep(2_000) }
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: logURL)
    }
}

/// `openssl s_server` on 127.0.0.1 with an OS-chosen port, read from its `ACCEPT` line.
final class OpenSSLServer: Sendable {
    let background: BackgroundProcess
    let port: Int

    /// - Parameters:
    ///   - certificate: The name (in ``TestPKI``) of the server certificate and key.
    ///   - options: More s_server options, for example `["-alpn", "h2", "-rev"]`.
    ///   - accepts: How many connections it accepts before exiting.
    init(certificate: String = "server", address: String = "127.0.0.1", options: [String], accepts: Int = 1) throws {
        let pki = try TestPKI.get()
        background = try BackgroundProcess("/usr/bin/openssl", [
            "s_server", "-accept", address.contains(":") ? "[\(address)]:0" : "\(address):0", "-naccept", "\(accepts)",
            "-cert", pki.path("\(certificate).pem"), "-key", pki.path("\(certificate).key"),
        ] + options, log: "s_server")
        var found: Int?
        _ = background.waitForLog { log in
            guard let line = log.split(separator: "\n").first(where: { $0.hasPrefix("ACCEPT ") }),
                  let port = line.split(separator: ":").last.flatMap({ Int($0) })
            else { return false }
            found = port
            return true
        }
        guard let found else {
            background.stop()
            throw HarnessError(description: "s_server did not start: \(background.log)")
        }
        port = found
    }

    var endpoint: TLSEndpoint { TLSEndpoint(host: "127.0.0.1", port: port) }

    func stop() { background.stop() }
}

/// A Python TLS server's script: it listens on 127.0.0.1 with an OS-chosen port (printed
/// as `PORT <n>`), accepts up to 8 connections (each socket `c` with a 10 s timeout) and
/// hands each to `connection`. `context` configures `ctx`, an
/// `ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)`; `modules` are imported besides socket and ssl.
func pythonTLSServerScript(modules: String = "", context: String, connection: String) -> String {
    let handler = connection.split(separator: "\n", omittingEmptySubsequences: false).map { "    " + $0 }.joined(separator: "\n")
    return """
        import socket, ssl\(modules.isEmpty ? "" : ", " + modules)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        \(context)
        s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
        s.settimeout(30)
        print("PORT", s.getsockname()[1], flush=True)
        for _ in range(8):
            try:
                c, _ = s.accept()
            except socket.timeout:
                break
            c.settimeout(10)
        \(handler)
        """
}

extension HTTP2Transport {
    /// A transport of one connection to 127.0.0.1:`port` that trusts only the test CA and
    /// logs nothing.
    static func oneConnectionTrustingTestCA(port: Int) throws -> HTTP2Transport {
        var configuration = HTTP2Transport.Configuration(
            environment: .custom(host: "127.0.0.1", port: port),
            tls: try .trustingTestCA(),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        )
        configuration.connectionCount = 1
        return HTTP2Transport(configuration: configuration)
    }
}

extension TLSConfiguration {
    /// Trusts only the test CA.
    static func trustingTestCA(clientIdentity: ClientIdentity? = nil, proxy: ProxyConfiguration? = nil) throws -> TLSConfiguration {
        TLSConfiguration(trustRoots: .certificates(try TestPKI.get().text("ca.pem")), clientIdentity: clientIdentity, proxy: proxy)
    }
}

/// Writes all of `bytes`, polling on `.wantRead`/`.wantWrite`.
func writeAll(_ stream: TLSStream, _ bytes: [UInt8]) throws {
    var offset = 0
    let deadline = ContinuousClock.now + .seconds(20)
    while offset < bytes.count {
        let result = try bytes[offset...].withUnsafeBytes { try stream.write($0) }
        switch result {
        case .done(let n): offset += n
        case .wantRead: _ = TCPConnector.wait(stream.fileDescriptor, for: Int16(POLLIN), until: deadline)
        case .wantWrite: _ = TCPConnector.wait(stream.fileDescriptor, for: Int16(POLLOUT), until: deadline)
        case .closed: throw HarnessError(description: "closed after \(offset) bytes")
        }
        guard ContinuousClock.now < deadline else { throw HarnessError(description: "write did not finish") }
    }
}

/// Reads until `stop` says the bytes are complete, the peer closes, or 10 s pass.
func readUntil(_ stream: TLSStream, _ stop: ([UInt8]) -> Bool) throws -> (bytes: [UInt8], closed: Bool) {
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 16 * 1024)
    let deadline = ContinuousClock.now + .seconds(10)
    while !stop(received), ContinuousClock.now < deadline {
        let result = try buffer.withUnsafeMutableBytes { try stream.read(into: $0) }
        switch result {
        case .done(let n): received += buffer[..<n]
        case .wantRead: _ = TCPConnector.wait(stream.fileDescriptor, for: Int16(POLLIN), until: deadline)
        case .wantWrite: _ = TCPConnector.wait(stream.fileDescriptor, for: Int16(POLLOUT), until: deadline)
        case .closed: return (received, true)
        }
    }
    return (received, false)
}

/// Connects and returns the error it throws, or records an issue if it connects.
func connectionError(
    _ endpoint: TLSEndpoint, _ configuration: TLSConfiguration, timeout: Duration = .seconds(10)
) -> APNsTransportError? {
    do {
        let stream = try TLSStream.connect(to: endpoint, configuration: configuration, timeout: timeout)
        stream.close()
        Issue.record("connected, but the connection should have failed")
        return nil
    } catch {
        return error
    }
}

/// Connects, and on failure throws a harness error with the full detail (Swift Testing
/// prints only `description`, the code name, of an `APNsTransportError`).
func connectForTest(_ endpoint: TLSEndpoint, _ configuration: TLSConfiguration) throws -> TLSStream {
    do {
        return try TLSStream.connect(to: endpoint, configuration: configuration, timeout: .seconds(10))
    } catch {
        throw HarnessError(description: error.debugDescription)
    }
}

/// Every result is a `tlsFailure` that never reached APNs and whose detail names each of
/// `phrases`: what a handshake the server refused must give every request.
func expectRefusedHandshake(
    _ results: [Result<APNsResponse, APNsTransportError>],
    count: Int,
    detailContains phrases: [String],
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(results.count == count, sourceLocation: sourceLocation)
    for result in results {
        switch result {
        case .success(let response):
            Issue.record("answered \(response.status) although the handshake was refused", sourceLocation: sourceLocation)
        case .failure(let error):
            #expect(error.code == .tlsFailure, "\(error.debugDescription)", sourceLocation: sourceLocation)
            #expect(error.mayHaveReachedAPNs == false, "\(error.debugDescription)", sourceLocation: sourceLocation)
            // Refused again on every attempt: the client's policy must not retry it.
            #expect(error.isPermanent, "\(error.debugDescription)", sourceLocation: sourceLocation)
            for phrase in phrases {
                #expect(error.detail?.contains(phrase) == true, "\(error.debugDescription)", sourceLocation: sourceLocation)
            }
        }
    }
}
