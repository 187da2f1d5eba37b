import APNsOpenSSL
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The private key that signs provider tokens: the `.p8` file Apple lets you download
/// once when you create an APNs key in your developer account.
///
/// Apple's key is an EC private key on the P-256 curve in PKCS#8 PEM (`-----BEGIN PRIVATE
/// KEY-----`). It is read by OpenSSL's libcrypto, the same library that carries the TLS
/// connections, and is only ever used to sign; buffers this type fills with the PEM or DER
/// are wiped once the key is decoded. Any other kind of key is refused with a
/// ``ProviderKeyError`` that says what the input was.
///
/// See Apple's [Establishing a token-based connection to APNs](https://developer.apple.com/documentation/usernotifications/establishing-a-token-based-connection-to-apns).
///
/// ```swift
/// let key = try ProviderKey(contentsOfFile: "/etc/apns/AuthKey_ABC123DEFG.p8")
/// ```
public struct ProviderKey: Sendable {
    let key: EVPKey

    private init(verified key: EVPKey) {
        self.key = key
    }

    /// Reads a key from a file, PEM (as Apple ships it) or DER.
    ///
    /// - Throws: ``ProviderKeyError`` with ``ProviderKeyError/Code/fileNotReadable`` if
    ///   the file cannot be read, or any kind that ``init(pemRepresentation:)`` throws.
    public init(contentsOfFile path: String) throws(ProviderKeyError) {
        guard var data = FileManager.default.contents(atPath: path) else {
            if SecretText.mayBeKeyMaterial(path) {
                // The key's text given as its path: never echo it.
                throw ProviderKeyError(
                    .fileNotReadable,
                    "cannot read a key file: the path given is not a path but \(SecretText.describe(path)); pass a key's text to ProviderKey(pemRepresentation:), its file's path to ProviderKey(contentsOfFile:)")
            }
            throw ProviderKeyError(.fileNotReadable, "cannot read the key file at \(path)")
        }
        var bytes = [UInt8](data)
        data.resetBytes(in: 0..<data.count)
        defer { EVPKey.cleanse(&bytes) }
        try self.init(verified: Self.load(bytes, from: "the file \(path)"))
    }

    /// Decodes a key from PEM text, for example the contents of an environment variable.
    ///
    /// Tolerates what copying a key into a secret store tends to do: surrounding whitespace
    /// or quotes, `\r\n` line ends, the literal two-character sequence `\n` instead of line
    /// breaks, everything on one line, and the base64 body without its BEGIN/END lines.
    ///
    /// - Throws: ``ProviderKeyError``: ``ProviderKeyError/Code/malformed``,
    ///   ``ProviderKeyError/Code/encryptedKey``, ``ProviderKeyError/Code/publicKey`` or
    ///   ``ProviderKeyError/Code/unsupportedKeyType``.
    public init(pemRepresentation: String) throws(ProviderKeyError) {
        var bytes = Array(pemRepresentation.utf8)
        defer { EVPKey.cleanse(&bytes) }
        try self.init(verified: Self.load(bytes, from: "the PEM text"))
    }

    /// Reads a key in PEM from the environment variable `name`.
    ///
    /// - Throws: ``ProviderKeyError`` with ``ProviderKeyError/Code/environmentVariableNotSet``
    ///   if the variable is unset or blank, or any kind that ``init(pemRepresentation:)``
    ///   throws.
    public init(environmentVariable name: String) throws(ProviderKeyError) {
        guard let value = ProcessInfo.processInfo.environment[name],
              !value.allSatisfy(\.isWhitespace) else {
            throw ProviderKeyError(.environmentVariableNotSet, "the environment variable \(name) is not set or is empty")
        }
        var bytes = Array(value.utf8)
        defer { EVPKey.cleanse(&bytes) }
        try self.init(verified: Self.load(bytes, from: "the environment variable \(name)"))
    }

    /// Decodes a key from DER: PKCS#8 `PrivateKeyInfo` (the body of Apple's `.p8`) or a
    /// SEC 1 `ECPrivateKey`.
    ///
    /// - Throws: ``ProviderKeyError``: ``ProviderKeyError/Code/malformed``,
    ///   ``ProviderKeyError/Code/encryptedKey``, ``ProviderKeyError/Code/publicKey`` or
    ///   ``ProviderKeyError/Code/unsupportedKeyType``.
    public init(derRepresentation: some Collection<UInt8>) throws(ProviderKeyError) {
        var bytes = Array(derRepresentation)
        defer { EVPKey.cleanse(&bytes) }
        try self.init(verified: Self.loadDER(bytes, from: "the DER bytes"))
    }

    /// A new random P-256 key, for tests and for the mock server's demo. Real provider
    /// keys come from Apple: APNs knows only the public halves of keys it issued.
    public static func generate() throws(ProviderKeyError) -> ProviderKey {
        do {
            return ProviderKey(verified: try EVPKey.generateP256())
        } catch {
            throw ProviderKeyError(.keyGenerationFailed, error.description)
        }
    }

    /// The public half as PEM (`-----BEGIN PUBLIC KEY-----`, a `SubjectPublicKeyInfo`),
    /// for registering with ``ProviderTokenVerifier``.
    public var publicKeyPEM: String {
        // i2d_PUBKEY only fails when out of memory.
        let der = (try? key.publicKeyDER()) ?? []
        return PEMBlock.encode(label: "PUBLIC KEY", der: der)
    }

    // MARK: Loading

