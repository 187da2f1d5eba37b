import APNsCore
import APNsTransport
import ArgumentParser
import Foundation

/// How the tool authenticates: a `.p8` signing key (token-based) or a client certificate.
struct CredentialOptions: ParsableArguments {
    @Option(name: .customLong("key-file"), help: ArgumentHelp("The .p8 signing key from your developer account (token-based authentication).", valueName: "path"))
    var keyFile: String?

    @Option(name: .customLong("key-id"), help: ArgumentHelp("The key's 10-character ID (the ABC123DEFG in AuthKey_ABC123DEFG.p8).", valueName: "id"))
    var keyID: String?

    @Option(name: .customLong("team-id"), help: ArgumentHelp("Your 10-character team ID.", valueName: "id"))
    var teamID: String?

    @Option(name: .customLong("cert-file"), help: ArgumentHelp("A client certificate: .p12 (with --cert-password) or PEM (certificate-based authentication).", valueName: "path"))
    var certFile: String?

    @Option(name: .customLong("cert-key-file"), help: ArgumentHelp("The PEM private key of a PEM --cert-file, when it is not in the same file.", valueName: "path"))
    var certKeyFile: String?

    @Option(name: .customLong("cert-password"), help: ArgumentHelp("The password of the .p12 or of an encrypted PEM key (or set APNS_CERTIFICATE_PASSWORD).", valueName: "password"))
    var certPassword: String?

    @Flag(name: .customLong("no-auth"), help: "Send no credentials (for a mock server that accepts any request).")
    var noAuth = false

    /// The key's PEM text, only ever from `APNS_KEY`. It is stored as an option so that
    /// `resolved` can carry it, but given as `--key-pem` on the command line it is refused
    /// (see `check()`): any local user can read a process's arguments.
    @Option(name: .customLong("key-pem"), help: .hidden)
    var keyPEM: String?

    /// These options, each one the flags leave out filled in from the variable
    /// `APNsSettings` reads for it: `APNS_KEY_FILE` (or `APNS_KEY`), `APNS_KEY_ID`,
    /// `APNS_TEAM_ID`, `APNS_CERTIFICATE_FILE`, `APNS_CERTIFICATE_KEY_FILE`,
    /// `APNS_CERTIFICATE_PASSWORD`. Flags of one kind (a key's, a certificate's) take only
    /// that kind from the environment; `--no-auth` takes nothing.
    var resolved: CredentialOptions {
        guard !noAuth else { return self }
        let variables = ProcessInfo.processInfo.environment
        // As APNsSettings reads them (trimmed, blank as unset); the password as it is,
        // since white space may be part of it.
        func value(_ name: String) -> String? {
            name == "APNS_CERTIFICATE_PASSWORD" ? variables[name].flatMap { $0.isEmpty ? nil : $0 } : APNsSettings.variable(name, in: variables)
        }
        let keyFlags = keyFile != nil || keyPEM != nil || keyID != nil || teamID != nil
        let certificateFlags = certFile != nil || certKeyFile != nil || certPassword != nil
        var copy = self
        if !certificateFlags {
            if keyFile == nil && keyPEM == nil {
                copy.keyFile = value("APNS_KEY_FILE")
                copy.keyPEM = value("APNS_KEY")
            }
            copy.keyID = keyID ?? value("APNS_KEY_ID")
            copy.teamID = teamID ?? value("APNS_TEAM_ID")
        }
        if !keyFlags {
            copy.certFile = certFile ?? value("APNS_CERTIFICATE_FILE")
            copy.certKeyFile = certKeyFile ?? value("APNS_CERTIFICATE_KEY_FILE")
            copy.certPassword = certPassword ?? value("APNS_CERTIFICATE_PASSWORD")
        }
        return copy
    }

    /// Checks the values together; called from `run()` so that a misspelled flag is
    /// reported as such before any of these checks.
    func check() throws {
        if keyPEM != nil {
            // A key on the command line is readable by every local user (ps, /proc/PID/cmdline).
            throw ValidationError("a private key is not taken on the command line, where other users can read it: give --key-file, or set APNS_KEY")
        }
        try resolved.checkValues(flags: self)
    }

