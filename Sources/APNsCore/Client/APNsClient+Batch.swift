import Logging

extension APNsClient {
    /// Sends `notification` to many devices, at most `maxConcurrency` at a time.
    ///
    /// The payload is encoded once. Each token gets its own random `apns-id`, unless the
    /// notification names one, which is then sent to every token. Requests start in input
    /// order and a new one starts as soon as one finishes (a sliding window).
    ///
    /// The requests are made, sent and answered on the transport's threads
    /// (``PushTransport/sendBatch(count:maxConcurrency:makeRequest:onResult:)``), without a
    /// task per notification; answers other than acceptances then go through the same
    /// attempt loop as ``send(_:to:)``, which retries what ``retryPolicy`` allows. See
    /// <doc:SendingAtScale>.
    ///
    /// - Parameters:
    ///   - notification: The notification.
    ///   - deviceTokens: The devices; duplicates are sent to twice.
    ///   - maxConcurrency: The most requests in flight at once; values below 1 count as 1.
    /// - Returns: One outcome per device token, in the order of `deviceTokens`: none is
    ///   lost or repeated. If the notification is invalid, every outcome is that
    ///   ``APNsError/invalid(_:)``; if the task is cancelled, the rest fail with
    ///   ``APNsTransportError/Code/cancelled`` (those never sent with
    ///   `mayHaveReachedAPNs == false`, their requests never built).
    public func send(
        _ notification: PushNotification,
        to deviceTokens: [DeviceToken],
        maxConcurrency: Int = 100
    ) async -> [APNsOutcome] {
        if deviceTokens.isEmpty { return [] }
        let pass = makePass(deviceTokens, notification)
        await sendBatch(notification, to: deviceTokens, into: pass, maxConcurrency: maxConcurrency)
        return pass.takeOutcomes()
    }

    /// Sends `notification` to many devices like ``send(_:to:maxConcurrency:)``, handing
    /// each device's outcome to `onOutcome` as soon as it is final instead of collecting
    /// them: for campaigns too large to hold every outcome, or to act on each one at once
    /// (forget an unregistered token, count progress).
    ///
    /// `onOutcome` is called exactly once per index of `deviceTokens`, in the order the
    /// outcomes become final (not input order), from any thread and possibly for several
    /// indices at once: most calls come from the transport's I/O threads, so keep
    /// it quick and thread-safe, and do not block in it. The method returns after the last
    /// call has returned.
    ///
    /// - Parameters:
    ///   - notification: The notification.
    ///   - deviceTokens: The devices; duplicates are sent to twice.
    ///   - maxConcurrency: The most requests in flight at once; values below 1 count as 1.
    ///   - onOutcome: Receives the index in `deviceTokens` and the outcome.
    /// - Returns: How many were accepted, rejected and failed.
    @discardableResult
    public func send(
        _ notification: PushNotification,
        to deviceTokens: [DeviceToken],
        maxConcurrency: Int = 100,
        onOutcome: @escaping @Sendable (_ index: Int, _ outcome: APNsOutcome) -> Void
    ) async -> APNsBatchSummary {
        let pass = makePass(deviceTokens, notification, onOutcome: onOutcome)
        if !deviceTokens.isEmpty {
            await sendBatch(notification, to: deviceTokens, into: pass, maxConcurrency: maxConcurrency)
        }
        return pass.summary
    }

    /// The batch of one notification to many devices: checked and encoded once; if it is
    /// invalid, every index ends with that ``APNsError/invalid(_:)`` and nothing is sent.
    private func sendBatch(
        _ notification: PushNotification,
        to deviceTokens: [DeviceToken],
        into pass: BatchPass,
        maxConcurrency: Int
    ) async {
        let prepared: PushNotification.Prepared
        do {
            prepared = try notification.prepared()
        } catch {
            logger.debug("notification is invalid", metadata: ["apns.error": "\(error)"])
            for index in deviceTokens.indices { pass.finish(index, .failure(.invalid(error))) }
            // The batch's span ends as every other batch's does, with its counts.
            pass.endBatchSpan()
            return
        }
        let fixedID = notification.apnsID
        await sendBatch(pass, deviceTokens, maxConcurrency: maxConcurrency, notification: { _ in .success((prepared, fixedID)) })
    }

