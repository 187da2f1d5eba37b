import Logging
import Synchronization
import Testing
@testable import APNsTransport

/// `TrustRoots.insecureNoVerification_forTestingOnly` cannot reach APNs by accident.
@Suite("Verification off is for local test servers only")
struct InsecureModeTests {
    static let insecure = TLSConfiguration(trustRoots: .insecureNoVerification_forTestingOnly)

    @Test("refused for Apple's push hosts before anything is resolved or sent", arguments: [
        "api.push.apple.com", "api.sandbox.push.apple.com", "API.Push.Apple.COM", "api.push.apple.com.",
        "api-manage-broadcast.sandbox.push.apple.com",
    ])
    func refusedForApple(host: String) {
        let error = connectionError(TLSEndpoint(host: host, port: 443), Self.insecure, timeout: .seconds(3))
        #expect(error?.code == .tlsFailure, "\(String(describing: error))")
        #expect(error?.mayHaveReachedAPNs == false)
        #expect(error?.detail?.contains("certificate verification is off") == true, "\(String(describing: error))")
        // The configuration, not a moment's trouble: sending again cannot succeed.
        #expect(error?.isPermanent == true, "\(String(describing: error))")
    }

    @Test("refused through a proxy too: the check is on the final host, not the proxy")
    func refusedThroughProxy() throws {
        let proxyPort = try unusedLoopbackPort()
        var configuration = Self.insecure
        configuration.proxy = ProxyConfiguration(host: "127.0.0.1", port: proxyPort)
        let error = connectionError(TLSEndpoint(host: "api.push.apple.com", port: 443), configuration, timeout: .seconds(3))
        #expect(error?.code == .tlsFailure, "\(String(describing: error))")
    }

    @Test("names that only look like Apple's are not caught by the check", arguments: [
        "push.apple.com.example.net", "notpush.apple.com",
    ])
    func lookalikesAreOrdinaryHosts(host: String) {
        #expect(!TrustRoots.isApplePushHost(host))
    }

    @Test("a transport configured without verification logs a warning once, naming the option")
    func warns() {
        let store = CapturingLogHandler.Store()
        var logger = Logger(label: "test", factory: { _ in CapturingLogHandler(store: store) })
        logger.logLevel = .trace
        let transport = HTTP2Transport(configuration: .init(
            environment: .custom(host: "127.0.0.1", port: 1), tls: Self.insecure, logger: logger))
        _ = transport
        let warnings = store.warnings.withLock { $0 }
        #expect(warnings.count == 1)
        #expect(warnings.first?["apns.host"] == "127.0.0.1")
        let verified = CapturingLogHandler.Store()
        _ = HTTP2Transport(configuration: .init(
            environment: .custom(host: "127.0.0.1", port: 1),
            logger: Logger(label: "test", factory: { _ in CapturingLogHandler(store: verified) })))
        #expect(verified.warnings.withLock { $0 }.isEmpty)
    }
}
