import APNsCore
import Testing
@testable import APNsTransport

/// The fate of a request its connection cannot finish, as tables: it goes again only when
/// HTTP/2 says the server did not process it (RFC 9113 §8.7: REFUSED_STREAM, and streams
/// above a GOAWAY's last-stream-id, §6.8) or it was never written, and every failure says
/// whether it may have reached APNs.
@Suite("What becomes of a request its connection cannot finish")
struct RequestFateTests {
    @Test("a refused submission goes again; any other submission error is the outcome")
    func submission() {
        let refused = APNsTransportError.streamRefused("the session can open no more streams")
        #expect(RequestFate.submitFailed(refused) == .requeue(failure: refused))
        let broken = APNsTransportError.protocolError("nghttp2_submit_request failed")
        #expect(RequestFate.submitFailed(broken) == .fail(broken))
        let tooLarge = APNsTransportError.shutdown("the transport is shut down")
        #expect(RequestFate.submitFailed(tooLarge) == .fail(tooLarge))
    }

    @Test("a stream the server did not process goes again; a reset it may have processed fails")
    func streamClosed() {
        // REFUSED_STREAM (RFC 9113 §8.7): not processed, safe to send again.
        let refused = RequestFate.streamClosed(streamID: 7, errorName: "REFUSED_STREAM", unprocessed: true, goAwayDetail: nil)
        #expect(refused == .requeue(failure: .streamRefused("RST_STREAM REFUSED_STREAM: the server did not process the request")))
        // Above a GOAWAY's last-stream-id (§6.8): not processed, and the error names the GOAWAY.
        let detail = "GOAWAY NO_ERROR, last-stream-id 5"
        let aboveGoAway = RequestFate.streamClosed(streamID: 7, errorName: "REFUSED_STREAM", unprocessed: true, goAwayDetail: detail)
        #expect(aboveGoAway == .requeue(failure: .goAway(detail)))
        // Any other reset (CANCEL, INTERNAL_ERROR): the server may have processed it.
        let reset = RequestFate.streamClosed(streamID: 9, errorName: "INTERNAL_ERROR", unprocessed: false, goAwayDetail: detail)
        #expect(reset == .fail(.streamReset("RST_STREAM INTERNAL_ERROR on stream 9")))
        guard case .fail(let error) = reset else { return }
        #expect(error.mayHaveReachedAPNs)
        guard case .requeue(let failure) = refused else { return }
        #expect(!failure.mayHaveReachedAPNs)
    }

    @Test("a reset this client sent (the server broke the stream's rules) says so")
    func resetByClient() {
        let fate = RequestFate.streamClosed(streamID: 1, errorName: "FLOW_CONTROL_ERROR", unprocessed: false, goAwayDetail: nil, resetByClient: true)
        guard case .fail(let error) = fate else {
            Issue.record("went again: \(fate)")
            return
        }
        #expect(error.code == .streamReset && error.mayHaveReachedAPNs)
        #expect(error.detail == "RST_STREAM FLOW_CONTROL_ERROR sent by this client on stream 1 (the server broke the stream's rules)")
    }

    @Test("a stream reset after its answer began fails with the status kept, never goes again")
    func streamClosedAfterStatus() {
        let fate = RequestFate.streamClosed(streamID: 7, errorName: "REFUSED_STREAM", unprocessed: false, goAwayDetail: nil, status: 200)
        guard case .fail(let error) = fate else {
            Issue.record("an answered stream went again: \(fate)")
            return
        }
        #expect(error.code == .streamReset && error.mayHaveReachedAPNs && error.responseStatus == 200)
        #expect(error.detail?.contains("status 200") == true)
    }

    @Test("a session that ends after an answer began: the status is kept; its deadline passed: a timeout with it")
    func sessionEndedAfterStatus() {
        let lost = APNsTransportError.connectionClosed("TLS read failed: Connection reset by peer")
        for reason in [lost, nil, APNsTransportError(code: .tlsFailure, mayHaveReachedAPNs: true, detail: "alert")] {
            guard case .fail(let error) = RequestFate.sessionEnded(reason: reason, unsent: false, deadlinePassed: false, status: 200) else {
                Issue.record("an answered request did not fail")
                continue
            }
            #expect(error.mayHaveReachedAPNs && error.responseStatus == 200, "\(error)")
        }
        guard case .fail(let late) = RequestFate.sessionEnded(reason: lost, unsent: false, deadlinePassed: true, status: 410) else {
            Issue.record("an answered request past its deadline did not fail")
            return
        }
        #expect(late.code == .timeout && late.mayHaveReachedAPNs && late.responseStatus == 410)
    }

    @Test("a deadline passed in flight: an incomplete request (no END_STREAM written) never reached APNs; a complete one may have")
    func deadlinePassedInFlight() {
        guard case .fail(let error) = RequestFate.deadlinePassedInFlight(incomplete: true) else {
            Issue.record("an incomplete request did not fail")
            return
        }
        #expect(error.code == .timeout && !error.mayHaveReachedAPNs)
        #expect(RequestFate.deadlinePassedInFlight(incomplete: false) == .expire)
        // The answer's status had arrived, its body had not ended: kept with the timeout.
        guard case .fail(let late) = RequestFate.deadlinePassedInFlight(incomplete: false, status: 400) else {
            Issue.record("a begun answer did not fail")
            return
        }
        #expect(late.code == .timeout && late.mayHaveReachedAPNs && late.responseStatus == 400)
        #expect(late.detail?.contains("status 400") == true)
    }