    /// The name a value goes by in a message: the flag when `given` (the flag's value),
    /// otherwise the variable it came from.
    private static func name(_ flag: String, _ variable: String, given: String?) -> String {
        given == nil ? variable : flag
    }

    private func checkValues(flags: CredentialOptions) throws {
        // A key or certificate pasted where its path or an identifier goes (APNS_KEY_FILE
        // for APNS_KEY): say so without echoing it, as every later message would.
        let named: [(flag: String, variable: String, given: String?, value: String?, isPath: Bool)] = [
            ("--key-file", "APNS_KEY_FILE", flags.keyFile, keyFile, true),
            ("--cert-file", "APNS_CERTIFICATE_FILE", flags.certFile, certFile, true),
            ("--cert-key-file", "APNS_CERTIFICATE_KEY_FILE", flags.certKeyFile, certKeyFile, true),
            ("--key-id", "APNS_KEY_ID", flags.keyID, keyID, false),
            ("--team-id", "APNS_TEAM_ID", flags.teamID, teamID, false),
        ]
        for entry in named {
            guard let value = entry.value, SecretText.mayBeKeyMaterial(value),
                !(entry.isPath && FileManager.default.fileExists(atPath: value))
            else { continue }
            let name = Self.name(entry.flag, entry.variable, given: entry.given)
            throw ValidationError(
                "\(name) holds \(SecretText.describe(value)), not "
                    + (entry.isPath ? "a file path: give the path of the file that holds it" + (entry.flag == "--key-file" ? " (or the key's text in APNS_KEY)" : "")
                        : "a 10-character Apple identifier: check that the values are not swapped"))
        }
        if keyFile != nil && keyPEM != nil {
            throw ValidationError("APNS_KEY and APNS_KEY_FILE are both set: set one")
        }
        let keyFile = self.keyFile ?? keyPEM.map { _ in "APNS_KEY" }
        let tokenFlags = [keyFile, keyID, teamID].compactMap { $0 }.count
        if tokenFlags > 0 && certFile != nil {
            throw ValidationError("give a .p8 key (--key-file, --key-id, --team-id) or a certificate (--cert-file), not both")
        }
        if tokenFlags > 0 && tokenFlags < 3 {
            let missing = [("--key-file", "APNS_KEY_FILE", keyFile), ("--key-id", "APNS_KEY_ID", keyID), ("--team-id", "APNS_TEAM_ID", teamID)]
                .filter { $0.2 == nil }.map { "\($0.0) (or \($0.1))" }
            throw ValidationError("token-based authentication needs --key-file, --key-id and --team-id: add \(missing.joined(separator: ", "))")
        }
        // A certificate's key or password given without the certificate: that is what is
        // missing, not credentials altogether (the flags only: a variable set for another
        // tool should not be named).
        if tokenFlags == 0 && certFile == nil && !noAuth && (flags.certKeyFile != nil || flags.certPassword != nil) {
            throw ValidationError("--cert-key-file and --cert-password need --cert-file")
        }
        if tokenFlags == 0 && certFile == nil && !noAuth {
            throw ValidationError(
                "no credentials: give --key-file, --key-id and --team-id, or --cert-file (or --no-auth for a mock server), "
                    + "or set APNS_KEY_FILE, APNS_KEY_ID and APNS_TEAM_ID, or APNS_CERTIFICATE_FILE")
        }
        if noAuth && (tokenFlags > 0 || certFile != nil) {
            throw ValidationError("--no-auth excludes --key-file and --cert-file")
        }
        if certFile == nil && (certKeyFile != nil || certPassword != nil) {
            throw ValidationError("--cert-key-file and --cert-password need --cert-file")
        }
        for (flag, value) in [(Self.name("--key-id", "APNS_KEY_ID", given: flags.keyID), keyID),
                              (Self.name("--team-id", "APNS_TEAM_ID", given: flags.teamID), teamID)] {
            if let value, value.utf8.count != 10 || !value.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) }) {
                throw ValidationError("\(flag) \(value) is not a 10-character Apple identifier (digits and capital letters)")
            }
        }
    }

    /// What the tool authenticates with, loaded and checked.
    enum Loaded {
        case providerToken(ProviderTokenCache)
        case certificate(path: String, keyPath: String?, password: String?)
        case none
    }

    /// Loads the key or checks the certificate file, refusing a private key that other
    /// users can read or write (as ssh refuses an unprotected key).
    func load() throws(CLIError) -> Loaded {
        try resolved.loadValues()
    }

    private func loadValues() throws(CLIError) -> Loaded {
        if let keyID, let teamID, keyPEM != nil || keyFile != nil {
            let key: ProviderKey
            if let keyPEM {
                do {
                    key = try ProviderKey(pemRepresentation: keyPEM)
                } catch {
                    throw CLIError("cannot use the key in APNS_KEY: \(error)")
                }
            } else {
                let keyFile = keyFile ?? ""
                // What the file holds first: a public key or a certificate is no secret, and
                // asking to chmod it would only hide the real mistake.
                do {
                    key = try ProviderKey(contentsOfFile: keyFile)
                } catch {
                    let hint = Self.looksLikeCertificate(keyFile)
                        ? " (it looks like a client certificate: give it with --cert-file instead)" : ""
                    throw CLIError("cannot use the key \(keyFile): \(error)\(hint)")
                }
                try Self.refuseIfExposed(keyFile)
            }
            do {
                return .providerToken(try ProviderTokenCache(key: key, keyID: keyID, teamID: teamID))
            } catch {
                throw CLIError.usage("\(error)")
            }
        }
        if let certFile {
            // The private key is in --cert-key-file when given, else in the .p12 or PEM
            // itself; a certificate alone is public and may be readable by anyone.
            guard FileManager.default.isReadableFile(atPath: certFile) else {
                throw CLIError("cannot read the certificate \(certFile): check the path and its permissions")
            }
            let keyHolder = certKeyFile ?? certFile
            if Self.mayHoldPrivateKey(keyHolder) { try Self.refuseIfExposed(keyHolder) }
            let variables = ProcessInfo.processInfo.environment
            let password = certPassword ?? variables["APNS_CERTIFICATE_PASSWORD"] ?? variables["APNS_CERT_PASSWORD"]
            return .certificate(path: certFile, keyPath: certKeyFile, password: password)
        }
        return .none
    }

    /// Whether `path` may hold a private key: a PEM file with a `PRIVATE KEY` block, or a
    /// binary file (a `.p12`); a PEM file with only certificates or public keys does not.
    static func mayHoldPrivateKey(_ path: String) -> Bool {
        guard let text = head(of: path), text.contains("-----BEGIN") else { return true }
        return text.contains("PRIVATE KEY-----")
    }

    /// The first 64 KiB of the file at `path` as text (where PEM headers are), if it reads.
    private static func head(of path: String) -> String? {
        FileManager.default.contents(atPath: path).map { String(decoding: $0.prefix(65_536), as: UTF8.self) }
    }

    /// Whether `path` is a `.p12` or a PEM certificate (a likely mix-up for a `.p8` key).
    static func looksLikeCertificate(_ path: String) -> Bool {
        if path.lowercased().hasSuffix(".p12") || path.lowercased().hasSuffix(".pfx") { return true }
        return head(of: path)?.contains("-----BEGIN CERTIFICATE-----") ?? false
    }

    /// Refuses a file holding a private key when its mode grants any access to its group or
    /// to others: one line naming the file, its mode and the `chmod 600` that fixes it. A file
    /// whose mode cannot be read (for example one that does not exist) is left to the code
    /// that opens it, which says what is wrong.
    static func refuseIfExposed(_ path: String) throws(CLIError) {
        if let mode = APNsSettings.exposedMode(of: path) {
            throw CLIError(
                "\(path) holds a private key and is accessible to other users (mode \(String(mode, radix: 8))): run chmod 600 \(path)")
        }
    }
}
