import Foundation
import Testing

/// `apns demo`, the command the README's first step runs.
@Suite("apns demo")
struct DemoCommandTests {
    @Test("runs without credentials or network, exits 0 and prints every section and outcome")
    func demo() async throws {
        let result = try await CLI.run(["demo"], timeout: .seconds(120))
        #expect(result.status == 0, "\(result)")
        let output = result.stdout
        for expected in [
            "1. Payloads", "2. Request headers", "3. Sending through", "4. What goes wrong", "5. The same code against APNs",
            "localized alert", "background", "VoIP", "Live Activity",
            "10000 alerts to distinct tokens: 10000 accepted",
            "rejected 410 Unregistered → remove this device token",
            "malformed token:", "oversized payload: invalid",
        ] {
            #expect(output.contains(expected), "missing \"\(expected)\"\n\(result)")
        }
        // Apple's topic suffixes for VoIP and Live Activity pushes.
        #expect(output.contains("com.example.demo.voip"))
        #expect(output.contains("com.example.demo.push-type.liveactivity"))
        // Through the real transport, the mock server verified every provider token and
        // decoded the header blocks; the secrets arrived as never-indexed literals.
        #expect(output.contains("3. Sending through HTTP2Transport (TLS + HTTP/2) to the mock APNs server"))
        #expect(output.contains("the server verifies each signature"))
        let wire = try #require(result.lines.first { $0.contains("as the server decoded them") })
        #expect(wire.contains("authorization"))
        // 5 examples + 10,000 in the batch + the unregistered token; the oversized payload is never sent.
        // The pool opens its second connection lazily, when the first is busy; on a loaded
        // machine one connection may carry everything, so the count is not asserted.
        let answered = try #require(result.lines.first { $0.contains("the server answered") })
        #expect(answered.contains("the server answered 10006 requests on "), "\(result)")
        #expect(answered.hasSuffix("connection(s): 10005 accepted, 1 rejected"), "\(result)")
        // Never a whole device token in the demo's failure lines.
        #expect(!output.contains("11fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f1"))
    }
}
