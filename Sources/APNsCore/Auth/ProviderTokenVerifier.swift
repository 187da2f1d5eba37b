import APNsOpenSSL
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Checks provider tokens the way APNs does: an ES256 JWT whose `kid` names a registered
/// public key, with an `iss` string and an integer `iat`; when the key was registered with
/// its team id, `iss` must be that team.
///
/// The mock server uses it to accept or refuse the `authorization` header; it is public so
/// that your own test servers can too. It checks the format and the signature
/// ([RFC 7515 §5.2](https://www.rfc-editor.org/rfc/rfc7515#section-5.2)); the age of
/// `iat` is left to the caller, which owns the clock.
///
/// A `.p8` key belongs to one developer team, and APNs refuses a token signed with it
/// whose `iss` names another team (`403 InvalidProviderToken`). Register each key with
/// its team id to get the same check; a key registered without one accepts any `iss`.
///
/// ```swift
/// var verifier = ProviderTokenVerifier()
/// try verifier.register(publicKeyPEM: publicKeyPEM, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
/// let verified = try verifier.verify(jwt)
/// ```
public struct ProviderTokenVerifier: Sendable {
    private struct Registration: Sendable {
        var key: EVPKey
        var teamID: String?
    }

    private var keys: [String: Registration] = [:]

    /// A verifier that knows no keys yet.
    public init() {}

    /// The key ids registered so far.
    public var keyIDs: Set<String> { Set(keys.keys) }

    /// The team id the key registered under `keyID` is bound to; `nil` if no key is
    /// registered under that id, or it was registered without a team id.
    public func teamID(forKeyID keyID: String) -> String? {
        keys[keyID]?.teamID
    }

    /// Registers the public key that verifies tokens whose `kid` is `keyID`, replacing any
    /// key registered before under that id.
    ///
    /// - Parameters:
    ///   - publicKeyPEM: A P-256 `-----BEGIN PUBLIC KEY-----` block (SubjectPublicKeyInfo).
    ///   - keyID: The `kid` the tokens carry.
    ///   - teamID: The team the key belongs to: ``verify(_:)`` then refuses a token whose
    ///     `iss` is any other string with ``ProviderTokenVerificationError/Code/wrongTeamID``,
    ///     as APNs does. `nil` (the default) accepts any `iss`.
    /// - Throws: ``ProviderTokenVerificationError`` with
    ///   ``ProviderTokenVerificationError/Code/invalidPublicKey`` if the PEM holds no P-256
    ///   public key.
    public mutating func register(publicKeyPEM: String, keyID: String, teamID: String? = nil) throws(ProviderTokenVerificationError) {
        let text = PEMBlock.normalize(Array(publicKeyPEM.utf8))
        guard let blocks = try? PEMBlock.parseAll(text),
              let block = blocks.first(where: { $0.label == "PUBLIC KEY" }) else {
            throw ProviderTokenVerificationError(.invalidPublicKey, "the key for kid \(keyID) is not a PEM \"PUBLIC KEY\" block")
        }
        guard let key = EVPKey.publicKey(der: block.der) else {
            throw ProviderTokenVerificationError(.invalidPublicKey, "the PUBLIC KEY for kid \(keyID) cannot be decoded")
        }
        let algorithm = key.algorithm
        guard algorithm.isP256 else {
            throw ProviderTokenVerificationError(.invalidPublicKey, "the PUBLIC KEY for kid \(keyID) is \(algorithm.typeName) \(algorithm.curveName ?? "\(algorithm.bits)-bit"), not EC P-256")
        }
        keys[keyID] = Registration(key: key, teamID: teamID)
    }

    /// Registers the public half of `key` under `keyID`, replacing any key registered
    /// before under that id.
    ///
    /// - Parameters:
    ///   - key: The provider key whose public half verifies the tokens.
    ///   - keyID: The `kid` the tokens carry.
    ///   - teamID: The team the key belongs to: ``verify(_:)`` then refuses a token whose
    ///     `iss` is any other string with ``ProviderTokenVerificationError/Code/wrongTeamID``,
    ///     as APNs does. `nil` (the default) accepts any `iss`.
    public mutating func register(_ key: ProviderKey, keyID: String, teamID: String? = nil) {
        keys[keyID] = Registration(key: key.key, teamID: teamID)
    }

