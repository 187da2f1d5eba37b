/// One header as ``APNsRequest/writeHeaders(into:fields:)`` wrote it: its name, and where
/// its name and value octets sit in the buffer.
package struct WrittenHeader: Sendable {
    /// The field name (a literal or the request's own string: no copy is made for it).
    package var name: String
    /// The offset of the name's first octet.
    package var nameStart: Int
    /// The offset of the value's first octet (the name ends here).
    package var valueStart: Int
    /// The offset just past the value.
    package var valueEnd: Int

    /// The value's length in octets.
    package var valueLength: Int { valueEnd - valueStart }
}

extension APNsRequest {
    /// A device push, from checked parts: one object per request, no header strings
    /// (see ``writeHeaders(into:fields:)``).
    ///
    /// - Parameters:
    ///   - authority: The `:authority`, checked by the environment.
    ///   - fixedHeaders: `apns-topic`, `apns-push-type`, `apns-priority`, then
    ///     `apns-expiration` and `apns-collapse-id` when set, each checked.
    ///   - explicitAuthorization: An `authorization` value given by the caller, checked.
    ///   - providerToken: The provider token whose checked value is the `authorization`
    ///     header when no explicit one is given.
    init(
        devicePushTo deviceToken: DeviceToken,
        authority: String,
        fixedHeaders: [HeaderField],
        body: [UInt8],
        apnsID: APNsID,
        explicitAuthorization: String?,
        providerToken: ProviderToken?,
        timeout: Duration,
        startedAt: UInt64 = 0
    ) {
        self.storage = Storage(
            method: .post,
            authority: authority,
            general: nil,
            devicePush: DevicePush(explicitAuthorization: explicitAuthorization, fixedHeaders: fixedHeaders),
            body: body,
            apnsID: apnsID,
            deviceToken: deviceToken,
            timeout: timeout,
            providerToken: providerToken,
            startedAt: startedAt
        )
    }

    /// The number of headers, pseudo-headers included: what ``headers`` would count.
    package var headerCount: Int {
        if let general = storage.general { return general.headers.count }
        guard let push = storage.devicePush else { return 0 }
        return 4 + (authorizationValue(of: push) == nil ? 0 : 1) + push.fixedHeaders.count + (storage.apnsID == nil ? 0 : 1)
    }

    /// The `authorization` value of a device push: the explicit one, or the provider token's.
    private func authorizationValue(of push: DevicePush) -> String? {
        push.explicitAuthorization ?? storage.providerToken?.authorizationValue
    }

    /// The request's `authorization` value, if any, found without building ``headers``
    /// (which a device push writes out, a `String` per header, when asked).
    package var authorization: String? {
        if let general = storage.general {
            return general.headers.first { $0.name == "authorization" }?.value
        }
        return storage.devicePush.flatMap(authorizationValue(of:))
    }

    /// Writes every header's name and value, in the order of ``headers``, into `bytes`, and
    /// where each sits into `fields` (both emptied first; their capacity is kept, so a
    /// transport that reuses them allocates nothing per request).
    ///
    /// A device push writes its `:path` from the token's bytes and its `apns-id` from its
    /// 128 bits straight into `bytes`: the values exist once, in this buffer, which nghttp2
    /// then reads.
    package func writeHeaders(into bytes: inout [UInt8], fields: inout [WrittenHeader]) {
        bytes.removeAll(keepingCapacity: true)
        fields.removeAll(keepingCapacity: true)
        if let general = storage.general {
            for field in general.headers {
                Self.append(field.name, field.value, to: &bytes, fields: &fields)
            }
            return
        }
        guard let push = storage.devicePush else { return }
        Self.append(":method", storage.method.rawValue, to: &bytes, fields: &fields)
        Self.append(":scheme", "https", to: &bytes, fields: &fields)
        if let deviceToken = storage.deviceToken {
            Self.append(":path", count: Self.devicePathPrefix.utf8CodeUnitCount + deviceToken.byteCount * 2, to: &bytes, fields: &fields) {
                Self.writeDevicePath(to: deviceToken, into: $0)
            }
        }
        Self.append(":authority", storage.authority, to: &bytes, fields: &fields)
        if let authorization = authorizationValue(of: push) {
            Self.append("authorization", authorization, to: &bytes, fields: &fields)
        }
        for field in push.fixedHeaders {
            Self.append(field.name, field.value, to: &bytes, fields: &fields)
        }
        if let apnsID = storage.apnsID {
            Self.append("apns-id", count: APNsID.textLength, to: &bytes, fields: &fields) { apnsID.write(into: $0) }
        }
    }

    /// `/3/device/`: the path of a device push before the token's hexadecimal digits.
    static let devicePathPrefix: StaticString = "/3/device/"

    /// `/3/device/<hex>`, written into one string allocation.
    static func devicePath(to deviceToken: DeviceToken) -> String {
        String(unsafeUninitializedCapacity: devicePathPrefix.utf8CodeUnitCount + deviceToken.byteCount * 2) { buffer in
            writeDevicePath(to: deviceToken, into: UnsafeMutableRawBufferPointer(buffer))
        }
    }

    /// Writes `/3/device/<hex>` at the start of `buffer` (which has room for it).
    ///
    /// - Returns: The number of octets written.
    private static func writeDevicePath(to deviceToken: DeviceToken, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let count = devicePathPrefix.utf8CodeUnitCount
        devicePathPrefix.withUTF8Buffer { prefix in
            UnsafeMutableRawBufferPointer(rebasing: buffer[..<count]).copyMemory(from: UnsafeRawBufferPointer(prefix))
        }
        return count + deviceToken.writeHex(into: UnsafeMutableRawBufferPointer(rebasing: buffer[count...]))
    }

    /// Appends a name and a value given as strings (one copy of each one's contiguous
    /// UTF-8; native strings always have it).
    private static func append(_ name: String, _ value: String, to bytes: inout [UInt8], fields: inout [WrittenHeader]) {
        let nameStart = bytes.count
        appendUTF8(of: name, to: &bytes)
        let valueStart = bytes.count
        appendUTF8(of: value, to: &bytes)
        fields.append(WrittenHeader(name: name, nameStart: nameStart, valueStart: valueStart, valueEnd: bytes.count))
    }

    /// Appends a name, then a value of exactly `count` octets that `write` writes in place.
    private static func append(
        _ name: String,
        count: Int,
        to bytes: inout [UInt8],
        fields: inout [WrittenHeader],
        write: (UnsafeMutableRawBufferPointer) -> Int
    ) {
        let nameStart = bytes.count
        appendUTF8(of: name, to: &bytes)
        let valueStart = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: count))
        let written = bytes.withUnsafeMutableBytes { all in
            write(UnsafeMutableRawBufferPointer(rebasing: all[valueStart..<(valueStart + count)]))
        }
        precondition(written == count, "a header value wrote \(written) octets, not \(count)")
        fields.append(WrittenHeader(name: name, nameStart: nameStart, valueStart: valueStart, valueEnd: bytes.count))
    }

    private static func appendUTF8(of string: String, to bytes: inout [UInt8]) {
        if string.utf8.withContiguousStorageIfAvailable({ bytes.append(contentsOf: $0) }) == nil {
            bytes.append(contentsOf: string.utf8)
        }
    }
}