    private static func load(_ raw: [UInt8], from source: String) throws(ProviderKeyError) -> EVPKey {
        var text = PEMBlock.normalize(raw)
        defer { EVPKey.cleanse(&text) }
        if PEMBlock.containsPEM(text) {
            var blocks: [PEMBlock]
            do {
                blocks = try PEMBlock.parseAll(text)
            } catch {
                switch error {
                case .missingEnd(let label):
                    throw ProviderKeyError(.malformed, "\(source) has a PEM BEGIN line for \"\(label)\" without its END line")
                case .badBase64(let label):
                    throw ProviderKeyError(.malformed, "the body of the PEM block \"\(label)\" in \(source) is not valid base64")
                case .malformedBegin:
                    throw ProviderKeyError(
                        .malformed,
                        "\(source) has a PEM BEGIN line that does not end in five dashes after its label "
                            + "(expected \"-----BEGIN PRIVATE KEY-----\")")
                }
            }
            defer {
                for index in blocks.indices { EVPKey.cleanse(&blocks[index].der) }
            }
            return try loadPEM(blocks, from: source)
        }
        if PEMBlock.isBareBase64(text) {
            var base64 = text.filter { !PEMBlock.isSpace($0) }
            defer { EVPKey.cleanse(&base64) }
            if var der = Base64.decode(base64, alphabet: .standard) {
                defer { EVPKey.cleanse(&der) }
                return try loadDER(der, from: source)
            }
        }
        if looksLikePath(text) {
            throw ProviderKeyError(
                .malformed,
                "\(source) holds a file path, not a key: read the file with ProviderKey(contentsOfFile:) (APNS_KEY_FILE, or --key-file with the apns tool)")
        }
        return try loadDER(raw, from: source)
    }

    /// Whether `text` (trimmed) is one line that names a file: it starts with `/`, `./`,
    /// `../` or `~/`, or ends in `.p8` or `.pem`. A path where the key's text goes
    /// (`APNS_KEY=/etc/apns/AuthKey_ABC123DEFG.p8`) is a mistake worth naming.
    private static func looksLikePath(_ text: [UInt8]) -> Bool {
        guard !text.isEmpty, text.count <= 4096, !text.contains(UInt8(ascii: "\n")) else { return false }
        let line = String(decoding: text, as: UTF8.self)
        return ["/", "./", "../", "~/"].contains { line.hasPrefix($0) }
            || [".p8", ".pem", ".P8", ".PEM"].contains { line.hasSuffix($0) }
    }

    private static func loadPEM(_ blocks: [PEMBlock], from source: String) throws(ProviderKeyError) -> EVPKey {
        // `openssl ecparam -genkey` writes an EC PARAMETERS block before the key: skip it.
        let privateBlocks = blocks.filter { $0.label.hasSuffix("PRIVATE KEY") }
        // An old and a new key pasted into one secret: using the first would sign with a
        // key that may be revoked, and APNs would answer InvalidProviderToken.
        guard privateBlocks.count <= 1 else {
            throw ProviderKeyError(
                .malformed,
                "\(source) holds \(privateBlocks.count) private keys; a .p8 file from Apple holds one: keep only the key whose ID you give as the key ID")
        }
        let privateBlock = privateBlocks.first
        guard let block = privateBlock else {
            let labels = blocks.map { "\"\($0.label)\"" }.joined(separator: ", ")
            if blocks.contains(where: { $0.label.hasSuffix("PUBLIC KEY") || $0.label == "CERTIFICATE" }) {
                throw ProviderKeyError(.publicKey, "\(source) holds \(labels), which is public; a provider token is signed with the private key (the .p8 file from Apple)")
            }
            throw ProviderKeyError(.malformed, "\(source) holds \(labels), not a PRIVATE KEY")
        }
        if block.label == "ENCRYPTED PRIVATE KEY" || block.isLegacyEncrypted {
            throw encrypted(source)
        }
        return try loadDER(block.der, from: source)
    }

    private static func loadDER(_ der: [UInt8], from source: String) throws(ProviderKeyError) -> EVPKey {
        if let key = EVPKey.privateKey(der: der) {
            let algorithm = key.algorithm
            guard algorithm.isP256 else {
                let kind = algorithm.curveName.map { "an \(algorithm.typeName) key on curve \($0)" }
                    ?? "a \(algorithm.bits)-bit \(algorithm.typeName) key"
                throw ProviderKeyError(.unsupportedKeyType, "\(source) holds \(kind); APNs provider keys are EC keys on P-256 (prime256v1) for ES256")
            }
            // A damaged private half still decodes, and would sign tokens APNs refuses
            // (InvalidProviderToken) with nothing to say why.
            guard key.passesPairwiseCheck else {
                throw ProviderKeyError(
                    .malformed,
                    "\(source) holds a damaged key: its private half does not match the public key stored with it (OpenSSL's pairwise check, as `openssl pkey -check` runs it); copy the .p8 file again from where you keep it")
            }
            return key
        }
        if EVPKey.publicKey(der: der) != nil {
            throw ProviderKeyError(.publicKey, "\(source) holds a public key; a provider token is signed with the private key (the .p8 file from Apple)")
        }
        if EVPKey.isEncryptedPrivateKeyInfo(der: der) {
            throw encrypted(source)
        }
        throw ProviderKeyError(.malformed, "\(source) is neither a PEM private key nor a DER private key OpenSSL can decode")
    }

    private static func encrypted(_ source: String) -> ProviderKeyError {
        ProviderKeyError(.encryptedKey, "\(source) holds a passphrase-protected key; keys from Apple have none: decrypt it with `openssl pkcs8 -topk8 -nocrypt`")
    }
}
