import Foundation

/// Decides what the server does with each complete request: routing (device pushes,
/// broadcasts, channel management), validation with Apple's reasons, the provider-token
/// rules (through each connection's ``TokenAuthorizer``), the scripted faults, the record
/// and the answer. It does no I/O: ``ServerConnection`` hands it a request and performs
/// the ``Reply``.
///
/// One per server thread, used on that thread only; what belongs to one connection is in
/// its ``ConnectionState``.
final class RequestHandler {
    /// What the handler keeps per connection.
    struct ConnectionState {
        /// The connection's number, from 0 in the order the server accepted them.
        let number: Int
        /// In certificate mode, the topics of the client's certificate.
        var certificateTopics: [String]?
        /// On a token connection, the connection's provider-token rules; `nil` on a
        /// certificate connection (or with no authentication).
        var authorizer: TokenAuthorizer?
        /// Whether the stream limit was raised past the initial 1 (token mode), by a first
        /// accepted token or by ``MockAPNsServer/setMaxConcurrentStreams(_:)``.
        var streamLimitRaised = false
        /// Requests rejected on the connection (see ``MockAPNsServer/Configuration/closeAfterRejections``).
        var rejections = 0
    }

    /// A complete request as the connection received it.
    struct Request {
        var streamID: Int32
        var headers: [RecordedRequest.Header]
        var body: [UInt8]
        var headerBlockLength: Int
        var inflaterTableSize: Int
        /// How each header was represented in HPACK, when the header block could be read.
        var representations: [RecordedRequest.HeaderRepresentation]?
    }

    /// An answer: `:status`, the identifier field (`apns-id`, or `apns-request-id`), the
    /// other header fields in order (`apns-unique-id` first when there is one; for a device
    /// push, only that one, in the sandbox), the JSON body if any.
    struct Response {
        var status: Int
        var idField: (name: String, value: String)
        var headers: [(String, String)]
        var body: [UInt8]
        /// The answer is to a `HEAD` request: its header fields (`content-type` and
        /// `content-length` included) go out, its body does not. A response to HEAD has no
        /// content (RFC 9110 §9.3.2, RFC 9113 §8.1.1), and an HTTP/2 client resets a stream
        /// whose answer to HEAD carries DATA: curl -I then fails (exit 92) instead of
        /// showing the 405.
        var omitsContent = false
    }

    /// What the connection does with the request.
    enum Action {
        /// Answer, after `delay` (`.zero`: now), with GOAWAY first when `goAwayReason` is set
        /// (`{"reason": …}` as its debug data; none when it is empty).
        case answer(Response, delay: Duration, goAwayReason: String?)
        /// Close the connection abruptly; see ``MockAPNsServer/dropConnection(atRequest:)``.
        case drop
        /// Write an invalid frame; see ``MockAPNsServer/breakProtocol(atRequest:)``.
        case breakProtocol
        /// Go silent; see ``MockAPNsServer/blackHoleConnection(atRequest:)``.
        case blackHole
    }

    /// The action, and SETTINGS_MAX_CONCURRENT_STREAMS values to announce after it, in order.
    struct Reply {
        var action: Action
        var streamLimits: [Int] = []
        /// Set when the request was a device push that passed every rule and got the plain
        /// `200` (no script answered instead): the connection may then answer requests with
        /// the same `authorization`, `apns-topic` and `apns-push-type` on its fast path.
        var acceptedPush: AcceptedPush?
    }

    /// What a device push was accepted with (see ``Reply/acceptedPush``).
    struct AcceptedPush {
        /// The `iat` of the connection's provider token, whose age is checked on every
        /// request; `nil` when the connection does not authenticate with tokens.
        var issuedAt: Int64?
    }

    let state: ServerState
    let configuration: MockAPNsServer.Configuration
    let validator: RequestValidator
    private let verdicts: TokenVerdictCache?
    /// The `apns-id` of answers to requests that sent none.
    @exclusivity(unchecked) private var idGenerator = APNsIDGenerator()

    init(state: ServerState, configuration: MockAPNsServer.Configuration) {
        self.state = state
        self.configuration = configuration
        var validator = RequestValidator(bundleIDs: configuration.bundleIDs,
                                         malformedPayloadReason: configuration.malformedPayloadReason)
        validator.deviceTokenDigits = configuration.deviceTokenDigits
        self.validator = validator
        verdicts = configuration.authentication.tokenCheck.map { TokenVerdictCache(check: $0) }
    }

    /// Whether connections may authenticate with provider tokens (a connection that does
    /// starts at one stream; see ``ConnectionState/authorizer``).
    var tokenMode: Bool { verdicts != nil }

    /// Writes a new `apns-id` (36 bytes) for an answer to a request that sent none.
    func makeAPNsID(into buffer: UnsafeMutablePointer<UInt8>) {
        idGenerator.write(into: buffer)
    }

    /// The state of a new connection.
    func makeConnectionState(number: Int) -> ConnectionState {
        ConnectionState(
            number: number,
            authorizer: verdicts.map {
                TokenAuthorizer(verdicts: $0, environment: configuration.environment, keyScopes: configuration.keyScopes)
            })
    }

