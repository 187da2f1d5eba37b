#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging

// Broadcast pushes and channel management (iOS 18 Live Activities), through the same
// attempt loop, transport and retry policy as device pushes.
extension APNsClient {
    /// Sends a Live Activity update once to every device subscribed to `channel`.
    ///
    /// The request goes to ``APNsEnvironment/broadcast`` of ``environment``
    /// (`POST /4/broadcasts/apps/<bundle ID>`): the same host, on port 443 even when the
    /// client's environment is ``APNsEnvironment/alternatePort``, which APNs does not offer
    /// for broadcasts. It is retried like a device push, reusing its `apns-request-id`.
    ///
    /// - Parameters:
    ///   - notification: The update: payload, priority, expiration.
    ///   - channel: The channel, from ``createChannel(bundleID:storagePolicy:requestID:)``.
    ///   - bundleID: Your app's bundle ID, without the `.push-type.liveactivity` suffix of a
    ///     Live Activity device push's topic (one with it is refused before sending:
    ///     ``APNsError/invalid(_:)``, ``APNsRequestError/Code/invalidTopic``).
    /// - Returns: The acceptance, with the `apns-request-id` (and `apns-unique-id` when APNs sends one).
    /// - Throws: ``APNsError``. Broadcast rejections include `ChannelNotRegistered`,
    ///   `BadChannelId`, `FeatureNotEnabled` and `BadExpirationDate` (a non-zero expiration on
    ///   a channel that stores nothing).
    ///
    /// See [Sending broadcast push notification requests to APNs](https://developer.apple.com/documentation/usernotifications/sending-broadcast-push-notification-requests-to-apns).
    public func broadcast(
        _ notification: BroadcastNotification,
        to channel: ChannelID,
        bundleID: String
    ) async throws(APNsError) -> BroadcastAccepted {
        let requestID = notification.requestID ?? .random()
        return try await counted("broadcast", requestID: requestID) { (attempts) async throws(APNsError) -> BroadcastAccepted in
        let prepared: BroadcastNotification.Prepared
        do throws(APNsRequestError) {
            prepared = try notification.prepared()
        } catch {
            logger.debug("broadcast is invalid", metadata: ["apns.error": "\(error)"])
            throw .invalid(error)
        }
        let endpoint = environment.broadcast
        var logger = self.logger
        logger[metadataKey: "apns.request-id"] = "\(requestID.uuidString)"
        logger[metadataKey: "apns.channel-id"] = "\(channel.rawValue)"
        return try await perform(
            "broadcast",
            logger: logger,
            request: { (providerToken: ProviderToken?, timeout: Duration) throws(APNsRequestError) -> APNsRequest in
                try prepared.request(
                    to: channel,
                    bundleID: bundleID,
                    environment: endpoint,
                    authorization: providerToken?.authorizationValue,
                    requestID: requestID,
                    timeout: timeout
                )
            },
            interpret: { response, request in
                if let accepted = BroadcastAccepted(response: response, request: request, channel: channel) {
                    return .success(accepted)
                }
                return .failure(Self.rejection(response, request))
            },
            attempts: attempts
        )
        }
    }

    /// Runs a broadcast or channel call (`body`, given the counter of its attempts when a
    /// span records them), counting its outcome under `operation` in
    /// `apns_channel_calls_total` and recording it in an `APNs channel call` span.
    private func counted<Success>(
        _ operation: String,
        requestID: APNsRequestID,
        _ body: (AttemptCounter?) async throws(APNsError) -> Success
    ) async throws(APNsError) -> Success {
        let span = tracing.startChannelCall(operation, requestID: requestID)
        let attempts = span == nil ? nil : AttemptCounter()
        do {
            let success = try await body(attempts)
            metrics.channelCall(operation, nil)
            tracing.endChannelCall(span, nil, attempts: attempts?.value)
            return success
        } catch {
            metrics.channelCall(operation, error)
            tracing.endChannelCall(span, error, attempts: attempts?.value)
            throw error
        }
    }

