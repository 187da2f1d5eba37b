import CNGHTTP2

// A connection's answers: a complete request goes to the fast path or to the request
// handler, and the connection performs the handler's reply.
extension ServerConnection {
    /// The largest request header list the server keeps, advertised as
    /// SETTINGS_MAX_HEADER_LIST_SIZE: an APNs request's headers are a few hundred octets, so
    /// a client that sends more (or expands HPACK references into more) cannot grow the
    /// server's memory.
    static let maxHeaderListSize = 16_384

    /// The request on `streamID` is complete (END_STREAM seen): validate, script, answer.
    func requestComplete(streamID: Int32) {
        guard processesRequests, let stream = stream(streamID), let session else { return }
        defer {
            // Decided: a body read in place is not needed any more (see pendingBody).
            forgetPendingBody(of: stream)
        }
        if stream.headersTooLarge {
            // RFC 9113 §10.5.1: a header list larger than advertised may be refused; the
            // stream is reset with ENHANCE_YOUR_CALM, unprocessed.
            _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID,
                                          NGHTTP2_ENHANCE_YOUR_CALM.rawValue)
            return
        }
        if let goAwayLastStreamID, streamID > goAwayLastStreamID {
            // Opened before our GOAWAY reached the client, and above its last-stream-id:
            // not processed, exactly as the GOAWAY promised.
            _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID,
                                          NGHTTP2_REFUSED_STREAM.rawValue)
            return
        }
        if answerQuickly(stream, streamID: streamID, session: session) {
            loop.uncountedFastAnswers += 1
            prefetchStream(streamID &+ 2)
            // Answered, and nothing reads the record again (a fast answer has no body for
            // `readResponseBody`): back to the spares now rather than when nghttp2 closes
            // the stream after writing the answer. The next request then reuses it while it
            // is still in the processor's cache, instead of one of the hundreds a read of
            // many requests would otherwise keep open (under h2load at 4 × 1,000 streams,
            // the first touches of cold records took about 4 % of the server's CPU).
            closeStream(streamID)
            return
        }
        // The full path: strings for every field, the handler's rules, the script and the record.
        keepPendingBody()
        loop.countFastAnswers()
        fast.forget()
        stream.fields.headers(using: &headerStrings, into: &stream.headers)
        let request = RequestHandler.Request(
            streamID: streamID, headers: stream.headers, body: stream.body, headerBlockLength: stream.headerBlockLength,
            inflaterTableSize: stream.inflaterTableSize, representations: headerTap.take(stream: streamID))
        let reply = loop.handler.handle(request, connection: &requestState)
        // Only while the fast path is open: with a script, an observer or recording, every
        // request takes the full path anyway, and learning would cost each one copies.
        if let accepted = reply.acceptedPush, loop.fastPathOpen {
            fast.learn(from: stream.fields, body: stream.body, issuedAt: accepted.issuedAt) {
                // Streams that refer to the old `authorization` copy it in before it goes.
                streams.forEach { $0.fields.unshare() }
            }
        }
        switch reply.action {
        case .drop:
            dropRequested = true
            return
        case .breakProtocol:
            breakRequested = true
            delayed.removeAll()
            return
        case .blackHole:
            goSilent()
            return
        case .answer(let response, let delay, let goAwayReason):
            if delay > .zero {
                let now = ContinuousClock.now
                delayed.append(Delayed(due: now + delay, received: now, streamID: streamID, response: response,
                                       goAwayReason: goAwayReason))
            } else {
                if let goAwayReason { goAway(reason: goAwayReason) }
                submitResponse(streamID: streamID, response)
            }
        }
        for limit in reply.streamLimits { submitStreamLimit(limit) }
    }

    /// The fast path's verdict on a request's header fields (see
    /// ``FastAnswers/judge(_:)``), made once its header block is complete while the fields
    /// are still in the processor's cache, and kept in ``Stream/headersPassed``;
    /// ``answerQuickly(_:streamID:session:)`` does the rest when the request ends.
    func judgeHeaders(of stream: Stream) {
        stream.headersPassed = !stream.headersTooLarge && fast.judge(stream.fields)
        stream.headersPassedGeneration = fast.generation
    }

    /// Answers a valid device push with `200` without strings, the handler or the lock,
    /// when that answer is certain: its header fields passed ``judgeHeaders(of:)`` against
    /// the shape still in force, the fast path is open (nothing scripted, delayed, observed
    /// or recorded; see ``ServerState/countFastAnswers(_:)``), the provider token is under
    /// an hour old, and the body is within the push type's size and one JSON object with
    /// `aps` where the push type needs it. Returns `false`, having done nothing, whenever
    /// any of it is not so: the full path then decides, with Apple's reason.
    private func answerQuickly(_ stream: Stream, streamID: Int32, session: OpaquePointer) -> Bool {
        guard stream.headersPassed, stream.headersPassedGeneration == fast.generation, fast.known,
              loop.fastPathOpen, requestState.streamLimitRaised || !tokenMode
        else { return false }
        if let issuedAt = fast.issuedAt,
           loop.configuration.now().timeIntervalSince1970 - Double(issuedAt) > 3600 { return false }
        guard withBody(of: stream, { fast.admits(body: $0) }) else { return false }
        let apnsIDPosition = stream.fields.apnsID
        if apnsIDPosition >= 0 {
            // Checked canonical (36 bytes) by judgeHeaders(of:).
            let id = stream.fields.value(at: apnsIDPosition)
            answerID.withUnsafeMutableBufferPointer { $0.baseAddress!.update(from: id.baseAddress!, count: 36) }
        } else {
            answerID.withUnsafeMutableBufferPointer { loop.handler.makeAPNsID(into: $0.baseAddress!) }
        }
        // APNs' development server adds `apns-unique-id`, a key into its delivery log.
        let fieldCount = loop.configuration.environment == .sandbox ? 3 : 2
        if fieldCount == 3 {
            answerID.withUnsafeMutableBufferPointer { loop.handler.makeAPNsID(into: $0.baseAddress! + 36) }
        }
        let status: StaticString = "200", statusName: StaticString = ":status", idName: StaticString = "apns-id"
        let uniqueIDName: StaticString = "apns-unique-id"
        // Values that differ in every answer are never indexed: they would only push the
        // client's HPACK table entries out.
        let perAnswer = UInt8(NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue | NGHTTP2_NV_FLAG_NO_INDEX.rawValue)
        answerID.withUnsafeMutableBufferPointer { id in
            var answer = (
                nghttp2_nv(name: UnsafeMutablePointer(mutating: statusName.utf8Start),
                           value: UnsafeMutablePointer(mutating: status.utf8Start), namelen: 7, valuelen: 3,
                           flags: UInt8(NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue | NGHTTP2_NV_FLAG_NO_COPY_VALUE.rawValue)),
                nghttp2_nv(name: UnsafeMutablePointer(mutating: idName.utf8Start), value: id.baseAddress!,
                           namelen: 7, valuelen: 36, flags: perAnswer),
                nghttp2_nv(name: UnsafeMutablePointer(mutating: uniqueIDName.utf8Start), value: id.baseAddress! + 36,
                           namelen: 14, valuelen: 36, flags: perAnswer))
            withUnsafeMutablePointer(to: &answer) {
                $0.withMemoryRebound(to: nghttp2_nv.self, capacity: 3) {
                    _ = nghttp2_submit_response(session, streamID, $0, fieldCount, nil)
                }
            }
        }
        return true
    }

    /// Answers `streamID`: `:status`, then `apns-id` (or `apns-request-id` and what a
    /// broadcast or channel answer adds), then the JSON body if any (never to `HEAD`).
    func submitResponse(streamID: Int32, _ response: RequestHandler.Response) {
        let body = response.body
        guard let session else { return }
        responseFieldBytes.removeAll(keepingCapacity: true)
        responseFieldLengths.removeAll(keepingCapacity: true)
        func add(_ name: String, _ value: String) {
            responseFieldBytes.append(contentsOf: name.utf8)
            responseFieldBytes.append(contentsOf: value.utf8)
            responseFieldLengths.append((name.utf8.count, value.utf8.count))
        }
        // The identifiers differ in every answer: never indexed (see answerQuickly).
        let identifiers = 1 + (response.headers.first?.0 == "apns-unique-id" ? 1 : 0)
        add(":status", String(response.status))
        add(response.idField.name, response.idField.value)
        for (name, value) in response.headers { add(name, value) }
        let sendsBody = !body.isEmpty && !response.omitsContent
        if !body.isEmpty {
            add("content-type", "application/json")
            add("content-length", String(body.count))
            if sendsBody { stream(streamID)?.responseBody = body }
        }
        responseFields.removeAll(keepingCapacity: true)
        responseFieldBytes.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            var offset = 0
            for (index, (nameLength, valueLength)) in responseFieldLengths.enumerated() {
                let flags = index >= 1 && index <= identifiers ? NGHTTP2_NV_FLAG_NO_INDEX : NGHTTP2_NV_FLAG_NONE
                responseFields.append(nghttp2_nv(name: base + offset, value: base + offset + nameLength,
                                                 namelen: nameLength, valuelen: valueLength,
                                                 flags: UInt8(flags.rawValue)))
                offset += nameLength + valueLength
            }
            if !sendsBody {
                _ = nghttp2_submit_response(session, streamID, responseFields, responseFields.count, nil)
            } else {
                var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil), read_callback: readResponseBody)
                _ = nghttp2_submit_response(session, streamID, responseFields, responseFields.count, &provider)
            }
        }
    }
}
