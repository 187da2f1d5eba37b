// CONTRACT STUB — replaced by the APNsPayload implementation. The signatures
// marked CONTRACT are used by APNsCore and must keep their shape.

/// A complete APNs payload: the `aps` dictionary plus custom keys beside it.
public struct Payload: Sendable, Hashable {
    var body: String?
    /// CONTRACT: a simple visible alert.
    public static func alert(title: String? = nil, body: String) -> Payload {
        Payload(body: body)
    }
    /// CONTRACT: encodes to compact JSON, checks the shape rules and the size limit of `pushType`.
    public func encoded(for pushType: PushType) throws(PayloadError) -> [UInt8] {
        try encoded(limit: PayloadLimit(for: pushType))
    }
    /// CONTRACT: encodes to compact JSON and checks `limit`.
    public func encoded(limit: PayloadLimit = .standard) throws(PayloadError) -> [UInt8] {
        Array("{\"aps\":{\"alert\":\"\(body ?? "")\"}}".utf8)
    }
}

/// CONTRACT: the size limit a payload must fit.
public struct PayloadLimit: Sendable, Hashable {
    /// The largest allowed payload, in bytes.
    public var bytes: Int
    /// Creates a limit of `bytes` bytes.
    public init(bytes: Int) { self.bytes = bytes }
    /// CONTRACT: the limit for `pushType`: 5120 bytes for VoIP, 4096 for the others.
    public init(for pushType: PushType) { self = pushType == .voip ? .voip : .standard }
    /// 4096 bytes: every push type but VoIP.
    public static let standard = PayloadLimit(bytes: 4096)
    /// 5120 bytes: VoIP pushes.
    public static let voip = PayloadLimit(bytes: 5120)
    /// 5120 bytes: broadcast (Live Activity channel) pushes.
    public static let broadcast = PayloadLimit(bytes: 5120)
}

/// CONTRACT: why a payload could not be built or encoded.
public struct PayloadError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong.
    public var description: String
}