    /// Verifies `jwt` and returns its key id, team id and issue time.
    ///
    /// - Throws: ``ProviderTokenVerificationError``:
    ///   ``ProviderTokenVerificationError/Code/malformed`` (not three base64url parts, JSON
    ///   that is not an object with a string `kid`, a string `iss` and an integer `iat`),
    ///   ``ProviderTokenVerificationError/Code/unsupportedAlgorithm`` (`alg` is not
    ///   `ES256`), ``ProviderTokenVerificationError/Code/unknownKeyID``,
    ///   ``ProviderTokenVerificationError/Code/badSignature`` (including a DER signature in
    ///   place of the 64-byte `r||s`), or ``ProviderTokenVerificationError/Code/wrongTeamID``
    ///   (the key was registered with a team id and `iss` is another).
    public func verify(_ jwt: String) throws(ProviderTokenVerificationError) -> VerifiedProviderToken {
        let bytes = Array(jwt.utf8)
        let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw malformed("a JWT has 3 parts separated by \".\"; this one has \(parts.count)")
        }
        guard let headerJSON = Base64.decode(parts[0]) else {
            throw malformed("the header is not base64url without padding")
        }
        guard let header = try? JSONDecoder().decode(Header.self, from: Data(headerJSON)) else {
            throw malformed("the header is not a JSON object with string \"alg\"")
        }
        guard header.alg == "ES256" else {
            throw ProviderTokenVerificationError(.unsupportedAlgorithm, "the header's alg is \"\(header.alg)\"; APNs provider tokens use ES256")
        }
        guard let keyID = header.kid else {
            throw malformed("the header has no string \"kid\"")
        }
        guard let registration = keys[keyID] else {
            throw ProviderTokenVerificationError(.unknownKeyID, "no public key is registered for kid \"\(keyID)\"")
        }
        guard let signature = Base64.decode(parts[2]) else {
            throw malformed("the signature is not base64url without padding")
        }
        guard signature.count == 2 * ECDSASignature.coordinateLength else {
            throw ProviderTokenVerificationError(.badSignature, "the signature is \(signature.count) bytes; an ES256 signature is the 64-byte r||s, not DER")
        }
        let signingInput = bytes[..<(parts[1].endIndex)]
        guard ES256.verify(signature: signature, signingInput: signingInput, key: registration.key) else {
            throw ProviderTokenVerificationError(.badSignature, "the signature does not verify with the key registered for kid \"\(keyID)\"")
        }
        guard let claimsJSON = Base64.decode(parts[1]) else {
            throw malformed("the claims are not base64url without padding")
        }
        let claims: Claims
        do {
            claims = try JSONDecoder().decode(Claims.self, from: Data(claimsJSON))
        } catch {
            throw malformed("the claims are not a JSON object with a string \"iss\" and an integer \"iat\" (seconds since 1970)")
        }
        if let teamID = registration.teamID, claims.iss != teamID {
            throw ProviderTokenVerificationError(.wrongTeamID, "the token's iss \"\(claims.iss)\" is not \"\(teamID)\", the team id registered with the key for kid \"\(keyID)\"")
        }
        return VerifiedProviderToken(keyID: keyID, teamID: claims.iss, issuedAtSeconds: claims.iat)
    }

    private func malformed(_ detail: String) -> ProviderTokenVerificationError {
        ProviderTokenVerificationError(.malformed, "malformed provider token: " + detail)
    }

    private struct Header: Decodable {
        var alg: String
        var kid: String?
    }

    private struct Claims: Decodable {
        var iss: String
        /// JSONDecoder refuses a string or a fraction here: `"iat":"1437179036"` is
        /// malformed, as it is to APNs.
        var iat: Int64
    }
}
