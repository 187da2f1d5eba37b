// Decoding: JSON bytes back into the typed model, keeping what the SDK does not model.

extension Payload {
    /// Reads a payload from JSON bytes, for forwarding stored payloads or checking what
    /// a server received.
    ///
    /// Uses the SDK's own strict JSON parser. An `alert` object is read as a
    /// ``LiveActivityAlert`` when `aps` has an `event`.
    ///
    /// Decoding then encoding keeps every key and value: keys the SDK does not model are
    /// kept in the `additionalKeys` of ``APS``, ``Alert``, ``LiveActivityAlert``, a
    /// ``Sound/dictionary(name:isCritical:volume:additionalKeys:)`` and a
    /// ``LocalizableText/localized(key:arguments:additionalKeys:)``, and written back; a
    /// flag (`content-available`, `mutable-content`, `input-push-token`,
    /// `content-changed`) written as `0`, `false` or `true` is written back the same way;
    /// a localized text without `loc-args` is written back without it. What is
    /// normalized, exactly:
    /// - The text form: the output is compact, in the SDK's key order, with numbers and
    ///   string escapes written the SDK's way (the same values).
    /// - A key repeated in one object keeps its first position and its last value.
    /// - An empty `aps` beside custom keys is left out.
    /// - `null` for `title-loc-key`, `title-loc-args` or `action-loc-key` (which Apple
    ///   allows) reads as absent and is not written.
    /// - A sound dictionary without `name` reads as name `default` and is written with
    ///   `"name":"default"`. (Its `critical` reads as a flag and, like the `aps` flags, is
    ///   written back as read, `1`, `0`, `true` or `false`, while it agrees with the sound.)
    ///
    /// - Throws: ``PayloadError/Code/invalidJSON`` with the byte offset for bad JSON or a
    ///   top level that is not an object; ``PayloadError/Code/typeMismatch`` with the key
    ///   path when a known key holds the wrong type; ``PayloadError/Code/missingKey`` with
    ///   the key path when a localized Live Activity text (an object) has no `loc-key`.
    public init(jsonBytes: some Collection<UInt8>) throws(PayloadError) {
        let json = try JSONParser.parse(jsonBytes)
        guard case .object(let object) = json else {
            throw .syntax("the payload must be a JSON object, not \(json.typeName)", at: 0)
        }
        try self.init(jsonObject: object)
    }

    /// Reads a payload from a parsed JSON object; see ``init(jsonBytes:)``.
    /// - Throws: ``PayloadError/Code/typeMismatch`` with the key path when a known key holds the wrong type;
    ///   ``PayloadError/Code/missingKey`` when a localized Live Activity text has no `loc-key`.
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
        guard let isSet = value.flagReading else { throw .mismatch(path(), expected: "1 or true", found: value) }
        return isSet
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
            var additionalKeys = JSONObject()
            for (key, member) in object {
                switch key {
                case "name": name = try string(member, path() + ".name")
                case "critical": isCritical = try flag(member, path() + ".critical")
                case "volume": volume = try number(member, path() + ".volume")
                default: additionalKeys.appendUnchecked(key, member)
                }
            }
            return .dictionary(name: name, isCritical: isCritical, volume: volume, additionalKeys: additionalKeys)
        default:
            throw .mismatch(path(), expected: "string or object", found: value)
        }
    }

    /// A sound dictionary's `critical` when it is not the `1` the SDK writes (`true`,
    /// `false`, `0`, …), to be written back as read; `nil` otherwise.
    static func criticalSpelling(of value: JSONValue) -> JSONValue? {
        guard case .object(let object) = value, let critical = object["critical"], critical != 1 else { return nil }
        return critical
    }

    static func localizableText(_ value: JSONValue, _ path: @autoclosure () -> String) throws(PayloadError) -> LocalizableText {
        switch value {
        case .string(let text):
            return .plain(text)
        case .object(let object):
            var key: String?
            var arguments: [String]?
            var additionalKeys = JSONObject()
            for (name, member) in object {
                switch name {
                case "loc-key": key = try string(member, path() + ".loc-key")
                case "loc-args": arguments = try strings(member, path() + ".loc-args")
                default: additionalKeys.appendUnchecked(name, member)
                }
            }
            guard let key else { throw .missing(path() + ".loc-key", "a localized text needs loc-key") }
            return .localized(key: key, arguments: arguments, additionalKeys: additionalKeys)
        default:
            throw .mismatch(path(), expected: "string or object", found: value)
        }
    }
}

extension JSONValue {
    /// How a flag reads: `true` for a non-zero integer or `true`, `false` for `0` or
    /// `false`, `nil` for any other value.
    var flagReading: Bool? {
        switch self {
        case .integer(let i): return i != 0
        case .bool(let b): return b
        default: return nil
        }
    }
}

extension APS {
    init(decoding object: JSONObject) throws(PayloadError) {
        self.init()
        let isLiveActivity = object["event"] != nil
        // Reads a flag and keeps its spelling when it is not the one the SDK writes.
        func readFlag(_ key: String, _ value: JSONValue) throws(PayloadError) -> Bool {
            let isSet = try Read.flag(value, "aps." + key)
            if value != APS.flagCanonicalValues[key] {
                flagSpellings[key] = value
                // In the order the flags are written, not the order they were read: two
                // payloads that write the same bytes compare equal (a fuzz finding).
                var ordered = JSONObject()
                for name in APS.flagOrder { if let spelling = flagSpellings[name] { ordered[name] = spelling } }
                flagSpellings = ordered
            }
            return isSet
        }
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
            case "sound":
                sound = try Read.sound(value, path())
                soundCriticalSpelling = Read.criticalSpelling(of: value)
            case "thread-id": threadID = try Read.string(value, path())
            case "category": category = try Read.string(value, path())
            case "content-available": contentAvailable = try readFlag(key, value)
            case "mutable-content": mutableContent = try readFlag(key, value)
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
            case "input-push-token": inputPushToken = try readFlag(key, value)
            case "input-push-channel": inputPushChannel = try Read.string(value, path())
            case "content-changed": contentChanged = try readFlag(key, value)
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
            case "sound":
                sound = try Read.sound(value, path())
                soundCriticalSpelling = Read.criticalSpelling(of: value)
            default: additionalKeys.appendUnchecked(key, value)
            }
        }
    }
}
