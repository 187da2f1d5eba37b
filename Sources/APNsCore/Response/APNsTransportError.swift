/// A request did not get an answer from APNs: the connection, TLS, HTTP/2 stream or the
/// transport itself failed.
///
/// This is distinct from an ``APNsRejection`` (APNs answered "no"). The key question after
/// a failure is whether the notification may still have reached APNs, and so whether
/// sending it again could deliver it twice; ``mayHaveReachedAPNs`` answers it:
///
/// | code | mayHaveReachedAPNs | when |
/// |---|---|---|
/// | ``Code/connectionFailed`` | false | TCP connect or DNS failed |
/// | ``Code/tlsFailure`` | false | the TLS handshake or certificate check failed, or, after the handshake, the server refused the client certificate or a TLS error ended the session before the server sent anything |
/// | ``Code/goAway`` | false | GOAWAY arrived and the stream's id is above the last-stream-id (RFC 9113 §6.8: not processed) |
/// | ``Code/streamRefused`` | false | RST_STREAM with REFUSED_STREAM (RFC 9113 §8.7: not processed) |
/// | ``Code/queueFull`` | false | the transport's queue of waiting requests is full |
/// | ``Code/shutdown`` | false | the transport was shut down before the request was sent |
/// | ``Code/timeout`` | given | the deadline passed (true once the request was written) |
/// | ``Code/cancelled`` | given | the task was cancelled (true once the request was written) |
/// | ``Code/connectionClosed`` | true | the connection closed after the request was written |
/// | ``Code/streamReset`` | true | RST_STREAM with another error code |
/// | ``Code/protocolError`` | true (false when the request's body was not all written) | the peer broke HTTP/2, or the response could not be read |
/// | ``Code/responseTooLarge`` | true | the response's headers or body passed the transport's limit; ``responseStatus`` says what APNs answered (200: accepted) |
///
/// ``description`` says what happened and where, for logs and people (the code, then
/// the detail); ``code``'s description is the short, stable code name, safe as a metric
/// label.
public struct APNsTransportError: Error, Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The kind of failure: an open set, so new kinds can be added without breaking callers.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case connectionFailed, tlsFailure, goAway, streamRefused, queueFull, shutdown
            case timeout, cancelled, connectionClosed, streamReset, protocolError
            case responseTooLarge
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// TCP connect or name resolution failed; nothing was sent.
        public static let connectionFailed = Code(.connectionFailed)
        /// The TLS handshake or a certificate check failed (the server's, or the server
        /// refused the client's, possibly after the requests were written); nothing was processed.
        public static let tlsFailure = Code(.tlsFailure)
        /// A GOAWAY frame's last-stream-id is below the stream: APNs did not process it.
        public static let goAway = Code(.goAway)
        /// The stream was reset with REFUSED_STREAM: APNs did not process it.
        public static let streamRefused = Code(.streamRefused)
        /// The transport's queue is full (back-pressure); nothing was sent.
        public static let queueFull = Code(.queueFull)
        /// The transport is shut down or shutting down.
        public static let shutdown = Code(.shutdown)
        /// The request's deadline passed before the response arrived.
        public static let timeout = Code(.timeout)
        /// The sending task was cancelled.
        public static let cancelled = Code(.cancelled)
        /// The connection closed after the request was written, before the response.
        public static let connectionClosed = Code(.connectionClosed)
        /// The stream was reset with an error code other than REFUSED_STREAM.
        public static let streamReset = Code(.streamReset)
        /// The peer violated HTTP/2, or sent a response that cannot be read.
        public static let protocolError = Code(.protocolError)
        /// The response's header list or body was larger than the transport accepts
        /// (a broken or hostile server): the transport reset the stream instead of
        /// reading on. The request was processed; ``APNsTransportError/responseStatus``
        /// says how APNs answered it, if the status arrived.
        public static let responseTooLarge = Code(.responseTooLarge)

        /// The code name, for example `timeout`: safe as a metric label.
        public var description: String { base.rawValue }
    }

    /// The kind of failure.
    public let code: Code
    /// Whether APNs may have received the request, so that sending it again could deliver
    /// the notification twice. `false` means it certainly did not deliver it: no attempt
    /// reached APNs, or the ones that did were refused (an earlier attempt answered 429,
    /// 500 or 503 delivered nothing, so a final failure after it says `false` when its own
    /// attempts never reached APNs). When ``APNsClient``'s retries met a failure that may
    /// have reached APNs, the final error says `true` whatever its own code (a `queueFull`
    /// after a timeout, with ``RetryPolicy/retriesFailuresThatMayHaveReachedAPNs``).
    public let mayHaveReachedAPNs: Bool
    /// Details for logs (an OpenSSL error string, an HTTP/2 error code); never a secret.
    public let detail: String?
    /// The HTTP status of the response, when one arrived before the failure
    /// (``Code/responseTooLarge``, or a ``Code/timeout`` while the rest of the answer
    /// trickled in): `200` means APNs accepted the notification even though the rest of
    /// its answer was refused or late. `nil` when no status arrived.
    public let responseStatus: Int?
    /// Whether sending again through the same transport fails the same way: the peer
    /// refused what the transport presents, not the moment (APNs refused the client
    /// certificate, the server's certificate failed verification, a proxy refused the
    /// credentials or the destination). ``RetryPolicy`` does not retry such a failure:
    /// each retry would be another refused handshake, and APNs takes rapid reconnects
    /// for abuse. Fix the configuration instead.
    public let isPermanent: Bool

    /// Creates an error. Prefer the static constructors, which set ``mayHaveReachedAPNs``
    /// as the table in the type's documentation says.
    public init(code: Code, mayHaveReachedAPNs: Bool, detail: String? = nil, responseStatus: Int? = nil, isPermanent: Bool = false) {
        self.code = code
        self.mayHaveReachedAPNs = mayHaveReachedAPNs
        self.detail = detail
        self.responseStatus = responseStatus
        self.isPermanent = isPermanent
    }

    /// This error, marked as one that sending again cannot fix (``isPermanent``).
    public var permanent: Self {
        Self(code: code, mayHaveReachedAPNs: mayHaveReachedAPNs, detail: detail, responseStatus: responseStatus, isPermanent: true)
    }

    /// TCP connect or name resolution failed; nothing was sent.
    public static func connectionFailed(_ detail: String? = nil) -> Self {
        Self(code: .connectionFailed, mayHaveReachedAPNs: false, detail: detail)
    }
    /// The TLS handshake or a certificate check failed; nothing was processed.
    public static func tlsFailure(_ detail: String? = nil) -> Self {
        Self(code: .tlsFailure, mayHaveReachedAPNs: false, detail: detail)
    }
    /// GOAWAY with a last-stream-id below this stream: not processed.
    public static func goAway(_ detail: String? = nil) -> Self {
        Self(code: .goAway, mayHaveReachedAPNs: false, detail: detail)
    }
    /// RST_STREAM with REFUSED_STREAM: not processed.
    public static func streamRefused(_ detail: String? = nil) -> Self {
        Self(code: .streamRefused, mayHaveReachedAPNs: false, detail: detail)
    }
    /// The transport's queue is full; nothing was sent.
    public static func queueFull(_ detail: String? = nil) -> Self {
        Self(code: .queueFull, mayHaveReachedAPNs: false, detail: detail)
    }
    /// The transport is shut down; nothing was sent.
    public static func shutdown(_ detail: String? = nil) -> Self {
        Self(code: .shutdown, mayHaveReachedAPNs: false, detail: detail)
    }
    /// The deadline passed; `mayHaveReachedAPNs` is `false` only if the request was never
    /// written whole (its END_STREAM never went out).
    public static func timeout(mayHaveReachedAPNs: Bool = true, _ detail: String? = nil) -> Self {
        Self(code: .timeout, mayHaveReachedAPNs: mayHaveReachedAPNs, detail: detail)
    }
    /// The task was cancelled; `mayHaveReachedAPNs` is `false` only if the request was never
    /// written whole (its END_STREAM never went out).
    public static func cancelled(mayHaveReachedAPNs: Bool, _ detail: String? = nil) -> Self {
        Self(code: .cancelled, mayHaveReachedAPNs: mayHaveReachedAPNs, detail: detail)
    }
    /// The connection closed after the request was written.
    public static func connectionClosed(_ detail: String? = nil) -> Self {
        Self(code: .connectionClosed, mayHaveReachedAPNs: true, detail: detail)
    }
    /// The stream was reset with an error code other than REFUSED_STREAM.
    public static func streamReset(_ detail: String? = nil) -> Self {
        Self(code: .streamReset, mayHaveReachedAPNs: true, detail: detail)
    }
    /// The peer violated HTTP/2 or sent an unreadable response.
    public static func protocolError(_ detail: String? = nil) -> Self {
        Self(code: .protocolError, mayHaveReachedAPNs: true, detail: detail)
    }

    /// The response was larger than the transport's limit (`detail` names the limit and
    /// what the server sent); `status` is the response's HTTP status, if it had arrived.
    public static func responseTooLarge(_ detail: String, status: Int?) -> Self {
        Self(code: .responseTooLarge, mayHaveReachedAPNs: true, detail: detail, responseStatus: status)
    }

    /// The code name and the detail, for example `connectionFailed: connect to
    /// 1.2.3.4:443 refused`: what `"\(error)"` writes in a log line. For a metric label
    /// use `code.description`, which is short and stable.
    public var description: String {
        guard let detail else { return code.description }
        return "\(code): \(detail)"
    }

    /// The code, whether the request may have reached APNs, and the detail.
    public var debugDescription: String {
        "APNsTransportError(\(code), mayHaveReachedAPNs: \(mayHaveReachedAPNs)"
            + (responseStatus.map { ", status \($0)" } ?? "")
            + (isPermanent ? ", permanent" : "")
            + (detail.map { ", \($0)" } ?? "") + ")"
    }
}