    /// Sends a Live Activity payload once to every device subscribed to `channel`: a
    /// shorthand for ``broadcast(_:to:bundleID:)`` with a ``BroadcastNotification``.
    ///
    /// - Parameters:
    ///   - payload: A Live Activity payload (`event`, `timestamp`, `content-state`, …), at most 5120 bytes.
    ///   - channel: The channel.
    ///   - bundleID: Your app's bundle ID.
    ///   - priority: The `apns-priority`; 10 unless given.
    ///   - expiration: The `apns-expiration`; 0 unless given (required on a channel that stores nothing).
    public func broadcast(
        _ payload: Payload,
        to channel: ChannelID,
        bundleID: String,
        priority: Priority = .immediate,
        expiration: Expiration = .immediately
    ) async throws(APNsError) -> BroadcastAccepted {
        try await broadcast(
            BroadcastNotification(payload: payload, priority: priority, expiration: expiration),
            to: channel,
            bundleID: bundleID
        )
    }

    /// Creates a broadcast channel for the app (at most 10,000 per app and environment).
    ///
    /// The request goes to ``APNsEnvironment/channelManagement`` of ``environment``.
    ///
    /// - Parameters:
    ///   - bundleID: Your app's bundle ID.
    ///   - storagePolicy: What APNs keeps for offline devices; fixed for the channel's life.
    ///   - requestID: The `apns-request-id` to send, for example one your logs already
    ///     carry; a new random one when `nil`. A retry reuses it.
    /// - Returns: The new channel's ID (the `apns-channel-id` of APNs' `201` answer) and the
    ///   request ID APNs echoed.
    /// - Throws: ``APNsError``; `CannotCreateChannelConfig` when the app has reached its
    ///   channel limit. A success answer without a valid `apns-channel-id` is
    ///   ``APNsError/failed(_:)`` with ``APNsTransportError/Code/protocolError``.
    ///
    /// See [Sending channel management requests to APNs](https://developer.apple.com/documentation/usernotifications/sending-channel-management-requests-to-apns).
    public func createChannel(
        bundleID: String,
        storagePolicy: MessageStoragePolicy = .noStorage,
        requestID: APNsRequestID? = nil
    ) async throws(APNsError) -> ChannelResponse<ChannelID> {
        try await manageChannels(.create(storagePolicy: storagePolicy), bundleID: bundleID, requestID: requestID) {
            response in
            guard response.status == 201 || response.status == 200 else { return nil }
            guard let header = response.header("apns-channel-id") else {
                return .failure(
                    .failed(
                        .protocolError("APNs answered \(response.status) to a channel creation without apns-channel-id")
                    )
                )
            }
            do {
                return .success(try ChannelID(header))
            } catch {
                return .failure(
                    .failed(
                        .protocolError("APNs answered a channel creation with an invalid apns-channel-id: \(error)")
                    )
                )
            }
        }
    }

    /// Reads a channel's configuration.
    ///
    /// - Parameters:
    ///   - channel: The channel.
    ///   - bundleID: Your app's bundle ID.
    ///   - requestID: The `apns-request-id` to send; a new random one when `nil`. A retry reuses it.
    /// - Returns: The storage policy and push type APNs reports, and the request ID it echoed.
    /// - Throws: ``APNsError``; `ChannelNotRegistered` when APNs does not know the channel.
    public func channelConfiguration(
        _ channel: ChannelID,
        bundleID: String,
        requestID: APNsRequestID? = nil
    ) async throws(APNsError) -> ChannelResponse<ChannelConfiguration> {
        try await manageChannels(.read(channel), bundleID: bundleID, requestID: requestID) { response in
            guard response.status == 200 else { return nil }
            guard let configuration = ChannelConfiguration(json: response.body) else {
                return .failure(
                    .failed(.protocolError("APNs answered 200 with a body that is not a channel configuration"))
                )
            }
            return .success(configuration)
        }
    }

