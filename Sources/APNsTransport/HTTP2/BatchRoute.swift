import APNsCore
import Synchronization

/// Finds the pool of each request of one batch, remembering the last one found.
///
/// A batch's requests nearly all carry the same `:authority` and provider token (a new
/// token every 20 to 60 minutes), so most find their pool by comparing three strings
/// with the last request's, which share their storage and compare by identity, instead
/// of making a pool key (the credential's team and key IDs) and looking it up under the
/// transport's lock: about 4 % of a batch's CPU, twice per request, before this.
///
/// A remembered pool that has closed since sends what it is given on to its credential's
/// next pool (see ``HTTP2ConnectionPool/enqueue(_:now:)``), so remembering it is safe.
/// Requests without a provider token (a client certificate, or an `authorization` header
/// written by hand) take the transport's lookup every time.
final class BatchRoute: Sendable {
    /// The last route found; immutable, so it is read outside the lock (taking it is one
    /// reference, where a struct of three would be three).
    private final class Last: Sendable {
        let authority: String
        let token: ProviderToken
        let pool: HTTP2ConnectionPool

        init(authority: String, token: ProviderToken, pool: HTTP2ConnectionPool) {
            self.authority = authority
            self.token = token
            self.pool = pool
        }
    }

    private let transport: HTTP2Transport
    private let last = Mutex<Last?>(nil)

    init(_ transport: HTTP2Transport) {
        self.transport = transport
    }

    /// The pool `request` goes to: the transport's ``HTTP2Transport/pool(for:)``.
    func pool(for request: APNsRequest) throws(APNsTransportError) -> HTTP2ConnectionPool {
        // A pool's key is the authority and the provider token's team and key IDs when
        // the request has a token (a client certificate then plays no part in it).
        if let remembered = last.withLock({ $0 }), request.carries(remembered.token), remembered.authority == request.authority {
            return remembered.pool
        }
        guard let token = request.providerToken else { return try transport.pool(for: request) }
        let pool = try transport.pool(for: request)
        let found = Last(authority: request.authority, token: token, pool: pool)
        last.withLock { $0 = found }
        return pool
    }
}
