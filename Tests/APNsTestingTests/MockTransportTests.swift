import APNsTesting
import Foundation
import Testing

import APNsCore

@Suite struct MockTransportTests {
    @Test func aScriptedChannelReasonComesWithApplesStatus() async throws {
        // Apple ("Handling error responses from APNs"): TopicMismatch is 403, ChannelNotRegistered 400.
        let mock = MockTransport()
        mock.respondByDefault(with: .rejected(.topicMismatch))
        let client = APNsClient(environment: .sandbox, credentials: .providerToken(CountingTokenSource()), transport: mock)
        do {
            _ = try await client.channels(bundleID: "com.example.other")
            Issue.record("a rejection was expected")
        } catch {
            #expect(error.rejection?.status == 403)
            #expect(error.rejection?.reason == .topicMismatch)
        }
        mock.respondByDefault(with: .rejected(.channelNotRegistered))
        let channel = try ChannelID("dHN0LXNyY2gtY2hubA==")
        do {
            _ = try await client.channelConfiguration(channel, bundleID: "com.example.app")
            Issue.record("a rejection was expected")
        } catch {
            #expect(error.rejection?.status == 400)
        }
        await client.shutdown()
    }

    @Test func recordsRequestsExactlyAsSent() async throws {
        let mock = MockTransport()
        let client = APNsClient(
            environment: .sandbox,
            credentials: .providerToken(CountingTokenSource()),
            transport: mock
        )
        let device = try DeviceToken(hex: "00FC13ADFF785122B4AD28809A3420982341241421348097878E577C991DE8F0")
        let notification = PushNotification(
            body: .raw(Array(#"{"aps":{"alert":"Hello"}}"#.utf8)),
            topic: "com.example.app",
            expiration: .immediately,
            collapseID: "greeting"
        )
        let accepted = try await client.send(notification, to: device)
        let request = try #require(mock.requests.first)
        #expect(
            request.headers.map(\.name) == [
                ":method", ":scheme", ":path", ":authority", "authorization", "apns-topic", "apns-push-type",
                "apns-priority", "apns-expiration", "apns-collapse-id", "apns-id",
            ]
        )
        #expect(request.path == "/3/device/00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0")
        #expect(request.header("authorization") == "bearer header.claims.signature-1")
        #expect(String(decoding: request.body, as: UTF8.self) == #"{"aps":{"alert":"Hello"}}"#)
        #expect(request.deviceToken == device)
        #expect(accepted.apnsID == request.apnsID)
        #expect(mock.requests(to: device).count == 1)
        mock.removeAllRequests()
        #expect(mock.requests.isEmpty)
    }

    @Test func rejectionBodyIsAppleShapedJSON() async throws {
        let mock = MockTransport()
        let device = mockToken(3)
        let lastSeen = Date(timeIntervalSince1970: 1_454_402_113)
        mock.respond(to: device, with: .rejected(.unregistered, timestamp: lastSeen))
        let request = try sampleAlert.request(to: device, environment: .sandbox)
        let response = try await mock.send(request)
        #expect(response.status == 410)
        #expect(response.header("apns-id") == request.header("apns-id"))
        // Foundation reads what the mock wrote.
        let json = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
        #expect(json["reason"] as? String == "Unregistered")
        #expect((json["timestamp"] as? NSNumber)?.int64Value == 1_454_402_113_000)
    }

    @Test func scriptsAreConsumedInTurnAndTheLastOneSticks() async throws {
        let mock = MockTransport()
        let device = mockToken(4)
        mock.respond(to: device, with: [.rejected(.tooManyRequests), .failure(.goAway()), .accepted(uniqueID: "u")])
        let request = try sampleAlert.request(to: device, environment: .sandbox)
        #expect(try await mock.send(request).status == 429)
        await #expect(throws: APNsTransportError.goAway()) { try await mock.send(request) }
        #expect(try await mock.send(request).header("apns-unique-id") == "u")
        #expect(try await mock.send(request).header("apns-unique-id") == "u")
        // Other tokens get the default, then the handler once one is set.
        let other = try sampleAlert.request(to: mockToken(5), environment: .sandbox)
        #expect(try await mock.send(other).status == 200)
        mock.respondByDefault(with: .rejected(.internalServerError))
        #expect(try await mock.send(other).status == 500)
        mock.respond { request in request.header("apns-push-type") == "alert" ? .rejected(.badTopic) : .accepted }
        #expect(try await mock.send(other).status == 400)
        #expect(try await mock.send(request).status == 200)  // the script still wins
        mock.respond(to: device, with: [])
        #expect(try await mock.send(request).status == 400)  // script removed: the handler answers
    }

    @Test("scripted device tokens that no request went to are listed; an unscripted one can be made to fail")
    func scriptedTokensNeverSentAndStrictDefault() async throws {
        let mock = MockTransport()
        let reached = try DeviceToken(hex: "00fc13ad")
        let missed = try DeviceToken(hex: "11fc13ad")
        let stranger = try DeviceToken(hex: "22fc13ad")
        mock.respond(to: reached, with: .accepted)
        mock.respond(to: missed, with: .rejected(.unregistered))
        mock.respondByDefault(with: .failure(.protocolError("unscripted device token")))
        let client = APNsClient(environment: .sandbox, credentials: .certificate, transport: mock, retryPolicy: .never)
        let notification = PushNotification(payload: .alert(body: "Hi"), topic: "com.example.app")
        #expect(mock.scriptedDeviceTokensNeverSent == [reached, missed])
        _ = try await client.send(notification, to: reached)
        #expect(mock.scriptedDeviceTokensNeverSent == [missed])
        await #expect(throws: APNsError.self) { _ = try await client.send(notification, to: stranger) }
        #expect(mock.scriptedDeviceTokensNeverSent == [missed])
    }

    @Test func rawResponsesPassThrough() async throws {
        let mock = MockTransport(handler: { _ in .response(APNsResponse(status: 502, body: Array("<html>".utf8))) })
        let client = APNsClient.testing(transport: mock, retryPolicy: .never)
        do {
            _ = try await client.send(sampleAlert, to: mockToken(1))
            Issue.record("accepted")
        } catch {
            #expect(error.rejection?.status == 502)
            #expect(error.rejection?.reason == nil)
            #expect(error.rejection?.remedy == .retryLater)
        }
    }

    @Test func shutdownRefusesNewRequestsAndWaitsForInFlightOnes() async throws {
        let mock = MockTransport()
        let slow = mockToken(1)
        mock.respond(to: slow, with: MockTransport.Response.accepted.delayed(by: .milliseconds(50)))
        let request = try sampleAlert.request(to: slow, environment: .sandbox)
        let inFlight = Task { try await mock.send(request) }
        while mock.requests.isEmpty { await Task.yield() }
        await mock.shutdown()
        // shutdown() returned, so the in-flight request has been answered.
        let answered = try await inFlight.value
        #expect(answered.status == 200)
        await #expect(throws: APNsTransportError.shutdown("the mock transport is shut down")) {
            try await mock.send(request)
        }
        #expect(mock.requests.count == 1)
        await mock.shutdown()  // again: no effect
        let client = APNsClient.testing(transport: mock)
        do {
            _ = try await client.send(sampleAlert, to: slow)
            Issue.record("sent after shutdown")
        } catch {
            #expect(error.transportError?.code == .shutdown)
            #expect(error.transportError?.mayHaveReachedAPNs == false)
        }
    }