    @Test("at the session's end: timeouts, refusals, unsent requests and written ones")
    func sessionEnded() {
        let lost = APNsTransportError.connectionClosed("TLS read failed: Connection reset by peer")
        let broken = APNsTransportError.protocolError("nghttp2_session_mem_recv: invalid frame")
        let refusedCertificate = APNsTransportError(code: .tlsFailure, mayHaveReachedAPNs: true, detail: "alert certificate revoked")
        // (reason, unsent, deadline passed) → fate
        let table: [(APNsTransportError?, Bool, Bool, RequestFate)] = [
            // The deadline passed first: a timeout, which reached APNs only if written.
            (lost, true, true, .fail(.timeout(mayHaveReachedAPNs: false, "the request timed out before it was written"))),
            (lost, false, true, .expire),
            (nil, false, true, .expire),
            // A refused TLS session: nothing was processed, and going again meets the same refusal.
            (refusedCertificate, true, false, .fail(APNsTransportError(code: .tlsFailure, mayHaveReachedAPNs: false, detail: "alert certificate revoked"))),
            (refusedCertificate, false, false, .fail(APNsTransportError(code: .tlsFailure, mayHaveReachedAPNs: false, detail: "alert certificate revoked"))),
            // Never written: goes again; if it went again too often, it fails as never
            // having reached APNs (maxRequeues' documentation).
            (lost, true, false, .requeue(failure: APNsTransportError(
                code: .connectionClosed, mayHaveReachedAPNs: false,
                detail: "TLS read failed: Connection reset by peer; the request had not been written"))),
            (nil, true, false, .requeue(failure: APNsTransportError(
                code: .connectionClosed, mayHaveReachedAPNs: false, detail: "the connection closed; the request had not been written"))),
            // Written: fails, and may have reached APNs.
            (lost, false, false, .fail(.connectionClosed("TLS read failed: Connection reset by peer"))),
            (broken, false, false, .fail(.protocolError("nghttp2_session_mem_recv: invalid frame"))),
            (nil, false, false, .fail(.connectionClosed("the connection closed"))),
        ]
        for (reason, unsent, deadlinePassed, expected) in table {
            let fate = RequestFate.sessionEnded(reason: reason, unsent: unsent, deadlinePassed: deadlinePassed)
            #expect(fate == expected, "reason \(String(describing: reason)), unsent \(unsent), deadline passed \(deadlinePassed)")
            switch fate {
            case .fail(let error):
                // Unsent or refused: cannot have reached APNs; written: may have.
                let reached = !unsent && reason?.code != .tlsFailure
                #expect(error.mayHaveReachedAPNs == reached, "\(error)")
            case .requeue(let failure):
                #expect(unsent)
                #expect(failure.code == .connectionClosed || failure.code == .protocolError)
                #expect(!failure.mayHaveReachedAPNs, "\(failure)")
            case .expire:
                #expect(!unsent && deadlinePassed)
            }
        }
    }

    @Test("a request goes again at most maxRequeues times, then fails with the last reason")
    func requeueLimit() {
        let failure = APNsTransportError.goAway("GOAWAY NO_ERROR, last-stream-id 1")
        for maxRequeues in 0...3 {
            for requeues in 1...(maxRequeues + 2) {
                let ended = RequestFate.requeued(requeues, maxRequeues: maxRequeues, failure: failure)
                #expect(ended == (requeues <= maxRequeues ? nil : failure), "\(requeues) of \(maxRequeues)")
            }
        }
    }
}

@Suite("A request's timeout, by where it waited")
struct PendingRequestTimeoutTests {
    static func outcome(_ pending: PendingRequest) async -> PendingRequest.Outcome {
        await withUnsafeContinuation { continuation in _ = pending.install(continuation) }
    }

    @Test("queued and never sent: 'never sent'; handed back unprocessed and queued again: says so, never reached APNs")
    func queuedTimeouts() async throws {
        let fresh = PendingRequest(request: try devicePush(token: 1), deadline: 0, statistics: StatisticsBox())
        fresh.expire()
        guard case .failure(let neverSent) = await Self.outcome(fresh) else { Issue.record("not a failure"); return }
        #expect(neverSent.code == .timeout && !neverSent.mayHaveReachedAPNs)
        #expect(neverSent.detail?.contains("never sent") == true, "\(neverSent)")

        let bounced = PendingRequest(request: try devicePush(token: 2), deadline: 0, statistics: StatisticsBox())
        #expect(bounced.markRequeued() == 1)
        #expect(bounced.markRequeued() == 2)
        bounced.expire()
        guard case .failure(let declined) = await Self.outcome(bounced) else { Issue.record("not a failure"); return }
        #expect(declined.code == .timeout && !declined.mayHaveReachedAPNs)
        #expect(declined.detail?.contains("declined to process it 2 times") == true, "\(declined)")
        #expect(declined.detail?.contains("never sent") == false, "\(declined)")
    }
}
