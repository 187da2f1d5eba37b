// Decoding: JSON bytes back into the typed model, keeping what the SDK does not model.

extension Payload {
    /// Reads a payload from JSON bytes, for forwarding stored payloads or checking what
    /// a server received.
    ///
    /// Uses the SDK's own strict JSON parser. Keys of `aps` and `alert` that the SDK does
    /// not model are kept in ``APS/additionalKeys`` and ``Alert/additionalKeys`` and
    /// written back, so decoding then encoding loses nothing. An `alert` is read as a
    /// ``LiveActivityAlert`` when `aps` has an `event`.
    ///
    /// - Throws: ``PayloadError/Kind/invalidJSON`` with the byte offset for bad JSON or a
    ///   top level that is not an object; ``PayloadError/Kind/typeMismatch`` with the key
    ///   path when a known key holds the wrong type; ``PayloadError/Kind/missingKey`` with
    ///   the key path when a localized Live Activity text (an object) has no `loc-key`.
    public init(jsonBytes: some Collection<UInt8>) throws(PayloadError) {
        let json = try JSONParser.parse(jsonBytes)
        guard case .object(let object) = json else {
            throw .syntax("the payload must be a JSON object, not \(json.typeName)", at: 0)
        }
        try self.init(jsonObject: object)
    }

    /// Reads a payload from a parsed JSON object; see ``init(jsonBytes:)``.
    /// - Throws: ``PayloadError/Kind/typeMismatch`` with the key path when a known key holds the wrong type;
    ///   ``PayloadError/Kind/missingKey`` when a localized Live Activity text has no `loc-key`.
    public init(jsonObject object: JSONObject) throws(PayloadError) {
        self.init()
        for (key, value) in object {
            if key == "aps" {
                guard case .object(let apsObject) = value else {
                    throw .mismatch("aps", expected: "object", found: value)
                }
                aps = try APS(decoding: apsObject)
            } else {
                custom.appendUnchecked(key, value)
            }
        }
    }
}

/// Typed reads of decoded values, each naming its key path on failure.
private enum Read {
    static func string(_ value: JSONValue, _ path: @autoclosure () -> String) throws(PayloadError) -> String {
        guard case .string(let s) = value else { throw .mismatch(path(), expected: "string", found: value) }
        return s
    }

    static func strings(_ value: JSONValue, _ path: @autoclosure () -> String) throws(PayloadError) -> [String] {
        guard case .array(let elements) = value else { throw .mismatch(path(), expected: "array of strings", found: value) }
        var strings: [String] = []
        strings.reserveCapacity(elements.count)
        for index in elements.indices {
            strings.append(try string(elements[index], "\(path())[\(index)]"))
        }
        return strings
    }

    static func int(_ value: JSONValue, _ path: @autoclosure () -> String) throws(PayloadError) -> Int {
        guard case .integer(let i) = value, let int = Int(exactly: i) else {
            throw .mismatch(path(), expected: "integer", found: value)
        }
        return int
    }

    static func number(_ value: JSONValue, _ path: @autoclosure () -> String) throws(PayloadError) -> Double {
        guard let d = value.doubleValue else { throw .mismatch(path(), expected: "number", found: value) }
        return d
    }

    /// `1` (or `true`) is set; `0` (or `false`) is not.
    static func flag(_ value: JSONValue, _ path: @autoclosure () -> String) throws(PayloadError) -> Bool {
        switch value {
        case .integer(let i): return i != 0
        case .bool(let b): return b
        default: throw .mismatch(path(), expected: "1 or true", found: value)
        }
    }

    static func object(_ value: JSONValue, _ path: @autoclosure () -> String) throws(PayloadError) -> JSONObject {
        guard case .object(let o) = value else { throw .mismatch(path(), expected: "object", found: value) }
        return o
    }

    static func sound(_ value: JSONValue, _ path: @autoclosure () -> String) throws(PayloadError) -> Sound {
        switch value {
        case .string(let name):
            return .named(name)
        case .object(let object):
            var name = "default"
            var isCritical = false
            var volume: Double?
            for (key, member) in object {
                switch key {
                case "name": name = try string(member, path() + ".name")
                case "critical": isCritical = try flag(member, path() + ".critical")
                case "volume": volume = try number(member, path() + ".volume")
                default: break
                }
            }
            return .dictionary(name: name, isCritical: isCritical, volume: volume)
        default:
            throw .mismatch(path(), expected: "string or object", found: value)
        }
    }