    /// Sends each notification to its device, at most `maxConcurrency` at a time: the
    /// batch for notifications that differ from device to device (localized text, a
    /// badge count, a personal message).
    ///
    /// Each notification is checked and encoded when its turn comes, on the transport's
    /// threads; one that is invalid fails alone with ``APNsError/invalid(_:)`` and is not
    /// sent. Each gets its own random `apns-id` unless it names one. Otherwise this is
    /// ``send(_:to:maxConcurrency:)``: a sliding window in input order, retries as the
    /// ``retryPolicy`` allows, no task per notification.
    ///
    /// ```swift
    /// let outcomes = await client.send(users.map { user in
    ///     (PushNotification(payload: .alert(body: "You have \(user.unread) new messages"), topic: topic),
    ///      user.deviceToken)
    /// })
    /// ```
    ///
    /// - Parameters:
    ///   - deliveries: Each notification with the device it goes to.
    ///   - maxConcurrency: The most requests in flight at once; values below 1 count as 1.
    /// - Returns: One outcome per delivery, in the order of `deliveries`: none is lost or
    ///   repeated; if the task is cancelled, the rest fail with
    ///   ``APNsTransportError/Code/cancelled`` (those never sent with
    ///   `mayHaveReachedAPNs == false`, their notifications never encoded).
    public func send(
        _ deliveries: [(notification: PushNotification, deviceToken: DeviceToken)],
        maxConcurrency: Int = 100
    ) async -> [APNsOutcome] {
        if deliveries.isEmpty { return [] }
        let pass = makePass(deliveries)
        await sendBatch(deliveries, into: pass, maxConcurrency: maxConcurrency)
        return pass.takeOutcomes()
    }

    /// Sends each notification to its device like ``send(_:maxConcurrency:)``, handing each
    /// outcome to `onOutcome` as soon as it is final instead of collecting them; see
    /// ``send(_:to:maxConcurrency:onOutcome:)`` for how `onOutcome` is called.
    ///
    /// - Parameters:
    ///   - deliveries: Each notification with the device it goes to.
    ///   - maxConcurrency: The most requests in flight at once; values below 1 count as 1.
    ///   - onOutcome: Receives the index in `deliveries` and the outcome.
    /// - Returns: How many were accepted, rejected and failed.
    @discardableResult
    public func send(
        _ deliveries: [(notification: PushNotification, deviceToken: DeviceToken)],
        maxConcurrency: Int = 100,
        onOutcome: @escaping @Sendable (_ index: Int, _ outcome: APNsOutcome) -> Void
    ) async -> APNsBatchSummary {
        let pass = makePass(deliveries, onOutcome: onOutcome)
        if !deliveries.isEmpty {
            await sendBatch(deliveries, into: pass, maxConcurrency: maxConcurrency)
        }
        return pass.summary
    }

    /// The pass of one notification to many devices, its sends counted.
    private func makePass(
        _ deviceTokens: [DeviceToken],
        _ notification: PushNotification,
        onOutcome: (@Sendable (Int, APNsOutcome) -> Void)? = nil
    ) -> BatchPass {
        let pushType = notification.pushType
        metrics.sent(pushType, count: deviceTokens.count)
        return BatchPass(deviceTokens: deviceTokens, metrics: metrics, tracing: tracing, pushType: { _ in pushType }, onOutcome: onOutcome)
    }

    /// The pass of a different notification per device, its sends counted.
    private func makePass(
        _ deliveries: [(notification: PushNotification, deviceToken: DeviceToken)],
        onOutcome: (@Sendable (Int, APNsOutcome) -> Void)? = nil
    ) -> BatchPass {
        for delivery in deliveries { metrics.sent(delivery.notification.pushType) }
        return BatchPass(
            deviceTokens: deliveries.map(\.deviceToken),
            metrics: metrics,
            tracing: tracing,
            pushType: { deliveries[$0].notification.pushType },
            onOutcome: onOutcome
        )
    }

    /// The batch of a different notification per device, each checked and encoded when
    /// its turn comes.
    private func sendBatch(
        _ deliveries: [(notification: PushNotification, deviceToken: DeviceToken)],
        into pass: BatchPass,
        maxConcurrency: Int
    ) async {
        let logger = logger
        await sendBatch(pass, deliveries.map(\.deviceToken), maxConcurrency: maxConcurrency) { index in
            let notification = deliveries[index].notification
            do throws(APNsRequestError) {
                return .success((try notification.prepared(), notification.apnsID))
            } catch {
                logger.debug(
                    "notification is invalid",
                    metadata: Self.metadata(notification.apnsID, deliveries[index].deviceToken, ["apns.error": "\(error)"])
                )
                return .failure(error)
            }
        }
    }

