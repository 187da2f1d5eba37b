/// One HTTP/2 request to APNs, as a transport sends it: method, path, the ordered header
/// list (pseudo-headers first) and the body.
///
/// The type is general on purpose: a device push (`POST /3/device/<token>`), a broadcast
/// push (`POST /4/broadcasts/apps/<bundle ID>` with `apns-channel-id`) and a channel
/// management call (`GET`, `POST` or `DELETE` on `/1/apps/<bundle ID>/channels`, on
/// another host) are all an `APNsRequest`; a transport needs nothing else.
///
/// Every header value is checked once, here: a value containing CR, LF or NUL is refused
/// (header injection), as is one with leading or trailing whitespace (RFC 9113 §8.2.1),
/// whatever built the request.
public struct APNsRequest: Sendable, Hashable {
    /// An HTTP request method.
    public struct Method: Sendable, Hashable, RawRepresentable, CustomStringConvertible {
        /// The method name, for example `POST`.
        public let rawValue: String
        /// A method by name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// `POST`: device and broadcast pushes, creating a channel.
        public static let post = Method(rawValue: "POST")
        /// `GET`: reading channels.
        public static let get = Method(rawValue: "GET")
        /// `DELETE`: deleting a channel.
        public static let delete = Method(rawValue: "DELETE")
        /// The method name.
        public var description: String { rawValue }
    }

    /// The fields, in one immutable object: copying a request (into a queue, a retry, a
    /// record) then costs one reference count, not one per string and array it holds.
    ///
    /// A device push keeps its parts instead of its header strings (``DevicePush``): the
    /// path and the `apns-id` are written from the token's bytes and the id's 128 bits when
    /// the transport writes the header block (``writeHeaders(into:fields:)``), so making
    /// the request costs this one object.
    @usableFromInline
    final class Storage: Sendable {
        @usableFromInline let method: Method
        @usableFromInline let authority: String
        /// The path and every header, for a request that is not a ``DevicePush``.
        let general: (path: String, headers: [HeaderField])?
        /// The parts of a device push, written out on demand.
        let devicePush: DevicePush?
        @usableFromInline let body: [UInt8]
        @usableFromInline let apnsID: APNsID?
        @usableFromInline let deviceToken: DeviceToken?
        @usableFromInline let timeout: Duration
        /// The provider token whose JWT the `authorization` header carries, typed, so the
        /// answer can be matched to the token without reading the header back.
        let providerToken: ProviderToken?
        /// The client certificate the request asks the transport to present, if not the
        /// transport's own.
        let clientCertificate: APNsClientCertificate?
        /// When the client made the first attempt of the call (see ``APNsRequest/startedAt``).
        let startedAt: UInt64

        init(
            method: Method,
            authority: String,
            general: (path: String, headers: [HeaderField])?,
            devicePush: DevicePush?,
            body: [UInt8],
            apnsID: APNsID?,
            deviceToken: DeviceToken?,
            timeout: Duration,
            providerToken: ProviderToken? = nil,
            clientCertificate: APNsClientCertificate? = nil,
            startedAt: UInt64 = 0
        ) {
            self.startedAt = startedAt
            self.providerToken = providerToken
            self.clientCertificate = clientCertificate
            self.method = method
            self.authority = authority
            self.general = general
            self.devicePush = devicePush
            self.body = body
            self.apnsID = apnsID
            self.deviceToken = deviceToken
            self.timeout = timeout
        }
    }

    /// What a device push (`POST /3/device/<token>`) carries besides its token, `apns-id`
    /// and provider token: the `authorization` value when it was given explicitly, and the
    /// notification's fixed headers (shared by every request of the notification).
    struct DevicePush: Sendable {
        /// An `authorization` value given explicitly (checked); otherwise the provider
        /// token's, if any.
        let explicitAuthorization: String?
        /// `apns-topic`, `apns-push-type`, `apns-priority`, then `apns-expiration` and
        /// `apns-collapse-id` when set, checked once per notification.
        let fixedHeaders: [HeaderField]
    }

    @usableFromInline var storage: Storage

    /// When the client made the first attempt of the call this request belongs to, in
    /// ``MonotonicTime`` nanoseconds (0: not made by a client's call): read back when the
    /// attempt fails, so that the retries end by the call's deadline (the first attempt's
    /// start plus ``timeout``). Only the client reads it; a transport does not, so a
    /// request kept and sent again later is not affected. Not part of equality. Kept in
    /// the storage object, so that a request stays one reference wherever it is held (a
    /// transport's per-request state, a task's frame).
    package var startedAt: UInt64 { storage.startedAt }

