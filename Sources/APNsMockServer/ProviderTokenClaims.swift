import Foundation

/// The parts of a provider token (a JWT, [RFC 7519](https://www.rfc-editor.org/rfc/rfc7519))
/// that APNs reads: header `alg` and `kid`, claims `iss` and `iat`.
///
/// See [Establishing a token-based connection to APNs](https://developer.apple.com/documentation/usernotifications/establishing-a-token-based-connection-to-apns).
public struct ProviderTokenClaims: Sendable, Hashable {
    /// The header's `alg`; APNs requires `ES256`.
    public var algorithm: String
    /// The header's `kid`: the 10-character key identifier.
    public var keyID: String
    /// The `iss` claim: the 10-character team identifier.
    public var teamID: String
    /// The `iat` claim, seconds since 1970. APNs requires a JSON integer.
    public var issuedAt: Int64

    /// Reads the header and claims of a compact JWT without checking its signature.
    ///
    /// Returns `nil` unless the token has three base64url parts, the first two decode to
    /// JSON objects, `alg`, `kid` and `iss` are strings and `iat` is an integer (not a string
    /// and not a fraction, the mistake some SDKs make).
    public init?(jwt: String) {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[2].isEmpty,
              let headerData = Self.decodeBase64URL(parts[0]),
              let claimsData = Self.decodeBase64URL(parts[1]),
              let header = try? JSONDecoder().decode(Header.self, from: headerData),
              let claims = try? JSONDecoder().decode(Claims.self, from: claimsData)
        else { return nil }
        self.init(algorithm: header.alg, keyID: header.kid, teamID: claims.iss, issuedAt: claims.iat)
    }

    private struct Header: Decodable {
        var alg: String
        var kid: String
    }

    private struct Claims: Decodable {
        var iss: String
        /// Decoding into an integer type rejects strings, booleans and fractions.
        var iat: Int64
    }

    /// Claims with the given values.
    public init(algorithm: String, keyID: String, teamID: String, issuedAt: Int64) {
        self.algorithm = algorithm
        self.keyID = keyID
        self.teamID = teamID
        self.issuedAt = issuedAt
    }

    static func decodeBase64URL(_ text: Substring) -> Data? {
        guard !text.isEmpty, text.utf8.allSatisfy({ byte in
            (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || (byte >= 0x30 && byte <= 0x39) || byte == 0x2D || byte == 0x5F
        }) else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.utf8.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}
