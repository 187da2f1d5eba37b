import APNsCore
import COpenSSL

extension HTTP2Transport {
    /// What a connection presents to APNs, and so which requests may share it: APNs pins a
    /// connection to the key of the first provider token it carried (a token of an
    /// unrelated key on it gets `403 UnrelatedKeyIdInToken`), and a connection carries one
    /// client certificate for its whole life.
    ///
    /// The transport keeps one pool of connections per authority and credential, and
    /// finds a request's credential by itself: the team id (`iss`) and key id (`kid`) of
    /// its provider token, else the client certificate it asks for
    /// (``APNsCore/APNsRequest/clientCertificate``), else ``configured``. Use a value to
    /// read ``HTTP2Transport/statistics(for:)`` or to
    /// ``HTTP2Transport/closeConnections(for:)``.
    public struct Credential: Sendable, Hashable, CustomStringConvertible {
        enum Kind: Sendable, Hashable {
            case configured
            case providerKey(teamID: String, keyID: String)
            case certificate(id: String)
        }

        let kind: Kind
        /// A certificate's name, for ``description`` (not compared).
        private let certificateName: String?

        /// The team and key id, or the certificate's subject: never a secret. Made when
        /// asked for, not per request.
        public var description: String {
            switch kind {
            case .configured: "configured"
            case .providerKey(let teamID, let keyID): "team \(teamID) key \(keyID)"
            case .certificate: "certificate \(certificateName ?? "")"
            }
        }

        /// The transport's own configuration: requests with neither a provider token nor
        /// a certificate of their own (the certificate of ``Configuration/tls``, if any).
        public static let configured = Credential(kind: .configured)

        /// A provider key: requests whose tokens have this `iss` and `kid`.
        public static func providerKey(teamID: String, keyID: String) -> Credential {
            Credential(kind: .providerKey(teamID: teamID, keyID: keyID))
        }

        /// Requests that present `certificate` (``APNsCore/APNsCredentials/clientCertificate(_:)``).
        public static func certificate(_ certificate: APNsClientCertificate) -> Credential {
            Credential(kind: .certificate(id: certificate.id), certificateName: certificate.description)
        }

        /// The credential of a provider token: its team id and key id.
        public init(_ token: ProviderToken) {
            self = .providerKey(teamID: token.teamID ?? "", keyID: token.keyID ?? "")
        }

        init(kind: Kind, certificateName: String? = nil) {
            self.kind = kind
            self.certificateName = certificateName
        }

        /// Equal when they name the same key or certificate.
        public static func == (lhs: Credential, rhs: Credential) -> Bool { lhs.kind == rhs.kind }

        /// Hashes what ``==(_:_:)`` compares.
        public func hash(into hasher: inout Hasher) { hasher.combine(kind) }
    }

    /// What one credential's connections to one authority carry, from
    /// ``HTTP2Transport/credentialStatistics``.
    public struct CredentialStatistics: Sendable, Hashable {
        /// The credential.
        public var credential: Credential
        /// The `:authority` (host, and port unless 443).
        public var authority: String
        /// The counters of this pool alone (the transport's ``HTTP2Transport/statistics``
        /// add up every pool, closed ones included).
        public var statistics: Statistics
        /// Connections up now.
        public var openConnections: Int
        /// Requests waiting for a stream now.
        public var queuedRequests: Int
    }

    /// Per-credential figures: one entry per pool (authority and credential) open now.
    public var credentialStatistics: [CredentialStatistics] {
        pools.withLock { Array($0.pools) }.map { key, pool in
            let activity = pool.activity
            return CredentialStatistics(
                credential: key.credential,
                authority: key.authority,
                statistics: pool.statistics.snapshot,
                openConnections: activity.openConnections,
                queuedRequests: activity.queued
            )
        }
    }

    /// The figures of `credential`'s pools, added up over authorities; `nil` when it has
    /// no pool open.
    public func statistics(for credential: Credential) -> CredentialStatistics? {
        let matching = credentialStatistics.filter { $0.credential == credential }
        guard var total = matching.first else { return nil }
        for other in matching.dropFirst() {
            total.openConnections += other.openConnections
            total.queuedRequests += other.queuedRequests
            total.statistics.add(other.statistics)
        }
        return total
    }

    /// The connections open now (or being opened) in all, the most held at once so far,
    /// and the most the transport may hold (``Configuration/maxConnections``).
    public var connectionBudget: (held: Int, peak: Int, limit: Int) {
        (budget.held, budget.peakHeld, budget.limit)
    }

    /// Closes `credential`'s connections, on every authority, without touching any other
    /// credential's: for a tenant removed at run time, or the old key after a rotation
    /// (which otherwise simply idles out, see ``Configuration/credentialIdleTimeout``).
    ///
    /// Requests in flight get ``Configuration/shutdownGracePeriod`` to finish; requests
    /// queued for it (never sent), or that the server declines to process meanwhile (a
    /// GOAWAY, a refused stream), go to new connections of the credential, as do later
    /// ones, so a key rotated in the middle of a batch costs no notification. To stop a
    /// removed tenant's sends, cancel their tasks (or stop its batches) as well.
    public func closeConnections(for credential: Credential) async {
        let closing: [HTTP2ConnectionPool] = pools.withLock { state in
            let keys = state.pools.keys.filter { $0.credential == credential }
            return keys.compactMap { state.pools.removeValue(forKey: $0) }
        }
        for pool in closing {
            await pool.close(gracePeriod: configuration.shutdownGracePeriod)
        }
    }
}

extension HTTP2Transport.Statistics {
    /// Adds `other`'s counters to these.
    mutating func add(_ other: HTTP2Transport.Statistics) {
        requestsInFlight += other.requestsInFlight
        requestsSent += other.requestsSent
        responsesByStatus.merge(other.responsesByStatus, uniquingKeysWith: +)
        rejectionsByReason.merge(other.rejectionsByReason, uniquingKeysWith: +)
        failuresByCode.merge(other.failuresByCode, uniquingKeysWith: +)
        requestsRequeued += other.requestsRequeued
        connectionsOpened += other.connectionsOpened
        reconnects += other.reconnects
        connectionFailures += other.connectionFailures
        connectionsLost += other.connectionsLost
        goAwaysReceived += other.goAwaysReceived
        connectionsRetired += other.connectionsRetired
        framesSent += other.framesSent
    }
}

extension ClientIdentity {
    /// This identity as the handle APNsCore's requests carry: pass it as
    /// ``APNsCore/APNsCredentials/clientCertificate(_:)`` so that a client presents this
    /// certificate on connections of its own, over a transport it shares with other
    /// clients. Handles of the same certificate (its SHA-256 fingerprint) share connections.
    public var clientCertificate: APNsClientCertificate {
        APNsClientCertificate(
            id: certificateFingerprint,
            value: self,
            description: subjectCommonName ?? "(no common name)"
        )
    }

    /// The SHA-256 fingerprint of the certificate's DER, in hexadecimal.
    var certificateFingerprint: String {
        certificate.withUnsafeHandle { x509 in
            var digest = [UInt8](repeating: 0, count: 32)
            var length: UInt32 = 0
            guard X509_digest(x509, EVP_sha256(), &digest, &length) == 1 else {
                return "unknown-\(ObjectIdentifier(certificate).hashValue)"
            }
            return digest.prefix(Int(length)).map { byte in
                let hex = String(byte, radix: 16)
                return byte < 16 ? "0" + hex : hex
            }.joined()
        }
    }
}
