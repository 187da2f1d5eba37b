import Tracing

/// The client's spans (swift-distributed-tracing): one per notification, a child of the
/// caller's `ServiceContext` (or of its batch's span), and one per batch.
///
/// | span | attributes |
/// |---|---|
/// | `APNs notification` (client kind) | `apns.push_type`, `apns.id`, `apns.outcome` (`accepted`, `rejected`, `failed`, `invalid`), `apns.status`, `apns.reason`, `apns.attempts`, `apns.may_have_reached_apns` |
/// | `APNs batch` | `apns.batch.count`, `apns.batch.accepted`, `apns.batch.rejected`, `apns.batch.failed` |
/// | `APNs channel call` (client kind) | `apns.operation` (`broadcast`, `create`, `read`, `list`, `delete`), `apns.request_id`, `apns.outcome`, `apns.status` and `apns.reason` (when refused), `apns.attempts`, `apns.may_have_reached_apns` |
///
/// A failed or rejected notification's span records its error and has the error status.
/// With swift-distributed-tracing's no-op tracer (nothing bootstrapped) no span is made.
struct ClientTracing: Sendable {
    let tracer: any Tracer
    let isEnabled: Bool

    init(tracer: any Tracer) {
        self.tracer = tracer
        self.isEnabled = !(tracer is NoOpTracer)
    }

    /// A notification's span, child of `parent` (the caller's context by default).
    func startNotification(_ pushType: PushType, apnsID: APNsID?, parent: ServiceContext? = nil) -> (any Span)? {
        guard isEnabled else { return nil }
        let span = tracer.startSpan("APNs notification", context: parent ?? ServiceContext.current ?? .topLevel, ofKind: .client)
        // One update per span event: a span's attributes are usually a locked copy-on-write
        // dictionary, so each separate assignment would copy it under the lock.
        span.updateAttributes { attributes in
            attributes["apns.push_type"] = pushType.rawValue
            if let apnsID { attributes["apns.id"] = apnsID.uuidString }
        }
        return span
    }

    /// A broadcast's or channel management call's span, child of the caller's context.
    func startChannelCall(_ operation: String, requestID: APNsRequestID) -> (any Span)? {
        guard isEnabled else { return nil }
        let span = tracer.startSpan("APNs channel call", context: ServiceContext.current ?? .topLevel, ofKind: .client)
        span.updateAttributes { attributes in
            attributes["apns.operation"] = operation
            attributes["apns.request_id"] = requestID.uuidString
        }
        return span
    }

    /// Ends a channel call's span with its outcome (`nil`: it succeeded).
    func endChannelCall(_ span: (any Span)?, _ error: APNsError?, attempts: Int?) {
        guard let span else { return }
        span.updateAttributes { attributes in
            if let attempts { attributes["apns.attempts"] = attempts }
            if error == nil {
                attributes["apns.outcome"] = "accepted"
                attributes["apns.may_have_reached_apns"] = true
            } else if let error {
                Self.record(error, in: &attributes)
            }
        }
        if let error {
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error, message: error.description))
        }
        span.end()
    }

    /// Ends a notification's span with its outcome.
    func end(_ span: (any Span)?, _ outcome: Result<APNsAccepted, APNsError>, attempts: Int?) {
        guard let span else { return }
        span.updateAttributes { attributes in
            if let attempts { attributes["apns.attempts"] = attempts }
            switch outcome {
            case .success(let accepted):
                attributes["apns.outcome"] = "accepted"
                attributes["apns.status"] = 200
                if let id = accepted.apnsID { attributes["apns.id"] = id.uuidString }
                attributes["apns.may_have_reached_apns"] = true
            case .failure(let error):
                Self.record(error, in: &attributes)
            }
        }
        if case .failure(let error) = outcome {
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error, message: error.description))
        }
        span.end()
    }

    /// A failed call's outcome attributes.
    private static func record(_ error: APNsError, in attributes: inout SpanAttributes) {
        switch error {
        case .rejected(let rejection):
            attributes["apns.outcome"] = "rejected"
            attributes["apns.status"] = rejection.status
            attributes["apns.reason"] = rejection.reason?.description ?? "none"
            attributes["apns.may_have_reached_apns"] = true
        case .failed(let failure):
            attributes["apns.outcome"] = "failed"
            attributes["apns.may_have_reached_apns"] = failure.mayHaveReachedAPNs
            if let status = failure.responseStatus { attributes["apns.status"] = status }
        case .invalid:
            attributes["apns.outcome"] = "invalid"
            attributes["apns.may_have_reached_apns"] = false
        }
    }

    /// A batch's span, child of the caller's context; `count` is `nil` for a streamed
    /// batch, whose count is known at its end (``end(_:_:)`` sets it).
    func startBatch(count: Int?) -> (any Span)? {
        guard isEnabled else { return nil }
        let span = tracer.startSpan("APNs batch", context: ServiceContext.current ?? .topLevel, ofKind: .client)
        if let count { span.attributes["apns.batch.count"] = count }
        return span
    }

    /// Ends a batch's span with its counts.
    func end(_ span: (any Span)?, _ summary: APNsBatchSummary) {
        guard let span else { return }
        span.updateAttributes { attributes in
            attributes["apns.batch.count"] = summary.total
            attributes["apns.batch.accepted"] = summary.accepted
            attributes["apns.batch.rejected"] = summary.rejected
            attributes["apns.batch.failed"] = summary.failed
        }
        span.end()
    }
}
