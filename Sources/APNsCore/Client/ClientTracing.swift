import Tracing

/// The client's spans (swift-distributed-tracing): one per notification, a child of the
/// caller's `ServiceContext` (or of its batch's span), and one per batch.
///
/// | span | attributes |
/// |---|---|
/// | `APNs notification` (client kind) | `apns.push_type`, `apns.id`, `apns.outcome` (`accepted`, `rejected`, `failed`, `invalid`), `apns.status`, `apns.reason`, `apns.attempts`, `apns.may_have_reached_apns` |
/// | `APNs batch` | `apns.batch.count`, `apns.batch.accepted`, `apns.batch.rejected`, `apns.batch.failed` |
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
        span.attributes["apns.push_type"] = pushType.rawValue
        if let apnsID { span.attributes["apns.id"] = apnsID.uuidString }
        return span
    }

    /// Ends a notification's span with its outcome.
    func end(_ span: (any Span)?, _ outcome: Result<APNsAccepted, APNsError>, attempts: Int?) {
        guard let span else { return }
        if let attempts { span.attributes["apns.attempts"] = attempts }
        switch outcome {
        case .success(let accepted):
            span.attributes["apns.outcome"] = "accepted"
            span.attributes["apns.status"] = 200
            if let id = accepted.apnsID { span.attributes["apns.id"] = id.uuidString }
            span.attributes["apns.may_have_reached_apns"] = true
        case .failure(let error):
            switch error {
            case .rejected(let rejection):
                span.attributes["apns.outcome"] = "rejected"
                span.attributes["apns.status"] = rejection.status
                span.attributes["apns.reason"] = rejection.reason?.rawValue ?? "none"
                span.attributes["apns.may_have_reached_apns"] = true
            case .failed(let failure):
                span.attributes["apns.outcome"] = "failed"
                span.attributes["apns.may_have_reached_apns"] = failure.mayHaveReachedAPNs
                if let status = failure.responseStatus { span.attributes["apns.status"] = status }
            case .invalid:
                span.attributes["apns.outcome"] = "invalid"
                span.attributes["apns.may_have_reached_apns"] = false
            }
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error, message: error.description))
        }
        span.end()
    }

    /// A batch's span, child of the caller's context.
    func startBatch(count: Int) -> (any Span)? {
        guard isEnabled else { return nil }
        let span = tracer.startSpan("APNs batch", context: ServiceContext.current ?? .topLevel, ofKind: .client)
        span.attributes["apns.batch.count"] = count
        return span
    }

    /// Ends a batch's span with its counts.
    func end(_ span: (any Span)?, _ summary: APNsBatchSummary) {
        guard let span else { return }
        span.attributes["apns.batch.accepted"] = summary.accepted
        span.attributes["apns.batch.rejected"] = summary.rejected
        span.attributes["apns.batch.failed"] = summary.failed
        span.end()
    }
}
