import APNsCore

/// What becomes of a request that its connection cannot finish with an answer: the one
/// place that decides between sending it again (on another connection) and failing it,
/// and with which error. Pure (no I/O, no clock); ``HTTP2Connection`` performs it.
///
/// The rule behind every case: a request goes again only when the server cannot have
/// processed it, as HTTP/2 says — a stream refused with REFUSED_STREAM, a stream above a
/// GOAWAY's last-stream-id (RFC 9113 §8.7, §6.8), or a request never written — and when
/// sending it again may succeed. Everything else fails, and says in `mayHaveReachedAPNs`
/// whether APNs may have it.
enum RequestFate: Sendable, Hashable {
    /// Queue it again, ahead of new requests; if it has already gone again too often
    /// (``HTTP2Transport/Configuration/maxRequeues``), it fails with `failure` instead.
    case requeue(failure: APNsTransportError)
    /// Finish it with `error`.
    case fail(APNsTransportError)
    /// Its deadline passed after it was written: it ends as a timeout that may have
    /// reached APNs (``PendingRequest/expire(waitingFor:)``).
    case expire

    /// A request nghttp2 refused to submit with `error`: a refused stream (the session
    /// can open no more) goes again; any other error is the request's outcome.
    static func submitFailed(_ error: APNsTransportError) -> RequestFate {
        error.code == .streamRefused ? .requeue(failure: error) : .fail(error)
    }

    /// A request whose stream `streamID` closed without an answer, with the HTTP/2 error
    /// named `errorName`. `unprocessed`: the server said it did not process it (a
    /// REFUSED_STREAM reset, or a stream above the last-stream-id of a GOAWAY, whose text
    /// `goAwayDetail` is when one arrived): it goes again. Otherwise the server reset a
    /// stream it may have processed: that fails, and may have reached APNs; `status`, the
    /// answer's `:status` if its header block had arrived, is kept in
    /// ``APNsCore/APNsTransportError/responseStatus`` (a `200` means APNs accepted it).
    ///
    /// `resetByClient`: this client sent the RST_STREAM (the server broke the stream's
    /// rules); the detail says so, since a reset reads as the server's otherwise.
    static func streamClosed(
        streamID: Int32, errorName: String, unprocessed: Bool, goAwayDetail: String?, status: Int? = nil, resetByClient: Bool = false
    ) -> RequestFate {
        guard unprocessed else {
            let reset = resetByClient
                ? "RST_STREAM \(errorName) sent by this client on stream \(streamID) (the server broke the stream's rules)"
                : "RST_STREAM \(errorName) on stream \(streamID)"
            if let status {
                return .fail(APNsTransportError(
                    code: .streamReset, mayHaveReachedAPNs: true,
                    detail: "\(reset) after the answer began (status \(status))",
                    responseStatus: status))
            }
            return .fail(.streamReset(reset))
        }
        return .requeue(
            failure: goAwayDetail.map { .goAway($0) }
                ?? .streamRefused("RST_STREAM \(errorName): the server did not process the request")
        )
    }

    /// A request still in flight when its session ended with `reason` (`nil`: closed
    /// without an error). `unsent`: never written to the socket. `deadlinePassed`: its
    /// deadline had passed (the deadline scan runs every 10 ms, so a session can end first).
    ///
    /// - Deadline passed: a timeout; unsent, it cannot have reached APNs.
    /// - A refusal (``refusal(closingWith:)``): fails with it, never reached APNs; going
    ///   again would meet the same refusal.
    /// - Unsent: goes again (should it have gone again too often, its failure says it
    ///   never reached APNs).
    /// - Written: fails as ``writtenRequestFailure(closingWith:)`` says; it may have
    ///   reached APNs.
    ///
    /// `status`: the `:status` of an answer whose header block had arrived (its body had
    /// not ended); a written request's failure keeps it in
    /// ``APNsCore/APNsTransportError/responseStatus``.
    static func sessionEnded(reason: APNsTransportError?, unsent: Bool, deadlinePassed: Bool, status: Int? = nil) -> RequestFate {
        if deadlinePassed {
            if unsent { return .fail(.timeout(mayHaveReachedAPNs: false, "the request timed out before it was written")) }
            return deadlinePassedInFlight(incomplete: false, status: status)
        }
        if let status {
            // An answer had begun: processed, whatever ended the session.
            let failure = writtenRequestFailure(closingWith: reason)
            return .fail(APNsTransportError(
                code: failure.code, mayHaveReachedAPNs: true,
                detail: (failure.detail ?? "the connection closed") + " after the answer began (status \(status))",
                responseStatus: status))
        }
        if let refused = reason.flatMap(refusal(closingWith:)) { return .fail(refused) }
        let failure = writtenRequestFailure(closingWith: reason)
        guard unsent else { return .fail(failure) }
        // Never written: should it have gone again too often, it fails as one that never
        // reached APNs (``HTTP2Transport/Configuration/maxRequeues``), with the same code.
        return .requeue(failure: APNsTransportError(
            code: failure.code, mayHaveReachedAPNs: false,
            detail: (failure.detail ?? failure.code.description) + "; the request had not been written"))
    }

