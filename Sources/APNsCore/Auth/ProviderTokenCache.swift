import CoreMetrics
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import Synchronization

/// One cached provider token shared by every connection and task: the
/// ``ProviderTokenSource`` almost every provider uses.
///
/// The cache signs a token on first use and hands that same token to every caller until
/// it is ``refreshInterval`` old (50 minutes by default), then signs the next one. This is
/// what APNs asks for ([Establishing a token-based connection to APNs](https://developer.apple.com/documentation/usernotifications/establishing-a-token-based-connection-to-apns)):
/// - a token whose `iat` is more than one hour old is refused with
///   `403 ExpiredProviderToken`, so the interval is at most 59 minutes;
/// - a connection that sees a new token more often than every 20 minutes gets
///   `429 TooManyProviderTokenUpdates`, so the interval is at least 20 minutes, and one
///   cache must be shared by all connections rather than one per connection.
///
/// Signing happens under the cache's lock, so any number of concurrent callers at expiry
/// cause exactly one signature (tens of microseconds). Create one cache per key and keep
/// it for the life of the process.
///
/// ```swift
/// let key = try ProviderKey(environmentVariable: "APNS_KEY")
/// let tokens = try ProviderTokenCache(key: key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
/// let header = try tokens.token().authorizationValue   // "bearer eyJ…"
/// ```
public final class ProviderTokenCache: ProviderTokenSource {
    /// The shortest ``refreshInterval`` accepted: 20 minutes, APNs' limit on token updates.
    public static let minimumRefreshInterval: Duration = .seconds(20 * 60)
    /// The longest ``refreshInterval`` accepted: 59 minutes, a minute below the hour after
    /// which APNs answers `ExpiredProviderToken`.
    public static let maximumRefreshInterval: Duration = .seconds(59 * 60)
    /// The default ``refreshInterval``: 50 minutes, leaving room for clock skew.
    public static let defaultRefreshInterval: Duration = .seconds(50 * 60)

    /// The `kid` header of every token.
    public let keyID: String
    /// The `iss` claim of every token.
    public let teamID: String
    /// How old the current token may get before the next call signs a new one.
    public let refreshInterval: Duration

    private let key: ProviderKey
    private let clock: ProviderTokenClock
    private let logger: Logger
    /// `apns_provider_token_clock_skew_total`: ExpiredProviderToken for a token younger
    /// than 20 minutes by this host's clock.
    private let clockSkewCounter: Counter
    /// `{"alg":"ES256","kid":"…"}`: the same for every token.
    private let header: String
    private let refreshSeconds: Double
    private let state = Mutex(State())

    private struct State {
        var current: ProviderToken?
        /// When `current` was signed, by ``ProviderTokenClock``'s monotonic time.
        var signedAt = Duration.zero
        /// APNs answered ExpiredProviderToken for `current`.
        var invalidated = false
        /// Signatures made so far (tests read it through ``signatureCount``).
        var signatureCount = 0
        /// How often APNs called a token younger than 20 minutes expired.
        var clockSkewReports = 0
    }

