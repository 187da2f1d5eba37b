import APNsTesting
import Testing

@testable import APNsCore

/// A payload made for a kind of notification makes a notification of that kind without
/// saying it twice (issue: `PushNotification(payload: .voip(["caller": "Ann"]), topic:)`
/// failed with "push type alert needs an alert, a sound or a badge"). The `apns-push-type`
/// values and the `.voip` topic suffix are Apple's ("Sending notification requests to
/// APNs": `apns-push-type`, and the topic rules per push type).
@Suite struct PayloadPushTypeTests {
    static let token = "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0"

    static func header(_ name: String, of notification: PushNotification) throws -> String? {
        try notification.request(to: DeviceToken(hex: token), environment: .sandbox).header(name)
    }

    @Test func voipPayloadMakesAVoIPNotification() throws {
        let notification = PushNotification(payload: .voip(["caller": "Ann"]), topic: "com.example.app")
        #expect(notification.pushType == .voip)
        #expect(try Self.header("apns-push-type", of: notification) == "voip")
        // Apple: a VoIP push's topic is the bundle ID with `.voip` appended.
        #expect(try Self.header("apns-topic", of: notification) == "com.example.app.voip")
        // Apple: VoIP pushes are delivered at once (priority 10).
        #expect(try Self.header("apns-priority", of: notification) == "10")
    }

    @Test func backgroundPayloadMakesABackgroundNotification() throws {
        let notification = PushNotification(payload: .background(), topic: "com.example.app")
        #expect(try Self.header("apns-push-type", of: notification) == "background")
        // Apple: background pushes must use priority 5.
        #expect(try Self.header("apns-priority", of: notification) == "5")
    }

    @Test func liveActivityPayloadsMakeLiveActivityNotifications() throws {
        let payloads: [Payload] = [
            .liveActivityStart(timestamp: 1_700_000_000, attributesType: "Match", attributes: ["home": "A"], contentState: ["score": "0-0"],
                               alert: LiveActivityAlert(title: "Kick-off")),
            .liveActivityUpdate(timestamp: 1_700_000_100, contentState: ["score": "1-0"]),
            .liveActivityEnd(timestamp: 1_700_000_200),
        ]
        for payload in payloads {
            let notification = PushNotification(payload: payload, topic: "com.example.app")
            #expect(try Self.header("apns-push-type", of: notification) == "liveactivity")
            // Apple: the topic is the bundle ID with `.push-type.liveactivity` appended.
            #expect(try Self.header("apns-topic", of: notification) == "com.example.app.push-type.liveactivity")
        }
    }

    @Test func otherFactoriesAndAnExplicitPushType() throws {
        #expect(PushNotification(payload: .alert(body: "Hi"), topic: "com.example.app").pushType == .alert)
        #expect(PushNotification(payload: .mdm(pushMagic: "m"), topic: "com.example.app").pushType == .mdm)
        #expect(
            PushNotification(payload: .fileProvider(containerIdentifier: "c", domain: "d"), topic: "com.example.app").pushType
                == .fileprovider
        )
        // Built from parts: an alert, as before.
        #expect(PushNotification(payload: Payload(aps: APS(badge: 1)), topic: "com.example.app").pushType == .alert)
        // A content-changed payload made for a kind makes a notification of that kind;
        // without one it is an alert, refused with the push types it is for.
        let reload = PushNotification(payload: .contentChanged(for: .controls), topic: "com.example.app")
        #expect(reload.pushType == .controls)
        #expect(try Self.header("apns-topic", of: reload) == "com.example.app.push-type.controls")
        do throws(APNsRequestError) {
            try PushNotification(payload: .contentChanged(), topic: "com.example.app").validate()
            Issue.record("a content-changed alert passed")
        } catch {
            #expect(error.description.contains("widgets or controls"), "\(error)")
        }
        // The notification's own push type wins over the payload's.
        #expect(PushNotification(payload: .contentChanged(), pushType: .widgets, topic: "com.example.app").pushType == .widgets)
        #expect(PushNotification(payload: .background(), pushType: .alert, topic: "com.example.app").pushType == .alert)
    }
}

/// `validate()` raises, without a device token or a transport, what a send would end with.
@Suite struct ValidateTests {
    @Test func aRawBodyOverItsLimitIsNamedInASentence() {
        let body = PushNotification.Body.raw([UInt8](repeating: UInt8(ascii: " "), count: 4_097))
        do throws(APNsRequestError) {
            try PushNotification(body: body, pushType: .alert, topic: "com.example.app").validate()
            Issue.record("a 4,097-byte alert body passed")
        } catch {
            #expect(error.description.contains("payload is 4097 bytes; an alert push allows at most 4096"), "\(error)")
        }
    }

    /// A raw body over its limit carries the payload error a payload over it does: the
    /// documented `payloadError?.code == .payloadTooLarge` check, with the size and limit,
    /// works for both (it found `payloadError` nil for a raw body).
    @Test(arguments: [(PushType.alert, 4_096), (.voip, 5_120), (.background, 4_096)])
    func aRawBodyOverItsLimitCarriesTheSizeAndTheLimit(pushType: PushType, limit: Int) {
        for size in [limit, limit + 1] {
            // 17 bytes of JSON around the padding.
            let body = PushNotification.Body.raw(Array("{\"aps\":{},\"p\":\"".utf8) + [UInt8](repeating: UInt8(ascii: "a"), count: size - 17) + Array("\"}".utf8))
            let notification = PushNotification(body: body, pushType: pushType, topic: "com.example.app")
            do throws(APNsRequestError) {
                try notification.validate()
                #expect(size == limit, "a \(size)-byte \(pushType) body passed")
            } catch {
                #expect(size == limit + 1, "\(error)")
                #expect(error.code == .invalidPayload)
                let payloadError = error.payloadError
                #expect(payloadError?.code == .payloadTooLarge, "\(error)")
                #expect(payloadError?.size == size && payloadError?.limit == limit && payloadError?.pushType == pushType, "\(error)")
            }
        }
    }

    @Test func validateRaisesWhatASendWould() async throws {
        var tooLarge = PushNotification(payload: .alert(body: String(repeating: "x", count: 5_000)), topic: "com.example.app")
        #expect(throws: APNsRequestError.self) { try tooLarge.validate() }
        tooLarge.collapseID = nil
        var badCollapse = PushNotification(payload: .alert(body: "Hi"), topic: "com.example.app")
        badCollapse.collapseID = String(repeating: "c", count: 65)
        do throws(APNsRequestError) {
            try badCollapse.validate()
            Issue.record("a 65-byte collapse ID passed")
        } catch {
            #expect(error.header == "apns-collapse-id", "\(error)")
        }
        // The same error from a send, through the mock transport.
        let mock = MockTransport()
        let outcome = await APNsClient.testing(transport: mock).send(badCollapse, to: [mockToken(1)])
        guard case .failure(.invalid(let sent))? = outcome.first?.result else {
            Issue.record("\(outcome)")
            return
        }
        #expect(sent.header == "apns-collapse-id")
        #expect(mock.requests.isEmpty)
        try PushNotification(payload: .alert(body: "Hi"), topic: "com.example.app").validate()
    }
}