    /// This request, as the first attempt of a call started at `startedAt` (a copy of
    /// its fields: for the calls that are not notifications; a notification's request is
    /// made with its start).
    package func started(at startedAt: UInt64) -> APNsRequest {
        copy(presenting: storage.clientCertificate, startedAt: startedAt)
    }

    /// The request method.
    @inlinable public var method: Method { storage.method }
    /// The `:scheme`; always `https` for APNs.
    @inlinable public var scheme: String { "https" }
    /// The `:authority`: host, and `:port` unless it is 443.
    @inlinable public var authority: String { storage.authority }
    /// The `:path`, for example `/3/device/<token>`.
    ///
    /// A device push writes it from its token's bytes when asked; the transport writes the
    /// octets into its header buffer instead.
    public var path: String {
        if let general = storage.general { return general.path }
        return storage.deviceToken.map(Self.devicePath(to:)) ?? ""
    }
    /// Every header in the order it is sent: `:method`, `:scheme`, `:path`, `:authority`,
    /// then the regular headers in the order given.
    ///
    /// A device push makes this list when asked (for a mock transport, a test or a log);
    /// the transport writes the same names and values into its header buffer with no
    /// `String` per request.
    public var headers: [HeaderField] {
        if let general = storage.general { return general.headers }
        var all: [HeaderField] = []
        all.reserveCapacity(headerCount)
        var scratch: [UInt8] = []
        var fields: [WrittenHeader] = []
        writeHeaders(into: &scratch, fields: &fields)
        scratch.withUnsafeBufferPointer { bytes in
            for field in fields {
                all.append(
                    HeaderField(
                        name: field.name,
                        value: String(decoding: UnsafeBufferPointer(rebasing: bytes[field.valueStart..<field.valueEnd]), as: UTF8.self)
                    )
                )
            }
        }
        return all
    }
    /// The body: the JSON payload, or empty.
    @inlinable public var body: [UInt8] { storage.body }
    /// The `apns-id` of a device push (reused on every retry); `nil` for requests without one.
    @inlinable public var apnsID: APNsID? { storage.apnsID }
    /// The device token of a device push, for transports and mocks that key on it; `nil` otherwise.
    @inlinable public var deviceToken: DeviceToken? { storage.deviceToken }
    /// How long the transport may take, from the moment it accepts the request (queueing
    /// included) until the response has arrived; it then fails with a timeout.
    @inlinable public var timeout: Duration { storage.timeout }

    /// The default ``timeout``: 30 seconds.
    public static let defaultTimeout: Duration = .seconds(30)

    /// Creates a request, checking every header.
    ///
    /// - Parameters:
    ///   - method: The request method.
    ///   - authority: The `:authority`, usually ``APNsEnvironment/authority``.
    ///   - path: The `:path`.
    ///   - headers: The regular headers (no pseudo-headers), in the order to send them.
    ///   - body: The body.
    ///   - apnsID: The `apns-id`, if the request has one (it should also be in `headers`).
    ///   - deviceToken: The device token, for a device push.
    ///   - timeout: See ``timeout``.
    /// - Throws: ``APNsRequestError`` with code ``APNsRequestError/Code/invalidHeaderValue``
    ///   naming the header if a name is empty, not lowercase, or starts with `:`, or if a
    ///   value (or the path or authority) contains CR, LF or NUL or starts or ends with
    ///   whitespace (RFC 9113 §8.2.1).
    public init(
        method: Method,
        authority: String,
        path: String,
        headers: [HeaderField],
        body: [UInt8],
        apnsID: APNsID? = nil,
        deviceToken: DeviceToken? = nil,
        timeout: Duration = APNsRequest.defaultTimeout
    ) throws(APNsRequestError) {
        var all = try Self.pseudoHeaders(method: method, authority: authority, path: path, reserving: headers.count)
        for field in headers {
            try Self.checkHeader(field)
            all.append(field)
        }
        self.storage = Storage(
            method: method,
            authority: authority,
            general: (path, all),
            devicePush: nil,
            body: body,
            apnsID: apnsID,
            deviceToken: deviceToken,
            timeout: timeout
        )
    }

    /// The pseudo-headers of a request, in order, their values validated, with room for
    /// `count` more headers (`pathIsChecked`: the caller built the path from checked parts,
    /// a device push's hexadecimal token): the start of the array that
    /// ``init(method:authority:path:checkedHeaders:body:apnsID:deviceToken:timeout:providerToken:)``
    /// takes, for a builder that appends its headers to it instead of to an array of its own.
    static func pseudoHeaders(
        method: Method,
        authority: String,
        path: String,
        reserving count: Int,
        pathIsChecked: Bool = false
    ) throws(APNsRequestError) -> [HeaderField] {
        var all = [HeaderField]()
        all.reserveCapacity(count + 4)
        all.append(HeaderField(name: ":method", value: method.rawValue))
        all.append(HeaderField(name: ":scheme", value: "https"))
        all.append(HeaderField(name: ":path", value: path))
        all.append(HeaderField(name: ":authority", value: authority))
        for (index, field) in all.enumerated() where !(pathIsChecked && index == 2) { try check(field) }
        return all
    }

