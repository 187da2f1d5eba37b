// Encoding: the shape rules, the writer calls in the documented key order, the size limit.

extension Payload {
    /// Encodes the payload as compact JSON for `pushType`, checking the rules every payload
    /// must follow, the shape that push type needs, and its size limit.
    ///
    /// Shape rules by push type: `alert` needs an alert, sound or badge; `background`
    /// needs `content-available` and refuses alert (a Live Activity alert too), sound and
    /// badge; `liveactivity` needs `event` and `timestamp` (and `content-state` to start or
    /// update, and an alert to start); `widgets` and `controls` need `content-changed`;
    /// `fileprovider` needs `container-identifier` and `domain`; `mdm` needs `mdm` and
    /// refuses `aps` keys.
    /// Rules of every payload include: update and end carry no `attributes-type`,
    /// `attributes`, `input-push-token` or `input-push-channel`; a Live Activity alert
    /// needs an `event`; no `additionalKeys` holds a key its type models.
    ///
    /// - Returns: the UTF-8 JSON bytes, at most ``PayloadLimit/init(for:)`` long.
    /// - Throws: ``PayloadError`` naming the key path and the rule; for
    ///   ``PayloadError/Code/payloadTooLarge`` also the size, limit and push type.
    public func encoded(for pushType: PushType) throws(PayloadError) -> [UInt8] {
        try encoded(for: pushType, limit: PayloadLimit(for: pushType))
    }

    /// Encodes the payload for `pushType` with an explicit size limit: for a broadcast
    /// push (push type `liveactivity`, limit ``PayloadLimit/broadcast``).
    ///
    /// - Throws: the errors of ``encoded(for:)``, with `limit` as the size limit.
    public func encoded(for pushType: PushType, limit: PayloadLimit) throws(PayloadError) -> [UInt8] {
        try validate(pushType: pushType)
        let bytes = try write(for: pushType)
        guard bytes.count <= limit.bytes else {
            throw .tooLarge(size: bytes.count, limit: limit, pushType: pushType)
        }
        return bytes
    }

    /// Checks the rules every payload must follow and the shape `pushType` needs, without
    /// encoding; for a server that validates payloads it receives (pair it with a size
    /// check on the received bytes).
    ///
    /// - Throws: ``PayloadError`` naming the key path and the rule.
    public func validate(for pushType: PushType) throws(PayloadError) {
        try validate(pushType: pushType)
    }

    /// Encodes the payload as compact JSON, checking the rules every payload must follow
    /// and `limit` (no push-type shape rules).
    ///
    /// - Throws: ``PayloadError`` naming the key path and the rule; for
    ///   ``PayloadError/Code/payloadTooLarge`` also the size and limit.
    public func encoded(limit: PayloadLimit = .standard) throws(PayloadError) -> [UInt8] {
        try validate(pushType: nil)
        let bytes = try write()
        guard bytes.count <= limit.bytes else {
            throw .tooLarge(size: bytes.count, limit: limit, pushType: nil)
        }
        return bytes
    }

    // MARK: Rules

