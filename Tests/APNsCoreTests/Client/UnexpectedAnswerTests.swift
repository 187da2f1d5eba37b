import APNsTesting
import Testing
@testable import APNsCore

/// What a broken or hostile server answers must not be taken for APNs' word, nor reach a
/// log or a terminal as it came.
@Suite("Answers APNs never gives")
struct UnexpectedAnswerTests {
    /// Statuses APNs never answers a device push with (RFC 9110 §15: 2xx success other than
    /// Apple's 200, 3xx redirection, and numbers past the 5xx class).
    static let foreignStatuses = [201, 204, 206, 301, 302, 304, 399, 600, 999]

    @Test("a status outside 200, 4xx and 5xx fails (protocolError, may have reached APNs), one send and a batch alike",
          arguments: foreignStatuses)
    func foreignStatus(_ status: Int) async throws {
        let mock = MockTransport()
        mock.respondByDefault(with: .response(APNsResponse(status: status)))
        let client = APNsClient.testing(transport: mock)
        let token = mockToken(1)
        do throws(APNsError) {
            _ = try await client.send(sampleAlert, to: token)
            Issue.record("accepted")
        } catch {
            guard case .failed(let failure) = error else {
                Issue.record("\(status): expected a failure, got \(error)")
                return
            }
            #expect(failure.code == .protocolError)
            #expect(failure.mayHaveReachedAPNs)
            #expect(failure.detail?.contains("status \(status)") == true, "\(failure)")
        }
        let outcomes = await client.send(sampleAlert, to: [mockToken(2), mockToken(3)], maxConcurrency: 2)
        for outcome in outcomes {
            guard case .failure(.failed(let failure)) = outcome.result else {
                Issue.record("\(status): \(outcome.result)")
                continue
            }
            #expect(failure.code == .protocolError && failure.mayHaveReachedAPNs)
        }
        // Never retried: it may have been delivered.
        #expect(mock.requests.count == 3)
    }

    @Test("4xx and 5xx stay rejections with their status, even ones APNs does not use", arguments: [400, 401, 418, 502, 599])
    func httpErrorsAreRejections(_ status: Int) async {
        let mock = MockTransport()
        mock.respondByDefault(with: .response(APNsResponse(status: status, body: Array(#"{"reason":"Whatever"}"#.utf8))))
        let outcomes = await APNsClient.testing(transport: mock, retryPolicy: .never).send(sampleAlert, to: [mockToken(4)])
        guard case .failure(.rejected(let rejection))? = outcomes.first?.result else {
            Issue.record("\(outcomes)")
            return
        }
        #expect(rejection.status == status)
        #expect(rejection.reason?.rawValue == "Whatever")
    }

    @Test("a reason with control characters is escaped in descriptions, one line, and kept exact in rawValue")
    func reasonEscaped() {
        let forged = "BadDeviceToken\nffff  accepted apns-id 00000000-0000-0000-0000-000000000000\u{1B}[2J\r\u{0}é"
        let reason = APNsReason(rawValue: forged)
        #expect(reason.rawValue == forged)
        #expect(reason.description
            == #"BadDeviceToken\u{A}ffff  accepted apns-id 00000000-0000-0000-0000-000000000000\u{1B}[2J\u{D}\u{0}\u{E9}"#)
        let rejection = APNsRejection(status: 400, reason: reason)
        #expect(!"\(rejection)".contains("\n") && !"\(rejection)".contains("\u{1B}"))
        #expect("\(APNsError.rejected(rejection))".split(whereSeparator: \.isNewline).count == 1)
        // Every reason Apple documents prints as itself.
        for documented in ["BadDeviceToken", "Unregistered", "TooManyProviderTokenUpdates", "InternalServerError"] {
            #expect(APNsReason(rawValue: documented).description == documented)
        }
    }

    @Test("a long reason is cut at 128 characters in descriptions")
    func reasonCut() {
        let long = String(repeating: "x", count: 10_000)
        let description = APNsReason(rawValue: long).description
        #expect(description == String(repeating: "x", count: 128) + "…")
        #expect(APNsReason(rawValue: String(repeating: "y", count: 128)).description.count == 128)
    }
}