    /// Creates a request from the array of all its headers, already validated: the four
    /// ``pseudoHeaders(method:authority:path:reserving:pathIsChecked:)`` followed by the regular ones,
    /// each validated with ``checkHeader(_:)`` (what the public initializer does).
    init(
        method: Method,
        authority: String,
        path: String,
        checkedHeaders all: [HeaderField],
        body: [UInt8],
        apnsID: APNsID?,
        deviceToken: DeviceToken?,
        timeout: Duration,
        providerToken: ProviderToken? = nil
    ) {
        self.storage = Storage(
            method: method,
            authority: authority,
            general: (path, all),
            devicePush: nil,
            body: body,
            apnsID: apnsID,
            deviceToken: deviceToken,
            timeout: timeout,
            providerToken: providerToken
        )
    }

    /// The provider token the request carries, when the client built it with one (not
    /// part of equality: its JWT is the `authorization` header).
    package var providerToken: ProviderToken? { storage.providerToken }

    /// The client certificate this request asks the transport to present on its
    /// connection, or `nil` for the transport's configured one (see
    /// ``APNsCredentials/clientCertificate(_:)``). Not part of equality.
    public var clientCertificate: APNsClientCertificate? { storage.clientCertificate }

    /// This request, to be sent on a connection that presents `certificate` (choosing
    /// the credential per send); `nil` for the transport's configured one.
    public func presenting(_ certificate: APNsClientCertificate?) -> APNsRequest {
        copy(presenting: certificate, startedAt: storage.startedAt)
    }

    /// Whether the `authorization` header is written from ``providerToken`` (a device push
    /// built with one, not given an explicit value), so that ``carrying(_:)`` can replace it.
    package var providerTokenIsReplaceable: Bool {
        storage.general == nil && storage.providerToken != nil && storage.devicePush.map { $0.explicitAuthorization == nil } == true
    }

    /// This request carrying `token` in its `authorization` header instead of its own, or
    /// `nil` when the header is not the provider token's to replace (a request that is
    /// not a device push, or whose `authorization` was given explicitly).
    ///
    /// For a transport that meets an older token of the same key on a connection that
    /// already carries a newer one: sending the newer one is no token update for APNs.
    package func carrying(_ token: ProviderToken) -> APNsRequest? {
        guard providerTokenIsReplaceable, let push = storage.devicePush else { return nil }
        var copy = self
        copy.storage = Storage(
            method: storage.method,
            authority: storage.authority,
            general: nil,
            devicePush: push,
            body: storage.body,
            apnsID: storage.apnsID,
            deviceToken: storage.deviceToken,
            timeout: storage.timeout,
            providerToken: token,
            clientCertificate: storage.clientCertificate,
            startedAt: storage.startedAt
        )
        return copy
    }

    /// This request with `certificate` and `startedAt` in a new storage object, every
    /// other field the same.
    private func copy(presenting certificate: APNsClientCertificate?, startedAt: UInt64) -> APNsRequest {
        var copy = self
        copy.storage = Storage(
            method: storage.method,
            authority: storage.authority,
            general: storage.general,
            devicePush: storage.devicePush,
            body: storage.body,
            apnsID: storage.apnsID,
            deviceToken: storage.deviceToken,
            timeout: storage.timeout,
            providerToken: storage.providerToken,
            clientCertificate: certificate,
            startedAt: startedAt
        )
        return copy
    }

    /// Two requests are equal when every field is (the same object trivially is).
    public static func == (lhs: APNsRequest, rhs: APNsRequest) -> Bool {
        let a = lhs.storage
        let b = rhs.storage
        return a === b
            || (a.method == b.method && a.authority == b.authority && lhs.path == rhs.path && lhs.headers == rhs.headers
                && a.body == b.body && a.apnsID == b.apnsID && a.deviceToken == b.deviceToken && a.timeout == b.timeout)
    }