    /// A request whose deadline passed while its stream was open. `incomplete`: the frame
    /// ending it (END_STREAM) was never written, its body held back by the server's
    /// flow-control window, so the server never had the whole request and cannot have
    /// delivered it: a timeout that did not reach APNs. `status`: the answer had begun
    /// (its header block arrived) but its body had not ended: a timeout that keeps the
    /// status in ``APNsCore/APNsTransportError/responseStatus`` (a `200` means APNs
    /// accepted it). Otherwise a timeout that may have reached APNs.
    static func deadlinePassedInFlight(incomplete: Bool, status: Int? = nil) -> RequestFate {
        if incomplete {
            return .fail(.timeout(mayHaveReachedAPNs: false,
                                  "the request timed out before it was completely written (the server's flow-control window "
                                      + "held its body back); the stream was reset, so the server never had the whole request"))
        }
        if let status {
            return .fail(APNsTransportError(
                code: .timeout, mayHaveReachedAPNs: true,
                detail: "the answer began (status \(status)) but did not end before the request's timeout; the stream was reset",
                responseStatus: status))
        }
        return .expire
    }

    /// Whether a request that went again `requeues` times (this one included) ends, when
    /// it may go again at most `maxRequeues` times: `nil` (it goes again) while within the
    /// limit, then `failure`, its error.
    static func requeued(_ requeues: Int, maxRequeues: Int, failure: APNsTransportError) -> APNsTransportError? {
        requeues > maxRequeues ? failure : nil
    }

    /// The error for the requests in flight when a session ends with `reason`, if `reason`
    /// means the server processed none of them; `nil` otherwise.
    ///
    /// ``TLSStream`` throws ``APNsCore/APNsTransportError/Code/tlsFailure`` after the
    /// handshake only when nothing can have been processed: the server refused the client
    /// certificate (an alert; it never reads the requests of a client it did not accept).
    /// Any other TLS failure after the handshake ends the session as closed, and the
    /// requests written on it may have reached APNs, even when no data had arrived yet.
    ///
    /// Such requests fail with that error and `mayHaveReachedAPNs == false`; they are not
    /// re-queued. Re-queuing is for refusals that another connection may not repeat
    /// (GOAWAY, REFUSED_STREAM); a refused certificate is refused again on every connection,
    /// so re-queuing would only reconnect in a loop and delay the answer. The caller (or
    /// ``APNsCore/APNsClient``'s retry policy) may send again: nothing was delivered.
    static func refusal(closingWith reason: APNsTransportError) -> APNsTransportError? {
        guard reason.code == .tlsFailure else { return nil }
        return APNsTransportError(code: .tlsFailure, mayHaveReachedAPNs: false, detail: reason.detail, isPermanent: reason.isPermanent)
    }

    /// The error for a request written before the session ended with `reason` (or closed
    /// without one), when the server may have processed it: a broken HTTP/2 session stays
    /// ``APNsCore/APNsTransportError/Code/protocolError``; anything else is
    /// ``APNsCore/APNsTransportError/Code/connectionClosed``. Both say
    /// `mayHaveReachedAPNs == true`: the connection had been up and the request sent.
    static func writtenRequestFailure(closingWith reason: APNsTransportError?) -> APNsTransportError {
        let detail = reason?.detail ?? "the connection closed"
        if reason?.code == .protocolError { return .protocolError(detail) }
        return .connectionClosed(detail)
    }
}