    static func localizableText(_ value: JSONValue, _ path: @autoclosure () -> String) throws(PayloadError) -> LocalizableText {
        switch value {
        case .string(let text):
            return .plain(text)
        case .object(let object):
            guard let key = object["loc-key"] else {
                throw .missing(path() + ".loc-key", "a localized text needs loc-key")
            }
            let arguments = try object["loc-args"].map { (v: JSONValue) throws(PayloadError) in
                try strings(v, path() + ".loc-args")
            }
            return .localized(key: try string(key, path() + ".loc-key"), arguments: arguments ?? [])
        default:
            throw .mismatch(path(), expected: "string or object", found: value)
        }
    }
}

extension APS {
    init(decoding object: JSONObject) throws(PayloadError) {
        self.init()
        let isLiveActivity = object["event"] != nil
        for (key, value) in object {
            func path() -> String { "aps." + key }
            switch key {
            case "alert":
                if isLiveActivity, case .object(let alertObject) = value {
                    liveActivityAlert = try LiveActivityAlert(decoding: alertObject)
                } else if case .string(let text) = value {
                    alert = .text(text)
                } else {
                    alert = try Alert(decoding: try Read.object(value, path()))
                }
            case "badge": badge = try Read.int(value, path())
            case "sound": sound = try Read.sound(value, path())
            case "thread-id": threadID = try Read.string(value, path())
            case "category": category = try Read.string(value, path())
            case "content-available": contentAvailable = try Read.flag(value, path())
            case "mutable-content": mutableContent = try Read.flag(value, path())
            case "target-content-id": targetContentID = try Read.string(value, path())
            case "interruption-level": interruptionLevel = InterruptionLevel(rawValue: try Read.string(value, path()))
            case "relevance-score": relevanceScore = try Read.number(value, path())
            case "filter-criteria": filterCriteria = try Read.string(value, path())
            case "timestamp": timestamp = try Read.int(value, path())
            case "event": event = LiveActivityEvent(rawValue: try Read.string(value, path()))
            case "content-state": contentState = try Read.object(value, path())
            case "stale-date": staleDate = try Read.int(value, path())
            case "dismissal-date": dismissalDate = try Read.int(value, path())
            case "attributes-type": attributesType = try Read.string(value, path())
            case "attributes": attributes = try Read.object(value, path())
            case "input-push-token": inputPushToken = try Read.flag(value, path())
            case "input-push-channel": inputPushChannel = try Read.string(value, path())
            case "content-changed": contentChanged = try Read.flag(value, path())
            case "url-args": urlArgs = try Read.strings(value, path())
            default: additionalKeys.appendUnchecked(key, value)
            }
        }
    }
}

extension Alert {
    init(decoding object: JSONObject) throws(PayloadError) {
        self.init()
        for (key, value) in object {
            func path() -> String { "aps.alert." + key }
            switch key {
            case "title": title = try Read.string(value, path())
            case "subtitle": subtitle = try Read.string(value, path())
            case "body": body = try Read.string(value, path())
            case "launch-image": launchImage = try Read.string(value, path())
            // Apple documents null as allowed for these three; null reads as absent.
            case "title-loc-key": titleLocKey = value == .null ? nil : try Read.string(value, path())
            case "title-loc-args": titleLocArgs = value == .null ? nil : try Read.strings(value, path())
            case "subtitle-loc-key": subtitleLocKey = try Read.string(value, path())
            case "subtitle-loc-args": subtitleLocArgs = try Read.strings(value, path())
            case "loc-key": locKey = try Read.string(value, path())
            case "loc-args": locArgs = try Read.strings(value, path())
            case "action-loc-key": actionLocKey = value == .null ? nil : try Read.string(value, path())
            case "summary-arg": summaryArg = try Read.string(value, path())
            case "summary-arg-count": summaryArgCount = try Read.int(value, path())
            default: additionalKeys.appendUnchecked(key, value)
            }
        }
    }
}

extension LiveActivityAlert {
    init(decoding object: JSONObject) throws(PayloadError) {
        self.init()
        for (key, value) in object {
            func path() -> String { "aps.alert." + key }
            switch key {
            case "title": title = try Read.localizableText(value, path())
            case "body": body = try Read.localizableText(value, path())
            case "sound": sound = try Read.sound(value, path())
            default: additionalKeys.appendUnchecked(key, value)
            }
        }
    }
}
