import Foundation
import Logging

/// The example's own settings, from environment variables; the APNs ones (`APNS_*`) are
/// read by the SDK's `APNsSettings`.
///
/// | variable | meaning |
/// |---|---|
/// | `HTTP_HOST` | the address to listen on (default `127.0.0.1`) |
/// | `HTTP_PORT` | the port to listen on (default `8080`; `0` lets the system pick one) |
/// | `HTTP_PORT_FILE` | where to write the port once listening (for scripts, with `HTTP_PORT=0`) |
/// | `LOG_LEVEL` | `trace`, `debug`, `info` (default), `notice`, `warning`, `error` or `critical` |
struct ServerSettings: Sendable {
    var host: String
    var port: Int
    var portFile: String?
    var logLevel: Logger.Level

    init(environmentVariables variables: [String: String]) throws(SettingsError) {
        func value(_ name: String) -> String? {
            guard let raw = variables[name]?.trimmingCharacters(in: .whitespaces), !raw.isEmpty else { return nil }
            return raw
        }
        host = value("HTTP_HOST") ?? "127.0.0.1"
        if let text = value("HTTP_PORT") {
            guard let port = Int(text), (0...65535).contains(port) else {
                throw SettingsError(variable: "HTTP_PORT", "is \"\(text)\": expected a port number, 0 to 65535")
            }
            self.port = port
        } else {
            port = 8080
        }
        portFile = value("HTTP_PORT_FILE")
        if let text = value("LOG_LEVEL") {
            guard let level = Logger.Level(rawValue: text.lowercased()) else {
                throw SettingsError(variable: "LOG_LEVEL", "is \"\(text)\": expected trace, debug, info, notice, warning, error or critical")
            }
            logLevel = level
        } else {
            logLevel = .info
        }
    }
}

/// A setting of the example that is missing or malformed, named by its variable.
struct SettingsError: Error, CustomStringConvertible {
    let variable: String
    let problem: String

    init(variable: String, _ problem: String) {
        self.variable = variable
        self.problem = problem
    }

    var description: String { variable + " " + problem }
}
