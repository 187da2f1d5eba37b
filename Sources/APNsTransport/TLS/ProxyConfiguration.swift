/// A proxy that connections tunnel through, as corporate networks often require: an HTTP
/// proxy with `CONNECT` (RFC 9110 §9.3.6) or a SOCKS5 proxy (RFC 1928).
///
/// The transport opens TCP to the proxy, asks it for a tunnel to APNs
/// (`CONNECT api.push.apple.com:443`, or a SOCKS5 CONNECT naming the same host), and once
/// the proxy has opened it runs TLS with APNs through the tunnel: the proxy sees only
/// encrypted bytes. The proxy resolves APNs' host name in both kinds, so the machine
/// needs no DNS of its own.
///
/// ```swift
/// let http = ProxyConfiguration(host: "proxy.corp.example", port: 3128)
/// let socks = ProxyConfiguration.socks5(host: "10.0.0.7", port: 1080, username: "apns", password: secret)
/// let fromURL = try ProxyConfiguration(url: "socks5://apns:secret@10.0.0.7:1080")
/// ```
public struct ProxyConfiguration: Sendable, Hashable {
    /// How a connection asks the proxy for its tunnel: an open set, so that new kinds can
    /// be added without breaking callers.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case httpConnect = "http"
            case socks5
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// An HTTP proxy: `CONNECT host:443 HTTP/1.1`, with `Proxy-Authorization: Basic`
        /// (RFC 7617) when a user name is set; the tunnel is open on a 2xx answer.
        public static let httpConnect = Kind(.httpConnect)
        /// A SOCKS5 proxy (RFC 1928): the CONNECT command with APNs' host name (the proxy
        /// resolves it), offering username/password authentication (RFC 1929) when a user
        /// name is set and no authentication otherwise.
        public static let socks5 = Kind(.socks5)

        /// `http` or `socks5`, the kind's URL scheme.
        public var description: String { base.rawValue }
    }

    /// How the connection asks for its tunnel (``Kind/httpConnect`` by default).
    public var kind: Kind
    /// The proxy's host name or IP address.
    public var host: String
    /// The proxy's port.
    public var port: Int
    /// The user name: for `Proxy-Authorization: Basic` (RFC 7617; it must not contain a
    /// colon, RFC 7617 §2), or for SOCKS5's username/password authentication (RFC 1929;
    /// 1 to 255 bytes of UTF-8); `nil` for none.
    public var username: String?
    /// The password for ``username`` (at most 255 bytes of UTF-8 for SOCKS5); used only
    /// with a user name.
    public var password: String?

    /// An HTTP `CONNECT` proxy.
    /// - Parameters:
    ///   - host: The proxy's host name or IP address.
    ///   - port: The proxy's port.
    ///   - username: A user name for Basic authentication, or `nil`.
    ///   - password: The password for `username`.
    public init(host: String, port: Int, username: String? = nil, password: String? = nil) {
        self.init(kind: .httpConnect, host: host, port: port, username: username, password: password)
    }

    /// A proxy of `kind`.
    /// - Parameters:
    ///   - kind: How the connection asks for its tunnel.
    ///   - host: The proxy's host name or IP address.
    ///   - port: The proxy's port.
    ///   - username: A user name, or `nil` for none.
    ///   - password: The password for `username`.
    public init(kind: Kind, host: String, port: Int, username: String? = nil, password: String? = nil) {
        self.kind = kind
        self.host = host
        self.port = port
        self.username = username
        self.password = password
    }

    /// A SOCKS5 proxy (RFC 1928), with username/password authentication (RFC 1929) when
    /// `username` is set.
    public static func socks5(host: String, port: Int, username: String? = nil, password: String? = nil) -> ProxyConfiguration {
        ProxyConfiguration(kind: .socks5, host: host, port: port, username: username, password: password)
    }

    /// Reads a proxy URL, as `APNS_PROXY` and the `apns` tool's `--proxy` hold one:
    /// `http://[user[:password]@]host[:port]` for an HTTP `CONNECT` proxy (port 80 when
    /// not given; `host:port` alone means the same), `socks5://…` or `socks5h://…` for a
    /// SOCKS5 proxy (port 1080 when not given). Both SOCKS5 schemes let the proxy resolve
    /// APNs' host name (curl's `socks5h` behaviour). The user name and password are
    /// percent-decoded (RFC 3986 §2.1); an IPv6 address is written in brackets.
    ///
    /// - Throws: ``ProxyURLError`` saying what is wrong; it never repeats the password.
    public init(url text: String) throws(ProxyURLError) {
        self = try ProxyURL.parse(text)
    }
}

