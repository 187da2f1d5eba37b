import APNsCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One connection's provider token as APNs counts its updates: a pure value, the clock
/// (``MonotonicTime`` nanoseconds) an input.
///
/// APNs answers `429 TooManyProviderTokenUpdates` when a connection carries a new token
/// less than 20 minutes after it began carrying the one before, counting from when that
/// one first arrived on *the connection*, not from its `iat` (Pushy's issue 931 and
/// apns2's issue 44 found it in production). One token shared by every connection,
/// refreshed every 50 minutes, meets the rule on a connection that carried it from near
/// its start, but not on one that opened since: a connection that reconnected 40 minutes
/// into the token's life would see the next token 10 minutes later, and every request on
/// it would be refused until 20 minutes had passed.
///
/// So a connection asks before each request: a request whose token is not the one the
/// connection carries, within the 20 minutes (and a second of margin for the path), is
/// not sent on it (``Verdict/retire``): the connection drains and closes, and the request
/// goes to another connection or a new one, whose first token is no update. Requests
/// without a typed token (built by hand) are never held back.
///
/// A request built before a refresh can meet a connection that already carries the newer
/// token (it waited in the queue, or came back to it from a connection that closed).
/// Sending its older token would be an update for APNs too (the connection's token
/// changes back); the newer token of the same key is as good for the request, so the
/// request carries that one instead (``Verdict/sendCarrying(_:)``), and the connection
/// neither changes its token nor retires. The same holds for a token of the same key issued
/// in the same second as the connection's: two caches of one key (tenants of one team,
/// each configured with its own cache) sign different JWTs at start-up, and alternating
/// them on one connection would be an update with every request. A request whose `authorization` the transport
/// may not replace (one built by hand) is judged like any other token.
///
/// A connection slot retires for this at most once per 20 minutes: a token source that
/// signs far more often than APNs allows (one per request, say) would otherwise turn
/// every request into a new connection, and APNs takes rapid reconnects for abuse. Past
/// that, a request whose newer token is of the connection's key carries the connection's
/// token while that one is under 55 minutes old (a tenant's client made again with a new
/// cache twice within 20 minutes had every request refused 429 otherwise); any other new
/// token is sent, and APNs' 429 says what is wrong.
struct ConnectionTokenUpdates: Sendable, Equatable {
    /// The least time between two tokens on one connection: APNs' 20 minutes and a second.
    static let minimumInterval: UInt64 = (20 * 60 + 1) * 1_000_000_000
    /// How old the connection's token may be, in seconds, to carry a request whose newer
    /// token of the same key could not go on the connection: 55 minutes, five short of
    /// the hour after which APNs calls a token expired.
    static let carryLimit: Double = 55 * 60

    /// What to do with a request.
    enum Verdict: Equatable {
        /// Send it on this connection.
        case send
        /// Do not: its token would be an update APNs refuses. Retire the connection.
        case retire
        /// Send it with this token, the connection's: the request's own is an older one of
        /// the same key, or one of the same key and second.
        case sendCarrying(ProviderToken)
    }

    /// The token the connection carries, and since when.
    private(set) var current: ProviderToken?
    private(set) var since: UInt64 = 0
    /// When this connection slot last retired a connection for a token update (kept
    /// across sessions: see ``newSession()``).
    private(set) var lastRetirement: UInt64?

    /// A new connection of the slot: it carries no token yet.
    mutating func newSession() {
        current = nil
        since = 0
    }

    /// Whether a request carrying `token` may go on this connection at `now` (and, if it
    /// is a new token, notes it as the connection's). `replaceable`: whether the request
    /// may carry the connection's token instead of its own (asked only for an older token).
    mutating func admit(
        _ token: ProviderToken?,
        now: UInt64,
        replaceable: @autoclosure () -> Bool = false,
        wallClock: () -> Date = Date.init
    ) -> Verdict {
        guard let token else { return .send }
        // Nearly every request: the same token (one reference comparison).
        if let current, current == token { return .send }
        if let current, token.issuedAt <= current.issuedAt, token.keyID == current.keyID,
            token.teamID == current.teamID, replaceable()
        {
            // An older token of the same key, or one of the same second (another cache of
            // the same key: two tenants of one team, say): the connection's serves as
            // well, and is no update.
            return .sendCarrying(current)
        }
        if current != nil, now &- since < Self.minimumInterval {
            if lastRetirement.map({ now &- $0 >= Self.minimumInterval }) ?? true {
                lastRetirement = now
                return .retire
            }
            // Retired for this less than 20 minutes ago. A newer token of the connection's
            // own key (a tenant's client made again with a new cache, say) while the
            // connection's token still has minutes to live: the connection's serves as well,
            // where sending the new one would be an update APNs refuses (429
            // TooManyProviderTokenUpdates, for every request carrying it until 20 minutes
            // have passed).
            if let current, token.keyID == current.keyID, token.teamID == current.teamID,
                wallClock().timeIntervalSince(current.issuedAt) < Self.carryLimit, replaceable()
            {
                return .sendCarrying(current)
            }
            // Otherwise the tokens come too fast for any connection, or the connection's is
            // about to expire: send, and let APNs' answer say so.
        }
        current = token
        since = now
        return .send
    }
}