    /// Lists every channel of the app.
    ///
    /// - Parameters:
    ///   - bundleID: Your app's bundle ID.
    ///   - requestID: The `apns-request-id` to send; a new random one when `nil`. A retry reuses it.
    /// - Returns: The channel IDs, in the order APNs lists them, and the request ID it echoed.
    /// - Throws: ``APNsError``.
    public func channels(
        bundleID: String,
        requestID: APNsRequestID? = nil
    ) async throws(APNsError) -> ChannelResponse<[ChannelID]> {
        try await manageChannels(.list, bundleID: bundleID, requestID: requestID) { response in
            guard response.status == 200 else { return nil }
            switch ChannelListReader.channels(in: response.body) {
            case .success(let channels):
                return .success(channels)
            case .failure(.notAList):
                return .failure(
                    .failed(.protocolError("APNs answered 200 with a body that is not {\"channels\": [...]}"))
                )
            case .failure(.entry(let index)):
                return .failure(
                    .failed(.protocolError("entry \(index) of the channel list is not a base64 channel ID"))
                )
            }
        }
    }

    /// Deletes a channel; devices stop receiving its broadcasts.
    ///
    /// - Parameters:
    ///   - channel: The channel.
    ///   - bundleID: Your app's bundle ID.
    ///   - requestID: The `apns-request-id` to send; a new random one when `nil`. A retry reuses it.
    /// - Returns: The deleted channel and the request ID APNs echoed.
    /// - Throws: ``APNsError``; `ChannelNotRegistered` when APNs does not know the channel.
    @discardableResult
    public func deleteChannel(
        _ channel: ChannelID,
        bundleID: String,
        requestID: APNsRequestID? = nil
    ) async throws(APNsError) -> ChannelResponse<ChannelID> {
        try await manageChannels(.delete(channel), bundleID: bundleID, requestID: requestID) { response in
            response.status == 204 || response.status == 200 ? .success(channel) : nil
        }
    }

    /// Runs one channel management request through the attempt loop, on the channel
    /// management endpoint that belongs with ``environment``, with `requestID` (or a new
    /// one). `success` reads a success answer, or returns `nil` for a status that is a
    /// rejection; the echoed `apns-request-id` (else the one sent) goes with its value.
    private func manageChannels<Success: Sendable>(
        _ operation: ChannelRequest,
        bundleID: String,
        requestID: APNsRequestID?,
        success: (APNsResponse) -> Result<Success, APNsError>?
    ) async throws(APNsError) -> ChannelResponse<Success> {
        let requestID = requestID ?? .random()
        let endpoint = environment.channelManagement
        var logger = self.logger
        logger[metadataKey: "apns.request-id"] = "\(requestID.uuidString)"
        logger[metadataKey: "apns.channel-operation"] = "\(operation.logName)"
        return try await counted(operation.logName, requestID: requestID) { (attempts) async throws(APNsError) -> ChannelResponse<Success> in
        try await perform(
            "channel request",
            logger: logger,
            request: { (providerToken: ProviderToken?, timeout: Duration) throws(APNsRequestError) -> APNsRequest in
                try operation.request(
                    bundleID: bundleID,
                    environment: endpoint,
                    authorization: providerToken?.authorizationValue,
                    requestID: requestID,
                    timeout: timeout
                )
            },
            interpret: { response, request in
                guard let result = success(response) else { return .failure(Self.rejection(response, request)) }
                let echoed = response.header("apns-request-id").flatMap { try? APNsRequestID($0) } ?? requestID
                return result.map { ChannelResponse(value: $0, requestID: echoed) }
            },
            attempts: attempts
        )
        }
    }

    /// What an answer other than the call's success means, as for a device push
    /// (``notAccepted(_:to:apnsID:deviceToken:)``): APNs' refusal for a 4xx or 5xx (with
    /// no reason when the body is not APNs' JSON); any other status (a 2xx this call does
    /// not expect, a 3xx) is one APNs never answers with, so a failure that may have
    /// reached APNs, never a rejection saying nothing was done.
    static func rejection(_ response: APNsResponse, _ request: APNsRequest) -> APNsError {
        guard (400...599).contains(response.status) else {
            return .failed(.protocolError(
                "the server answered with status \(response.status), which APNs never answers this request with; "
                    + "it may have been processed"))
        }
        return .rejected(
            APNsRejection(response: response, request: request) ?? APNsRejection(status: response.status, reason: nil)
        )
    }
}

extension ChannelRequest {
    /// `create`, `read`, `list` or `delete`, for logs.
    var logName: String {
        switch self {
        case .create: "create"
        case .read: "read"
        case .list: "list"
        case .delete: "delete"
        }
    }
}

