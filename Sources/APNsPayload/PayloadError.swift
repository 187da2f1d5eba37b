/// Why a payload could not be built, encoded, fitted or decoded.
///
/// Every error names the rule that was broken and the key path where it happened
/// (`aps.sound.volume`, `custom.media.sizes[2]`; empty for the payload as a whole).
/// Size errors also carry the encoded size, the limit and the push type; JSON syntax
/// errors carry the byte offset.
///
/// ```swift
/// do {
///     let body = try payload.encoded(for: .alert)
/// } catch {
///     if error.code == .payloadTooLarge { print(error.size!, error.limit!) }
/// }
/// ```
public struct PayloadError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A category of payload error. An open set: more kinds may be added.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case payloadTooLarge
            case cannotFit
            case valueOutOfRange
            case nonFiniteNumber
            case reservedKey
            case missingKey
            case conflictingKeys
            case typeMismatch
            case invalidJSON
            case customDataEncodingFailed
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The encoded payload is larger than the limit of its push type
        /// (4096 bytes; 5120 for VoIP and broadcast).
        public static let payloadTooLarge = Code(.payloadTooLarge)
        /// Fitting was asked for, but shortening the alert body cannot make the payload fit.
        public static let cannotFit = Code(.cannotFit)
        /// A number is outside the range Apple allows (volume, relevance score, badge, …).
        public static let valueOutOfRange = Code(.valueOutOfRange)
        /// A double is NaN or infinite; JSON cannot represent it.
        public static let nonFiniteNumber = Code(.nonFiniteNumber)
        /// A custom key is named `aps`, which belongs to Apple.
        public static let reservedKey = Code(.reservedKey)
        /// A key this kind of notification requires is absent.
        public static let missingKey = Code(.missingKey)
        /// Keys that must not appear together do (an alert in a background push, …).
        public static let conflictingKeys = Code(.conflictingKeys)
        /// While decoding, a key holds a value of the wrong JSON type.
        public static let typeMismatch = Code(.typeMismatch)
        /// The bytes are not valid JSON (or not a JSON object).
        public static let invalidJSON = Code(.invalidJSON)
        /// A custom `Encodable` value threw while being encoded.
        public static let customDataEncodingFailed = Code(.customDataEncodingFailed)

        /// A short, stable name (`payloadTooLarge`), safe as a metric label.
        public var description: String { base.rawValue }

        /// The name in words (`payload too large`), as ``PayloadError/description`` starts.
        var phrase: String {
            switch base {
            case .payloadTooLarge: "payload too large"
            case .cannotFit: "cannot fit"
            case .valueOutOfRange: "value out of range"
            case .nonFiniteNumber: "non-finite number"
            case .reservedKey: "reserved key"
            case .missingKey: "missing key"
            case .conflictingKeys: "conflicting keys"
            case .typeMismatch: "type mismatch"
            case .invalidJSON: "invalid JSON"
            case .customDataEncodingFailed: "custom data encoding failed"
            }
        }
    }

    /// What category of error this is.
    public var code: Code
    /// Where the problem is: a dotted key path such as `aps.alert.summary-arg-count`,
    /// with `[n]` for array elements; empty for the whole payload.
    public var keyPath: String
    /// The rule that was broken, in words.
    public var rule: String
    /// For size errors: the encoded size in bytes.
    public var size: Int?
    /// For size errors: the limit in bytes.
    public var limit: Int?
    /// For size errors: the push type whose limit applied, when encoding was for a push type.
    public var pushType: PushType?
    /// For JSON syntax errors: the offset of the offending byte.
    public var byteOffset: Int?

    /// Creates an error; the SDK creates these, tests and mocks may too.
    public init(
        code: Code,
        keyPath: String,
        rule: String,
        size: Int? = nil,
        limit: Int? = nil,
        pushType: PushType? = nil,
        byteOffset: Int? = nil
    ) {
        self.code = code
        self.keyPath = keyPath
        self.rule = rule
        self.size = size
        self.limit = limit
        self.pushType = pushType
        self.byteOffset = byteOffset
    }

    /// For example `payload too large: the payload is 4097 bytes, over the 4096-byte limit for push type alert`.
    public var description: String {
        var text = code.phrase
        if !keyPath.isEmpty { text += " at \(keyPath)" }
        if let byteOffset { text += " at byte \(byteOffset)" }
        text += ": " + rule
        return text
    }
}

extension PayloadError {
    static func tooLarge(size: Int, limit: PayloadLimit, pushType: PushType?) -> PayloadError {
        let forType = pushType.map { " for push type \($0)" } ?? ""
        return PayloadError(
            code: .payloadTooLarge, keyPath: "",
            rule: "the payload is \(size) bytes, over the \(limit.bytes)-byte limit\(forType)",
            size: size, limit: limit.bytes, pushType: pushType)
    }

    static func outOfRange(_ path: String, _ rule: String) -> PayloadError {
        PayloadError(code: .valueOutOfRange, keyPath: path, rule: rule)
    }

    static func missing(_ path: String, _ rule: String) -> PayloadError {
        PayloadError(code: .missingKey, keyPath: path, rule: rule)
    }

    static func conflict(_ path: String, _ rule: String) -> PayloadError {
        PayloadError(code: .conflictingKeys, keyPath: path, rule: rule)
    }

    static func nonFinite(_ path: String) -> PayloadError {
        PayloadError(code: .nonFiniteNumber, keyPath: path, rule: "JSON has no NaN or infinity; use a finite number")
    }

    static func mismatch(_ path: String, expected: String, found: JSONValue) -> PayloadError {
        PayloadError(code: .typeMismatch, keyPath: path, rule: "expected \(expected), found \(found.typeName)")
    }

    static func syntax(_ rule: String, at offset: Int) -> PayloadError {
        PayloadError(code: .invalidJSON, keyPath: "", rule: rule, byteOffset: offset)
    }
}

extension PayloadError {
    /// The former name of ``Code``.
    @available(*, deprecated, renamed: "Code")
    public typealias Kind = Code

    /// The former name of ``code``.
    @available(*, deprecated, renamed: "code")
    public var kind: Code { code }

    /// The former spelling of ``init(code:keyPath:rule:size:limit:pushType:byteOffset:)``.
    @available(*, deprecated, renamed: "init(code:keyPath:rule:size:limit:pushType:byteOffset:)")
    public init(
        kind: Code, keyPath: String, rule: String, size: Int? = nil, limit: Int? = nil,
        pushType: PushType? = nil, byteOffset: Int? = nil
    ) {
        self.init(code: kind, keyPath: keyPath, rule: rule, size: size, limit: limit, pushType: pushType, byteOffset: byteOffset)
    }
}
