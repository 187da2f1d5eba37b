import COpenSSL
import Foundation
import Logging
import Synchronization

/// A stand-in for Apple Push Notification service on loopback: real TLS (1.2+, ALPN
/// `h2`) and real HTTP/2 (nghttp2's server session), answering like APNs.
///
/// It validates each request with Apple's rules and reasons (path, method, provider
/// token, topic, push type, priority, expiration, `apns-id`, collapse id, payload size
/// and shape), can be scripted to fail (a fixed answer per device token, statuses for
/// the next N requests, GOAWAY, delays, dropped or refused connections) and records
/// every request: each header with how HPACK represented it on the wire, the header
/// block's size, the size of the server's HPACK decoder table after it, the body, the
/// provider token's claims and the answer.
///
/// ```swift
/// try await withMockAPNsServer(configuration: .init(bundleIDs: ["com.example.app"])) { server in
///     // connect to https://localhost:\(server.port), trusting server.certificateAuthorityPEM
/// }
/// ```
///
/// All methods are safe to call from any thread while traffic flows. See
/// [Handling notification responses from APNs](https://developer.apple.com/documentation/usernotifications/handling-notification-responses-from-apns).
public final class MockAPNsServer: Sendable {
    /// Counters since the server started.
    public struct Statistics: Sendable, Hashable {
        /// Requests answered (or dropped by a script). Counted when the server decides the
        /// answer: one held back by a response delay or a link emulation counts even if its
        /// connection closes (or the server stops) before it is written.
        public var requests = 0
        /// Requests the server decided to answer `200` (counted as ``requests`` is).
        public var accepted = 0
        /// Requests the server decided to answer with an error status (counted as
        /// ``requests`` is).
        public var rejected = 0
        /// Connections accepted.
        public var connections = 0
        /// Connections closed at once because of ``refuseConnections(for:)``.
        public var connectionsRefused = 0
        /// GOAWAY frames sent.
        public var goAways = 0
        /// GOAWAY frames received from clients, by error code (RFC 9113 §7: `0x0`
        /// NO_ERROR, `0x1` PROTOCOL_ERROR, …). A client that closes cleanly sends
        /// NO_ERROR; one that found the server broke HTTP/2 (see
        /// ``MockAPNsServer/breakProtocol(atRequest:)``) sends PROTOCOL_ERROR.
        public var goAwaysReceived: [UInt32: Int] = [:]
        /// Connections open now (accepted and not yet closed, handshaking ones included).
        public var openConnections = 0
        /// The most connections that were open at once.
        public var peakOpenConnections = 0
        /// Of ``accepted``, the requests answered on the fast path: a valid device push like
        /// the last one accepted on its connection (same `authorization`, `apns-topic` and
        /// `apns-push-type`), while nothing is scripted, delayed, observed or recorded. It
        /// gets the answer the full path would give, without its strings and lock.
        public var fastAnswers = 0
    }

    /// What the server did with one request, as ``MockAPNsServer/observeRequests(_:)``
    /// reports it: enough to count arrivals per `apns-id` without recording requests.
    public struct ProcessedRequest: Sendable, Hashable {
        /// Position among all requests the server processed, from 0 (as
        /// ``RecordedRequest/sequenceNumber``).
        public var sequenceNumber: Int
        /// Which connection carried it, numbered by the server from 0.
        public var connectionNumber: Int
        /// The HTTP/2 stream identifier.
        public var streamID: Int
        /// The `apns-id` the server answers with: the request's own when it sent a valid
        /// one, else one the server made up (`apns-request-id` for broadcasts).
        public var apnsID: String
        /// The status the server answers (now, or after ``MockAPNsServer/setResponseDelay(_:)``);
        /// `nil` when ``MockAPNsServer/dropConnection(atRequest:)``,
        /// ``MockAPNsServer/breakProtocol(atRequest:)`` or
        /// ``MockAPNsServer/blackHoleConnection(atRequest:)`` fired at this request, which
        /// is then never answered.
        public var status: Int?
        /// The device token of the path (`/3/device/<token>`) when the request passed
        /// validation far enough to have one; `nil` for broadcasts and channel requests.
        public var deviceToken: String?

