import APNsCore
import APNsMockServer
import ArgumentParser
import Dispatch
import Foundation
import Synchronization
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `apns mock-server`: ``APNsMockServer/MockAPNsServer`` in the foreground.
struct MockServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mock-server",
        abstract: "Run a mock APNs server (TLS + HTTP/2 on loopback) until SIGINT, SIGTERM or SIGHUP.",
        discussion: """
            Prints its port and the path of its CA certificate (PEM), which clients must trust. \
            It answers like APNs: it validates paths, headers, topics, sizes and provider tokens, \
            and can be scripted to fail. The port is picked by the system; use --port-file to \
            hand it to a script.

            Examples:
              apns mock-server --verbose
              apns mock-server --unregistered 11fc13ad…e8f1 --fail-next 3 --status 503
              apns mock-server --token-key AuthKey_ABC123DEFG.pub.pem --key-id ABC123DEFG --team-id DEF123GHIJ --bundle-id com.example.app
              apns mock-server --accept-any-token --environment production --sandbox-only-key SANDBOX001 --topic-key TOPICKEY01=com.example.app
              apns mock-server --link-delay 150 --bandwidth 1000000 --stall-every 10000 --stall-length 500
              apns mock-server --port-file /tmp/port --ca-file /tmp/ca.pem &
              curl --http2 --cacert /tmp/ca.pem -d '{"aps":{"alert":"hi"}}' -H 'apns-topic: com.example.app' \\
                https://127.0.0.1:$(cat /tmp/port)/3/device/<token>
            """
    )

    @Option(name: .customLong("ca-file"), help: ArgumentHelp("Where to write the CA certificate (PEM); default: apns-mock-ca.pem in the temporary directory, or apns-mock-ca-PORT.pem there while another mock server uses that one.", valueName: "path"))
    var caFile: String?

    @Option(name: .customLong("port-file"), help: ArgumentHelp("Also write the port to this file, once listening; removed when the server stops.", valueName: "path"))
    var portFile: String?

    @Option(help: ArgumentHelp("Listen on this port (on 127.0.0.1 and ::1); default: one the system picks. With --certificate, a server stopped and started again is where its clients look, with the certificate they trust.", valueName: "port"))
    var port: Int = 0

    @Option(help: ArgumentHelp("Present this certificate chain (PEM, leaf first) instead of a generated one; needs --certificate-key. Clients trust the CA that issued it (no CA file is written).", valueName: "path"))
    var certificate: String?

    @Option(name: .customLong("certificate-key"), help: ArgumentHelp("The private key (PEM) of --certificate.", valueName: "path"))
    var certificateKey: String?

    @Option(name: .customLong("bundle-id"), help: "A bundle ID to accept as topic (repeatable; none accepts any).")
    var bundleIDs: [String] = []

    @Option(name: .customLong("unregistered"), help: ArgumentHelp("Answer 410 Unregistered for this device token (repeatable).", valueName: "token"))
    var unregistered: [String] = []

    @Option(name: .customLong("bad-device-token"), help: ArgumentHelp("Answer 400 BadDeviceToken for this device token (repeatable): a token APNs does not know, one of the other environment, or one truncated in storage.", valueName: "token"))
    var badDeviceTokens: [String] = []

    @Option(name: .customLong("fail-next"), help: ArgumentHelp("Answer the next N valid requests with --status.", valueName: "n"))
    var failNext: Int?

    @Option(help: "The status for --fail-next: 429, 500 or 503 (default 503).")
    var status: Int?

    @Option(name: .customLong("goaway-after"), help: ArgumentHelp("Send GOAWAY once, on the connection that carries the Nth request (counted over the whole server), then close that connection.", valueName: "n"))
    var goAwayAfter: Int?

    @Option(help: ArgumentHelp("Wait this many milliseconds before each answer.", valueName: "ms"))
    var delay: Int?

    @Option(name: .customLong("max-streams"), help: "SETTINGS_MAX_CONCURRENT_STREAMS once a connection is authenticated.")
    var maxStreams = 1000

    @Option(name: .customLong("close-after-rejections"), help: ArgumentHelp("Send GOAWAY on a connection and close it once N of its requests were rejected (400, 403, …), as APNs closes connections that keep failing.", valueName: "n"))
    var closeAfterRejections: Int?

    @Option(name: .customLong("token-key"), help: ArgumentHelp("Require provider tokens signed by the private half of this public key (PEM); needs --key-id.", valueName: "path"))
    var tokenKey: String?

    @Option(name: .customLong("key-id"), help: "The key ID of --token-key.")
    var keyID: String?

    @Option(name: .customLong("team-id"), help: "Accept tokens signed with --token-key only when their issuer (iss) is this team ID; without it, any team.")
    var teamID: String?

    @Flag(name: .customLong("accept-any-token"), help: "Require an authorization header but accept any well-formed provider token.")
    var acceptAnyToken = false

    @Option(name: .customLong("client-ca"), help: ArgumentHelp("Take client certificates issued by this CA (PEM): a connection that presents one is a certificate connection, as on APNs; with --token-key or --accept-any-token, one without is a token connection.", valueName: "path"))
    var clientCA: String?

    @Option(help: ArgumentHelp("The APNs environment the server stands for: sandbox (default) or production. Keys limited to the other get 403 BadEnvironmentKeyIdInToken.", valueName: "environment"))
    var environment = "sandbox"

    @Option(name: .customLong("sandbox-only-key"), help: ArgumentHelp("A key ID enabled for the sandbox only (repeatable; needs --token-key or --accept-any-token).", valueName: "key-id"))
    var sandboxOnlyKeys: [String] = []

    @Option(name: .customLong("production-only-key"), help: ArgumentHelp("A key ID enabled for production only (repeatable; needs --token-key or --accept-any-token).", valueName: "key-id"))
    var productionOnlyKeys: [String] = []

    @Option(name: .customLong("topic-key"), help: ArgumentHelp("A topic-specific key: other topics get 400 TopicDisallowed (repeatable; needs --token-key or --accept-any-token).", valueName: "key-id=topic[,topic…]"))
    var topicKeys: [String] = []

    @Option(name: .customLong("link-delay"), help: ArgumentHelp("Delay everything the server sends (answers, SETTINGS, PING acknowledgements, GOAWAY) by this many milliseconds: the round trip clients see.", valueName: "ms"))
    var linkDelay: Int?

    @Option(help: ArgumentHelp("Send at most this many bytes per second on each connection.", valueName: "bytes-per-second"))
    var bandwidth: Int?

    @Option(name: .customLong("stall-every"), help: ArgumentHelp("Stop sending on each connection for --stall-length at the start of every this many milliseconds.", valueName: "ms"))
    var stallEvery: Int?

    @Option(name: .customLong("stall-length"), help: ArgumentHelp("How long each stall of --stall-every lasts, shorter than --stall-every.", valueName: "ms"))
    var stallLength: Int?

    @Option(name: .customLong("record-limit"), help: "How many requests to keep in memory (0 for benchmarks).")
    var recordLimit = 1000

    @Option(name: .customLong("parent-pid"), help: ArgumentHelp("Stop when the process with this ID ends (for `apns bench`'s child server).", visibility: .hidden))
    var parentPID: Int32?

    @Flag(name: .shortAndLong, help: "Print a line per request.")
    var verbose = false

    @Flag(help: "Log every HTTP/2 frame the server sends and receives to standard error: type, stream, length, flags, SETTINGS values, GOAWAY and reset codes (never a header field or body).")
    var trace = false

    /// Checks the values together; called from `run()` so that a misspelled flag is
    /// reported as such before any of these checks.
    func check() throws {
        if !(0...65_535).contains(port) { throw ValidationError("--port \(port) is not a TCP port (0 to 65535; 0 lets the system pick)") }
        if (certificate == nil) != (certificateKey == nil) {
            throw ValidationError("--certificate and --certificate-key go together: the chain the server presents and its private key")
        }
        if certificate != nil && caFile != nil {
            throw ValidationError("--ca-file is where a generated CA is written; with --certificate there is none (trust the CA that issued it)")
        }
        if tokenKey != nil && keyID == nil { throw ValidationError("--token-key needs --key-id") }
        if keyID != nil && tokenKey == nil { throw ValidationError("--key-id needs --token-key") }
        if tokenKey != nil && acceptAnyToken { throw ValidationError("--token-key and --accept-any-token exclude each other") }
        if teamID != nil && tokenKey == nil { throw ValidationError("--team-id needs --token-key") }
        if let failNext, failNext < 1 { throw ValidationError("--fail-next must be at least 1") }
        if let status {
            if failNext == nil { throw ValidationError("--status needs --fail-next: it is the answer to the next N requests") }
            if ![429, 500, 503].contains(status) { throw ValidationError("--status \(status) is not 429, 500 or 503") }
        }
        if let goAwayAfter, goAwayAfter < 1 { throw ValidationError("--goaway-after must be at least 1") }
        if let delay, delay < 0 { throw ValidationError("--delay must not be negative") }
        // SETTINGS_MAX_CONCURRENT_STREAMS is a 32-bit value (RFC 9113, section 6.5.1).
        if !(1...Int(UInt32.max)).contains(maxStreams) {
            throw ValidationError("--max-streams \(maxStreams) is not 1 to \(UInt32.max) (SETTINGS_MAX_CONCURRENT_STREAMS is a 32-bit number)")
        }
        if let closeAfterRejections, closeAfterRejections < 1 { throw ValidationError("--close-after-rejections must be at least 1") }
        for token in unregistered where (try? DeviceToken(hex: token)) == nil {
            throw ValidationError("--unregistered \(token) is not a hexadecimal device token")
        }
        for token in badDeviceTokens where (try? DeviceToken(hex: token)) == nil {
            throw ValidationError("--bad-device-token \(token) is not a hexadecimal device token")
        }
        _ = try serverEnvironment()
        _ = try keyScopes()
        _ = try linkEmulation()
    }

    /// `--environment` as the mock server's environment.
    func serverEnvironment() throws -> MockAPNsServer.Environment {
        guard let value = MockAPNsServer.Environment(rawValue: environment.lowercased()) else {
            throw ValidationError("--environment \(environment) is not sandbox or production")
        }
        return value
    }

    /// The key scopes of `--sandbox-only-key`, `--production-only-key` and `--topic-key`,
    /// by key ID; a key named by `--topic-key` and an environment flag has both limits.
    func keyScopes() throws -> [String: MockAPNsServer.KeyScope] {
        var scopes: [String: MockAPNsServer.KeyScope] = [:]
        func checkKeyID(_ keyID: String, _ flag: String) throws {
            if keyID.utf8.count != 10 || !keyID.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) }) {
                throw ValidationError("\(flag) \(keyID) is not a 10-character key ID (digits and capital letters)")
            }
        }
        for (flag, keys, scope) in [
            ("--sandbox-only-key", sandboxOnlyKeys, MockAPNsServer.KeyScope.sandboxOnly),
            ("--production-only-key", productionOnlyKeys, .productionOnly),
        ] {
            for keyID in keys {
                try checkKeyID(keyID, flag)
                if scopes[keyID] != nil {
                    throw ValidationError("\(keyID) is named by both --sandbox-only-key and --production-only-key (or twice): give one")
                }
                scopes[keyID] = scope
            }
        }
        var topicKeyIDs: Set<String> = []
        for text in topicKeys {
            let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let topics = parts.count == 2 ? parts[1].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } : []
            guard parts.count == 2, !topics.isEmpty, !topics.contains(where: \.isEmpty) else {
                throw ValidationError("--topic-key \(text) is not key-id=topic[,topic…] (for example TOPICKEY01=com.example.app)")
            }
            let keyID = String(parts[0])
            try checkKeyID(keyID, "--topic-key")
            guard topicKeyIDs.insert(keyID).inserted else {
                throw ValidationError("--topic-key names \(keyID) twice: list its topics in one --topic-key, separated by commas")
            }
            var scope = scopes[keyID] ?? .team
            scope.topics = Set(topics)
            scopes[keyID] = scope
        }
        if !scopes.isEmpty && tokenKey == nil && !acceptAnyToken {
            throw ValidationError("--sandbox-only-key, --production-only-key and --topic-key need --token-key or --accept-any-token")
        }
        return scopes
    }

    /// The link emulation of `--link-delay`, `--bandwidth`, `--stall-every` and
    /// `--stall-length`, or `nil` when none is given.
    func linkEmulation() throws -> MockAPNsServer.LinkEmulation? {
        if let linkDelay, linkDelay < 0 { throw ValidationError("--link-delay must not be negative") }
        if let bandwidth, bandwidth < 1 { throw ValidationError("--bandwidth must be at least 1 byte per second") }
        var stalls: MockAPNsServer.LinkEmulation.Stalls?
        switch (stallEvery, stallLength) {
        case (nil, nil):
            break
        case (let every?, let length?):
            guard length > 0, every > length else {
                throw ValidationError("--stall-length must be at least 1 ms and shorter than --stall-every (\(length) ms, every \(every) ms)")
            }
            stalls = .init(every: .milliseconds(every), length: .milliseconds(length))
        default:
            throw ValidationError("--stall-every and --stall-length go together: give both")
        }
        guard linkDelay != nil || bandwidth != nil || stalls != nil else { return nil }
        return .init(oneWayDelay: .milliseconds(linkDelay ?? 0), bytesPerSecond: bandwidth, stalls: stalls)
    }

    func run() async throws {
        try check()
        Terminal.bootstrapLogging(level: trace ? .trace : .warning)
        // Caught from before the port file and the first line appear (SIGHUP too: the
        // terminal the server runs in was closed, and its files go with it): a test suite
        // that stops the server the moment it sees either must find it stopped cleanly, its
        // files removed, not killed by the signal's default action on its way to the wait.
        let stopSignals = SignalWaiter.catching([SIGINT, SIGTERM, SIGHUP])
        var authentication = MockAPNsServer.Authentication.none
        if let tokenKey, let keyID {
            guard let data = FileManager.default.contents(atPath: tokenKey) else {
                throw CLIError("cannot read the public key \(tokenKey): check the path and its permissions")
            }
            var verifier = ProviderTokenVerifier()
            do {
                try verifier.register(publicKeyPEM: String(decoding: data, as: UTF8.self), keyID: keyID, teamID: teamID)
            } catch {
                throw CLIError("cannot use \(tokenKey) as a public key: \(error)")
            }
            authentication = .providerToken(.signature(verifier))
        } else if acceptAnyToken {
            authentication = .providerToken(ProviderTokenCheck { _, _ in true })
        }
        if let clientCA {
            guard let data = FileManager.default.contents(atPath: clientCA) else {
                throw CLIError("cannot read the client CA \(clientCA): check the path and its permissions")
            }
            let pem = String(decoding: data, as: UTF8.self)
            guard pem.contains("-----BEGIN CERTIFICATE-----") else {
                throw CLIError("\(clientCA) holds no PEM certificate (-----BEGIN CERTIFICATE-----): give the CA that issued the client certificates")
            }
            switch authentication {
            case .providerToken(let check): authentication = .providerTokenOrCertificate(check, trustedCAPEM: pem)
            default: authentication = .certificate(trustedCAPEM: pem)
            }
        }
        var configuration = MockAPNsServer.Configuration(
            bundleIDs: bundleIDs,
            authentication: authentication,
            maxConcurrentStreams: maxStreams,
            recordedRequestLimit: recordLimit,
            environment: try serverEnvironment(),
            keyScopes: try keyScopes()
        )
        configuration.closeAfterRejections = closeAfterRejections
        configuration.port = port
        if let certificate, let certificateKey {
            guard let chain = FileManager.default.contents(atPath: certificate) else {
                throw CLIError("cannot read the certificate \(certificate): check the path and its permissions")
            }
            guard let key = FileManager.default.contents(atPath: certificateKey) else {
                throw CLIError("cannot read the certificate key \(certificateKey): check the path and its permissions")
            }
            configuration.certificate = .pem(certificateChain: String(decoding: chain, as: UTF8.self), privateKey: String(decoding: key, as: UTF8.self))
        }
        if trace { configuration.logger = Logger(label: "apns.mock-server") }
        let server = MockAPNsServer(configuration: configuration)
        do {
            try await server.start()
        } catch {
            throw CLIError("the mock server could not start: \(error)")
        }
        // Each server makes its own CA: two servers writing the same file would leave the
        // first one's clients with the second one's CA. The default file is claimed with a
        // lock held for the life of the process; a second server uses a file of its own.
        let caFile: String
        let caFileIsOwn: Bool
        if let certificate {
            (caFile, caFileIsOwn) = ("none (the server presents \(certificate): trust the CA that issued it)", false)
        } else if let given = self.caFile {
            (caFile, caFileIsOwn) = (given, false)
        } else if let shared = Self.claimDefaultCAFile() {
            (caFile, caFileIsOwn) = (shared, false)
        } else {
            (caFile, caFileIsOwn) = (FileManager.default.temporaryDirectory.appendingPathComponent("apns-mock-ca-\(server.port).pem").path, true)
        }
        if certificate == nil {
            do {
                try server.writeCertificateAuthority(to: caFile)
            } catch {
                await server.stop()
                throw CLIError(Self.cannotWrite(caFile, error))
            }
        }
        if let portFile {
            do {
                try Data("\(server.port)\n".utf8).write(to: URL(fileURLWithPath: portFile), options: .atomic)
            } catch {
                await server.stop()
                // The CA file of its own that the server just wrote serves no one now.
                if caFileIsOwn { try? FileManager.default.removeItem(atPath: caFile) }
                throw CLIError(Self.cannotWrite(portFile, error))
            }
        }
        for token in unregistered { server.respond(toDeviceToken: token.lowercased(), with: .unregistered()) }
        for token in badDeviceTokens {
            server.respond(toDeviceToken: token.lowercased(), with: ScriptedResponse(status: 400, reason: "BadDeviceToken"))
        }
        if let failNext {
            let response: ScriptedResponse = switch status ?? 503 {
            case 429: .tooManyRequests
            case 500: .internalServerError
            default: .serviceUnavailable
            }
            server.failNextRequests(failNext, with: response)
        }
        if let goAwayAfter { server.sendGoAway(afterRequests: goAwayAfter) }
        if let delay { server.setResponseDelay(.milliseconds(delay)) }
        if let link = try linkEmulation() { server.setLinkEmulation(link) }

        print("mock APNs server listening on \(server.addresses.joined(separator: ", ")) port \(server.port)")
        print("port: \(server.port)")
        print("ca-file: \(caFile)")
        // The credentials the server takes, so the line works as printed once the
        // placeholders are filled in.
        let credentials: String
        if authentication.isNone {
            credentials = "--no-auth "
        } else if tokenKey != nil || acceptAnyToken {
            credentials = "--key-file <AuthKey.p8> --key-id \(keyID ?? "<key ID>") --team-id \(teamID ?? "<team ID>") "
        } else if clientCA != nil {
            credentials = "--cert-file <client.pem> --cert-key-file <client.key> "
        } else {
            credentials = ""
        }
        let trust = certificate == nil ? caFile : "<the CA that issued \(certificate ?? "")>"
        print("try: apns send --host 127.0.0.1 --port \(server.port) --ca-file \(trust) \(credentials)--topic com.example.app --body Hello <token>")
        Terminal.flush()

        let watcher = verbose ? Task {
            for await request in server.requests() {
                let token = request.deviceToken.map { String($0.prefix(8)) + "…" } ?? "-"
                print("#\(request.sequenceNumber) conn \(request.connectionNumber) stream \(request.streamID) \(request.value(of: "apns-push-type") ?? "-") \(request.value(of: "apns-topic") ?? "-") \(token) \(request.body.count) B → \(request.status)\(request.reason.map { " " + $0 } ?? "")")
                Terminal.flush()
            }
        } : nil

        // A child of `apns bench`: ends with its parent, even one killed with SIGKILL, as
        // if sent SIGTERM (the parent's signals do not reach this process group).
        let orphaned = OrphanFlag()
        let orphanWatch = parentPID.map { parent in
            Task.detached {
                while !Task.isCancelled {
                    if kill(parent, 0) != 0 && errno == ESRCH || getppid() != parent {
                        orphaned.set()
                        kill(getpid(), SIGTERM)
                        return
                    }
                    try? await Task.sleep(for: .milliseconds(250))
                }
            }
        }
        defer { orphanWatch?.cancel() }
        let servedPort = server.port
        let signal = await stopSignals.first()
        print("received \(signal == SIGINT ? "SIGINT" : signal == SIGHUP ? "SIGHUP" : "SIGTERM"): stopping")
        // Stop the per-request printer first: its stream must end before the server's
        // thread finishes the streams it still holds.
        watcher?.cancel()
        await watcher?.value
        await server.stop()
        if caFileIsOwn { try? FileManager.default.removeItem(atPath: caFile) }
        // The port file names a port no longer served; unless another server has written
        // its own port there since (`servedPort`: a stopped server has none).
        if let portFile, (try? String(contentsOfFile: portFile, encoding: .utf8)) == "\(servedPort)\n" {
            try? FileManager.default.removeItem(atPath: portFile)
        }
        if orphaned.isSet {
            // The parent cannot clean up after itself any more: its files, and the folder
            // it made for them if nothing else is in it.
            try? FileManager.default.removeItem(atPath: caFile)
            if let portFile { rmdir((portFile as NSString).deletingLastPathComponent) }
        }
        let stats = server.statistics
        print("stopped after \(stats.requests) requests (\(stats.accepted) accepted, \(stats.rejected) rejected) on \(stats.connections) connections")
        Terminal.flush()
    }

    /// The default CA file's path, once this process holds the lock that claims it (kept
    /// until the process ends); `nil` while another mock server holds it.
    static func claimDefaultCAFile() -> String? {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("apns-mock-ca.pem").path
        let descriptor = open(path + ".lock", O_CREAT | O_RDWR | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { return path } // no lock possible: the file as before
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            close(descriptor)
            return nil
        }
        return path // the descriptor stays open: the lock lasts as long as the process
    }

    /// Why `path` cannot be written, in words (a missing folder, a folder without write
    /// permission), not Foundation's error domain and code.
    static func cannotWrite(_ path: String, _ error: any Error) -> String {
        let folder = (path as NSString).deletingLastPathComponent
        var isDirectory: ObjCBool = false
        if !folder.isEmpty, !FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory) {
            return "cannot write \(path): the folder \(folder) does not exist"
        }
        if !folder.isEmpty, !isDirectory.boolValue {
            return "cannot write \(path): \(folder) is not a folder"
        }
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            return "cannot write \(path): it is a folder"
        }
        if !FileManager.default.isWritableFile(atPath: folder.isEmpty ? "." : folder) {
            return "cannot write \(path): no permission to write in \(folder.isEmpty ? "the current folder" : folder)"
        }
        return "cannot write \(path): \((error as NSError).localizedDescription)"
    }
}

/// Set when the parent named by `--parent-pid` has ended.
private final class OrphanFlag: Sendable {
    private let state = Atomic<Bool>(false)
    func set() { state.store(true, ordering: .relaxed) }
    var isSet: Bool { state.load(ordering: .relaxed) }
}

extension MockAPNsServer.Authentication {
    fileprivate var isNone: Bool {
        if case .none = self { return true }
        return false
    }
}
