import APNsCore

/// What an ``HTTP2ConnectionStateMachine`` reports after it has processed input: the
/// I/O shell acts on each event (completes a request, re-queues one, closes the
/// connection). The state machine never touches a socket or a continuation itself.
enum HTTP2ConnectionEvent: Sendable, Equatable {
    /// The whole response of `streamID` arrived (END_STREAM on HEADERS or DATA).
    case response(streamID: Int32, APNsResponse)

    /// The response of `streamID` passed a limit (header list or body size): the state
    /// machine reset the stream and read no further. `error` is the request's outcome
    /// (``APNsCore/APNsTransportError/Code/responseTooLarge``).
    case responseRefused(streamID: Int32, APNsTransportError)

    /// `streamID` closed without a complete response.
    ///
    /// `unprocessed` is `true` when the server certainly did not process it: the stream
    /// was never written, it was reset with REFUSED_STREAM (RFC 9113 §8.7), or it is above
    /// the last-stream-id of a GOAWAY (RFC 9113 §6.8), and no answer had begun on it.
    /// `status`: the `:status` of the answer's header block when one had arrived (the
    /// server processed the request whatever the reset says), else `nil`.
    /// `resetByClient`: this client reset the stream (nghttp2 did, because the server
    /// broke the stream's rules, a flow-control window overflow say), not the server.
    case streamClosed(streamID: Int32, errorCode: UInt32, unprocessed: Bool, status: Int? = nil, resetByClient: Bool = false)

    /// The server sent GOAWAY: streams above `lastStreamID` were not processed, no new
    /// stream may be opened, and `debugData` usually holds `{"reason":"..."}`.
    case goAway(lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8])

    /// The server's SETTINGS changed the stream limit or the header table size.
    case settingsChanged(maxConcurrentStreams: Int, headerTableSize: Int)

    /// The server answered our PING.
    case pingAcknowledged
}
