import APNsCore
import APNsTransport
import ArgumentParser
import Foundation

/// Where notifications go: APNs' sandbox (default), production, or any host (a mock server).
struct ConnectionOptions: ParsableArguments {
    @Flag(help: "Send to APNs' development server, api.sandbox.push.apple.com (the default).")
    var sandbox = false

    @Flag(help: "Send to APNs' production server, api.push.apple.com.")
    var production = false

    @Option(help: ArgumentHelp("Send to this host instead (for example 127.0.0.1 for `apns mock-server`).", valueName: "host"))
    var host: String?

    @Option(help: ArgumentHelp("The port: by default the environment's (443 for notifications and broadcasts, 2195 or 2196 for channel management); the mock server's port with --host. Broadcasts take 443 only on APNs' hosts.", valueName: "port"))
    var port: Int?

    @Option(name: .customLong("ca-file"), help: ArgumentHelp("Trust the CA certificates in this PEM file instead of the system's (the mock server's CA); default: APNS_CA_FILE when set.", valueName: "path"))
    var caFile: String?

    @Option(name: .customLong("connections"), help: "HTTP/2 connections to open (1–4 is typical); default: APNS_CONNECTIONS when set, else 1.")
    var connectionsOption: Int?

    /// `--connections`, or, without it, `APNS_CONNECTIONS` when set (``check()`` has made
    /// sure it is a number from 1 to 64), or 1.
    var connections: Int {
        if let connectionsOption { return connectionsOption }
        return Self.connectionsVariable.flatMap(APNsSettings.connectionCount) ?? 1
    }

    /// `APNS_CONNECTIONS`, when set and not blank.
    private static var connectionsVariable: String? {
        APNsSettings.variable("APNS_CONNECTIONS")
    }

    @Option(name: .customLong("connect-timeout"), help: ArgumentHelp("Seconds a connect, proxy tunnel and TLS handshake may take; default: APNS_CONNECT_TIMEOUT when set, else 10.", valueName: "seconds"))
    var connectTimeoutOption: String?

    @Option(name: .customLong("request-timeout"), help: ArgumentHelp("Seconds a notification's send may take, all its attempts included; default: APNS_REQUEST_TIMEOUT when set, else 30.", valueName: "seconds"))
    var requestTimeoutOption: String?

    @Option(help: ArgumentHelp("Tunnel through this proxy: http://[user:password@]host:port (HTTP CONNECT) or socks5://[user:password@]host:port; default: APNS_PROXY when set.", valueName: "url"))
    var proxy: String?

    /// Checks the values together; called from `run()` so that a misspelled flag is
    /// reported as such before any of these checks.
    func check() throws {
        if !sandbox, !production, host == nil, port == nil, let text = APNsSettings.variable("APNS_ENVIRONMENT") {
            do {
                _ = try APNsSettings.parseEnvironment(text)
            } catch {
                throw ValidationError("\(error)")
            }
        }
        if sandbox && production { throw ValidationError("--sandbox and --production exclude each other") }
        if host != nil && (sandbox || production) { throw ValidationError("--host replaces --sandbox/--production: give one of them") }
        if let port, !(1...65535).contains(port) { throw ValidationError("--port \(port) is not a TCP port (1-65535)") }
        if let host, let problem = Self.hostProblem(host) { throw ValidationError(problem) }
        if let connectionsOption, !(1...64).contains(connectionsOption) { throw ValidationError("--connections must be 1...64") }
        if connectionsOption == nil, let text = Self.connectionsVariable, APNsSettings.connectionCount(text) == nil {
            throw ValidationError("APNS_CONNECTIONS is '\(text)': expected a number of connections from 1 to 64")
        }
        // A malformed APNS_PROXY is a usage error like a malformed --proxy (and like the
        // other APNS_* variables above): exit status 2, before any connection.
        do {
            _ = try proxyConfiguration()
        } catch {
            throw ValidationError(error.message)
        }
        _ = try Self.seconds(connectTimeoutOption, flag: "--connect-timeout", variable: "APNS_CONNECT_TIMEOUT")
        _ = try Self.seconds(requestTimeoutOption, flag: "--request-timeout", variable: "APNS_REQUEST_TIMEOUT")
    }

    /// `--connect-timeout`, or `APNS_CONNECT_TIMEOUT`, or `nil` for the transport's default.
    var connectTimeout: Duration? {
        try? Self.seconds(connectTimeoutOption, flag: "--connect-timeout", variable: "APNS_CONNECT_TIMEOUT")
    }

    /// `--request-timeout`, or `APNS_REQUEST_TIMEOUT`, or `nil` for the client's default.
    var requestTimeout: Duration? {
        try? Self.seconds(requestTimeoutOption, flag: "--request-timeout", variable: "APNS_REQUEST_TIMEOUT")
    }