extension ProxyConfiguration: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The proxy as a URL with its password replaced by `***`, for example
    /// `socks5://apns:***@10.0.0.7:1080`: printing, logging or dumping a configuration
    /// never shows the password.
    public var description: String {
        var text = "\(kind)://"
        if let username {
            text += username + (password == nil ? "@" : ":***@")
        }
        return text + (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
    }

    /// The same as ``description``.
    public var debugDescription: String { description }

    /// The configuration's parts for `dump` and the debugger, the password as `***`.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: ["kind": kind, "host": host, "port": port, "username": username as Any, "password": password.map { _ in "***" } as Any],
            displayStyle: .struct
        )
    }
}

extension ProxyConfiguration {
    /// Throws, as permanent (every attempt would fail the same way, after a connection to
    /// the proxy), when ``credentialProblem`` names one.
    func checkCredentials() throws(APNsTransportError) {
        if let problem = credentialProblem {
            throw APNsTransportError.connectionFailed("the proxy \(host):\(port) configuration \(problem)").permanent
        }
    }

    /// What makes the credentials impossible to send to this kind of proxy, or `nil`: a
    /// colon in a Basic user name or a control character in its user name or password
    /// (RFC 7617 §2), a SOCKS5 user name not 1 to 255 bytes or a password over 255 (RFC
    /// 1929). Such a configuration fails every attempt the same way.
    var credentialProblem: String? {
        guard let username else { return nil }
        if kind == .socks5 {
            let userBytes = username.utf8.count
            let passwordBytes = (password ?? "").utf8.count
            if !(1...255).contains(userBytes) {
                return "has a user name of \(userBytes) bytes: SOCKS5 user names are 1 to 255 bytes (RFC 1929)"
            }
            if passwordBytes > 255 {
                return "has a password of \(passwordBytes) bytes: SOCKS5 passwords are at most 255 bytes (RFC 1929)"
            }
            return nil
        }
        if username.contains(":") {
            return "has a ':' in its user name, which Basic authentication cannot carry (RFC 7617 §2)"
        }
        if username.utf8.contains(where: Self.isControl) || (password ?? "").utf8.contains(where: Self.isControl) {
            return "has a control character (a line break, say) in its user name or password, which Basic authentication cannot carry (RFC 7617 §2)"
        }
        return nil
    }

    private static func isControl(_ byte: UInt8) -> Bool { byte < 0x20 || byte == 0x7F }
}

/// A proxy URL that ``ProxyConfiguration/init(url:)`` cannot use: its ``url`` (with any
/// password replaced by `***`) and what is wrong with it.
public struct ProxyURLError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The URL as given, with its password (if any) replaced by `***`.
    public let url: String
    /// What is wrong, for example "has an unsupported scheme 'socks4'".
    public let problem: String

    init(url: String, _ problem: String) {
        self.url = url
        self.problem = problem
    }

    /// `the proxy URL '<url>' <problem>`.
    public var description: String { "the proxy URL '\(url)' \(problem)" }
}