    @Test("a shutdown gives in-flight requests its grace period, then fails those still waiting with shutdown (may have reached APNs)")
    func shutdownEndsWaitingAnswersAfterItsGracePeriod() async throws {
        let gate = Gate()
        defer { gate.open() }
        let mock = MockTransport()
        let delayed = mockToken(1)
        let quick = mockToken(2)
        mock.respond(to: delayed, with: MockTransport.Response.accepted.delayed(by: .seconds(600)))
        // Answered 1 s after it arrived, inside the 4 s grace period: 3 s (at least) for its
        // delayed answer's task to run however late a loaded machine resumes it, and
        // answered after the shutdown began unless the test task itself resumes a second late.
        mock.respond(to: quick, with: MockTransport.Response.accepted.delayed(by: .seconds(1)))
        mock.respond { _ in
            await gate.wait()
            return .accepted
        }
        let requests = try [delayed, quick, mockToken(3)].map { token in
            try sampleAlert.request(to: token, environment: .sandbox, timeout: .seconds(600))
        }
        let sends = requests.map { request in Task { try await mock.send(request) } }
        #expect(await mock.waitForRequests(3, timeout: .seconds(60)))
        let clock = ContinuousClock()
        let started = clock.now
        // The 600 s delay and the handler that never answers would hold a shutdown that
        // waits for every answer for 600 s; the grace period ends them.
        await mock.shutdown(gracePeriod: .seconds(4))
        #expect(clock.now - started < .seconds(60))
        #expect(try await sends[1].value.status == 200)  // answered within the grace period
        for index in [0, 2] {
            do {
                _ = try await sends[index].value
                Issue.record("request \(index) answered after the grace period")
            } catch {
                #expect((error as? APNsTransportError)?.code == .shutdown, "\(error)")
                #expect((error as? APNsTransportError)?.mayHaveReachedAPNs == true)
            }
        }
        #expect(mock.requests.count == 3)
    }