    /// The batch behind both public batch sends.
    ///
    /// First pass: one transport batch, made and answered on the transport's threads.
    /// What is accepted, cannot be sent, or fails in a way the retry policy does not retry
    /// (a rejection such as Unregistered) is final there; every other answer is kept and
    /// handed, after the pass, to the same attempt loop as a single send, as its attempt 1,
    /// which retries it as the policy allows (or with a new provider token) and turns it
    /// into the outcome. So a batch to a million stale tokens keeps nothing per rejection.
    ///
    /// - Parameter pass: Where the outcomes go (kept, or handed to a callback).
    /// - Parameter notification: The checked, encoded notification of an index and the
    ///   `apns-id` it names, or why it is invalid; called once per index in the first
    ///   pass (in order, one call at a time) and again for an index the second pass sends.
    private func sendBatch(
        _ pass: BatchPass,
        _ deviceTokens: [DeviceToken],
        maxConcurrency: Int,
        notification: @escaping @Sendable (Int) -> Result<(PushNotification.Prepared, APNsID?), APNsRequestError>
    ) async {
        let width = max(1, min(maxConcurrency, deviceTokens.count))
        await withTaskCancellationHandler {
            await transport.sendBatch(
                count: deviceTokens.count,
                maxConcurrency: width,
                makeRequest: { index in
                    // Cancelled: the transport would only fail this request unsent (see
                    // `PushTransport`'s batch contract), so it is not made, and its
                    // notification not encoded: the index fails here, and a cancelled
                    // batch of a million costs a counter per token instead of a request.
                    if pass.isCancelled {
                        pass.finishUnsent(index)
                        return nil
                    }
                    return self.firstRequest(index, to: deviceTokens[index], pushType: pass.pushType(index), notification: notification(index), pass: pass)
                },
                onResult: { index, request, result in
                    let resumption = self.firstResult(index, request, result, deviceToken: deviceTokens[index], pushType: pass.pushType(index), pass: pass)
                    if let resumption { pass.continueLater(index, resumption, apnsID: request.apnsID) }
                }
            )
        } onCancel: {
            pass.cancel()
        }
        // Second pass: rejections, failures and retries, through the attempt loop.
        let later = pass.takeContinuations()
        if !later.isEmpty {
            await withTaskGroup(of: Void.self) { group in
                var next = 0
                func start() {
                    let (index, resumption, apnsID) = later[next]
                    next += 1
                    group.addTask {
                        let result: Result<APNsAccepted, APNsError>
                        do throws(APNsError) {
                            // It was valid in the first pass, so it is valid now.
                            let (prepared, _) = try notification(index).mapError { APNsError.invalid($0) }.get()
                            result = .success(
                                try await self.deliver(
                                    prepared,
                                    apnsID: apnsID ?? .random(),
                                    to: deviceTokens[index],
                                    resuming: resumption
                                )
                            )
                        } catch {
                            result = .failure(error)
                        }
                        pass.finish(index, result)
                    }
                }
                while next < min(width, later.count) { start() }
                while await group.next() != nil {
                    if next < later.count { start() }
                }
            }
        }
        pass.endBatchSpan()
        if logger.logLevel <= .debug {
            let summary = pass.summary
            logger.debug(
                "batch sent",
                metadata: [
                    "apns.count": "\(summary.total)", "apns.accepted": "\(summary.accepted)",
                    "apns.rejected": "\(summary.rejected)", "apns.failed": "\(summary.failed)",
                ]
            )
        }
    }

    /// The request of a batch's first attempt for `index`, or `nil` when it cannot be
    /// made (the notification or the provider token is invalid: the index's outcome is
    /// given to `pass` here). Runs on the transport's threads.
    @inline(__always)
    func firstRequest(
        _ index: Int,
        to deviceToken: DeviceToken,
        pushType: PushType,
        notification: @autoclosure () -> Result<(PushNotification.Prepared, APNsID?), APNsRequestError>,
        pass: BatchPass
    ) -> APNsRequest? {
        do throws(APNsError) {
            if let mismatch = environmentMismatch { throw .invalid(mismatch) }
            let (prepared, fixedID) = try notification().mapError { APNsError.invalid($0) }.get()
            let apnsID = fixedID ?? .random()
            pass.started(index, apnsID: apnsID, pushType: pushType)
            return try firstAttemptRequest(prepared, apnsID: apnsID, to: deviceToken)
        } catch {
            pass.finish(index, .failure(error), deviceToken: deviceToken, pushType: pushType)
            return nil
        }
    }