    /// Validates, authorizes and scripts `request`, records it, and says how to answer.
    func handle(_ request: Request, connection: inout ConnectionState) -> Reply {
        var claims: ProviderTokenClaims?
        var keyTopics: Set<String>?
        var tokenAccepted = false
        let validatorRequest = RequestValidator.Request(headers: request.headers, body: request.body)
        func authorizeRequest(_ authorization: String?) -> RequestValidator.Rejection? {
            // Mutated in place: a copy would retain and release every string it holds.
            guard let outcome = connection.authorizer?.authorize(authorization, now: self.configuration.now()) else {
                return nil
            }
            if let keyID = outcome.newKeyID { self.state.noteKey(keyID, connection: connection.number) }
            claims = outcome.claims
            keyTopics = outcome.keyTopics
            tokenAccepted = outcome.rejection == nil
            return outcome.rejection
        }
        var deviceToken: Substring?
        var rejection: RequestValidator.Rejection?
        /// `apns-id` for device pushes; `apns-request-id` for broadcasts and channel management.
        let apnsID: String
        let idFieldName: String
        /// Fields after the identifier (a channel answer's); none for a device push.
        var responseHeaders: [(String, String)] = []
        var channelOperation: BroadcastRouter.Operation?
        let path = request.headers.first { $0.name == ":path" }?.value ?? ""
        if BroadcastRouter.handles(path: path) {
            let router = BroadcastRouter(bundleIDs: validator.bundleIDs,
                                         malformedPayloadReason: validator.malformedPayloadReason,
                                         channels: state.channels,
                                         broadcastDisabledBundleIDs: configuration.broadcastDisabledBundleIDs)
            let routed = router.route(validatorRequest, certificateTopics: connection.certificateTopics,
                                      keyTopics: { keyTopics }, authorize: authorizeRequest)
            switch routed.result {
            case .success(let operation): channelOperation = operation
            case .failure(let failure): rejection = failure
            }
            apnsID = routed.requestID
            idFieldName = "apns-request-id"
        } else {
            switch validator.validate(validatorRequest, certificateTopics: connection.certificateTopics,
                                      keyTopics: { keyTopics }, authorize: authorizeRequest) {
            case .success(let accepted): deviceToken = accepted.deviceToken
            case .failure(let failure): rejection = failure
            }
            let requestedID = request.headers.first { $0.name == "apns-id" }?.value
            apnsID = requestedID.flatMap { RequestValidator.isCanonicalUUID($0) ? $0 : nil } ?? idGenerator.make()
            idFieldName = "apns-id"
        }

        let connectionNumber = connection.number
        let decision = state.decide(validation: rejection, deviceToken: deviceToken, apnsID: apnsID,
                                    successStatus: channelOperation?.successStatus ?? 200,
                                    broadcastChannel: channelOperation?.broadcastChannelID) {
            // Only when records are wanted: it copies the headers.
            var headers = request.headers
            if let representations = request.representations, representations.count == headers.count {
                for index in headers.indices { headers[index].representation = representations[index] }
            }
            return RecordedRequest(
                sequenceNumber: 0, connectionNumber: connectionNumber, streamID: Int(request.streamID), headers: headers,
                headerBlockLength: request.headerBlockLength, inflaterDynamicTableSize: request.inflaterTableSize,
                body: request.body, providerToken: claims, status: 0, reason: nil, apnsID: apnsID)
        }
        func processed(status: Int?) -> MockAPNsServer.ProcessedRequest {
            MockAPNsServer.ProcessedRequest(
                sequenceNumber: decision.sequenceNumber, connectionNumber: connection.number,
                streamID: Int(request.streamID), apnsID: apnsID, status: status, deviceToken: deviceToken.map(String.init))
        }
        if decision.drop || decision.breakProtocol || decision.blackHole {
            decision.observer?(processed(status: nil))
            return Reply(action: decision.drop ? .drop : decision.breakProtocol ? .breakProtocol : .blackHole)
        }
        var status = decision.response?.status ?? 200
        var body = decision.response.map { Array($0.jsonBody.utf8) } ?? []
        if decision.response == nil, let channelOperation {
            // Only now, when no scripted fault answers instead, does a channel change.
            let answer = BroadcastRouter(bundleIDs: [], malformedPayloadReason: "", channels: state.channels)
                .commit(channelOperation)
            status = answer.status
            body = answer.body
            responseHeaders += answer.headers
        }
        if status == 200, channelOperation == nil, configuration.environment == .sandbox {
            // APNs' development server adds a key into its delivery log to an accepted push.
            responseHeaders.append(("apns-unique-id", idGenerator.make()))
        }
        decision.observer?(processed(status: status))
        var goAwayReason = decision.goAwayReason
        if rejection != nil, let limit = configuration.closeAfterRejections {
            connection.rejections += 1
            // "" is a GOAWAY without debug data (see ServerConnection.goAway(reason:)).
            if connection.rejections == limit, goAwayReason == nil { goAwayReason = "" }
        }
        let method = request.headers.first { $0.name == ":method" }?.value
        var response = Response(status: status, idField: (idFieldName, apnsID), headers: responseHeaders, body: body)
        response.omitsContent = method == "HEAD"
        var reply = Reply(action: .answer(response,
                                          delay: decision.delay, goAwayReason: goAwayReason))
        if tokenAccepted, connection.authorizer != nil, !connection.streamLimitRaised {
            reply.streamLimits.append(state.shared.withLock { $0.maxConcurrentStreams })
            connection.streamLimitRaised = true
        }
        if deviceToken != nil, rejection == nil, channelOperation == nil, decision.response == nil,
           connection.authorizer == nil || (tokenAccepted && claims != nil) {
            reply.acceptedPush = AcceptedPush(issuedAt: connection.authorizer == nil ? nil : claims?.issuedAt)
        }
        if rejection != nil, let dropped = configuration.streamLimitAfterRejection {
            // APNs has been seen to lower a connection's stream limit after errors.
            reply.streamLimits.append(dropped)
        }
        return reply
    }
}