    /// Creates a cache; no token is signed until the first call to ``token()``.
    ///
    /// - Parameters:
    ///   - key: The `.p8` key.
    ///   - keyID: The key's 10-character id (`kid`), shown next to the key in your
    ///     developer account and in the file name `AuthKey_<keyID>.p8`.
    ///   - teamID: Your 10-character team id (`iss`).
    ///   - refreshInterval: How long one token is used, 20...59 minutes. Default 50.
    ///   - clock: Where the time comes from; inject one in tests.
    ///   - logger: Receives a `debug` message when a token is signed or invalidated (key id
    ///     and `iat` only, never the token), and a `warning` when APNs calls a token younger
    ///     than 20 minutes expired (the host clock is behind Apple's). Logs nothing by default.
    ///   - metricsFactory: Where the counter `apns_provider_token_clock_skew_total` goes
    ///     (incremented once per token APNs calls expired while younger than 20 minutes);
    ///     by default swift-metrics' global `MetricsSystem.factory`.
    /// - Throws: ``ProviderTokenError`` with ``ProviderTokenError/Code/invalidKeyID``,
    ///   ``ProviderTokenError/Code/invalidTeamID`` or
    ///   ``ProviderTokenError/Code/invalidRefreshInterval``.
    public init(
        key: ProviderKey,
        keyID: String,
        teamID: String,
        refreshInterval: Duration = ProviderTokenCache.defaultRefreshInterval,
        clock: ProviderTokenClock = .system,
        logger: Logger = Logger(label: "swift-apns.provider-token", factory: { _ in SwiftLogNoOpLogHandler() }),
        metricsFactory: (any MetricsFactory)? = nil
    ) throws(ProviderTokenError) {
        try Self.validateIdentifier(keyID, kind: .invalidKeyID, name: "key id (kid)")
        try Self.validateIdentifier(teamID, kind: .invalidTeamID, name: "team id (iss)")
        guard (Self.minimumRefreshInterval...Self.maximumRefreshInterval).contains(refreshInterval) else {
            throw ProviderTokenError(
                .invalidRefreshInterval,
                "the refresh interval \(refreshInterval) is outside 20...59 minutes: APNs refuses tokens older than 60 minutes (ExpiredProviderToken) and new tokens more often than every 20 minutes (TooManyProviderTokenUpdates)")
        }
        self.key = key
        self.keyID = keyID
        self.teamID = teamID
        self.refreshInterval = refreshInterval
        self.refreshSeconds = Self.seconds(refreshInterval)
        self.clock = clock
        self.logger = logger
        self.clockSkewCounter = Counter(label: "apns_provider_token_clock_skew_total", factory: metricsFactory ?? MetricsSystem.factory)
        // keyID is [A-Z0-9]{10}: nothing to escape.
        self.header = #"{"alg":"ES256","kid":""# + keyID + #""}"#
    }

    /// The current token, signing a new one only when the current one is due.
    ///
    /// A new token is signed when there is none yet, when the current one is
    /// ``refreshInterval`` old or older (the boundary itself counts as due), when it was
    /// ``invalidate(_:)``d and is at least 20 minutes old. When the host's clock is set back
    /// more than a minute behind the current token's `iat`, the wall clock can no longer
    /// tell the token's age: it is replaced 20 minutes after it was signed, by a clock that
    /// does not step, as soon as APNs allows a new token (a new one at once would earn 429
    /// TooManyProviderTokenUpdates on every connection that carried it), and until then it
    /// is still young by APNs' clock (its `iat` is ahead, not behind).
    ///
    /// - Throws: ``ProviderTokenError`` with ``ProviderTokenError/Code/signingFailed`` if
    ///   OpenSSL fails to sign (it does not, short of running out of memory).
    public func token() throws(ProviderTokenError) -> ProviderToken {
        try state.withLock { (state: inout State) throws(ProviderTokenError) -> ProviderToken in
            let now = clock.now()
            if let current = state.current, !isDue(current, invalidated: state.invalidated, now: now, signedAt: state.signedAt) {
                return current
            }
            let token = try sign(at: now)
            state.current = token
            state.signedAt = clock.elapsed()
            state.invalidated = false
            state.signatureCount += 1
            logger.debug("signed a new provider token", metadata: [
                "apns.key-id": "\(keyID)",
                "apns.token-iat": "\(Int64(token.issuedAt.timeIntervalSince1970))",
            ])
            return token
        }
    }