    /// A number of seconds from `flag`'s value or, without it, from `variable` (as
    /// `APNsSettings` reads it): more than 0, at most a day; `nil` when neither is set.
    private static func seconds(_ option: String?, flag: String, variable: String) throws -> Duration? {
        let named: String
        let text: String
        if let option {
            (named, text) = (flag, option)
        } else if let value = APNsSettings.variable(variable) {
            (named, text) = (variable, value)
        } else {
            return nil
        }
        guard let duration = APNsSettings.duration(seconds: text) else {
            throw ValidationError("\(named) is '\(text)': expected a number of seconds from 0.001 to 86400 (for example 10 or 2.5)")
        }
        return duration
    }

    /// The proxy `--proxy` names, or, without it, the one `APNS_PROXY` names (as
    /// `APNsSettings` reads it) when that is set and not empty; `nil` to connect directly.
    func proxyConfiguration() throws(CLIError) -> ProxyConfiguration? {
        let text: String
        let named: String
        if let proxy {
            (text, named) = (proxy, "--proxy")
        } else if let variable = APNsSettings.variable("APNS_PROXY") {
            (text, named) = (variable, "APNS_PROXY")
        } else {
            return nil
        }
        do {
            return try ProxyConfiguration(url: text)
        } catch {
            throw CLIError("\(named): \(error)")
        }
    }

    /// The environment the flags name; with none of --sandbox, --production, --host and
    /// --port, `APNS_ENVIRONMENT` (as `APNsSettings` reads it) when set and valid.
    var environment: APNsEnvironment {
        if !sandbox, !production, host == nil, port == nil,
            let text = APNsSettings.variable("APNS_ENVIRONMENT"),
            let fromVariable = try? APNsSettings.parseEnvironment(text)
        {
            return fromVariable
        }
        if let host { return .custom(host: host, port: port ?? 443) }
        let base: APNsEnvironment = production ? .production : .sandbox
        if let port { return .custom(host: base.host, port: port) }
        return base
    }

    /// Where channel management goes: the channel-management endpoint of ``environment``
    /// (APNs' channel host of the environment, or `--host`), or, with `--port` and no
    /// `--host`, APNs' channel host of the environment on that port, as `apns send` takes
    /// `--port` alone.
    var channelManagementEnvironment: APNsEnvironment {
        let environment = self.environment
        guard host == nil, let port else { return environment }
        return .custom(host: environment.channelManagement.host, port: port)
    }

    /// Refuses `--port` without `--host` for a broadcast, unless it is 443: APNs takes
    /// broadcasts on port 443 only (the SDK sends them there from any port of APNs' hosts),
    /// so another port would be silently ignored.
    func checkBroadcastPort() throws {
        if host == nil, let port, port != 443 {
            throw ValidationError("--port \(port) without --host: APNs takes broadcasts on port 443 only; give --host as well for a server of your own")
        }
    }

    /// The PEM text of `--ca-file`, or, without it, of the file `APNS_CA_FILE` names (as
    /// `APNsSettings` reads it) when that is set and not empty; `nil` for the system's
    /// trust store.
    func trustedCAPEM() throws(CLIError) -> String? {
        let path: String
        let named: String
        if let caFile {
            (path, named) = (caFile, caFile)
        } else if let variable = APNsSettings.variable("APNS_CA_FILE") {
            (path, named) = (variable, "\(variable) (APNS_CA_FILE)")
        } else {
            return nil
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CLIError("cannot read the CA file \(named): check the path and its permissions")
        }
        let pem = String(decoding: data, as: UTF8.self)
        guard pem.contains("-----BEGIN CERTIFICATE-----") else {
            throw CLIError("\(named) holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
        }
        return pem
    }

    /// What is wrong with a `--host` value that is not a host name or an address (a URL,
    /// a `host:port` pair, a path), saying what to give instead; `nil` when it is usable.
    static func hostProblem(_ host: String) -> String? {
        if host.isEmpty { return "--host is empty" }
        if let scheme = host.range(of: "://") {
            let authority = host[scheme.upperBound...].split(separator: "/", maxSplits: 1).first.map(String.init) ?? ""
            let name: String
            if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
                name = String(authority[authority.index(after: authority.startIndex)..<close])
            } else {
                name = authority.split(separator: ":").first.map(String.init) ?? ""
            }
            return "--host takes a host name or an address, not a URL: give --host \(name.isEmpty ? "<name>" : name) (and --port for a port)"
        }
        if host.hasPrefix("["), host.hasSuffix("]") {
            return "--host \(host): give the IPv6 address without brackets (--host \(host.dropFirst().dropLast()))"
        }
        if host.contains("/") { return "--host \(host) has a path: give only the host name or address" }
        if host.contains(where: \.isWhitespace) { return "--host '\(host)' contains a space" }
        let colons = host.filter { $0 == ":" }.count
        if colons == 1, let port = host.split(separator: ":").last, Int(port) != nil {
            return "--host \(host) includes a port: give --host \(host.split(separator: ":")[0]) --port \(port)"
        }
        return nil
    }
}
