import APNsPayload

/// Keys of Apple's `aps` dictionary and its `alert`, so generated objects often hit the
/// typed model rather than custom data.
let payloadKeys: [String] = [
    "aps", "alert", "title", "subtitle", "body", "badge", "sound", "thread-id", "category",
    "content-available", "mutable-content", "target-content-id", "interruption-level",
    "relevance-score", "filter-criteria", "stale-date", "content-state", "timestamp", "event",
    "dismissal-date", "attributes-type", "attributes", "input-push-channel", "input-push-token",
    "title-loc-key", "title-loc-args", "subtitle-loc-key", "subtitle-loc-args", "loc-key",
    "loc-args", "launch-image", "action-loc-key", "critical", "name", "volume", "url-args",
    "content-changed", "start", "update", "end", "passive", "active", "time-sensitive", "critical",
    "default", "mdm", "container-identifier", "domain",
]

/// Builds a `JSONValue` from fuzz bytes.
func makeValue(_ input: inout FuzzInput, depth: Int, keys: [String] = []) -> JSONValue {
    let tag = input.byte()
    switch Int(tag) % (depth >= 6 ? 5 : 7) {
    case 0: return .null
    case 1: return .bool(tag & 0x80 != 0)
    case 2:
        switch input.int(below: 4) {
        case 0: return .integer(Int64(Int8(bitPattern: input.byte())))
        case 1: return .integer([Int64.min, Int64.max, 0, -1, 1 << 53, (1 << 53) + 1][input.int(below: 6)])
        default: return .integer(Int64(bitPattern: input.uint64()))
        }
    case 3:
        var d: Double
        switch input.int(below: 3) {
        case 0: d = Double(Int8(bitPattern: input.byte())) / 4
        case 1: d = [0.1, -0.0, 5e-324, 1.7976931348623157e308, 1e21, 1e-7, 0.5, 123456789012345678].pick(&input)
        default: d = Double(bitPattern: input.uint64())
        }
        if !d.isFinite { d = 0.25 }
        return .double(d)
    case 4:
        return .string(input.string(dictionary: keys))
    case 5:
        let count = input.int(below: 6)
        return .array((0..<count).map { _ in makeValue(&input, depth: depth + 1, keys: keys) })
    default:
        return .object(makeObject(&input, depth: depth + 1, keys: keys))
    }
}

/// Builds an object from fuzz bytes (keys may repeat; the later value wins, like a literal).
func makeObject(_ input: inout FuzzInput, depth: Int, keys: [String] = [], maxCount: Int = 6) -> JSONObject {
    var object = JSONObject()
    for _ in 0..<input.int(below: maxCount + 1) {
        let key = input.string(dictionary: keys)
        object[key] = makeValue(&input, depth: depth, keys: keys)
    }
    return object
}

extension Array {
    /// An element chosen by the fuzz input.
    func pick(_ input: inout FuzzInput) -> Element { self[input.int(below: count)] }
}

/// Encodes an object through the public API: a payload with only custom keys writes
/// exactly those members (no `aps`).
func encodeObject(_ object: JSONObject) throws(PayloadError) -> [UInt8] {
    try Payload(custom: object).encoded(limit: PayloadLimit(bytes: .max))
}

/// The JSON writer: what it writes always parses, with our parser and Foundation's, to
/// the value written, and writing it again gives the same bytes.
enum JSONWriterTarget {
    static let name = "json-writer"

    static func run(_ data: [UInt8]) {
        var input = FuzzInput(data)
        var object = JSONObject()
        if input.bool() {
            object["v"] = makeValue(&input, depth: 0)
        } else {
            object = makeObject(&input, depth: 0)
            object["aps"] = nil
        }
        guard !object.isEmpty else { return }
        let bytes: [UInt8]
        do {
            bytes = try encodeObject(object)
        } catch {
            finding(name, "a finite value failed to encode: \(error)")
        }
        let parsed: JSONValue
        do {
            parsed = try JSONValue(jsonBytes: bytes)
        } catch {
            finding(name, "our parser refused our writer's output \(String(decoding: bytes, as: UTF8.self)): \(error)")
        }
        require(parsed == .object(object), name, "round trip changed the value: \(object) -> \(String(decoding: bytes, as: UTF8.self)) -> \(parsed)")
        guard case .object(let reparsed) = parsed else { return }
        let again = try? encodeObject(reparsed)
        require(again == bytes, name, "re-encoding is not byte-identical: \(String(decoding: bytes, as: UTF8.self)) vs \(again.map { String(decoding: $0, as: UTF8.self) } ?? "error")")
        guard let foundation = FoundationJSON.parse(bytes) else {
            finding(name, "JSONSerialization refused our output \(String(decoding: bytes, as: UTF8.self))")
        }
        require(FoundationJSON.matches(.object(object), foundation), name, "JSONSerialization read a different value from \(String(decoding: bytes, as: UTF8.self)): \(foundation)")
    }
}