    /// Reports that APNs answered `403 ExpiredProviderToken` for `token`.
    ///
    /// The next ``token()`` returns a new token only if `token` is still the current one
    /// and is at least 20 minutes old. A younger token keeps being served until it turns
    /// 20 minutes (``nextTokenDate``), because a second new token within 20 minutes would
    /// earn `429 TooManyProviderTokenUpdates` on every connection. A token that is no
    /// longer current (another request already caused a refresh) is ignored, so a burst of
    /// failures with the old token causes one refresh, not many.
    ///
    /// A young token reported as expired means the host clock is behind Apple's: APNs
    /// refuses a token whose `iat` is more than an hour old by its own clock, so a token
    /// `age` minutes old by this host's clock is refused only if this clock is at least
    /// `60 − age` minutes behind (or was set forward, then back). A new signature would not
    /// fix that, and the rules forbid one anyway; the cache counts it in
    /// `apns_provider_token_clock_skew_total`, logs a `warning` once per token, and signs
    /// the next token as soon as the 20 minutes are up. See <doc:Troubleshooting>.
    public func invalidate(_ token: ProviderToken) {
        let now = clock.now()
        let young: Bool = state.withLock { state in
            guard state.current == token else {
                logger.debug("ignored invalidation of a provider token that is no longer current")
                return false
            }
            let age = now.timeIntervalSince(token.issuedAt)
            let firstReport = !state.invalidated
            state.invalidated = true
            guard age < Self.minimumTokenLifetime else {
                logger.debug("provider token invalidated after ExpiredProviderToken", metadata: [
                    "apns.key-id": "\(keyID)",
                    "apns.token-iat": "\(Int64(token.issuedAt.timeIntervalSince1970))",
                ])
                return false
            }
            guard firstReport else { return false }
            state.clockSkewReports += 1
            let minutesBehind = Int(((3600 - age) / 60).rounded(.down))
            logger.warning(
                "APNs answered ExpiredProviderToken for a provider token \(Int(age / 60)) minutes old: this host's clock is at least \(minutesBehind) minutes behind Apple's (synchronise it, for example with NTP); the next token is signed at \(ClockSkew.format(token.issuedAt.addingTimeInterval(Self.minimumTokenLifetime))), 20 minutes after this one, as APNs allows",
                metadata: [
                    "apns.key-id": "\(keyID)",
                    "apns.token-iat": "\(Int64(token.issuedAt.timeIntervalSince1970))",
                ])
            return true
        }
        if young { clockSkewCounter.increment() }
    }

    /// When the next ``token()`` will sign a new token, if the current one was reported
    /// expired by APNs and is still younger than 20 minutes; `nil` otherwise (no token yet,
    /// or the next call signs at once).
    public var nextTokenDate: Date? {
        state.withLock { state in
            guard let current = state.current, state.invalidated else { return nil }
            let due = current.issuedAt.addingTimeInterval(Self.minimumTokenLifetime)
            return due > clock.now() ? due : nil
        }
    }

    /// How many times APNs answered ExpiredProviderToken for a token younger than 20
    /// minutes (for tests; the metric is `apns_provider_token_clock_skew_total`).
    var clockSkewReports: Int {
        state.withLock { $0.clockSkewReports }
    }

    /// How many tokens this cache has signed (for tests).
    var signatureCount: Int {
        state.withLock { $0.signatureCount }
    }

    // MARK: Private

    private static let minimumTokenLifetime: Double = 20 * 60
    /// How far the clock may step back behind a token's `iat` before the token is replaced.
    private static let clockStepTolerance: Double = 60

    /// `signedAt`: when `token` was signed, by the monotonic clock (read only when the wall
    /// clock was set back: the common path reads one clock per request).
    private func isDue(_ token: ProviderToken, invalidated: Bool, now: Date, signedAt: Duration) -> Bool {
        let age = now.timeIntervalSince(token.issuedAt)
        if age < -Self.clockStepTolerance { return Self.seconds(clock.elapsed() - signedAt) >= Self.minimumTokenLifetime }
        if age >= refreshSeconds { return true }
        return invalidated && age >= Self.minimumTokenLifetime
    }

    private func sign(at now: Date) throws(ProviderTokenError) -> ProviderToken {
        // `iat` is an integer number of seconds (a JSON number, never a string).
        let iat = Int64(now.timeIntervalSince1970.rounded(.down))
        let claims = #"{"iss":""# + teamID + #"","iat":"# + String(iat) + "}"
        do {
            let jwt = try ES256.compact(header: header, claims: claims, key: key.key)
            return ProviderToken(jwt: jwt, issuedAt: Date(timeIntervalSince1970: Double(iat)), keyID: keyID, teamID: teamID)
        } catch {
            throw ProviderTokenError(.signingFailed, "could not sign a provider token: \(error.description)")
        }
    }

    private static func validateIdentifier(_ value: String, kind: ProviderTokenError.Code, name: String) throws(ProviderTokenError) {
        let bytes = Array(value.utf8)
        let allowed = bytes.allSatisfy { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
        guard bytes.count == 10, allowed else {
            throw ProviderTokenError(kind, "the \(name) \(SecretText.quoted(value)) is not 10 characters of A-Z and 0-9, the form of Apple's identifiers (for example ABC123DEFG)")
        }
    }

    private static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
