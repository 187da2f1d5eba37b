// Fitting an over-long payload into its limit by shortening the alert body.

extension Payload {
    /// Encodes the payload for `pushType`, shortening the alert body if that is what it
    /// takes to fit the push type's size limit.
    ///
    /// A payload that already fits is encoded unchanged. Otherwise the body loses whole
    /// `Character`s from its end (so an emoji, a flag or a letter with a combining accent
    /// is never split) and gains "…", by exactly as many bytes as the payload is over.
    ///
    /// - Throws: ``PayloadError/Code/cannotFit`` when there is no plain alert body to
    ///   shorten, or when even "…" as the body does not fit; any other error of
    ///   ``encoded(for:)``.
    public func encoded(for pushType: PushType, fitting strategy: FitStrategy) throws(PayloadError) -> [UInt8] {
        try fitted(limit: PayloadLimit(for: pushType), pushType: pushType, strategy: strategy).bytes
    }

    /// Encodes the payload within `limit`, shortening the alert body if needed; see
    /// ``encoded(for:fitting:)``.
    public func encoded(limit: PayloadLimit, fitting strategy: FitStrategy) throws(PayloadError) -> [UInt8] {
        try fitted(limit: limit, pushType: nil, strategy: strategy).bytes
    }

    /// This payload with its alert body shortened so that it fits `pushType`'s limit,
    /// for callers that want to keep or log what was sent.
    ///
    /// - Throws: the errors of ``encoded(for:fitting:)``.
    public func fitted(for pushType: PushType, strategy: FitStrategy = .truncatingBody) throws(PayloadError) -> Payload {
        try fitted(limit: PayloadLimit(for: pushType), pushType: pushType, strategy: strategy).payload
    }

    func fitted(
        limit: PayloadLimit, pushType: PushType?, strategy: FitStrategy
    ) throws(PayloadError) -> (payload: Payload, bytes: [UInt8]) {
        try validate(pushType: pushType)
        var payload = self
        var bytes = try payload.write(for: pushType)
        // One pass normally suffices: escaped lengths add up per character. The loop
        // only guards the arithmetic.
        while bytes.count > limit.bytes {
            let overshoot = bytes.count - limit.bytes
            guard let body = payload.plainBody else {
                throw PayloadError(
                    code: .cannotFit, keyPath: "aps.alert.body",
                    rule: "the payload is \(bytes.count) bytes, over the \(limit.bytes)-byte limit, and has no plain alert body to shorten",
                    size: bytes.count, limit: limit.bytes, pushType: pushType)
            }
            let ellipsis = "…"
            let ellipsisLength = ellipsis.utf8.count
            // Remove the overshoot plus room for the ellipsis; each pass shrinks the
            // payload by at least the overshoot, so the loop ends.
            let needed = overshoot + ellipsisLength
            var removed = 0
            var end = body.endIndex
            while removed < needed && end > body.startIndex {
                let start = body.index(before: end)
                removed += JSONWriter.escapedLength(of: body[start..<end])
                end = start
            }
            guard removed >= needed else {
                let sizeWithoutBody = bytes.count - removed
                throw PayloadError(
                    code: .cannotFit, keyPath: "aps.alert.body",
                    rule: "even with the body shortened to \"…\" the payload is \(sizeWithoutBody + ellipsisLength) bytes, over the \(limit.bytes)-byte limit",
                    size: bytes.count, limit: limit.bytes, pushType: pushType)
            }
            payload.plainBody = String(body[..<end]) + ellipsis
            bytes = try payload.write(for: pushType)
        }
        return (payload, bytes)
    }

    /// The alert body that fitting may shorten: never a localization key.
    var plainBody: String? {
        get {
            if let alert = aps.alert { return alert.body }
            if case .plain(let text)? = aps.liveActivityAlert?.body { return text }
            return nil
        }
        set {
            guard let newValue else { return }
            if aps.alert != nil {
                aps.alert?.body = newValue
            } else if aps.liveActivityAlert != nil {
                aps.liveActivityAlert?.body = .plain(newValue)
            }
        }
    }
}