    /// Checks the rules of every payload, then those of `pushType`.
    func validate(pushType: PushType?) throws(PayloadError) {
        if custom["aps"] != nil {
            throw PayloadError(
                code: .reservedKey, keyPath: "aps",
                rule: "the custom key \"aps\" is reserved for Apple's dictionary; put custom data beside it")
        }
        try aps.validate()
        guard let pushType else { return }
        switch pushType {
        case .alert:
            if !aps.hasAlert && aps.sound == nil && aps.badge == nil {
                if aps.contentChanged {
                    throw .missing(
                        "aps.alert",
                        "push type alert needs an alert, a sound or a badge; a content-changed payload is for push type widgets or controls (Payload.contentChanged(for: .widgets))")
                }
                throw .missing("aps.alert", "push type alert needs an alert, a sound or a badge")
            }
        case .background:
            if !aps.contentAvailable {
                throw .missing("aps.content-available", "push type background needs content-available: 1")
            }
            // A Live Activity alert is written as aps.alert too: it is an alert here.
            let hasAnyAlert = aps.hasAlert || aps.liveActivityAlert != nil
            for (present, key) in [(hasAnyAlert, "alert"), (aps.sound != nil, "sound"), (aps.badge != nil, "badge")]
            where present {
                throw .conflict(
                    "aps.\(key)", "a background push carries no alert, sound or badge; send those with push type alert")
            }
        case .liveactivity:
            if aps.event == nil {
                throw .missing("aps.event", "push type liveactivity needs an event (start, update or end)")
            }
            // Apple's requirements for a payload that starts a Live Activity: event start,
            // attributes-type and attributes (checked for every payload) and an alert, so
            // the person learns that an activity started.
            if aps.event == .start && !aps.hasAlert && aps.liveActivityAlert == nil {
                throw .missing(
                    "aps.alert",
                    "starting a Live Activity needs an alert, so the person is told it started (liveActivityStart(…, alert:))")
            }
        case .widgets, .controls:
            if !aps.contentChanged {
                throw .missing("aps.content-changed", "push type \(pushType) needs content-changed: true")
            }
        case .fileprovider:
            for key in ["container-identifier", "domain"] where custom[key] == nil {
                throw .missing(key, "push type fileprovider needs top-level container-identifier and domain")
            }
        case .mdm:
            if custom["mdm"]?.stringValue == nil {
                throw .missing("mdm", "push type mdm needs the top-level key mdm with the device's push magic")
            }
            if !aps.isEmpty {
                throw .conflict("aps", "an MDM push is {\"mdm\": \"<push magic>\"} only; it carries no aps keys")
            }
        default:
            break
        }
    }

    // MARK: Writing

    /// Writes the JSON for `pushType` (any when `nil`); refuses NaN and infinity with
    /// their key path.
    func write(for pushType: PushType? = nil) throws(PayloadError) -> [UInt8] {
        var writer = JSONWriter(capacity: 512)
        try write(into: &writer, for: pushType)  // on error, the writer's deinit frees its buffer
        return writer.finish()
    }

    /// Push types whose payload has no `aps` dictionary: MDM (`{"mdm": …}`) and File
    /// Provider (`{"container-identifier": …, "domain": …}`), as Apple documents them.
    /// Every other payload has one, empty or not, as APNs asks; VoIP included (PushKit
    /// hands the app the whole dictionary, so an empty `aps` costs the app nothing and
    /// keeps the payload well formed for every validator).
    static let typesWithoutAPS: Set<PushType> = [.mdm, .fileprovider]

    private func write(into writer: inout JSONWriter, for pushType: PushType?) throws(PayloadError) {
        writer.beginObject()
        // An empty aps beside custom keys is left out only where APNs does not ask for it.
        if !aps.isEmpty || custom.isEmpty || pushType.map({ !Self.typesWithoutAPS.contains($0) }) == true {
            writer.key("aps")
            try aps.write(into: &writer)
        }
        try writer.members(custom, under: "")
        writer.endObject()
    }
}