/// The parser behind ``ProxyConfiguration/init(url:)``.
enum ProxyURL {
    static func parse(_ text: String) throws(ProxyURLError) -> ProxyConfiguration {
        let shown = redacted(text)
        func fail(_ problem: String) -> ProxyURLError { ProxyURLError(url: shown, problem) }

        var rest = Substring(text)
        let kind: ProxyConfiguration.Kind
        let defaultPort: Int
        if let separator = rest.firstRange(of: "://") {
            let scheme = rest[..<separator.lowerBound].lowercased()
            rest = rest[separator.upperBound...]
            switch scheme {
            case "http": (kind, defaultPort) = (.httpConnect, 80)
            case "socks5", "socks5h": (kind, defaultPort) = (.socks5, 1080)
            case "https":
                throw fail("asks for TLS to the proxy (https), which is not supported: use http:// (the tunnel to APNs is TLS either way)")
            default:
                throw fail("has an unsupported scheme '\(scheme)': use http://, socks5:// or socks5h://")
            }
        } else {
            (kind, defaultPort) = (.httpConnect, 80)
        }
        // Nothing but an optional "/" may follow the authority.
        if let slash = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) {
            guard rest[slash...] == "/" else {
                if rest[slash...].contains("@") {
                    throw fail("has '/', '?' or '#' in its user name or password: percent-encode them (%2F, %3F, %23)")
                }
                throw fail("has a path, query or fragment: a proxy URL is scheme://host:port")
            }
            rest = rest[..<slash]
        }
        var username: String?
        var password: String?
        if let at = rest.lastIndex(of: "@") {
            let userinfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            let (user, secret) = userinfo.firstIndex(of: ":").map { (userinfo[..<$0], Optional(userinfo[userinfo.index(after: $0)...])) } ?? (userinfo, nil)
            guard let decodedUser = percentDecoded(user), !decodedUser.isEmpty else {
                throw fail("has an empty or badly percent-encoded user name")
            }
            username = decodedUser
            if let secret {
                guard let decoded = percentDecoded(secret) else { throw fail("has a badly percent-encoded password") }
                password = decoded
            }
        }
        let host: String
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw fail("has an IPv6 address without its closing ']'") }
            host = String(rest[rest.index(after: rest.startIndex)..<close])
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw fail("has something after the IPv6 address that is not :port") }
                portText = after.dropFirst()
            }
        } else {
            if let colon = rest.lastIndex(of: ":") {
                host = String(rest[..<colon])
                portText = rest[rest.index(after: colon)...]
            } else {
                host = String(rest)
            }
        }
        guard !host.isEmpty else { throw fail("has no host") }
        if host.contains(":"), !rest.hasPrefix("[") {
            throw fail("has an IPv6 address without brackets: write it as [address]:port")
        }
        guard !host.contains(where: { $0 == " " || $0 == "@" || $0 == "[" || $0 == "]" || $0.isNewline }) else {
            throw fail("has a host with characters a host name cannot hold")
        }
        var port = defaultPort
        if let portText {
            guard let number = Int(portText), (1...65535).contains(number) else {
                throw fail("has the port '\(portText)', not a TCP port (1-65535)")
            }
            port = number
        }
        let proxy = ProxyConfiguration(kind: kind, host: host, port: port, username: username, password: password)
        if let problem = proxy.credentialProblem { throw fail(problem) }
        return proxy
    }

    /// `text` with the password of its user information, if any, replaced by `***`.
    ///
    /// The user information ends at the last `@`: a proxy URL has no path that could hold
    /// one, and a password that was not percent-encoded may hold `/`, `?` or `#`, so the
    /// authority's usual end (the first of those) cannot be trusted to find it.
    static func redacted(_ text: String) -> String {
        let authorityStart = text.firstRange(of: "://")?.upperBound ?? text.startIndex
        guard let at = text[authorityStart...].lastIndex(of: "@"),
            let colon = text[authorityStart..<at].firstIndex(of: ":")
        else { return text }
        return String(text[..<text.index(after: colon)]) + "***" + String(text[at...])
    }

    /// `text` with `%XX` escapes decoded (RFC 3986 §2.1), or `nil` if an escape is
    /// malformed or the result is not UTF-8.
    static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(DeviceToken.value(ofHexDigit:)),
                let low = iterator.next().flatMap(DeviceToken.value(ofHexDigit:))
            else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
