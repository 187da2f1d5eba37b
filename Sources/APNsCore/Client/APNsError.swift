/// Why a notification was not accepted: exactly one of three outcomes.
///
/// Every notification passed to ``APNsClient`` ends in exactly one outcome: accepted
/// (``APNsAccepted``), or one of these cases:
///
/// | case | meaning | sent? |
/// |---|---|---|
/// | ``rejected(_:)`` | APNs answered with an error status and reason | yes, and refused |
/// | ``failed(_:)`` | no answer: connection, TLS, stream, timeout, cancellation, shutdown | maybe: see ``APNsTransportError/mayHaveReachedAPNs`` |
/// | ``invalid(_:)`` | a value or the payload was invalid, or no provider token could be had | never |
public enum APNsError: Error, Sendable, Hashable, CustomStringConvertible {
    /// APNs refused the notification; ``APNsRejection/remedy`` says what to do.
    indirect case rejected(APNsRejection)
    /// No answer from APNs (after any retries the ``RetryPolicy`` allows).
    case failed(APNsTransportError)
    /// The notification was never sent because something in it (or the credentials) was invalid.
    case invalid(APNsRequestError)

    /// The rejection, for ``rejected(_:)``.
    public var rejection: APNsRejection? {
        if case .rejected(let rejection) = self { return rejection }
        return nil
    }

    /// The transport error, for ``failed(_:)``.
    public var transportError: APNsTransportError? {
        if case .failed(let error) = self { return error }
        return nil
    }

    /// The validation error, for ``invalid(_:)``.
    public var requestError: APNsRequestError? {
        if case .invalid(let error) = self { return error }
        return nil
    }

    /// `rejected: 410 Unregistered …`, `failed: timeout`, or `invalid: …`.
    public var description: String {
        switch self {
        case .rejected(let rejection): "rejected: \(rejection)"
        case .failed(let error): "failed: \(error.debugDescription)"
        case .invalid(let error): "invalid: \(error)"
        }
    }
}
