import Foundation
import Logging

extension MockAPNsServer {
    /// How the mock server checks that a client may send.
    public enum Authentication: Sendable {
        /// No `authorization` header is required and no client certificate is asked for.
        case none
        /// Token-based authentication: every request needs `authorization: bearer <JWT>`;
        /// the verifier decides whether a signature is valid.
        case providerToken(ProviderTokenCheck)
        /// Certificate-based authentication: the TLS handshake requires a client
        /// certificate issued by `trustedCAPEM` (one or more PEM certificates), and the
        /// topics a connection may push to come from that certificate, as APNs reads them:
        /// the topics extension (`1.2.840.113635.100.6.3.6`), else the subject's `UID`.
        /// A request without `apns-topic` uses the certificate's topic when it has exactly
        /// one (`MissingTopic` otherwise); a topic the certificate does not list is
        /// `400 TopicDisallowed`. No `authorization` header is needed.
        case certificate(trustedCAPEM: String)
        /// Both, as APNs' own hosts take both: a connection whose TLS handshake presents a
        /// client certificate issued by `trustedCAPEM` is a certificate connection (as
        /// ``certificate(trustedCAPEM:)``), and one without a certificate is a token
        /// connection (as ``providerToken(_:)``: it starts at one stream and needs a
        /// provider token). For a transport serving token and certificate tenants at once.
        case providerTokenOrCertificate(ProviderTokenCheck, trustedCAPEM: String)

        /// The provider-token check, if tokens are accepted.
        var tokenCheck: ProviderTokenCheck? {
            switch self {
            case .providerToken(let check), .providerTokenOrCertificate(let check, _): check
            case .none, .certificate: nil
            }
        }

        /// The CAs of client certificates, if certificates are accepted.
        var clientCAPEM: String? {
            switch self {
            case .certificate(let pem), .providerTokenOrCertificate(_, let pem): pem
            case .none, .providerToken: nil
            }
        }
    }

    /// The certificate the mock server presents.
    public enum CertificateSource: Sendable {
        /// A new small CA and a server certificate for `localhost`, `127.0.0.1` and `::1`,
        /// generated when the server starts (P-256 keys, SHA-256 signatures). Clients trust
        /// ``MockAPNsServer/certificateAuthorityPEM``.
        case generated
        /// A given certificate chain (PEM, leaf first) and private key (PEM).
        case pem(certificateChain: String, privateKey: String)
    }

    /// Settings fixed when the server starts. Faults are scripted on the running server.
    public struct Configuration: Sendable {
        /// Bundle identifiers the server accepts as topics (with the push type's suffix).
        /// Empty accepts any topic, still checking the push type's suffix.
        public var bundleIDs: [String]
        /// How requests are authenticated.
        public var authentication: Authentication
        /// SETTINGS_MAX_CONCURRENT_STREAMS once a connection is authenticated. In token
        /// mode a connection starts at 1 and is raised to this value after its first
        /// request with a valid token, as APNs does.
        public var maxConcurrentStreams: Int
        /// When set, a connection's SETTINGS_MAX_CONCURRENT_STREAMS drops to this value
        /// after any request on it is rejected, as APNs has been seen to do; `nil` (the
        /// default) keeps the limit.
        public var streamLimitAfterRejection: Int?
        /// When set, the request that brings a connection's rejections to this many (400s,
        /// 403s and the like from validation or authentication, not scripted answers) is
        /// answered after a GOAWAY (`NO_ERROR`, last-stream-id that request, no debug data)
        /// and the connection then closes, as APNs closes a connection that keeps sending
        /// requests it refuses (sooner for `BadDeviceToken`). `nil` (the default) never does.
        public var closeAfterRejections: Int?
        /// Where the certificate comes from.
        public var certificate: CertificateSource
        /// Also listen on `::1` when the host has IPv6 loopback.
        public var listensOnIPv6: Bool
        /// The TCP port to listen on; `0` (the default) lets the system pick a free one,
        /// which ``MockAPNsServer/port`` reports. A fixed port (with a fixed
        /// ``certificate``) lets a server be stopped and started again where clients look
        /// for it: "APNs goes away and comes back". `start()` throws when the port is taken.
        public var port: Int = 0
        /// How many requests ``MockAPNsServer/recordedRequests`` keeps (the oldest go first).
        public var recordedRequestLimit: Int
        /// The reason for a body that is not a JSON object with `aps` (see the integration
        /// testing article for why the default is `BadRequestPayload`).
        public var malformedPayloadReason: String
        /// Bundle identifiers whose broadcast capability is off: their channel management
        /// and broadcast requests get 400 `FeatureNotEnabled`, as from APNs for an app
        /// whose Broadcast Capability is not enabled. Empty (the default): every app has it.
        public var broadcastDisabledBundleIDs: Set<String>
        /// The environment the server stands for, which keys limited to one environment
        /// are checked against (default ``Environment/sandbox``).
        public var environment: Environment
        /// The scope of provider keys, by key identifier (`kid`): environment-scoped and
        /// topic-specific keys. A key not listed is a team key (``KeyScope/team``). Only
        /// used with ``Authentication/providerToken(_:)``.
        public var keyScopes: [String: KeyScope]
        /// The lengths, in bytes, of the device tokens the server takes; a token of another
        /// length gets 400 `BadDeviceToken`, as APNs answers a token no device has (one
        /// truncated in storage, say). Apple says device tokens vary in length and must
        /// not be hard-coded: they have been 32 bytes, and longer ones exist (80 bytes), so
        /// the default is `32...100`. Widen it for tests that send short made-up tokens.
        public var deviceTokenLengths: ClosedRange<Int> = 32...100
        /// ``deviceTokenLengths`` in hexadecimal digits, as the path carries them.
        var deviceTokenDigits: ClosedRange<Int> {
            let lower = max(1, deviceTokenLengths.lowerBound)
            return (2 * lower)...(2 * max(lower, deviceTokenLengths.upperBound))
        }
        /// The clock used for token age and token-update checks.
        public var now: @Sendable () -> Date
        /// Where the server logs; nothing is logged at info or above unless something fails.
        public var logger: Logger
        /// How long a connection with no request open keeps the blocks its HTTP/2
        /// session cached for reuse before giving them back (see `ServerConnection`).
        var sessionMemoryIdleDelay: Duration = .seconds(1)

