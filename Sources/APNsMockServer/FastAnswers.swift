#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A connection's fast path: what the last device push accepted on the full path carried
/// (its *shape*), and the checks that let a later request like it be answered `200`
/// without strings, the request handler or the server's lock.
///
/// A request with the same `authorization`, `apns-topic` and `apns-push-type` values (byte
/// for byte) meets the token, topic and push-type rules as that one did, so only what can
/// differ is checked: the rest of ``RequestValidator``'s header rules on the bytes
/// (``judge(_:)``), and the body (``admits(body:)``). The shape is forgotten whenever a
/// request takes the full path (``forget()``) and learnt again from its
/// ``RequestHandler/Reply/acceptedPush`` (``learn(from:body:issuedAt:unshareStreams:)``).
/// One per ``ServerConnection``, used on its loop's thread only.
struct FastAnswers {
    /// Whether a shape is known.
    private(set) var known = false
    /// How many hexadecimal digits a device token may have (the configuration's
    /// ``MockAPNsServer/Configuration/deviceTokenLengths``, doubled).
    var deviceTokenDigits: ClosedRange<Int> = 64...200
    /// Changes whenever the shape is forgotten or learnt: a stream's header verdict
    /// (``ServerConnection/Stream/headersPassed``) holds only for the shape it was judged
    /// against.
    private(set) var generation = 0
    /// The shape's `authorization` value (`nil`: absent), kept by hand so that request
    /// streams can refer to it instead of copying it (see ``RequestFields``); streams get
    /// their own copy before it is freed.
    private(set) var sharedAuthorization: UnsafeMutableBufferPointer<UInt8>?
    private var topic: [UInt8]?
    private var pushType: [UInt8]?
    /// The provider token's `iat`, whose age the connection checks per request (token mode).
    private(set) var issuedAt: Int64?
    private var bodyLimit = 4096
    private var needsAPS = true
    private var background = false
    /// The last body that passed the JSON check with that push type: the same bytes
    /// again need no scan.
    private var body: [UInt8] = []

    /// Forgets the shape (a request took the full path).
    mutating func forget() {
        known = false
        generation &+= 1
    }

    /// Remembers what an accepted device push carried: its `fields` and `body`, and its
    /// provider token's `issuedAt`. `unshareStreams` runs before a changed
    /// `authorization` value is freed, so that streams referring to it copy it in.
    mutating func learn(from fields: RequestFields, body: [UInt8], issuedAt: Int64?, unshareStreams: () -> Void) {
        let authorization = fields.valueBytes(at: fields.authorization)
        let unchanged = authorization.map { new in sharedAuthorization.map { $0.elementsEqual(new) } ?? false }
            ?? (sharedAuthorization == nil)
        if !unchanged {
            if let old = sharedAuthorization {
                unshareStreams()
                old.deallocate()
            }
            sharedAuthorization = authorization.map { bytes in
                let copy = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: bytes.count)
                _ = copy.initialize(from: bytes)
                return copy
            }
        }
        topic = fields.valueBytes(at: fields.topic)
        pushType = fields.valueBytes(at: fields.pushType)
        self.issuedAt = issuedAt
        let type = pushType.map { String(decoding: $0, as: UTF8.self) } ?? "alert"
        bodyLimit = type == "voip" ? 5120 : 4096
        needsAPS = !RequestValidator.typesWithoutAPS.contains(type)
        background = type == "background"
        self.body = body
        known = true
        generation &+= 1
    }

    /// Frees the shared `authorization` bytes (the connection is going away).
    mutating func releaseSharedAuthorization() {
        sharedAuthorization?.deallocate()
        sharedAuthorization = nil
    }

    /// Whether a request's header `fields` may be answered on the fast path: a shape is
    /// known; no field repeats; `authorization`, `apns-topic` and `apns-push-type` are the
    /// shape's; and, on the bytes, the rest of ``RequestValidator``'s header rules hold:
    /// `POST`, the `/3/device/` path and its even run of hex digits of an allowed length, `apns-priority`,
    /// `apns-expiration`, `apns-id` and `apns-collapse-id`.
    func judge(_ fields: RequestFields) -> Bool {
        guard known else { return false }
        let sameAuthorization: Bool
        if let sharedAuthorization {
            // An empty value is never shared (see RequestFields.append): the full path decides.
            guard let base = sharedAuthorization.baseAddress, !sharedAuthorization.isEmpty else { return false }
            sameAuthorization = fields.value(at: fields.authorization, isShared: UnsafePointer(base))
        } else {
            sameAuthorization = fields.authorization < 0
        }
        guard sameAuthorization, !fields.irregular, fields.method >= 0, fields.path >= 0,
              fields.value(at: fields.topic, equals: topic),
              fields.value(at: fields.pushType, equals: pushType)
        else { return false }
        let method = fields.value(at: fields.method)
        guard method.count == 4, memcmp(method.baseAddress!, ("POST" as StaticString).utf8Start, 4) == 0 else { return false }
        let path = fields.value(at: fields.path)
        let prefix: StaticString = "/3/device/"
        let tokenLength = path.count - prefix.utf8CodeUnitCount
        guard tokenLength > 0, tokenLength % 2 == 0, deviceTokenDigits.contains(tokenLength), memcmp(path.baseAddress!, prefix.utf8Start, prefix.utf8CodeUnitCount) == 0,
              RequestValidator.areHexDigits(UnsafeBufferPointer(rebasing: path[prefix.utf8CodeUnitCount...]))
        else { return false }
        if fields.priority >= 0 {
            let priority = fields.value(at: fields.priority)
            switch priority.count {
            case 1: guard priority[0] == UInt8(ascii: "5") || priority[0] == UInt8(ascii: "1") else { return false }
            case 2: guard priority[0] == UInt8(ascii: "1"), priority[1] == UInt8(ascii: "0"), !background else { return false }
            default: return false
            }
        } else if background {
            return false  // no header means 10, a BadPriority for a background push
        }
        if fields.expiration >= 0 {
            let expiration = fields.value(at: fields.expiration)
            guard !expiration.isEmpty, expiration.count <= 18, expiration.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
                return false
            }
        }
        if fields.collapseID >= 0 {
            // ASCII only: then the bytes are the UTF-8 the validator counts.
            let collapseID = fields.value(at: fields.collapseID)
            guard collapseID.count <= 64, collapseID.allSatisfy({ $0 < 0x80 }) else { return false }
        }
        if fields.apnsID >= 0 {
            guard RequestValidator.isCanonicalUUID(bytes: fields.value(at: fields.apnsID)) else { return false }
        }
        return true
    }

    /// Whether a request `body` may be answered on the fast path: not empty, within the
    /// push type's size, and one JSON object with `aps` where the push type needs it
    /// (the shape's last body again needs no scan; another that passes becomes it).
    mutating func admits(body candidate: UnsafeBufferPointer<UInt8>) -> Bool {
        guard !candidate.isEmpty, candidate.count <= bodyLimit else { return false }
        let same = candidate.count == body.count
            && body.withUnsafeBufferPointer { memcmp(candidate.baseAddress!, $0.baseAddress!, candidate.count) == 0 }
        if !same {
            let bytes = Array(candidate)
            guard let hasAPS = JSONObjectScanner.object(bytes, hasTopLevelKey: "aps"), hasAPS || !needsAPS else { return false }
            body = bytes
        }
        return true
    }
}
