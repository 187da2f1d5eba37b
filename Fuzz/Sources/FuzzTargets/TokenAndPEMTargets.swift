import APNsCore
import APNsTransport
import Foundation

/// Device tokens: `DeviceToken(hex:)` accepts exactly the non-empty, even-length ASCII
/// hexadecimal strings (checked against an independent codec), keeps them lowercase, and
/// round-trips through bytes; a refusal is `invalidDeviceToken` with a position inside
/// the text.
enum DeviceTokenTarget {
    static let name = "device-token"
    static let alphabet = Array("0123456789abcdefABCDEF".utf8)

    static func run(_ data: [UInt8]) {
        var input = FuzzInput(data)
        let mode = input.int(below: 3)
        let rest = input.bytes(data.count)
        let text: String
        switch mode {
        case 0: text = String(decoding: rest, as: UTF8.self)
        case 1:
            // Mostly hex digits, with the odd stray byte.
            text = String(decoding: rest.map { $0 < 0xF0 ? alphabet[Int($0) % alphabet.count] : $0 & 0x7F }, as: UTF8.self)
        default:
            // DeviceToken(bytes:) from raw bytes.
            do {
                let token = try DeviceToken(bytes: rest)
                require(token.bytes == rest, name, "bytes -> token -> bytes changed \(rest)")
                require(token.hexString == rest.map { String(format: "%02x", $0) }.joined(), name, "hex of \(rest) is \(token.hexString)")
                require((try? DeviceToken(hex: token.hexString)) == token, name, "hexString does not parse back")
            } catch {
                require(rest.isEmpty && error.code == .invalidDeviceToken, name, "refused \(rest): \(error)")
            }
            return
        }
        let utf8 = Array(text.utf8)
        let expected: [UInt8]? = independentDecode(utf8)
        do {
            let token = try DeviceToken(hex: text)
            guard let expected else { finding(name, "accepted \(text.debugDescription), which is not even-length hex") }
            require(token.bytes == expected, name, "\(text.debugDescription) decoded to \(token.bytes), expected \(expected)")
            require(token.hexString == text.lowercased(), name, "hexString \(token.hexString) for \(text.debugDescription)")
            require(token.byteCount == expected.count, name, "byteCount \(token.byteCount) for \(expected.count) bytes")
            require((try? DeviceToken(bytes: token.bytes)) == token, name, "bytes do not round-trip")
            require(!token.description.contains(token.hexString) || token.hexString.count <= 8, name, "description shows the whole token")
        } catch {
            require(expected == nil, name, "refused valid hex \(text.debugDescription): \(error)")
            require(error.code == .invalidDeviceToken, name, "error code \(error.code)")
            guard let position = error.position else { finding(name, "no position in \(error)") }
            require(position >= 0 && position < max(1, text.count), name, "position \(position) outside \(text.debugDescription) (\(text.count) characters)")
        }
    }

    /// Hex decoding written independently of the SDK: `nil` unless non-empty, even-length, all hex.
    static func independentDecode(_ utf8: [UInt8]) -> [UInt8]? {
        guard !utf8.isEmpty, utf8.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        var index = 0
        while index < utf8.count {
            guard let high = UInt8(String(decoding: utf8[index..<index + 2], as: UTF8.self), radix: 16),
                  utf8[index..<index + 2].allSatisfy({ $0 != UInt8(ascii: "+") && $0 != UInt8(ascii: "-") })
            else { return nil }
            out.append(high)
            index += 2
        }
        return out
    }
}

/// PEM and DER parsing of provider keys and client identities: any text gives a key or a
/// typed error, never a crash; a key's public half is refused as a signing key.
enum PEMTarget {
    static let name = "pem"
    static let labels = ["PRIVATE KEY", "EC PRIVATE KEY", "PUBLIC KEY", "CERTIFICATE", "ENCRYPTED PRIVATE KEY", "RSA PRIVATE KEY", "X"]

    static func run(_ data: [UInt8]) {
        var input = FuzzInput(data)
        let mode = input.int(below: 4)
        let rest = input.bytes(data.count)
        var text = String(decoding: rest, as: UTF8.self)
        if mode == 1 {
            // Arbitrary bytes in a well-formed PEM envelope, so the DER parsers see them.
            let label = labels[Int(rest.first ?? 0) % labels.count]
            let base64 = Data(rest.dropFirst()).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
            text = "-----BEGIN \(label)-----\n\(base64)\n-----END \(label)-----\n"
        }
        if mode == 2 {
            if let key = try? ProviderKey(derRepresentation: rest) {
                checkPublicHalf(key)
            }
            return
        }
        do {
            let key = try ProviderKey(pemRepresentation: text)
            checkPublicHalf(key)
        } catch {
            require(!error.description.isEmpty, name, "an error without a description")
        }
        if mode == 3 {
            let split = text.utf8.count / 2
            let certificate = String(decoding: Array(text.utf8.prefix(split)), as: UTF8.self)
            let key = String(decoding: Array(text.utf8.dropFirst(split)), as: UTF8.self)
            _ = try? ClientIdentity(certificatePEM: certificate, privateKeyPEM: key, password: input.bool() ? "secret" : nil)
        } else {
            _ = try? ClientIdentity(certificatePEM: text, privateKeyPEM: text)
        }
    }

    static func checkPublicHalf(_ key: ProviderKey) {
        let pem = key.publicKeyPEM
        require(pem.hasPrefix("-----BEGIN PUBLIC KEY-----"), name, "publicKeyPEM is \(pem)")
        do {
            _ = try ProviderKey(pemRepresentation: pem)
            finding(name, "a public key was accepted as a provider key")
        } catch {
            require(error.kind == .publicKey, name, "a public key was refused with \(error.kind), not publicKey")
        }
    }
}
