/// What two device pushes share when their header blocks differ only in the token's
/// hexadecimal digits and the `apns-id`: the method, `:authority`, `authorization`, the
/// notification's fixed headers, the token's length and whether an `apns-id` is sent.
///
/// A transport that keeps the written header block of one device push (its names and
/// values in one buffer, see ``APNsRequest/writeHeaders(into:fields:)``) can send the
/// next request with the same key by overwriting those two values in place
/// (``APNsRequest/writeTemplateValues(tokenDigits:apnsID:)``): the batch of one
/// notification to many devices then writes about 100 octets per request instead of its
/// whole header list.
///
/// An object, made once per template: a connection compares each request with its
/// templates' keys, which is then a reference, not four strings and an array, to copy.
package final class HeaderTemplateKey: Sendable {
    let method: APNsRequest.Method
    let authority: String
    let authorization: String?
    let fixedHeaders: [HeaderField]
    /// The token's length in octets (its digits are twice as many).
    package let tokenByteCount: Int
    /// Whether the block ends with an `apns-id`.
    package let hasAPNsID: Bool

    init(
        method: APNsRequest.Method,
        authority: String,
        authorization: String?,
        fixedHeaders: [HeaderField],
        tokenByteCount: Int,
        hasAPNsID: Bool
    ) {
        self.method = method
        self.authority = authority
        self.authorization = authorization
        self.fixedHeaders = fixedHeaders
        self.tokenByteCount = tokenByteCount
        self.hasAPNsID = hasAPNsID
    }
}

extension APNsRequest {
    /// The key of this request's header block, or `nil` unless it is a device push with
    /// a device token (other requests are written in full every time).
    package var headerTemplateKey: HeaderTemplateKey? {
        guard storage.general == nil, let push = storage.devicePush, let token = storage.deviceToken else { return nil }
        return HeaderTemplateKey(
            method: storage.method,
            authority: storage.authority,
            authorization: push.explicitAuthorization ?? storage.providerToken?.authorizationValue,
            fixedHeaders: push.fixedHeaders,
            tokenByteCount: token.byteCount,
            hasAPNsID: storage.apnsID != nil
        )
    }

    /// Whether this request's header block is `key`'s but for the token's digits and the
    /// `apns-id`. The strings and the fixed headers of one notification's requests share
    /// their storage, so they compare by identity first.
    package func fits(_ key: HeaderTemplateKey) -> Bool {
        guard storage.general == nil, let push = storage.devicePush, let token = storage.deviceToken else { return false }
        return token.byteCount == key.tokenByteCount
            && (storage.apnsID != nil) == key.hasAPNsID
            && storage.method == key.method
            && push.fixedHeaders == key.fixedHeaders
            && storage.authority == key.authority
            && (push.explicitAuthorization ?? storage.providerToken?.authorizationValue) == key.authorization
    }

    /// Writes the values a request that ``fits(_:)`` a template adds to it: the token's
    /// lowercase hexadecimal digits (`2 × tokenByteCount` octets) and the `apns-id`'s
    /// 36 characters, when the key has one.
    package func writeTemplateValues(tokenDigits: UnsafeMutableRawBufferPointer, apnsID: UnsafeMutableRawBufferPointer?) {
        if let token = storage.deviceToken {
            let written = token.writeHex(into: tokenDigits)
            precondition(written == tokenDigits.count, "a token wrote \(written) digits into a template's \(tokenDigits.count)")
        }
        if let apnsID, let id = storage.apnsID {
            let written = id.write(into: apnsID)
            precondition(written == apnsID.count, "an apns-id wrote \(written) octets into a template's \(apnsID.count)")
        }
    }

    /// The length of `/3/device/`, which precedes the token's digits in `:path`.
    package static var devicePathPrefixLength: Int { devicePathPrefix.utf8CodeUnitCount }
}

extension APNsRequest {
    /// Whether the request carries `token` (the same JWT, key ID and team ID), compared
    /// where it is stored, without copying the request's token out.
    package func carries(_ token: ProviderToken) -> Bool {
        storage.providerToken?.isSameCredential(as: token) ?? false
    }
}
