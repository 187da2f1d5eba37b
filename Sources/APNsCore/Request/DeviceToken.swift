/// The address of one app on one device, as the app received it from
/// `application(_:didRegisterForRemoteNotificationsWithDeviceToken:)`.
///
/// Device tokens are variable-length: most are 32 bytes today, but Apple warns never to
/// hard-code a length, and 80-byte tokens exist. A token is kept as lowercase hexadecimal,
/// the form the request path `/3/device/<token>` needs.
///
/// ``description`` is redacted (the first 8 hexadecimal digits and "…") so that a token
/// printed or logged by accident cannot be used to address a device; use ``hexString``
/// when you need the whole token.
///
/// See [Sending notification requests to APNs](https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns).
public struct DeviceToken: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The whole token as lowercase hexadecimal, as sent in the request path.
    public let hexString: String

    /// Parses a token written in hexadecimal, in either case; the result is lowercase.
    ///
    /// - Throws: ``APNsRequestError`` with code ``APNsRequestError/Code/invalidDeviceToken``
    ///   if `hex` is empty, has an odd number of digits, or holds a character that is not a
    ///   hexadecimal digit (``APNsRequestError/position`` says where).
    public init(hex: String) throws(APNsRequestError) {
        var lowered = [UInt8]()
        lowered.reserveCapacity(hex.utf8.count)
        for byte in hex.utf8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"):
                lowered.append(byte)
            case UInt8(ascii: "A")...UInt8(ascii: "F"):
                lowered.append(byte + 0x20)
            default:
                throw Self.nonHexError(in: hex)
            }
        }
        if lowered.isEmpty {
            throw APNsRequestError(.invalidDeviceToken, position: 0, "device token is empty")
        }
        if lowered.count % 2 != 0 {
            throw APNsRequestError(
                .invalidDeviceToken,
                position: lowered.count - 1,
                "device token has an odd number of hexadecimal digits (\(lowered.count)); "
                    + "the digit at position \(lowered.count - 1) has no pair"
            )
        }
        self.hexString = String(decoding: lowered, as: UTF8.self)
    }

    /// Wraps the token's bytes, as the device delivered them.
    ///
    /// - Throws: ``APNsRequestError`` with code ``APNsRequestError/Code/invalidDeviceToken``
    ///   if `bytes` is empty.
    public init(bytes: some Collection<UInt8>) throws(APNsRequestError) {
        if bytes.isEmpty {
            throw APNsRequestError(.invalidDeviceToken, position: 0, "device token is empty")
        }
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var hex = [UInt8]()
        hex.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            hex.append(digits[Int(byte >> 4)])
            hex.append(digits[Int(byte & 0x0F)])
        }
        self.hexString = String(decoding: hex, as: UTF8.self)
    }

    /// The token's bytes.
    public var bytes: [UInt8] {
        var result = [UInt8]()
        let utf8 = Array(hexString.utf8)
        result.reserveCapacity(utf8.count / 2)
        var index = 0
        while index + 1 < utf8.count {
            result.append(Self.nibble(utf8[index]) << 4 | Self.nibble(utf8[index + 1]))
            index += 2
        }
        return result
    }

    /// The number of bytes in the token (32 for most tokens today; never assume it).
    public var byteCount: Int { hexString.utf8.count / 2 }

    /// A redacted form safe for logs: the first 8 hexadecimal digits followed by "…"
    /// (fewer digits for a token shorter than 8 bytes, never more than half of it).
    public var redacted: String {
        let count = hexString.utf8.count
        let shown = min(8, count / 2)
        return String(hexString.prefix(shown)) + "…"
    }

    /// The redacted form, ``redacted``; never the whole token.
    public var description: String { redacted }

    /// The redacted form, ``redacted``; never the whole token.
    public var debugDescription: String { "DeviceToken(\(redacted), \(byteCount) bytes)" }

    private static func nibble(_ digit: UInt8) -> UInt8 {
        digit <= UInt8(ascii: "9") ? digit - UInt8(ascii: "0") : digit - UInt8(ascii: "a") + 10
    }

    private static func nonHexError(in hex: String) -> APNsRequestError {
        for (position, character) in hex.enumerated() where !character.isHexDigit || !character.isASCII {
            let printable = character.asciiValue.map { $0 > 0x20 && $0 < 0x7F } ?? false
            let shown =
                printable
                ? "'\(character)'"
                : character.unicodeScalars.map { "U+" + String($0.value, radix: 16, uppercase: true) }
                    .joined(separator: " ")
            return APNsRequestError(
                .invalidDeviceToken,
                position: position,
                "device token has a character that is not a hexadecimal digit, \(shown), at position \(position)"
            )
        }
        return APNsRequestError(.invalidDeviceToken, position: 0, "device token is not hexadecimal")
    }
}
