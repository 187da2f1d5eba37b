import Testing

@testable import APNsCore

@Suite struct TransportErrorTests {
    // RFC 9113 §6.8 (GOAWAY above last-stream-id) and §8.7 (REFUSED_STREAM) guarantee the
    // stream was not processed; a closed connection or a timeout after writing does not.
    @Test func mayHaveReachedAPNsFollowsRFC9113() {
        let notReached: [APNsTransportError] = [
            .connectionFailed("ECONNREFUSED"), .tlsFailure(), .goAway(), .streamRefused(), .queueFull(),
            .shutdown(), .timeout(mayHaveReachedAPNs: false), .cancelled(mayHaveReachedAPNs: false),
        ]
        let mayHaveReached: [APNsTransportError] = [
            .connectionClosed(), .streamReset("INTERNAL_ERROR"), .protocolError(), .timeout(),
            .cancelled(mayHaveReachedAPNs: true),
        ]
        #expect(notReached.allSatisfy { !$0.mayHaveReachedAPNs })
        #expect(mayHaveReached.allSatisfy { $0.mayHaveReachedAPNs })
    }

    @Test func descriptionSaysWhatAndWhereAndTheCodeIsTheMetricLabel() {
        let error = APNsTransportError.connectionFailed("connect to 17.188.0.1:443: Connection refused")
        // What "\(error)" writes in a log line: the code and what happened where.
        #expect(error.description == "connectionFailed: connect to 17.188.0.1:443: Connection refused")
        #expect("\(error)" == error.description)
        #expect(error.code == .connectionFailed)
        #expect(error.debugDescription.contains("Connection refused"))
        // The code's name is short and stable: a metric label.
        for error in [APNsTransportError.timeout(), .goAway(), .streamRefused(), .tlsFailure(), error] {
            #expect(error.code.description.allSatisfy { $0.isLetter })
        }
        #expect(APNsTransportError.timeout().description == "timeout")
    }
}
