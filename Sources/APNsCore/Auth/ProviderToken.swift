#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A provider token: the signed JWT that goes in the `authorization` header of every
/// request on a token-based connection, and when it was issued.
///
/// Get one from a ``ProviderTokenSource`` (normally ``ProviderTokenCache``); never make
/// one per request. See Apple's [Establishing a token-based connection to APNs](https://developer.apple.com/documentation/usernotifications/establishing-a-token-based-connection-to-apns).
public struct ProviderToken: Sendable, Hashable {
    /// The compact JWS ([RFC 7515 §7.1](https://www.rfc-editor.org/rfc/rfc7515#section-7.1)):
    /// `header.claims.signature`, each part base64url without padding. A credential: do not
    /// log it.
    public let jwt: String
    /// The `iat` claim: whole seconds since 1970-01-01 UTC.
    public let issuedAt: Date
    /// The `kid` header: the 10-character id of the key that signed the token, or `nil`
    /// when the ``ProviderTokenSource`` that made the token did not say.
    public let keyID: String?
    /// The `iss` claim: the team id the token was issued for, or `nil` when the
    /// ``ProviderTokenSource`` did not say and the JWT's claims do not carry a string `iss`.
    ///
    /// With ``keyID`` it names the key a connection is pinned to: APNs answers
    /// `UnrelatedKeyIdInToken` for a token of an unrelated key on the same connection, so
    /// a transport keeps connections per team and key.
    public let teamID: String?

    /// Wraps an already signed JWT, for ``ProviderTokenSource`` implementations that obtain
    /// tokens elsewhere.
    ///
    /// - Parameters:
    ///   - jwt: The compact JWS.
    ///   - issuedAt: Its `iat` claim.
    ///   - keyID: Its `kid` header, if known; `nil` reads it from the JWT's header.
    ///   - teamID: Its `iss` claim, if known; `nil` reads it from the JWT's claims.
    ///   Both choose the connections the token travels on (one set per key).
    public init(jwt: String, issuedAt: Date, keyID: String? = nil, teamID: String? = nil) {
        self.jwt = jwt
        self.issuedAt = issuedAt
        self.keyID = keyID ?? Self.stringMember("kid", ofPart: 0, of: jwt)
        self.teamID = teamID ?? Self.stringMember("iss", ofPart: 1, of: jwt)
        self.authorizationValue = "bearer " + jwt
        self.authorizationValueIsValid = (try? APNsRequest.checkHeader(HeaderField(name: "authorization", value: authorizationValue))) != nil
    }

    /// `bearer <jwt>`, the value of the `authorization` header: made once per token, not
    /// once per request.
    public let authorizationValue: String

    /// Whether ``authorizationValue`` is a valid header value (checked once, here, so that
    /// the requests that carry it need not scan it again).
    let authorizationValueIsValid: Bool

    /// The string value of `name` in the JSON object of the base64url `part` of `jwt`
    /// (0: header, 1: claims), or `nil`; read once per token, never per request.
    package static func stringMember(_ name: String, ofPart part: Int, of jwt: String) -> String? {
        let parts = jwt.utf8.split(separator: UInt8(ascii: "."), maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count > part, let json = Base64.decode(parts[part]),
            let members = try? JSONDecoder().decode(StringMembers.self, from: Data(json))
        else { return nil }
        return members.values[name]
    }

    /// The members of a JSON object whose values are strings (the others are skipped).
    private struct StringMembers: Decodable {
        struct Key: CodingKey {
            let stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        let values: [String: String]

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Key.self)
            var values: [String: String] = [:]
            for key in container.allKeys {
                if let value = try? container.decode(String.self, forKey: key) { values[key.stringValue] = value }
            }
            self.values = values
        }
    }

    /// Equal when the JWT, the issue time and the key id are.
    public static func == (lhs: ProviderToken, rhs: ProviderToken) -> Bool {
        lhs.jwt == rhs.jwt && lhs.issuedAt == rhs.issuedAt && lhs.keyID == rhs.keyID
    }

    /// Hashes the JWT, the issue time and the key id.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(jwt)
        hasher.combine(issuedAt)
        hasher.combine(keyID)
    }
}

extension ProviderToken: CustomStringConvertible {
    /// The key id and issue time, never the JWT itself (it is a credential).
    public var description: String {
        "ProviderToken(kid: \(keyID ?? "unknown"), iss: \(teamID ?? "unknown"), iat: \(Int64(issuedAt.timeIntervalSince1970)))"
    }
}
