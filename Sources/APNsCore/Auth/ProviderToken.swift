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
    public var jwt: String { storage.jwt }
    /// The `iat` claim: whole seconds since 1970-01-01 UTC.
    public var issuedAt: Date { storage.issuedAt }
    /// The `kid` header: the 10-character id of the key that signed the token, or `nil`
    /// when the ``ProviderTokenSource`` that made the token did not say.
    public var keyID: String? { storage.keyID }
    /// The `iss` claim: the team id the token was issued for, or `nil` when the
    /// ``ProviderTokenSource`` did not say and the JWT's claims do not carry a string `iss`.
    ///
    /// With ``keyID`` it names the key a connection is pinned to: APNs answers
    /// `UnrelatedKeyIdInToken` for a token of an unrelated key on the same connection, so
    /// a transport keeps connections per team and key.
    public var teamID: String? { storage.teamID }

    /// `bearer <jwt>`, the value of the `authorization` header: made once per token, not
    /// once per request.
    public var authorizationValue: String { storage.authorizationValue }

    /// Whether ``authorizationValue`` is a valid header value (checked once, here, so that
    /// the requests that carry it need not scan it again).
    var authorizationValueIsValid: Bool { storage.authorizationValueIsValid }

    /// The token's values, made once per token and shared by its copies: a token travels
    /// with every request and every attempt, and copying it is then one reference, not
    /// four strings.
    private final class Storage: Sendable {
        let jwt: String
        let issuedAt: Date
        let keyID: String?
        let teamID: String?
        let authorizationValue: String
        let authorizationValueIsValid: Bool

        init(jwt: String, issuedAt: Date, keyID: String?, teamID: String?) {
            self.jwt = jwt
            self.issuedAt = issuedAt
            self.keyID = keyID
            self.teamID = teamID
            authorizationValue = "bearer " + jwt
            authorizationValueIsValid =
                (try? APNsRequest.checkHeader(HeaderField(name: "authorization", value: authorizationValue))) != nil
        }
    }

    private let storage: Storage

    /// Wraps an already signed JWT, for ``ProviderTokenSource`` implementations that obtain
    /// tokens elsewhere.
    ///
    /// - Parameters:
    ///   - jwt: The compact JWS.
    ///   - issuedAt: Its `iat` claim.
    ///   - keyID: Its `kid` header, for a JWT whose header cannot be read here; the
    ///     JWT's own `kid` wins when it has one.
    ///   - teamID: Its `iss` claim, likewise; the JWT's own `iss` wins.
    ///   Both choose the connections the token travels on (one set per key): APNs binds a
    ///   connection to the key the JWT names, so a value that disagrees with the JWT would
    ///   put the token on another key's connections (answered `UnrelatedKeyIdInToken`,
    ///   which retires that connection).
    public init(jwt: String, issuedAt: Date, keyID: String? = nil, teamID: String? = nil) {
        storage = Storage(
            jwt: jwt,
            issuedAt: issuedAt,
            keyID: Self.stringMember("kid", ofPart: 0, of: jwt) ?? keyID,
            teamID: Self.stringMember("iss", ofPart: 1, of: jwt) ?? teamID
        )
    }

    /// Whether `other` has the same JWT, key ID and team ID: at once when it is a copy of
    /// this token (the case of every request a batch makes with one token).
    func isSameCredential(as other: ProviderToken) -> Bool {
        storage === other.storage || (jwt == other.jwt && keyID == other.keyID && teamID == other.teamID)
    }

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
        lhs.storage === rhs.storage
            || (lhs.jwt == rhs.jwt && lhs.issuedAt == rhs.issuedAt && lhs.keyID == rhs.keyID)
    }

    /// Hashes the JWT, the issue time and the key id.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(jwt)
        hasher.combine(issuedAt)
        hasher.combine(keyID)
    }
}

extension ProviderToken: CustomStringConvertible, CustomReflectable {
    /// The key id and issue time, never the JWT itself (it is a credential).
    public var description: String {
        "ProviderToken(kid: \(keyID ?? "unknown"), iss: \(teamID ?? "unknown"), iat: \(Int64(issuedAt.timeIntervalSince1970)))"
    }

    /// What `dump(_:)` and debuggers show: the key id, team id and issue time, never the JWT.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: ["keyID": keyID ?? "unknown", "teamID": teamID ?? "unknown", "issuedAt": issuedAt],
            displayStyle: .struct
        )
    }
}
