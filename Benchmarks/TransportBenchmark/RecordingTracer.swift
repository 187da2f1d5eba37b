// A small in-process tracer for the observability rows: every span keeps its name,
// attributes, status and events, and ends in the tracer's list of finished spans (what
// a real tracer does before it batches spans for export), without exporting anything.
import Synchronization
import Tracing

final class RecordingTracer: Tracer, Sendable {
    private let finished = Mutex<[RecordedSpan.Record]>([])

    /// The spans ended so far.
    var finishedSpans: [RecordedSpan.Record] { finished.withLock { $0 } }

    func startSpan<Instant: TracerInstant>(
        _ operationName: String,
        context: @autoclosure () -> ServiceContext,
        ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant,
        function: String,
        file fileID: String,
        line: UInt
    ) -> RecordedSpan {
        RecordedSpan(
            operationName: operationName,
            context: context(),
            kind: kind,
            startNanoseconds: instant().nanosecondsSinceEpoch,
            onEnd: { [self] record in finished.withLock { $0.append(record) } }
        )
    }

    func forceFlush() {}

    func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
    where Extract.Carrier == Carrier {}

    func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {}
}

final class RecordedSpan: Span, Sendable {
    /// What a span holds when it ends.
    struct Record: Sendable {
        var operationName: String
        var kind: SpanKind
        var attributes: SpanAttributes
        var status: SpanStatus?
        var events: [SpanEvent]
        var errors: Int
        var startNanoseconds: UInt64
        var endNanoseconds: UInt64
    }

    let context: ServiceContext
    private let state: Mutex<Record>
    private let onEnd: @Sendable (Record) -> Void

    init(operationName: String, context: ServiceContext, kind: SpanKind, startNanoseconds: UInt64, onEnd: @escaping @Sendable (Record) -> Void) {
        self.context = context
        self.onEnd = onEnd
        state = Mutex(
            Record(
                operationName: operationName,
                kind: kind,
                attributes: [:],
                status: nil,
                events: [],
                errors: 0,
                startNanoseconds: startNanoseconds,
                endNanoseconds: 0
            )
        )
    }

    var operationName: String {
        get { state.withLock { $0.operationName } }
        set { state.withLock { $0.operationName = newValue } }
    }

    var attributes: SpanAttributes {
        get { state.withLock { $0.attributes } }
        set { state.withLock { $0.attributes = newValue } }
    }

    var isRecording: Bool { true }

    func setStatus(_ status: SpanStatus) { state.withLock { $0.status = status } }
    func addEvent(_ event: SpanEvent) { state.withLock { $0.events.append(event) } }
    func recordError<Instant: TracerInstant>(_ error: any Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant) {
        state.withLock { $0.errors += 1 }
    }
    func addLink(_ link: SpanLink) {}

    func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) {
        let end = instant().nanosecondsSinceEpoch
        let record = state.withLock { record in
            record.endNanoseconds = end
            return record
        }
        onEnd(record)
    }
}