    @Test func cancelledTaskIsNotRecorded() async throws {
        let mock = MockTransport()
        let request = try sampleAlert.request(to: mockToken(1), environment: .sandbox)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await mock.send(request)
        }
        do {
            _ = try await task.value
            Issue.record("answered")
        } catch {
            #expect((error as? APNsTransportError)?.code == .cancelled)
            #expect((error as? APNsTransportError)?.mayHaveReachedAPNs == false)
        }
        #expect(mock.requests.isEmpty)
    }

    @Test func delayLongerThanTheTimeoutIsATimeout() async throws {
        let mock = MockTransport()
        mock.respondByDefault(with: MockTransport.Response.accepted.delayed(by: .seconds(600)))
        let client = APNsClient(
            environment: .sandbox,
            credentials: .certificate,
            transport: mock,
            requestTimeout: .milliseconds(10)
        )
        do {
            _ = try await client.send(sampleAlert, to: mockToken(1))
            Issue.record("accepted")
        } catch {
            #expect(error.transportError?.code == .timeout)
            #expect(error.transportError?.mayHaveReachedAPNs == true)
        }
        // A timeout may have reached APNs: not retried by default.
        #expect(mock.requests.count == 1)
    }

    /// A gate a handler waits on, opened by the test (or never).
    final class Gate: Sendable {
        let stream: AsyncStream<Void>
        let continuation: AsyncStream<Void>.Continuation
        init() { (stream, continuation) = AsyncStream.makeStream() }
        func wait() async { for await _ in stream { return } }
        func open() { continuation.finish() }
    }

    @Test("a handler that waits past the request's timeout ends in a timeout that may have reached APNs, not in its late answer")
    func waitingHandlerTimesOut() async throws {
        let gate = Gate()
        defer { gate.open() }
        let mock = MockTransport { _ in
            await gate.wait()
            return .accepted
        }
        let client = APNsClient(environment: .sandbox, credentials: .certificate, transport: mock, requestTimeout: .milliseconds(200))
        do {
            _ = try await client.send(sampleAlert, to: mockToken(1))
            Issue.record("accepted after its timeout")
        } catch {
            #expect(error.transportError?.code == .timeout, "\(error)")
            #expect(error.transportError?.mayHaveReachedAPNs == true)
        }
        #expect(mock.requests.count == 1)
    }

    @Test("a caller cancelled while the handler waits gets cancelled (may have reached APNs), not the handler's answer")
    func waitingHandlerIsCancelled() async throws {
        let gate = Gate()
        defer { gate.open() }
        let mock = MockTransport { _ in
            await gate.wait()
            return .accepted
        }
        let request = try sampleAlert.request(to: mockToken(2), environment: .sandbox)
        let task = Task { try await mock.send(request) }
        // Cancelled once the mock has the request.
        #expect(await mock.waitForRequests(1, timeout: .seconds(60)))
        #expect(mock.requests.count == 1)
        // More never come: the wait says so when its time is up.
        #expect(await mock.waitForRequests(2, timeout: .milliseconds(20)) == false)
        task.cancel()
        do {
            _ = try await task.value
            Issue.record("answered after cancellation")
        } catch {
            #expect((error as? APNsTransportError)?.code == .cancelled, "\(error)")
            #expect((error as? APNsTransportError)?.mayHaveReachedAPNs == true)
        }
        // A shutdown does not wait for the abandoned handler.
        await mock.shutdown()
    }

    @Test("a batch's requests are recorded, and take their scripted answers, in index order, run after run")
    func batchIsRecordedInIndexOrder() async throws {
        for _ in 0..<20 {
            let mock = MockTransport()
            let repeated = mockToken(7)
            mock.respond(to: repeated, with: [.accepted, .rejected(.badDeviceToken)])
            let tokens = (0..<50).map { mockToken(100 + $0) } + [repeated, mockToken(9), repeated]
            let client = APNsClient.testing(transport: mock, retryPolicy: .never)
            let outcomes = await client.send(sampleAlert, to: tokens, maxConcurrency: 50)
            #expect(mock.requests.compactMap(\.deviceToken) == tokens)
            // The first copy of the repeated token takes the first scripted answer.
            #expect(outcomes[50].accepted != nil && outcomes[52].error?.rejection?.reason == .badDeviceToken)
        }
    }

    @Test("by default a channel call gets APNs' success answer: a new channel ID, a configuration, an empty list, a deletion")
    func channelCallsAreAnsweredAsAPNsDoes() async throws {
        let mock = MockTransport()
        let client = APNsClient.testing(transport: mock)
        let created = try await client.createChannel(bundleID: "com.example.scores")
        #expect(created.requestID == (try APNsRequestID(try #require(mock.requests.last?.header("apns-request-id")))))
        let configuration = try await client.channelConfiguration(created.value, bundleID: "com.example.scores")
        #expect(configuration.value.storagePolicy == .noStorage)
        #expect(try await client.channels(bundleID: "com.example.scores").value.isEmpty)
        #expect(try await client.deleteChannel(created.value, bundleID: "com.example.scores").value == created.value)
        let second = try await client.createChannel(bundleID: "com.example.scores")
        #expect(second.value != created.value)
        #expect(mock.requests.count == 5)
    }

    @Test("a 410 carries a timestamp, as APNs' always do: the time of the answer unless scripted")
    func unregisteredCarriesATimestamp() async throws {
        let mock = MockTransport()
        mock.respond(to: mockToken(5), with: .rejected(.unregistered))
        let before = Date()
        let response = try await mock.send(try sampleAlert.request(to: mockToken(5), environment: .sandbox))
        let json = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
        let milliseconds = try #require((json["timestamp"] as? NSNumber)?.int64Value)
        #expect(abs(Double(milliseconds) / 1000 - before.timeIntervalSince1970) < 60)
        // Other statuses carry one only if scripted.
        mock.respond(to: mockToken(6), with: .rejected(.badDeviceToken))
        let other = try await mock.send(try sampleAlert.request(to: mockToken(6), environment: .sandbox))
        #expect(String(decoding: other.body, as: UTF8.self) == #"{"reason":"BadDeviceToken"}"#)
    }

    @Test("scripts can be removed: the per-token answers, the handler and the default; the requests stay")
    func scriptsCanBeRemoved() async throws {
        let mock = MockTransport { _ in .rejected(.badTopic) }
        mock.respond(to: mockToken(1), with: .rejected(.unregistered))
        mock.respondByDefault(with: .failure(.connectionClosed()))
        let request = try sampleAlert.request(to: mockToken(1), environment: .sandbox)
        #expect(try await mock.send(request).status == 410)
        mock.removeAllScripts()
        #expect(try await mock.send(request).status == 200)
        #expect(try await mock.send(try sampleAlert.request(to: mockToken(2), environment: .sandbox)).status == 200)
        #expect(mock.requests.count == 3)
        #expect(mock.scriptedDeviceTokensNeverSent.isEmpty)
        // A test's own stand-in for the client can script an invalid notification.
        let invalid = APNsError.invalid(APNsRequestError(.invalidTopic, header: "apns-topic", "the topic is empty"))
        #expect(invalid.description.contains("the topic is empty"))
    }
}
