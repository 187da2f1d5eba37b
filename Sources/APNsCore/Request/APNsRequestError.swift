/// Why a notification or request could not be built; nothing was sent.
///
/// Match on ``code`` to handle one kind of problem; ``description`` says what is wrong
/// and where (the character position in a device token, the header, the byte count).
///
/// ```swift
/// do {
///     _ = try DeviceToken(hex: "00fc13zz")
/// } catch let error where error.code == .invalidDeviceToken {
///     print(error.position ?? -1)  // 6
/// }
/// ```
public struct APNsRequestError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of problem: an open set, so new kinds can be added without breaking callers.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case invalidDeviceToken
            case invalidTopic
            case invalidPriority
            case invalidExpiration
            case invalidCollapseID
            case invalidAPNsID
            case invalidHeaderValue
            case invalidPayload
            case providerTokenUnavailable
            case environmentMismatch
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A device token that is empty, of odd length or not hexadecimal.
        public static let invalidDeviceToken = Code(.invalidDeviceToken)
        /// An empty topic, or a push type (`mdm`) that needs an explicit topic.
        public static let invalidTopic = Code(.invalidTopic)
        /// A priority the push type does not allow (a `background` push with priority 10 or 1,
        /// a `liveactivity` push with priority 1).
        public static let invalidPriority = Code(.invalidPriority)
        /// An expiration date before 1970.
        public static let invalidExpiration = Code(.invalidExpiration)
        /// A collapse identifier that is empty or longer than 64 bytes of UTF-8.
        public static let invalidCollapseID = Code(.invalidCollapseID)
        /// An `apns-id` that is not a canonical UUID.
        public static let invalidAPNsID = Code(.invalidAPNsID)
        /// A header value containing CR, LF or NUL (header injection), or an empty header name.
        public static let invalidHeaderValue = Code(.invalidHeaderValue)
        /// The payload failed to encode or is too large for its push type.
        public static let invalidPayload = Code(.invalidPayload)
        /// The provider token source threw instead of returning a token.
        public static let providerTokenUnavailable = Code(.providerTokenUnavailable)
        /// The client was given an environment other than its transport's: nothing is
        /// sent (it would go to a host the transport was not set up for).
        public static let environmentMismatch = Code(.environmentMismatch)

        /// A short, stable name for the code, safe for metric labels.
        public var description: String { base.rawValue }
    }

    /// The kind of problem.
    public let code: Code
    /// For a device token, the zero-based position of the offending character (for a
    /// token of odd length, the last one, which has no partner); `nil` otherwise.
    public let position: Int?
    /// The header the problem concerns, such as `apns-collapse-id`; `nil` if none.
    public let header: String?
    /// What is wrong and where, in words.
    public let description: String
    /// For ``Code/invalidPayload`` when the payload could not be encoded: the payload's own
    /// error, to read its key path (`aps.sound.volume`), the size, the limit and the push
    /// type from (see <doc:BuildingPayloads>); for a raw body over its limit, an error of
    /// kind ``APNsPayload/PayloadError/Code/payloadTooLarge`` with the size, the limit and the push
    /// type, as for a payload; `nil` otherwise.
    ///
    /// ```swift
    /// if case .invalid(let problem) = error, let payload = problem.payloadError, payload.code == .payloadTooLarge {
    ///     print("\(payload.size!) bytes, at most \(payload.limit!)")
    /// }
    /// ```
    public let payloadError: PayloadError?

    /// An error of kind `code` saying `description`, about `header` (or the device token's
    /// character at `position`, or the payload's `payloadError`). The SDK makes these; a
    /// test that stands in for the client (behind a protocol of its own) makes one to
    /// script an ``APNsError/invalid(_:)``.
    public init(_ code: Code, header: String? = nil, position: Int? = nil, payloadError: PayloadError? = nil, _ description: String) {
        self.code = code
        self.header = header
        self.position = position
        self.payloadError = payloadError
        self.description = description
    }
}
