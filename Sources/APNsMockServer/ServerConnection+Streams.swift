import CNGHTTP2

// A connection's request streams: their records, reused from closed ones, and where each
// request's header fields and body are kept until it is answered.
extension ServerConnection {
    /// A request being received.
    final class Stream {
        /// ``ServerConnection/judgeHeaders(of:)`` found the header fields fit for the fast
        /// path, against the shape of generation ``headersPassedGeneration``. First among
        /// the properties: read when the request ends, its fields long out of the cache
        /// when a client keeps a thousand streams open.
        @exclusivity(unchecked) var headersPassed = false
        @exclusivity(unchecked) var headersPassedGeneration = 0
        /// The body, when not read in place (see ``ServerConnection/receiveBody(_:endsStream:of:)``).
        @exclusivity(unchecked) var body: [UInt8] = [] { didSet { holdsElements = true } }
        @exclusivity(unchecked) var bodyLength = 0
        /// ``body``, ``headers`` or ``responseBody`` was given elements since the last
        /// ``reset()``, which then empties them. Without it, `reset()` would read each
        /// array's storage to see whether it is empty: a cache miss per request for a
        /// record whose arrays kept their capacity from a request on the full path.
        @exclusivity(unchecked) private var holdsElements = false
        /// The header fields as received (bytes; see ``RequestFields``).
        @exclusivity(unchecked) var fields = RequestFields()
        /// The fields as strings, made only when the request leaves the fast path.
        @exclusivity(unchecked) var headers: [RecordedRequest.Header] = [] { didSet { holdsElements = true } }
        /// The request's header list size so far (RFC 9113 §6.5.2: name + value + 32 each).
        @exclusivity(unchecked) var headerListSize = 0
        /// The header list passed ``ServerConnection/maxHeaderListSize``: nothing more was
        /// kept, and the request is refused with RST_STREAM instead of processed.
        @exclusivity(unchecked) var headersTooLarge = false
        @exclusivity(unchecked) var headerBlockLength = 0
        /// The inflater's dynamic table size once this stream's header block was decoded.
        @exclusivity(unchecked) var inflaterTableSize = 0
        @exclusivity(unchecked) var responseBody: [UInt8] = [] { didSet { holdsElements = true } }
        @exclusivity(unchecked) var responseOffset = 0

        /// The 64-byte lines of a record that a request touches (its properties above and
        /// ``fields``; the object is about 220 bytes).
        static let prefetchLines: Int32 = 4

        init() {}

        deinit {
            fields.deallocate()
        }

        /// Empties the stream for reuse, keeping its buffers (see ``ServerConnection/openStream(_:)``).
        func reset() {
            headersPassed = false
            fields.reset()
            if holdsElements {
                // Only when not empty: emptying an empty array still asks for a buffer.
                if !headers.isEmpty { headers.removeAll(keepingCapacity: true) }
                if !body.isEmpty { body.removeAll(keepingCapacity: true) }
                if !responseBody.isEmpty { responseBody.removeAll(keepingCapacity: true) }
                holdsElements = false
            }
            headerListSize = 0
            headersTooLarge = false
            headerBlockLength = 0
            inflaterTableSize = 0
            bodyLength = 0
            responseOffset = 0
        }
    }

    /// A new request stream's record, reused from a closed one when there is one.
    func openStream(_ streamID: Int32) {
        let stream = spareStreams.popLast() ?? Stream()
        prefetchSpares()
        openedSinceLook = true
        lastStreamID = streamID
        lastStream = Unmanaged.passUnretained(stream)
        streams.insert(stream, as: streamID)
    }

    /// Starts bringing into the processor's cache what the next two ``openStream(_:)``
    /// calls will touch: the next spare record's field buffers (its pointers are read from
    /// the record, fetched by the previous call), and the record after it. With a thousand
    /// requests in flight per connection the spares were last touched a thousand requests
    /// ago; under h2load at 4 × 1,000 streams the first field of each request waited for
    /// its record (the largest single stall of this server's own code, see
    /// Benchmarks/README.md).
    @inline(__always)
    private func prefetchSpares() {
        let count = spareStreams.count
        guard count > 0 else { return }
        spareStreams[count - 1].fields.prefetchBuffers()
        if count > 1 {
            capns_prefetch_for_write(Unmanaged.passUnretained(spareStreams[count - 2]).toOpaque(), Stream.prefetchLines)
        }
    }

    /// Starts bringing into the cache the record of open stream `streamID`, if any: called
    /// for the stream after one that just ended, as a client's DATA frames tend to end
    /// streams in the order they were opened.
    func prefetchStream(_ streamID: Int32) {
        guard let record = streams.unretained(streamID) else { return }
        capns_prefetch_for_write(record.toOpaque(), Stream.prefetchLines)
    }

    /// The record of an open request stream.
    func stream(_ streamID: Int32) -> Stream? {
        if streamID == lastStreamID, let lastStream { return lastStream.takeUnretainedValue() }
        return streams[streamID]
    }

    /// Calls `body` with the record of an open request stream (`nil` if there is none),
    /// without retaining it: for nghttp2's per-field and per-chunk callbacks.
    @inline(__always)
    func withStream<Result>(_ streamID: Int32, _ body: (Stream) -> Result) -> Result? {
        if streamID == lastStreamID, let lastStream { return lastStream._withUnsafeGuaranteedRef(body) }
        return streams.withStream(streamID, body)
    }


    /// A chunk of `stream`'s request body (see ``pendingBody``).
    func receiveBody(_ chunk: UnsafeBufferPointer<UInt8>, endsStream: Bool, of stream: Stream) {
        keepPendingBody()
        if endsStream, stream.bodyLength == 0, chunk.count <= 64 * 1024 {
            pendingBody = (Unmanaged.passUnretained(stream), chunk)
            stream.bodyLength = chunk.count
            return
        }
        let keep = min(chunk.count, max(0, 64 * 1024 - stream.body.count))
        if keep > 0 { stream.body.append(contentsOf: UnsafeBufferPointer(rebasing: chunk[..<keep])) }
        stream.bodyLength += chunk.count
    }

    /// Copies the ``pendingBody`` into its stream's ``Stream/body``, if there is one.
    func keepPendingBody() {
        guard let (stream, bytes) = pendingBody else { return }
        pendingBody = nil
        stream._withUnsafeGuaranteedRef { $0.body.append(contentsOf: bytes) }
    }

    /// `stream`'s body as received: the ``pendingBody`` in place, or ``Stream/body``.
    @inline(__always)
    func withBody<Result>(of stream: Stream, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        if let pending = pendingBody, pending.stream.toOpaque() == Unmanaged.passUnretained(stream).toOpaque() {
            return body(pending.bytes)
        }
        return stream.body.withUnsafeBufferPointer(body)
    }

    /// Drops the ``pendingBody`` if it is `stream`'s (the stream is decided or closed).
    func forgetPendingBody(of stream: Stream) {
        if let pending = pendingBody, pending.stream.toOpaque() == Unmanaged.passUnretained(stream).toOpaque() {
            pendingBody = nil
        }
    }

    /// Forgets a closed stream, or one answered on the fast path, and keeps its record for
    /// the next one.
    func closeStream(_ streamID: Int32) {
        if streamID == lastStreamID { lastStream = nil }
        guard let stream = streams.remove(streamID) else { return }
        forgetPendingBody(of: stream)
        if spareStreams.count < 1024 {
            stream.reset()
            spareStreams.append(stream)
        }
    }
}