extension APS {
    func validate() throws(PayloadError) {
        if hasAlert {
            try alert?.validate()
            if liveActivityAlert != nil {
                throw .conflict("aps.alert", "set either alert or liveActivityAlert: both are written as aps.alert")
            }
        }
        if let badge, badge < 0 {
            throw .outOfRange("aps.badge", "badge must be 0 or more (0 removes the badge), not \(badge)")
        }
        try sound?.validate(at: "aps.sound")
        if let relevanceScore {
            guard relevanceScore.isFinite else { throw .nonFinite("aps.relevance-score") }
            // A notification's score ranks it in the notification summary (0...1); a Live
            // Activity's is ActivityKit's relevanceScore, any number: the highest one gets
            // the Dynamic Island.
            guard event != nil || (0...1).contains(relevanceScore) else {
                throw .outOfRange("aps.relevance-score", "relevance-score must be in 0...1, not \(relevanceScore) (a Live Activity's, with an event, may be any number)")
            }
        }
        if case .some = liveActivityAlert {
            try liveActivityAlert?.validate()
            if event == nil {
                throw .missing("aps.event", "a Live Activity alert needs an event (start, update or end)")
            }
        }
        if event != nil && timestamp == nil {
            throw .missing("aps.timestamp", "a Live Activity event needs a timestamp (UNIX seconds)")
        }
        // Seconds, not milliseconds: ActivityKit drops an update older than the last one
        // it applied, so a timestamp in milliseconds (a date some 50,000 years ahead)
        // would win over every correct one after it.
        // The same for the other dates, and none is before 1970 (a negative number is no
        // time ActivityKit can mean).
        for (value, key) in [(timestamp, "timestamp"), (staleDate, "stale-date"), (dismissalDate, "dismissal-date")] {
            guard let value else { continue }
            if value >= 100_000_000_000 {
                throw .outOfRange(
                    "aps.\(key)",
                    "\(key) is in seconds since 1970; \(value) is thousands of years ahead (milliseconds? \(value / 1000) seconds)")
            }
            if value < 0 {
                throw .outOfRange("aps.\(key)", "\(key) is in seconds since 1970, not negative (\(value))")
            }
        }
        if event == .start {
            if attributesType == nil {
                throw .missing("aps.attributes-type", "starting a Live Activity needs attributes-type")
            }
            if attributes == nil {
                throw .missing("aps.attributes", "starting a Live Activity needs attributes")
            }
        }
        if let event, event == .update || event == .end {
            // Apple documents these keys for push-to-start only.
            for (present, key) in [
                (attributesType != nil, "attributes-type"), (attributes != nil, "attributes"),
                (inputPushToken, "input-push-token"), (inputPushChannel != nil, "input-push-channel"),
            ] where present {
                throw .conflict("aps.\(key)", "\(key) is only for starting a Live Activity, not for event \(event)")
            }
        }
        if let event, event == .start || event == .update, contentState == nil {
            throw .missing("aps.content-state", "a Live Activity \(event) needs content-state")
        }
        for key in additionalKeys.keys where APS.modelledKeys.contains(key) {
            throw .conflict("aps.\(key)", "\(key) is modelled by APS; set it there, not in additionalKeys")
        }
    }

    func write(into writer: inout JSONWriter) throws(PayloadError) {
        writer.beginObject()
        // Optional chaining borrows the stored value; `if let` would copy the struct.
        if hasAlert {
            writer.key("alert")
            try alert?.write(into: &writer)
        } else if case .some = liveActivityAlert {
            writer.key("alert")
            try liveActivityAlert?.write(into: &writer)
        }
        if let badge {
            writer.key("badge")
            writer.integer(badge)
        }
        if case .some = sound {
            writer.key("sound")
            try sound?.write(into: &writer, at: "aps.sound", criticalSpelling: soundCriticalSpelling)
        }
        if let threadID {
            writer.key("thread-id")
            writer.string(threadID)
        }
        if let category {
            writer.key("category")
            writer.string(category)
        }
        if let value = flag("content-available", contentAvailable) {
            writer.key("content-available")
            writer.flag(value)
        }
        if let value = flag("mutable-content", mutableContent) {
            writer.key("mutable-content")
            writer.flag(value)
        }
        if let targetContentID {
            writer.key("target-content-id")
            writer.string(targetContentID)
        }
        if let interruptionLevel {
            writer.key("interruption-level")
            writer.string(interruptionLevel.rawValue)
        }
        if let relevanceScore {
            writer.key("relevance-score")
            writer.double(relevanceScore)
        }
        if let filterCriteria {
            writer.key("filter-criteria")
            writer.string(filterCriteria)
        }
        if let timestamp {
            writer.key("timestamp")
            writer.integer(timestamp)
        }
        if let event {
            writer.key("event")
            writer.string(event.rawValue)
        }
        if contentState != nil {
            writer.key("content-state")
            try contentState.map { (state) throws(PayloadError) in
                try Self.writeObject(state, at: "aps.content-state", into: &writer)
            }
        }
        if let staleDate {
            writer.key("stale-date")
            writer.integer(staleDate)
        }
        if let dismissalDate {
            writer.key("dismissal-date")
            writer.integer(dismissalDate)
        }
        if let attributesType {
            writer.key("attributes-type")
            writer.string(attributesType)
        }
        if let attributes {
            writer.key("attributes")
            try Self.writeObject(attributes, at: "aps.attributes", into: &writer)
        }
        if let value = flag("input-push-token", inputPushToken) {
            writer.key("input-push-token")
            writer.flag(value)
        }
        if let inputPushChannel {
            writer.key("input-push-channel")
            writer.string(inputPushChannel)
        }
        if let value = flag("content-changed", contentChanged) {
            writer.key("content-changed")
            writer.flag(value)
        }
        if let urlArgs {
            writer.key("url-args")
            writer.strings(urlArgs)
        }
        try writer.members(additionalKeys, under: "aps")
        writer.endObject()
    }

