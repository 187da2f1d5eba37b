// A small in-process metrics backend for the observability rows: what a real backend
// (Prometheus, OpenTelemetry) does on the hot path — find the series by label and
// dimensions once, then update it atomically — without exporting anything.
import CoreMetrics
import Synchronization

/// Makes one series per (label, dimensions), kept for the run so that totals can be read.
final class RecordingMetricsFactory: MetricsFactory, Sendable {
    private struct SeriesKey: Hashable {
        var label: String
        var dimensions: [String]
    }
    private let counters = Mutex<[SeriesKey: RecordingCounter]>([:])
    private let recorders = Mutex<[SeriesKey: RecordingRecorder]>([:])
    private let timers = Mutex<[SeriesKey: RecordingTimer]>([:])

    private static func key(_ label: String, _ dimensions: [(String, String)]) -> SeriesKey {
        SeriesKey(label: label, dimensions: dimensions.map { $0.0 + "=" + $0.1 })
    }

    /// The series for (label, dimensions) in `table`, made on first use.
    private static func series<Handler: Sendable>(
        in table: borrowing Mutex<[SeriesKey: Handler]>,
        _ label: String,
        _ dimensions: [(String, String)],
        _ make: () -> Handler
    ) -> Handler {
        let key = Self.key(label, dimensions)
        return table.withLock { series in
            if let existing = series[key] { return existing }
            let made = make()
            series[key] = made
            return made
        }
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        Self.series(in: counters, label, dimensions) { RecordingCounter() }
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        Self.series(in: recorders, label, dimensions) { RecordingRecorder() }
    }

    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        Self.series(in: recorders, label, dimensions) { RecordingRecorder() }
    }

    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        Self.series(in: timers, label, dimensions) { RecordingTimer() }
    }

    func destroyCounter(_ handler: any CounterHandler) {}
    func destroyRecorder(_ handler: any RecorderHandler) {}
    func destroyMeter(_ handler: any MeterHandler) {}
    func destroyTimer(_ handler: any TimerHandler) {}

    /// The sum of every counter series named `label`, whatever its dimensions.
    func total(_ label: String) -> Int64 {
        counters.withLock { $0.filter { $0.key.label == label }.values.reduce(0) { $0 + $1.value } }
    }

    /// How many durations the timers named `label` recorded.
    func timings(_ label: String) -> Int64 {
        timers.withLock { $0.filter { $0.key.label == label }.values.reduce(0) { $0 + $1.count } }
    }
}

final class RecordingCounter: CounterHandler, Sendable {
    private let total = Atomic<Int64>(0)
    var value: Int64 { total.load(ordering: .relaxed) }
    func increment(by amount: Int64) { total.wrappingAdd(amount, ordering: .relaxed) }
    func reset() { total.store(0, ordering: .relaxed) }
}

/// A recorder or meter: the last value, and how many were recorded.
final class RecordingRecorder: RecorderHandler, MeterHandler, Sendable {
    private let last = Atomic<Int64>(0)
    private let recorded = Atomic<Int64>(0)
    func record(_ value: Int64) {
        last.store(value, ordering: .relaxed)
        recorded.wrappingAdd(1, ordering: .relaxed)
    }
    func record(_ value: Double) { record(Int64(value)) }
    func set(_ value: Int64) { record(value) }
    func set(_ value: Double) { record(Int64(value)) }
    func increment(by amount: Double) {
        last.wrappingAdd(Int64(amount), ordering: .relaxed)
        recorded.wrappingAdd(1, ordering: .relaxed)
    }
    func decrement(by amount: Double) {
        last.wrappingSubtract(Int64(amount), ordering: .relaxed)
        recorded.wrappingAdd(1, ordering: .relaxed)
    }
}

/// A timer: how many durations, and their sum in nanoseconds.
final class RecordingTimer: TimerHandler, Sendable {
    private let recorded = Atomic<Int64>(0)
    private let nanoseconds = Atomic<Int64>(0)
    var count: Int64 { recorded.load(ordering: .relaxed) }
    func recordNanoseconds(_ duration: Int64) {
        recorded.wrappingAdd(1, ordering: .relaxed)
        nanoseconds.wrappingAdd(duration, ordering: .relaxed)
    }
}