        /// A configuration.
        /// - Parameters:
        ///   - bundleIDs: Accepted bundle identifiers; empty accepts any.
        ///   - authentication: `.none`, `.providerToken(check)` or `.certificate(trustedCAPEM:)`.
        ///   - maxConcurrentStreams: The stream limit for authenticated connections.
        ///   - streamLimitAfterRejection: The stream limit after a rejection; `nil` keeps it.
        ///   - certificate: `.generated` or PEM.
        ///   - listensOnIPv6: Also listen on `::1` when the host has it.
        ///   - recordedRequestLimit: How many requests to keep; `0` records none (fastest).
        ///   - malformedPayloadReason: The reason for a body that is not a JSON object with `aps`.
        ///   - broadcastDisabledBundleIDs: Apps whose broadcast requests get `FeatureNotEnabled`.
        ///   - environment: The environment the server stands for.
        ///   - keyScopes: Environment-scoped and topic-specific keys, by key identifier.
        ///   - now: The clock for token age and token-update checks.
        ///   - logger: Where the server logs (debug level; errors only when something fails).
        public init(
            bundleIDs: [String] = [],
            authentication: Authentication = .none,
            maxConcurrentStreams: Int = 1000,
            streamLimitAfterRejection: Int? = nil,
            certificate: CertificateSource = .generated,
            listensOnIPv6: Bool = true,
            recordedRequestLimit: Int = 100_000,
            malformedPayloadReason: String = "BadRequestPayload",
            broadcastDisabledBundleIDs: Set<String> = [],
            environment: Environment = .sandbox,
            keyScopes: [String: KeyScope] = [:],
            now: @escaping @Sendable () -> Date = { Date() },
            logger: Logger = Logger(label: "apns.mock-server", factory: { _ in SwiftLogNoOpLogHandler() })
        ) {
            self.bundleIDs = bundleIDs
            self.authentication = authentication
            self.maxConcurrentStreams = maxConcurrentStreams
            self.streamLimitAfterRejection = streamLimitAfterRejection
            self.closeAfterRejections = nil
            self.certificate = certificate
            self.listensOnIPv6 = listensOnIPv6
            self.recordedRequestLimit = recordedRequestLimit
            self.malformedPayloadReason = malformedPayloadReason
            self.broadcastDisabledBundleIDs = broadcastDisabledBundleIDs
            self.environment = environment
            self.keyScopes = keyScopes
            self.now = now
            self.logger = logger
        }
    }
}