    static func writeObject(_ object: JSONObject, at path: String, into writer: inout JSONWriter) throws(PayloadError) {
        do {
            try writer.object(object)
        } catch {
            throw error.payloadError(under: path)
        }
    }
}

extension Alert {
    func validate() throws(PayloadError) {
        if isPlainText && hasKeysBesideBody {
            throw .conflict("aps.alert", "a plain-text alert carries only a body; turn off isPlainText to send other keys")
        }
        if let summaryArgCount, summaryArgCount < 1 {
            throw .outOfRange("aps.alert.summary-arg-count", "summary-arg-count must be 1 or more, not \(summaryArgCount)")
        }
        if titleLocArgs != nil && titleLocKey == nil {
            throw .missing("aps.alert.title-loc-key", "title-loc-args need a title-loc-key")
        }
        if subtitleLocArgs != nil && subtitleLocKey == nil {
            throw .missing("aps.alert.subtitle-loc-key", "subtitle-loc-args need a subtitle-loc-key")
        }
        if locArgs != nil && locKey == nil {
            throw .missing("aps.alert.loc-key", "loc-args need a loc-key")
        }
        for key in additionalKeys.keys where Alert.modelledKeys.contains(key) {
            throw .conflict("aps.alert.\(key)", "\(key) is modelled by Alert; set it there, not in additionalKeys")
        }
    }

    func write(into writer: inout JSONWriter) throws(PayloadError) {
        if isPlainText {
            writer.string(body ?? "")
            return
        }
        writer.beginObject()
        if let title {
            writer.key("title")
            writer.string(title)
        }
        if let subtitle {
            writer.key("subtitle")
            writer.string(subtitle)
        }
        if let body {
            writer.key("body")
            writer.string(body)
        }
        if let launchImage {
            writer.key("launch-image")
            writer.string(launchImage)
        }
        if let titleLocKey {
            writer.key("title-loc-key")
            writer.string(titleLocKey)
        }
        if let titleLocArgs {
            writer.key("title-loc-args")
            writer.strings(titleLocArgs)
        }
        if let subtitleLocKey {
            writer.key("subtitle-loc-key")
            writer.string(subtitleLocKey)
        }
        if let subtitleLocArgs {
            writer.key("subtitle-loc-args")
            writer.strings(subtitleLocArgs)
        }
        if let locKey {
            writer.key("loc-key")
            writer.string(locKey)
        }
        if let locArgs {
            writer.key("loc-args")
            writer.strings(locArgs)
        }
        if let actionLocKey {
            writer.key("action-loc-key")
            writer.string(actionLocKey)
        }
        if let summaryArg {
            writer.key("summary-arg")
            writer.string(summaryArg)
        }
        if let summaryArgCount {
            writer.key("summary-arg-count")
            writer.integer(summaryArgCount)
        }
        try writer.members(additionalKeys, under: "aps.alert")
        writer.endObject()
    }
}