/// The payload model: a payload made from any object either refuses it with a typed
/// error, or encodes to JSON that decodes to the same payload and re-encodes identically.
enum PayloadWriterTarget {
    static let name = "payload-writer"

    static func run(_ data: [UInt8]) {
        var input = FuzzInput(data)
        var object = makeObject(&input, depth: 1, keys: payloadKeys)
        if input.bool() || object["aps"] == nil {
            object["aps"] = .object(makeObject(&input, depth: 2, keys: payloadKeys, maxCount: 10))
        }
        guard let payload = try? Payload(jsonObject: object) else { return }
        let bytes: [UInt8]
        do {
            bytes = try payload.encoded(limit: PayloadLimit(bytes: .max))
        } catch {
            // A decoded payload may still break a rule (for example a badge below zero);
            // the error must say which key.
            require(!error.keyPath.isEmpty || error.kind == .payloadTooLarge, name, "a refusal without a key path: \(error)")
            return
        }
        let decoded: Payload
        do {
            decoded = try Payload(jsonBytes: bytes)
        } catch {
            finding(name, "our encoded payload does not decode: \(String(decoding: bytes, as: UTF8.self)): \(error)")
        }
        require(decoded == payload, name, "decode(encode(p)) != p for \(String(decoding: bytes, as: UTF8.self))")
        let again = try? decoded.encoded(limit: PayloadLimit(bytes: .max))
        require(again == bytes, name, "re-encoding is not byte-identical: \(String(decoding: bytes, as: UTF8.self))")
        require(FoundationJSON.parse(bytes) is [String: Any], name, "JSONSerialization refused our payload \(String(decoding: bytes, as: UTF8.self))")
        for pushType in PushType.documented {
            _ = try? payload.encoded(for: pushType)
        }
        _ = try? payload.encoded(for: .alert, fitting: .truncatingBody)
    }
}

/// The parser on arbitrary bytes: never crashes; a refusal is a `PayloadError` whose
/// offset lies inside the input; anything accepted is JSON Foundation accepts too and
/// re-encodes to JSON that parses back to the same value.
enum JSONParseTarget {
    static let name = "json-parse"

    static func run(_ data: [UInt8]) {
        let value: JSONValue
        do {
            value = try JSONValue(jsonBytes: data)
        } catch {
            require(error.kind == .invalidJSON, name, "unexpected error kind \(error.kind) for invalid JSON")
            guard let offset = error.byteOffset else { finding(name, "an invalidJSON error without a byte offset: \(error)") }
            require(offset >= 0 && offset <= data.count, name, "offset \(offset) outside the \(data.count)-byte input")
            // A payload read of the same bytes must fail the same way.
            do {
                _ = try Payload(jsonBytes: data)
                finding(name, "Payload(jsonBytes:) accepted bytes JSONValue(jsonBytes:) refused")
            } catch {}
            return
        }
        require(FoundationJSON.parse(data) != nil, name, "we accepted JSON that JSONSerialization refuses: \(data)")
        let wrapped: JSONObject = ["v": value]
        guard let bytes = try? encodeObject(wrapped) else {
            finding(name, "an accepted value does not re-encode: \(value)")
        }
        require(FoundationJSON.parse(bytes) != nil, name, "JSONSerialization refused our re-encoding \(String(decoding: bytes, as: UTF8.self))")
        require((try? JSONValue(jsonBytes: bytes)) == .object(wrapped), name, "re-encoding does not parse back to the value")
        if case .object = value {
            do {
                let payload = try Payload(jsonBytes: data)
                if let encoded = try? payload.encoded(limit: PayloadLimit(bytes: .max)) {
                    require((try? Payload(jsonBytes: encoded)) == payload, name, "payload round trip changed \(String(decoding: data, as: UTF8.self))")
                    require(FoundationJSON.parse(encoded) != nil, name, "JSONSerialization refused a re-encoded payload")
                }
            } catch {
                // typeMismatch, or missingKey for a localized text without loc-key (a fuzz
                // finding: the documentation named only typeMismatch).
                require(error.kind == .typeMismatch || error.kind == .missingKey, name, "payload decoding of a JSON object failed with \(error.kind)")
                require(!error.keyPath.isEmpty, name, "a typeMismatch without a key path: \(error)")
            }
        } else {
            do {
                _ = try Payload(jsonBytes: data)
                finding(name, "Payload(jsonBytes:) accepted a non-object")
            } catch {
                require(error.kind == .invalidJSON && error.byteOffset == 0, name, "a non-object payload failed with \(error)")
            }
        }
    }
}