        /// A processed request.
        public init(
            sequenceNumber: Int, connectionNumber: Int, streamID: Int, apnsID: String, status: Int?,
            deviceToken: String? = nil
        ) {
            self.sequenceNumber = sequenceNumber
            self.connectionNumber = connectionNumber
            self.streamID = streamID
            self.apnsID = apnsID
            self.status = status
            self.deviceToken = deviceToken
        }
    }

    private enum Lifecycle {
        case idle
        /// ``start()`` is under way; `stopRequested` once ``stop()`` was called meanwhile.
        case starting(stopRequested: Bool)
        case running(port: Int, addresses: [String], caPEM: String?)
        case stopped
    }

    /// The settings the server was created with.
    public let configuration: Configuration
    let state: ServerState
    private let lifecycle = Mutex(Lifecycle.idle)

    /// A server that is not listening yet; call ``start()``.
    /// - Parameter configuration: Bundle identifiers, authentication, stream limit, certificate.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        // eventfd(2) only fails when the process is out of descriptors; start() reports it.
        self.state = (try? ServerState(maxConcurrentStreams: configuration.maxConcurrentStreams,
                                       recordLimit: configuration.recordedRequestLimit))
            ?? ServerState.unusable(configuration: configuration)
    }

    // MARK: Lifecycle

    /// Generates the certificate (unless one was given), binds 127.0.0.1 (and ::1) on a
    /// port the system picks, and starts the server thread.
    /// - Throws: ``MockAPNsServerError`` if the certificate, the TLS context or a socket fails,
    ///   if the server was already started, or if ``stop()`` was called before it was up
    ///   (the server is then stopped).
    public func start() async throws {
        let configuration = configuration
        let state = state
        guard state.wakeFD >= 0 else { throw MockAPNsServerError("could not create the wake-up eventfd") }
        try lifecycle.withLock { lifecycle in
            guard case .idle = lifecycle else { throw MockAPNsServerError("start() called twice") }
            lifecycle = .starting(stopRequested: false)
        }
        let stoppedWhileStarting: Bool
        do {
            let chain: String
            let key: String
            var caPEM: String?
            switch configuration.certificate {
            case .generated:
                let authority = try CertificateAuthority.generate()
                chain = authority.serverChainPEM
                key = authority.serverKeyPEM
                caPEM = authority.certificatePEM
            case .pem(let certificateChain, let privateKey):
                chain = certificateChain
                key = privateKey
            }
            let (port, addresses) = try await withCheckedThrowingContinuation {
                (continuation: CheckedContinuation<(Int, [String]), Error>) in
                let thread = Thread {
                    // A client that disconnects mid-write must not end the host process.
                    capns_block_sigpipe_on_this_thread()
                    let loop: ServerLoop
                    do {
                        var requireCertificate = false
                        if case .certificate = configuration.authentication { requireCertificate = true }
                        let tls = try TLSServerContext(
                            certificateChainPEM: chain, privateKeyPEM: key,
                            clientCAPEM: configuration.authentication.clientCAPEM, requireClientCertificate: requireCertificate)
                        loop = try ServerLoop(state: state, configuration: configuration, tls: tls)
                        try loop.bind()
                    } catch {
                        state.markExited()
                        continuation.resume(throwing: error)
                        return
                    }
                    continuation.resume(returning: (loop.port, loop.addresses))
                    loop.run()
                    state.markExited()
                }
                thread.name = "apns-mock"  // Linux thread names hold 15 bytes
                thread.start()
            }
            stoppedWhileStarting = lifecycle.withLock { lifecycle in
                if case .starting(stopRequested: true) = lifecycle {
                    lifecycle = .stopped
                    return true
                }
                lifecycle = .running(port: port, addresses: addresses, caPEM: caPEM)
                return false
            }
            if !stoppedWhileStarting {
                configuration.logger.debug("mock APNs server listening", metadata: ["port": "\(port)"])
            }
        } catch {
            configuration.logger.error("mock APNs server failed to start", metadata: ["error": "\(error)"])
            let stopRequested = lifecycle.withLock { lifecycle -> Bool in
                let requested = if case .starting(stopRequested: true) = lifecycle { true } else { false }
                lifecycle = requested ? .stopped : .idle
                return requested
            }
            // A stop() waiting for the thread: it may never have run (the certificate
            // failed); marking the exit again once it has is harmless.
            if stopRequested { state.markExited() }
            throw error
        }
        if stoppedWhileStarting {
            // stop() was called while this started, and waits for the thread to end: the
            // server it would have left running is stopped before any client reaches it.
            state.send(.stop)
            await state.waitForExit()
            throw MockAPNsServerError("stop() was called while the server was starting")
        }
    }

    /// Whether ``start()`` is under way (for tests of ``stop()`` meanwhile).
    var isStarting: Bool {
        lifecycle.withLock { if case .starting = $0 { return true } else { return false } }
    }

    /// Stops the server: closes the listeners, sends GOAWAY (`NO_ERROR`, the last stream
    /// it processed) and TLS close_notify on every connection, as far as each socket takes
    /// them without waiting, closes them and waits for the server thread to end. A client
    /// thus sees the server go away: requests above the GOAWAY's last stream never reached
    /// it. Answers still delayed are not sent. Safe to call more than once. Called while
    /// ``start()`` is under way (a test's teardown racing its setup), it waits for the
    /// start and stops the server it brings up; that ``start()`` then throws.
    public func stop() async {
        enum Step { case none, stopNow, waitForStart }
        let step = lifecycle.withLock { lifecycle -> Step in
            switch lifecycle {
            case .running:
                lifecycle = .stopped
                return .stopNow
            case .starting:
                lifecycle = .starting(stopRequested: true)
                return .waitForStart
            case .idle, .stopped:
                return .none
            }
        }
        switch step {
        case .none:
            return
        case .stopNow:
            state.send(.stop)
            await state.waitForExit()
        case .waitForStart:
            // start() stops the loop it started, or marks the exit if it failed.
            await state.waitForExit()
        }
    }

    /// The TCP port, the same on 127.0.0.1 and ::1; `0` before ``start()`` and after ``stop()``.
    public var port: Int {
        lifecycle.withLock { if case .running(let port, _, _) = $0 { return port } else { return 0 } }
    }

    /// The addresses the server listens on: `127.0.0.1`, and `::1` when available.
    public var addresses: [String] {
        lifecycle.withLock { if case .running(_, let addresses, _) = $0 { return addresses } else { return [] } }
    }

    /// The generated CA certificate (PEM) that clients must trust; `nil` before ``start()``
    /// or when the server uses a given certificate.
    public var certificateAuthorityPEM: String? {
        lifecycle.withLock { if case .running(_, _, let pem) = $0 { return pem } else { return nil } }
    }

    /// Writes ``certificateAuthorityPEM`` to a file, for clients that take a CA file path.
    /// - Throws: ``MockAPNsServerError`` if there is no generated CA, or the file system's error.
    public func writeCertificateAuthority(to path: String) throws {
        guard let pem = certificateAuthorityPEM else {
            throw MockAPNsServerError("no generated CA certificate: the server is not running or uses a given certificate")
        }
        try Data(pem.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    // MARK: Scripting

    /// Answers every valid request for `deviceToken` with `response` (for example
    /// ``ScriptedResponse/unregistered(since:)``); `nil` removes the rule. Hexadecimal
    /// digits match in either case, as APNs reads a token.
    public func respond(toDeviceToken deviceToken: String, with response: ScriptedResponse?) {
        state.shared.withLock { $0.perToken[deviceToken.lowercased()] = response }
    }

    /// Answers the next `count` valid requests with `response`, for example
    /// ``ScriptedResponse/serviceUnavailable``, before any per-token or per-channel rule
    /// (the service answers before it looks at the token, as APNs does). Calls queue up
    /// in order.
    public func failNextRequests(_ count: Int, with response: ScriptedResponse) {
        guard count > 0 else { return }
        state.shared.withLock { $0.failures.append((count, response)) }
    }

    /// After `count` more requests are answered, sends GOAWAY on the connection that
    /// carried the last of them, with `{"reason": reason}` as debug data, then closes it.
    public func sendGoAway(afterRequests count: Int, reason: String = "Shutdown") {
        state.shared.withLock { $0.goAwayAfter = (max(1, count), reason) }
    }

    /// Sends GOAWAY now on every connection (last-stream-id: the last stream each
    /// processed), with `{"reason": reason}` as debug data when given, then closes them.
    public func sendGoAwayNow(reason: String? = "Shutdown") {
        state.send(.goAwayAll(reason: reason))
    }

    /// The bytes each open connection's HTTP/2 session keeps cached for reuse, read on the
    /// server's thread (for tests of the session memory); empty once the server stopped.
    func sessionCachedBytes() async -> [Int] {
        await withCheckedContinuation { continuation in
            let report: @Sendable ([Int]) -> Void = { continuation.resume(returning: $0) }
            if !state.sendUnlessExited(.inspectSessionMemory(report)) { report([]) }
        }
    }

    /// Waits this long before each answer (`.zero` to stop delaying).
    ///
    /// The new delay also applies to answers already waiting: each becomes due `delay`
    /// after its request arrived, so `.zero` releases them at once. A test can hold a
    /// request open with a long delay, act while it is in flight, then release it.
    public func setResponseDelay(_ delay: Duration) {
        let delay = max(.zero, delay)
        state.shared.withLock { $0.delay = delay }
        state.send(.rescheduleDelayed(delay))
    }

    /// Closes the connection abruptly (no answer, no GOAWAY, no TLS close_notify) when the
    /// `count`-th request from now arrives; that request is never answered.
    public func dropConnection(atRequest count: Int) {
        state.shared.withLock { $0.dropAfter = max(1, count) }
    }

    /// Breaks HTTP/2 on purpose, to test how a client handles a connection error: when
    /// the `count`-th request from now arrives, the server writes a DATA frame on stream 0
    /// to that connection, bypassing its HTTP/2 session. RFC 9113 §6.1 makes that a
    /// connection error of type PROTOCOL_ERROR, so the client must send GOAWAY with
    /// PROTOCOL_ERROR and close (counted in ``Statistics/goAwaysReceived``).
    ///
    /// Frames queued before the trigger are written first; nothing follows the invalid
    /// frame. That request, any request arriving after it on the connection, and every
    /// answer still waiting there (see ``setResponseDelay(_:)``) are never answered. The
    /// connection stays open, reading, until the client closes it. Test only: APNs does
    /// not do this.
    public func breakProtocol(atRequest count: Int) {
        state.shared.withLock { $0.breakProtocolAfter = max(1, count) }
    }

    /// Turns one connection into a black hole, to test a client's PING timeout: when the
    /// `count`-th request from now arrives, the server stops answering on the connection
    /// that carried it. TCP and TLS stay up, but the server writes nothing more there (no
    /// answers, no PING or SETTINGS acknowledgements, no GOAWAY, not even on ``stop()``)
    /// and reads only to discard, until the client closes the connection.
    ///
    /// That request, any request arriving after it on the connection, and every answer
    /// still waiting there (see ``setResponseDelay(_:)``) are never answered. Other
    /// connections, and new ones, are not affected. Test only: it stands for a peer or a
    /// network path that has died without closing the connection.
    public func blackHoleConnection(atRequest count: Int) {
        state.shared.withLock { $0.blackHoleAfter = max(1, count) }
    }

    /// Closes every connection abruptly now.
    public func dropAllConnections() {
        state.send(.dropAll)
    }

    /// Sets SETTINGS_MAX_CONCURRENT_STREAMS on every open connection and for new ones,
    /// as APNs does when it lowers a connection's limit after errors.
    public func setMaxConcurrentStreams(_ limit: Int) {
        let limit = max(0, limit)
        state.shared.withLock { $0.maxConcurrentStreams = limit }
        state.send(.applyStreamLimit(limit))
    }

    /// Accepts and at once closes new connections for `duration`.
    public func refuseConnections(for duration: Duration) {
        state.shared.withLock { $0.refuseUntil = .now + duration }
    }

    /// Removes every scripted fault: per-token and per-channel answers, queued failures,
    /// GOAWAY, drop, protocol-break and black-hole triggers, delay, connection refusal and
    /// link emulation.
    /// The stream limit and the channels are left as they are; connections already broken
    /// or black-holed stay so.
    public func resetScript() {
        state.shared.withLock { shared in
            shared.perToken.removeAll()
            shared.perChannel.removeAll()
            shared.failures.removeAll()
            shared.goAwayAfter = nil
            shared.dropAfter = nil
            shared.breakProtocolAfter = nil
            shared.blackHoleAfter = nil
            shared.delay = .zero
            shared.refuseUntil = nil
            shared.link = nil
        }
        state.send(.setLink(nil))
    }

    // MARK: Recording

    /// A copy of the recorded requests, oldest first (at most
    /// ``Configuration/recordedRequestLimit``).
    public var recordedRequests: [RecordedRequest] {
        state.snapshot()
    }

    /// Counters since the server started.
    public var statistics: Statistics {
        state.shared.withLock { $0.statistics }
    }

    /// The provider keys each connection carried, by connection number (as in
    /// ``RecordedRequest/connectionNumber``): the key identifier (`kid`) of every token
    /// whose header could be read, accepted or not, in the order first seen.
    ///
    /// APNs binds a connection to the key of its first token and refuses tokens of any other
    /// key there (403 `UnrelatedKeyIdInToken`), so a client that keeps one connection per key
    /// leaves exactly one key per connection here. Kept for every connection whatever
    /// ``Configuration/recordedRequestLimit`` says (it costs one entry per key and
    /// connection); empty unless the server uses ``Authentication/providerToken(_:)``.
    public var keyIDsByConnection: [Int: [String]] {
        state.shared.withLock { $0.keyIDsByConnection }
    }

    /// Forgets the recorded requests (counters keep counting).
    public func removeRecordedRequests() {
        state.shared.withLock { shared in
            shared.records.removeAll()
            shared.recordStart = 0
        }
    }

    /// Calls `observer` for every request the server processes from now on (every one
    /// counted in ``Statistics/requests``: answered, rejected or dropped by the script),
    /// with its `apns-id` and status; `nil` removes the observer.
    ///
    /// Unlike ``requests()`` and ``recordedRequests`` it copies no headers or body, so it
    /// can watch millions of requests with ``Configuration/recordedRequestLimit`` at 0, for
    /// example to count how often each `apns-id` reached the server. Requests the server
    /// refused unprocessed (above a GOAWAY's last-stream-id) are not reported.
    ///
    /// `observer` runs on the server thread, outside the server's lock, before the answer
    /// is written: keep it short, never block in it, and do not wait in it for anything the
    /// server must do.
    public func observeRequests(_ observer: (@Sendable (ProcessedRequest) -> Void)?) {
        state.shared.withLock { $0.observer = observer }
    }

    /// Every request answered from now on, as it is answered. The stream ends when the
    /// server stops or the consumer stops iterating.
    public func requests() -> AsyncStream<RecordedRequest> {
        let (stream, continuation) = AsyncStream.makeStream(of: RecordedRequest.self)
        let state = state
        let key = state.shared.withLock { shared -> Int? in
            if shared.exited { return nil }
            let key = shared.nextSubscriber
            shared.nextSubscriber += 1
            shared.subscribers[key] = continuation
            state.hasSubscribers.store(true, ordering: .relaxed)
            return key
        }
        guard let key else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { _ in
            state.shared.withLock { shared in
                shared.subscribers.removeValue(forKey: key)
                state.hasSubscribers.store(!shared.subscribers.isEmpty, ordering: .relaxed)
            }
        }
        return stream
    }
}

/// Starts a mock server, runs `body` with it, and stops it whether `body` returns or throws.
/// - Parameters:
///   - configuration: The server's configuration.
///   - body: The test; the server is running while it runs.
/// - Returns: What `body` returns.
public func withMockAPNsServer<Value: Sendable>(
    configuration: MockAPNsServer.Configuration = MockAPNsServer.Configuration(),
    _ body: (MockAPNsServer) async throws -> Value
) async throws -> Value {
    let server = MockAPNsServer(configuration: configuration)
    try await server.start()
    do {
        let result = try await body(server)
        await server.stop()
        return result
    } catch {
        await server.stop()
        throw error
    }
}
