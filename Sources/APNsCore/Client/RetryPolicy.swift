#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Which failures ``APNsClient`` sends again, how often and after what delay.
///
/// Following Apple's guidance, the client retries:
/// - rejections whose ``APNsRejection/remedy`` is ``APNsRemedy/retryLater`` (429
///   TooManyRequests, 500, 503, IdleTimeout), after an exponential backoff with jitter;
/// - transport failures that certainly did not reach APNs
///   (``APNsTransportError/mayHaveReachedAPNs`` is `false`: connect failed, GOAWAY above
///   the last-stream-id, REFUSED_STREAM, queue full), except shutdown, cancellation and
///   timeouts: a request that timed out, even one never sent (it waited in the queue, or
///   the server's window held its body back), has spent the time it was given, and a
///   retry would wait as long again on the same cause; and failures that sending again
///   cannot fix (``APNsTransportError/isPermanent``: a refused client certificate, a
///   proxy that refused the credentials);
/// - `ExpiredProviderToken`, once, at once, after invalidating the token (this extra
///   attempt is not counted in ``maxAttempts``).
///
/// It never retries anything else: not BadDeviceToken, DeviceTokenNotForTopic, Forbidden,
/// ExpiredToken, Unregistered or PayloadTooLarge, and not a failure that may have reached
/// APNs unless ``retriesFailuresThatMayHaveReachedAPNs`` is set (a retry could then deliver
/// the notification twice). Every retry reuses the notification's `apns-id`. A timeout
/// is not retried even then: an attempt times out only when the call's one deadline has
/// passed, so no time is left for another (a custom transport that times out earlier
/// than the deadline it is given has its timeouts retried under that setting).
///
/// The delay before retry *n* (1, 2, …) is drawn uniformly from `[d/2, d]`, where
/// `d = min(maxDelay, baseDelay × 2^(n-1))` ("equal jitter").
///
/// Every attempt of a call ends by one deadline: the first attempt's start plus
/// ``APNsClient/requestTimeout``. A retry is made only when, after its delay, as much time
/// is left as the attempt before it took (the outcome is otherwise the last attempt's
/// error or answer, its detail saying why it was not sent again), and a retry that is made
/// has only the time left, so a send takes about one request timeout at most, not one per
/// attempt (an endpoint that hangs until the connect timeout would otherwise cost
/// attempts × the connect timeout). The array batches retry after their first pass over
/// every notification: that wait does not count.
///
/// If the calling task is cancelled while the client waits to retry, nothing more is sent
/// and the outcome is what the last attempt ended in: APNs' answer (a 503 stays a
/// ``APNsError/rejected(_:)``: it is what happened, and nothing was delivered) or that
/// attempt's ``APNsTransportError``, its ``APNsRejection/detail`` or
/// ``APNsTransportError/detail`` saying it was not sent again. Every form of sending
/// (single, batch, streamed batch, broadcast) ends the same way.
public struct RetryPolicy: Sendable, Hashable {
    /// The most attempts per notification, the first included; 1 disables retries.
    public var maxAttempts: Int
    /// The delay bound before the first retry.
    public var baseDelay: Duration
    /// The largest delay bound.
    public var maxDelay: Duration
    /// Whether to retry transport failures that may have reached APNs (closed connections,
    /// reset streams), accepting that a notification may arrive twice. A timeout ends the
    /// call all the same: it comes only once the call's deadline has passed.
    public var retriesFailuresThatMayHaveReachedAPNs: Bool

    /// Creates a policy; `maxAttempts` below 1 counts as 1.
    public init(
        maxAttempts: Int = 5,
        baseDelay: Duration = .milliseconds(250),
        maxDelay: Duration = .seconds(8),
        retriesFailuresThatMayHaveReachedAPNs: Bool = false
    ) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.retriesFailuresThatMayHaveReachedAPNs = retriesFailuresThatMayHaveReachedAPNs
    }

    /// Five attempts, delays from 250 ms up to 8 s: the retry delays add up to 1.9-3.75 s,
    /// and a retry of a refused connection waits for the transport's next connection
    /// attempt, so a send outlives an outage of a few seconds (a restart, a load balancer
    /// swapping backends); every attempt ends by the call's one
    /// ``APNsClient/requestTimeout``.
    public static let `default` = RetryPolicy()

    /// One attempt: nothing is retried (an `ExpiredProviderToken` is still refreshed once).
    public static let never = RetryPolicy(maxAttempts: 1)

    /// Whether `error` may be retried under this policy (ignoring ``maxAttempts``).
    public func shouldRetry(_ error: APNsError) -> Bool {
        switch error {
        case .invalid:
            return false
        case .rejected(let rejection):
            return rejection.remedy == .retryLater
        case .failed(let failure):
            if failure.code == .shutdown || failure.code == .cancelled || failure.isPermanent { return false }
            if retriesFailuresThatMayHaveReachedAPNs { return true }
            return !failure.mayHaveReachedAPNs && failure.code != .timeout
        }
    }

    /// The delay before retry number `retry` (1 for the first retry).
    ///
    /// - Parameters:
    ///   - retry: Which retry this is: 1 for the first, 2 for the second, and so on.
    ///   - jitter: A random number in `0...1`; 0 gives the lower bound `d/2`, 1 the
    ///     upper bound `d`.
    public func delay(beforeRetry retry: Int, jitter: Double) -> Duration {
        let exponent = Double(max(0, min(retry - 1, 62)))
        let base = Self.seconds(baseDelay)
        let bound = min(Self.seconds(maxDelay), base * Double(sign: .plus, exponent: Int(exponent), significand: 1))
        let fraction = 0.5 + 0.5 * min(1, max(0, jitter.isNaN ? 0 : jitter))
        let seconds = min(max(0, bound * fraction), 9e9)
        return .nanoseconds(Int64((seconds * 1e9).rounded(.down)))
    }

    private static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
