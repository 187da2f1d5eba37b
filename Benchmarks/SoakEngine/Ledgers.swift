import APNsMockServer
import Synchronization

/// What the server did with each soak notification, counted from
/// ``MockAPNsServer/observeRequests(_:)``: one byte per notification per counter, so a
/// million notifications cost a few megabytes, allocated once.
final class ArrivalLedger: Sendable {
    struct Counts {
        /// Times the request reached the server (was processed), per notification.
        var arrivals: [UInt8]
        /// Of those, times it was answered 429, 500 or 503: APNs says "not delivered, retry".
        var retryable: [UInt8]
        /// Times it was answered 200.
        var accepted: [UInt8]
        /// Times the connection was dropped at it (never answered).
        var dropped: [UInt8]
        /// Requests whose `apns-id` is not a soak one (should stay 0).
        var foreign = 0
        /// All processed requests, by answer: 200, 410, 429, 500, 503, other, dropped.
        var byAnswer: [String: Int] = [:]
        var total = 0
    }

    let counts: Mutex<Counts>

    init(notifications: Int) {
        let zeros = [UInt8](repeating: 0, count: notifications)
        counts = Mutex(Counts(arrivals: zeros, retryable: zeros, accepted: zeros, dropped: zeros))
    }

    /// Called on the server thread for every processed request.
    func record(_ request: MockAPNsServer.ProcessedRequest) {
        // A batch send gives its notifications random apns-ids: then the device token says which.
        let sequence = SoakIDs.sequence(of: request.apnsID) ?? request.deviceToken.flatMap(SoakIDs.sequence(ofDeviceToken:))
        counts.withLock { counts in
            counts.total += 1
            let answer: String
            switch request.status {
            case nil: answer = "dropped"
            case 200?, 410?, 429?, 500?, 503?: answer = String(request.status!)
            default: answer = "other"
            }
            counts.byAnswer[answer, default: 0] += 1
            guard let sequence, sequence < counts.arrivals.count else {
                counts.foreign += 1
                return
            }
            Self.bump(&counts.arrivals[sequence])
            switch request.status {
            case nil: Self.bump(&counts.dropped[sequence])
            case 200?: Self.bump(&counts.accepted[sequence])
            case 429?, 500?, 503?: Self.bump(&counts.retryable[sequence])
            default: break
            }
        }
    }

    private static func bump(_ value: inout UInt8) {
        if value < .max { value += 1 }
    }

    /// The counters of notification `sequence`: arrivals, retryable answers, 200s, drops.
    func counters(of sequence: Int) -> (arrivals: Int, retryable: Int, accepted: Int, dropped: Int) {
        counts.withLock {
            (Int($0.arrivals[sequence]), Int($0.retryable[sequence]), Int($0.accepted[sequence]), Int($0.dropped[sequence]))
        }
    }
}

/// The client's outcome of each notification, and what is in flight.
final class OutcomeLedger: Sendable {
    /// The outcome of one notification, as `APNsClient` reported it.
    enum Kind: UInt8, CaseIterable {
        case none = 0
        case accepted
        /// Rejected with a "retry later" reason (429, 5xx) after the retries ran out.
        case rejectedRetryable
        /// Rejected with another reason (410 Unregistered for the scripted tokens).
        case rejectedOther
        /// Failed in transport; APNs may have received it.
        case failedMayHaveReached
        /// Failed in transport; APNs certainly did not process it.
        case failedNotReached
        /// Never sent: invalid (should not happen).
        case invalid

        var label: String {
            switch self {
            case .none: "none"
            case .accepted: "accepted"
            case .rejectedRetryable: "rejected (retry later, retries spent)"
            case .rejectedOther: "rejected (other reason)"
            case .failedMayHaveReached: "failed, may have reached APNs"
            case .failedNotReached: "failed, did not reach APNs"
            case .invalid: "invalid"
            }
        }
    }

    struct State {
        var kinds: [UInt8]
        /// Notifications that got a second outcome (must stay 0).
        var secondOutcomes = 0
        /// The notification each worker is sending, or -1.
        var current: [Int]
        /// When each worker started its current notification.
        var startedAt: [ContinuousClock.Instant]
        /// Rejections by `status reason`, failures by `code (mayHaveReachedAPNs)`.
        var details: [String: Int] = [:]
    }

    let state: Mutex<State>
    /// Notifications with an outcome: read by the watchdog and the fault injector.
    let completed = Atomic<Int>(0)
    /// The next notification to send.
    let next = Atomic<Int>(0)

    init(notifications: Int, workers: Int) {
        state = Mutex(State(kinds: [UInt8](repeating: 0, count: notifications),
                            current: [Int](repeating: -1, count: workers),
                            startedAt: [ContinuousClock.Instant](repeating: .now, count: workers)))
    }

    func begin(worker: Int, sequence: Int) {
        state.withLock {
            $0.current[worker] = sequence
            $0.startedAt[worker] = .now
        }
    }

    func finish(worker: Int, sequence: Int, kind: Kind, detail: String?) {
        state.withLock { state in
            if state.kinds[sequence] != 0 { state.secondOutcomes += 1 }
            state.kinds[sequence] = kind.rawValue
            state.current[worker] = -1
            if let detail { state.details[detail, default: 0] += 1 }
        }
        completed.add(1, ordering: .relaxed)
    }
}
