import APNsTransport

// MARK: ServingManyAppsAndTeams.md (compiled exactly as the article shows it)

/// One transport for every tenant; one client per tenant, each with its own credentials.
func makeTenantClients(
    keys: [(key: ProviderKey, keyID: String, teamID: String)],
    certificates: [ClientIdentity]
) throws -> (HTTP2Transport, [APNsClient]) {
    var configuration = HTTP2Transport.Configuration(environment: .production, connectionCount: 4)
    configuration.maxConnections = 512
    configuration.credentialIdleTimeout = .seconds(30 * 60)
    let transport = HTTP2Transport(configuration: configuration)
    var clients: [APNsClient] = []
    for tenant in keys {
        let tokens = try ProviderTokenCache(key: tenant.key, keyID: tenant.keyID, teamID: tenant.teamID)
        clients.append(APNsClient(credentials: .providerToken(tokens), transport: transport))
    }
    for identity in certificates {
        clients.append(APNsClient(credentials: .clientCertificate(identity.clientCertificate), transport: transport))
    }
    return (transport, clients)
}

/// A tenant leaves: its connections close (in-flight requests get the grace period),
/// the other tenants' connections stay open.
func removeTenant(teamID: String, keyID: String, from transport: HTTP2Transport) async {
    await transport.closeConnections(for: .providerKey(teamID: teamID, keyID: keyID))
}

/// The tenants with rejections, for a dashboard.
func tenantsWithRejections(_ transport: HTTP2Transport) -> [String: [String: Int]] {
    var rejections: [String: [String: Int]] = [:]
    for pool in transport.credentialStatistics where !pool.statistics.rejectionsByReason.isEmpty {
        rejections[pool.credential.description] = pool.statistics.rejectionsByReason
    }
    return rejections
}
