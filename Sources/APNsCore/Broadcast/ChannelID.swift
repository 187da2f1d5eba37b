/// The identifier of a broadcast channel: the base64 string APNs returns in the
/// `apns-channel-id` header when it creates a channel.
///
/// Devices subscribe to a channel with this identifier (ActivityKit, iOS 18); your server
/// sends broadcast pushes and channel management requests with it. It is opaque: keep it
/// exactly as APNs returned it.
///
/// See [Sending channel management requests to APNs](https://developer.apple.com/documentation/usernotifications/sending-channel-management-requests-to-apns).
public struct ChannelID: Sendable, Hashable, CustomStringConvertible, Codable {
    /// The base64 text, exactly as APNs returned it, for example `dHN0LXNyY2gtY2hubA==`.
    public let rawValue: String

    /// Checks that `base64` is standard base64 (RFC 4648 §4: the alphabet `A–Z a–z 0–9 + /`,
    /// a length that is a multiple of 4, at most two `=` and only at the end).
    ///
    /// - Throws: ``APNsRequestError`` with code ``APNsRequestError/Code/invalidHeaderValue``
    ///   and ``APNsRequestError/header`` `apns-channel-id`, saying at which position the
    ///   text stops being base64.
    public init(_ base64: String) throws(APNsRequestError) {
        let bytes = Array(base64.utf8)
        guard !bytes.isEmpty else {
            throw Self.invalid(position: 0, "the channel ID is empty")
        }
        var padding = 0
        for (offset, byte) in bytes.enumerated() {
            if byte == UInt8(ascii: "=") {
                padding += 1
                continue
            }
            guard padding == 0 else {
                throw Self.invalid(
                    position: offset,
                    "the channel ID has '=' padding before offset \(offset); padding may only end it"
                )
            }
            guard Self.isBase64Digit(byte) else {
                throw Self.invalid(
                    position: offset,
                    "the channel ID has a character at UTF-8 offset \(offset) that is not in the base64 alphabet (RFC 4648 §4)"
                )
            }
        }
        guard padding <= 2, padding < bytes.count else {
            throw Self.invalid(
                position: bytes.count - padding,
                "the channel ID ends in \(padding) '=' characters; base64 allows at most 2"
            )
        }
        guard bytes.count % 4 == 0 else {
            throw Self.invalid(
                position: bytes.count,
                "the channel ID is \(bytes.count) characters long; padded base64 is a multiple of 4 (RFC 4648 §4)"
            )
        }
        self.rawValue = base64
    }

    /// The base64 text, ``rawValue``.
    public var description: String { rawValue }

    /// Decodes a channel ID from a JSON string, validating it.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        do {
            try self.init(text)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.description)
        }
    }

    /// Encodes the channel ID as its base64 string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    static func isBase64Digit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"):
            true
        default:
            false
        }
    }

    private static func invalid(position: Int, _ description: String) -> APNsRequestError {
        APNsRequestError(.invalidHeaderValue, header: "apns-channel-id", position: position, description)
    }
}