    /// The request of a notification's first attempt, for ``send(_:to:)`` and both batch
    /// forms: built with the current provider token, logged at trace level, presenting the
    /// client certificate when the credentials are one.
    ///
    /// - Throws: ``APNsError/invalid(_:)`` when the provider token source fails (logged as
    ///   a warning once while it lasts, at most once a minute) or the request is invalid.
    func firstAttemptRequest(
        _ prepared: PushNotification.Prepared,
        apnsID: APNsID,
        to deviceToken: DeviceToken
    ) throws(APNsError) -> APNsRequest {
        let providerToken = try currentProviderToken(logger: logger)
        let request: APNsRequest
        do throws(APNsRequestError) {
            // When the call started: its retries end by this plus the request timeout.
            request = try prepared.request(
                to: deviceToken,
                apnsID: apnsID,
                environment: environment,
                providerToken: providerToken,
                timeout: requestTimeout,
                startedAt: now()
            )
        } catch {
            logger.debug("request is invalid", metadata: Self.metadata(apnsID, deviceToken, ["apns.error": "\(error)"]))
            throw .invalid(error)
        }
        if logger.logLevel <= .trace {
            logger.trace("sending notification", metadata: Self.metadata(apnsID, deviceToken, ["apns.attempt": "1"]))
        }
        return presentingClientCertificate(request)
    }

    /// Handles the answer to a batch's first attempt for `index`: an acceptance or a final
    /// error is the index's outcome, given to `pass`; anything the ``Delivery`` state
    /// machine goes on with (a retry, a new provider token) is returned, for the attempt
    /// loop. Runs on the transport's threads.
    @inline(__always)
    func firstResult(
        _ index: Int,
        _ request: APNsRequest,
        _ result: Result<APNsResponse, APNsTransportError>,
        deviceToken: DeviceToken,
        pushType: PushType,
        pass: BatchPass
    ) -> Resumption? {
        switch firstAnswer(request, result, deviceToken: deviceToken) {
        case .accepted(let accepted):
            pass.finish(index, .success(accepted), deviceToken: deviceToken, pushType: pushType)
            return nil
        case .ended(let error):
            pass.finish(index, .failure(error), deviceToken: deviceToken, pushType: pushType)
            return nil
        case .goesOn(let resumption):
            if case .refreshProviderToken(let expired) = resumption.decision, let source = tokenSource {
                // At once, not later: the batch's requests made from now on carry a new
                // token instead of meeting the same refusal. The attempt loop is told, so
                // that it does not give the token back a second time.
                source.invalidate(expired)
                return Resumption(delivery: resumption.delivery, decision: resumption.decision, expiredTokenInvalidated: true)
            }
            return resumption
        }
    }

    /// What the answer to a notification's first attempt means.
    enum FirstAnswer {
        /// APNs accepted it: the outcome.
        case accepted(APNsAccepted)
        /// A final error (Unregistered, BadDeviceToken, a failure the policy does not
        /// retry), already logged: the outcome.
        case ended(APNsError)
        /// The ``Delivery`` state machine goes on (a retry, a new provider token): the
        /// attempt loop takes the delivery over from here.
        case goesOn(Resumption)
    }

    /// Reads the answer to a notification's first attempt (for ``send(_:to:)`` and both
    /// batch forms) with the same state machine as every later attempt; the provider
    /// token travels with the request, typed.
    func firstAnswer(
        _ request: APNsRequest,
        _ result: Result<APNsResponse, APNsTransportError>,
        deviceToken: DeviceToken
    ) -> FirstAnswer {
        if case .success(let response) = result, let accepted = APNsAccepted(response: response, request: request) {
            if logger.logLevel <= .debug {
                logger.debug(
                    "notification accepted",
                    metadata: Self.metadata(accepted.apnsID ?? request.apnsID, deviceToken, ["apns.attempt": "1"])
                )
            }
            conditions.endAll()
            return .accepted(accepted)
        }
        let error: APNsError
        switch result {
        case .success(let response):
            error = Self.notAccepted(response, to: request, apnsID: request.apnsID, deviceToken: deviceToken)
        case .failure(let failure):
            error = .failed(failure)
        }
        var delivery = Delivery(retryPolicy: retryPolicy, startedAt: request.startedAt, timeout: request.timeout)
        let decision = delivery.attemptEnded(with: error, providerToken: request.providerToken, jitter: jitter(), now: now())
        if case .fail(let final) = decision {
            logEnding(final, of: "notification", attempt: 1, providerToken: request.providerToken, logger: logger) {
                Self.metadata(request.apnsID, deviceToken, [:])
            }
            return .ended(final)
        }
        return .goesOn(Resumption(delivery: delivery, decision: decision))
    }
}