    /// Hashes every field, consistently with ``==(_:_:)``.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(storage.method)
        hasher.combine(storage.authority)
        hasher.combine(path)
        hasher.combine(headers)
        hasher.combine(storage.body)
        hasher.combine(storage.apnsID)
        hasher.combine(storage.deviceToken)
        hasher.combine(storage.timeout)
    }

    /// The value of the first header named `name` (lowercase), or `nil`.
    public func header(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }

    /// Whether the request is a device push made from its parts (no header strings).
    package var isDevicePush: Bool { storage.devicePush != nil }

    /// Whether the request is a channel-management call (`/1/apps/…`), whose answer may
    /// list many channels.
    package var isChannelManagement: Bool {
        guard let general = storage.general else { return false }
        return general.path.utf8.starts(with: Self.channelPathPrefix.utf8)
    }

    private static let channelPathPrefix = "/1/"

    /// Validates one regular header as the public initializer does (name, then value).
    static func checkHeader(_ field: HeaderField) throws(APNsRequestError) {
        try checkName(field.name)
        try check(field)
    }

    private static func checkName(_ name: String) throws(APNsRequestError) {
        // Fast path over the contiguous UTF-8 of a native string; the checks below
        // (which also build the error) run only when it is not valid or not contiguous.
        if name.utf8.withContiguousStorageIfAvailable(isValidName) == true { return }
        guard !name.isEmpty, !name.hasPrefix(":"),
            name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && !($0 >= 0x41 && $0 <= 0x5A) && $0 != UInt8(ascii: ":") })
        else {
            throw APNsRequestError(
                .invalidHeaderValue,
                header: name,
                "header name '\(name)' is not a lowercase HTTP/2 field name (RFC 9113 §8.2.1)"
            )
        }
    }

    /// Whether `bytes` is a valid field name: what ``checkName(_:)`` accepts.
    private static func isValidName(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let first = bytes.first, first != UInt8(ascii: ":") else { return false }
        for byte in bytes where byte <= 0x20 || byte >= 0x7F || (byte >= 0x41 && byte <= 0x5A) || byte == UInt8(ascii: ":") {
            return false
        }
        return true
    }

    /// Whether `bytes` is a valid field value: what ``check(_:)`` accepts.
    private static func isValidValue(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        if let first = bytes.first, let last = bytes.last,
            first == 0x20 || first == 0x09 || last == 0x20 || last == 0x09
        {
            return false
        }
        for byte in bytes where byte == 0x0D || byte == 0x0A || byte == 0x00 { return false }
        return true
    }

    /// Validates one value (CR, LF, NUL; whitespace at either end).
    static func check(_ field: HeaderField) throws(APNsRequestError) {
        if field.value.utf8.withContiguousStorageIfAvailable(isValidValue) == true { return }
        let utf8 = field.value.utf8
        if let first = utf8.first, let last = utf8.last,
            first == 0x20 || first == 0x09 || last == 0x20 || last == 0x09
        {
            throw APNsRequestError(
                .invalidHeaderValue,
                header: field.name,
                "the value of \(field.name) starts or ends with whitespace, which HTTP/2 forbids (RFC 9113 §8.2.1)"
            )
        }
        for byte in utf8 where byte == 0x0D || byte == 0x0A || byte == 0x00 {
            let what = byte == 0x0D ? "CR" : byte == 0x0A ? "LF" : "NUL"
            throw APNsRequestError(
                .invalidHeaderValue,
                header: field.name,
                "the value of \(field.name) contains \(what), which HTTP/2 forbids (RFC 9113 §8.2.1)"
            )
        }
    }
}

extension APNsRequest: CustomStringConvertible, CustomReflectable {
    /// The method, the path with the device token redacted, the headers that say what the
    /// request is (`authorization` shown as `bearer <redacted>`: a JWT is a credential)
    /// and the body's size: what a failed test expectation or a log line needs.
    ///
    /// `POST /3/device/00fc13ad… (apns-push-type: alert, apns-topic: com.example.app, apns-id: …, 25-byte body)`
    public var description: String {
        let path = storage.deviceToken.map { "/3/device/\($0)" } ?? self.path
        let fields = headers.compactMap { field -> String? in
            if field.name.hasPrefix(":") { return nil }
            let value = field.name == "authorization" ? "bearer <redacted>" : field.value
            return "\(field.name): \(value)"
        }
        return "\(method) \(path) (\((fields + ["\(body.count)-byte body"]).joined(separator: ", ")))"
    }

    /// What `dump(_:)` and debuggers show: the parts of ``description``, never the JWT or
    /// the whole device token.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "method": method.rawValue,
                "authority": authority,
                "path": storage.deviceToken.map { "/3/device/\($0)" } ?? path,
                "headers": headers.filter { !$0.name.hasPrefix(":") }.map {
                    $0.name == "authorization" ? "authorization: bearer <redacted>" : "\($0.name): \($0.value)"
                },
                "body": "\(body.count) bytes",
                "timeout": timeout,
            ],
            displayStyle: .struct
        )
    }
}
