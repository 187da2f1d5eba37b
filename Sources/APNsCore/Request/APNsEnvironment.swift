/// Where requests go: APNs production or sandbox (development), on port 443 or the
/// alternate port 2197, or a host of your own such as a mock server.
///
/// | environment | host | port |
/// |---|---|---|
/// | ``production`` | `api.push.apple.com` | 443 (``alternatePort``: 2197) |
/// | ``sandbox`` | `api.sandbox.push.apple.com` | 443 (``alternatePort``: 2197) |
/// | ``productionChannelManagement`` | `api-manage-broadcast.push.apple.com` | 2196 |
/// | ``sandboxChannelManagement`` | `api-manage-broadcast.sandbox.push.apple.com` | 2195 |
///
/// Broadcast pushes go to the production or sandbox host on port 443 only, also from an
/// ``alternatePort`` environment (see ``broadcast``); channel management goes to
/// ``channelManagement``.
///
/// Device tokens belong to one environment: a sandbox token sent to production is
/// answered `BadDeviceToken`.
///
/// See [Sending notification requests to APNs](https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns).
public struct APNsEnvironment: Sendable, Hashable, CustomStringConvertible {
    /// The host name, used for the connection, TLS SNI and `:authority`.
    public let host: String
    /// The TCP port.
    public let port: Int

    /// Creates an environment for `host` and `port`, for example a mock server on loopback.
    public static func custom(host: String, port: Int) -> APNsEnvironment {
        APNsEnvironment(host: host, port: port)
    }

    private init(host: String, port: Int) {
        self.host = host
        self.port = port
        self.authority = port == 443 ? host : host + ":" + String(port)
    }

    /// APNs production: `api.push.apple.com:443`.
    public static let production = APNsEnvironment(host: "api.push.apple.com", port: 443)
    /// APNs sandbox (development): `api.sandbox.push.apple.com:443`.
    public static let sandbox = APNsEnvironment(host: "api.sandbox.push.apple.com", port: 443)
    /// Live Activity channel management in production: `api-manage-broadcast.push.apple.com:2196`.
    public static let productionChannelManagement = APNsEnvironment(
        host: "api-manage-broadcast.push.apple.com",
        port: 2196
    )
    /// Live Activity channel management in the sandbox: `api-manage-broadcast.sandbox.push.apple.com:2195`.
    public static let sandboxChannelManagement = APNsEnvironment(
        host: "api-manage-broadcast.sandbox.push.apple.com",
        port: 2195
    )

    /// The same host on port 2197, which Apple offers for networks that block 443.
    ///
    /// Port 2197 takes device pushes only: broadcasts from a client on this environment
    /// still go to port 443 (see ``broadcast``).
    public var alternatePort: APNsEnvironment { APNsEnvironment(host: host, port: 2197) }

    /// The sandbox's old host name, `api.development.push.apple.com`: an alias of
    /// ``sandbox``'s host, which Apple still answers on.
    static let developmentAlias = "api.development.push.apple.com"

    /// The broadcast push endpoint that belongs with this environment: port 443 of the same
    /// host for APNs' production or sandbox host (or the sandbox's old alias) on any other
    /// port (APNs takes broadcasts on 443 only, not on the alternate port 2197); the
    /// production or sandbox host for its channel-management endpoint; itself otherwise (a
    /// custom host such as a mock server keeps its port).
    ///
    /// See [Sending broadcast push notification requests to APNs](https://developer.apple.com/documentation/usernotifications/sending-broadcast-push-notification-requests-to-apns).
    public var broadcast: APNsEnvironment {
        switch host {
        case Self.production.host, Self.sandbox.host, Self.developmentAlias: APNsEnvironment(host: host, port: 443)
        case Self.productionChannelManagement.host: .production
        case Self.sandboxChannelManagement.host: .sandbox
        default: self
        }
    }

    /// The channel-management endpoint that belongs with this environment: the sandbox one
    /// for the sandbox host (or its old alias), the production one for the production
    /// host, itself otherwise.
    public var channelManagement: APNsEnvironment {
        switch host {
        case Self.production.host: .productionChannelManagement
        case Self.sandbox.host, Self.developmentAlias: .sandboxChannelManagement
        default: self
        }
    }

    /// The `:authority` value: the host, followed by `:port` unless the port is 443
    /// (RFC 9110 §4.2.2 and §7.2: the default port of `https` is omitted). Made once, when
    /// the environment is: every request carries it.
    public let authority: String

    /// `host:port`, with an IPv6 address in brackets (`[::1]:2197`), as a URL writes it
    /// (RFC 3986 §3.2.2) and `APNS_ENVIRONMENT` reads it.
    public var description: String {
        (host.contains(":") && !host.hasPrefix("[") ? "[" + host + "]" : host) + ":" + String(port)
    }
}