extension LiveActivityAlert {
    func validate() throws(PayloadError) {
        try title?.validate(at: "aps.alert.title")
        try body?.validate(at: "aps.alert.body")
        try sound?.validate(at: "aps.alert.sound")
        for key in additionalKeys.keys where LiveActivityAlert.modelledKeys.contains(key) {
            throw .conflict(
                "aps.alert.\(key)", "\(key) is modelled by LiveActivityAlert; set it there, not in additionalKeys")
        }
    }

    func write(into writer: inout JSONWriter) throws(PayloadError) {
        writer.beginObject()
        if let title {
            writer.key("title")
            try title.write(into: &writer, at: "aps.alert.title")
        }
        if let body {
            writer.key("body")
            try body.write(into: &writer, at: "aps.alert.body")
        }
        if let sound {
            writer.key("sound")
            try sound.write(into: &writer, at: "aps.alert.sound", criticalSpelling: soundCriticalSpelling)
        }
        try writer.members(additionalKeys, under: "aps.alert")
        writer.endObject()
    }
}

extension LocalizableText {
    func validate(at path: String) throws(PayloadError) {
        guard case .localized(_, _, let additionalKeys) = self else { return }
        for key in additionalKeys.keys where LocalizableText.modelledKeys.contains(key) {
            throw .conflict(path + "." + key, "\(key) is modelled by LocalizableText.localized; set it there, not in additionalKeys")
        }
    }

    func write(into writer: inout JSONWriter, at path: String) throws(PayloadError) {
        switch self {
        case .plain(let text):
            writer.string(text)
        case .localized(let key, let arguments, let additionalKeys):
            writer.beginObject()
            writer.key("loc-key")
            writer.string(key)
            if let arguments {
                writer.key("loc-args")
                writer.strings(arguments)
            }
            try writer.members(additionalKeys, under: path)
            writer.endObject()
        }
    }
}

extension Sound {
    func validate(at path: String) throws(PayloadError) {
        guard case .dictionary(_, _, let volume, let additionalKeys) = self else { return }
        if let volume {
            guard volume.isFinite else { throw .nonFinite(path + ".volume") }
            guard (0...1).contains(volume) else {
                throw .outOfRange(path + ".volume", "volume must be in 0...1, not \(volume)")
            }
        }
        for key in additionalKeys.keys where Sound.modelledKeys.contains(key) {
            throw .conflict(path + "." + key, "\(key) is modelled by Sound.dictionary; set it there, not in additionalKeys")
        }
    }

    /// Writes the sound; a dictionary's `critical` is `criticalSpelling` (what decoding
    /// read: `true`, `false`, `0`) while that agrees with `isCritical`, else `1` when set
    /// and nothing when not.
    func write(into writer: inout JSONWriter, at path: String, criticalSpelling: JSONValue? = nil) throws(PayloadError) {
        switch self {
        case .named(let name):
            writer.string(name)
        case .dictionary(let name, let isCritical, let volume, let additionalKeys):
            writer.beginObject()
            if let criticalSpelling, criticalSpelling.flagReading == isCritical {
                writer.key("critical")
                writer.flag(criticalSpelling)
            } else if isCritical {
                writer.key("critical")
                writer.integer(1)
            }
            writer.key("name")
            writer.string(name)
            if let volume {
                writer.key("volume")
                writer.double(volume)
            }
            try writer.members(additionalKeys, under: path)
            writer.endObject()
        }
    }
}

extension JSONWriter {
    /// Writes a flag's value: an integer or a Boolean (what ``APS/flag(_:_:)`` returns).
    mutating func flag(_ value: JSONValue) {
        switch value {
        case .bool(let b): bool(b)
        case .integer(let i): integer(i)
        default: integer(1)  // never stored: decoding keeps only integers and Booleans
        }
    }

    mutating func strings(_ strings: [String]) {
        beginArray()
        for string in strings { self.string(string) }
        endArray()
    }
}
