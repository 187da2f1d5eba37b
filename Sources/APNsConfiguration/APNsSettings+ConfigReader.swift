import APNsTransport
import Configuration

extension APNsSettings {
    /// Reads the settings from a swift-configuration `ConfigReader`: the same settings, with
    /// the same meaning and checks, as ``APNsTransport/APNsSettings/init(environmentVariables:)``.
    ///
    /// Keys are read relative to `config`; scope it to where your settings live:
    ///
    /// | key | meaning |
    /// |---|---|
    /// | `environment` | `production`, `sandbox` (or `development`), or `host:port` (required) |
    /// | `keyFile` | path of the `.p8` signing key (token-based authentication) |
    /// | `key` | the key's PEM text itself, instead of `keyFile` (secret) |
    /// | `keyID` | the key's 10-character ID (with a key) |
    /// | `teamID` | your 10-character team ID (with a key) |
    /// | `certificateFile` | a client certificate, `.p12` or PEM (instead of a key) |
    /// | `certificateKeyFile` | the PEM private key of a PEM certificate, when not in the same file |
    /// | `certificatePassword` | the `.p12`'s password, or an encrypted PEM key's (secret) |
    /// | `topic` | a topic for your code (`settings.topic`), usually the app's bundle ID; checked as one (optional) |
    /// | `caFile` | PEM CA certificates to trust instead of the system's, such as the mock server's (optional) |
    /// | `proxy` | a proxy URL: `http://[user:password@]host:port` or `socks5://…` (optional, secret: it may hold a password) |
    /// | `connections` | the most connections to APNs, 1 to 64 (optional; a number or its text) |
    /// | `connectTimeout` | seconds one connect, proxy tunnel and TLS handshake may take (optional; a number or its text) |
    /// | `requestTimeout` | seconds a send may take, all its attempts included (optional; 30 by default) |
    ///
    /// swift-configuration's `EnvironmentVariablesProvider` maps the key `apns.keyID` to the
    /// variable `APNS_KEY_ID`, so under the scope `apns` these keys are the `APNS_*`
    /// variables, and a JSON file or an in-memory provider can hold the same settings:
    ///
    /// ```swift
    /// let config = ConfigReader(provider: EnvironmentVariablesProvider())
    /// let settings = try APNsSettings(config: config.scoped(to: "apns"))
    /// let client = try settings.makeClient()
    /// ```
    ///
    /// `key`, `certificatePassword` and `proxy` are read as secrets, so swift-configuration's access
    /// reporters redact them.
    ///
    /// - Parameter config: The reader, scoped to the settings' keys.
    /// - Throws: ``APNsTransport/APNsSettingsError`` whose ``APNsTransport/APNsSettingsError/setting``
    ///   is the key, as given above, that is missing, malformed or not text.
    public init(config: ConfigReader) throws(APNsSettingsError) {
        do {
            try self.init(source: Source(name: \.configKey, lookup: { setting in Self.lookup(setting, in: config) }))
        } catch {
            // A reader over the environment reports its keys, which appear nowhere in the
            // environment: say which variable holds the setting there. The reader does not
            // tell its providers or its scope, so the hint says when it applies rather than
            // claiming a JSON file's or an in-memory value came from the environment.
            guard let setting = Setting.allCases.first(where: { $0.configKey == error.setting }) else { throw error }
            throw APNsSettingsError(
                error.code, setting: error.setting,
                error.problem + " (in the environment, under the scope apns: \(setting.environmentVariable))")
        }
    }

    /// The text `config` holds for `setting`; a value of another type (a number in a
    /// JSON file, say) is reported as such instead of as a missing setting.
    private static func lookup(_ setting: Setting, in config: ConfigReader) -> Lookup {
        let key = ConfigKey(setting.configKey)
        if let text = config.string(forKey: key, isSecret: setting.isSecret) { return .value(text) }
        if setting.isNumber {
            // A file may hold a count or a number of seconds as a number: read as its text.
            if let number = config.int(forKey: key) { return .value(String(number)) }
            if let number = config.double(forKey: key) { return .value(String(number)) }
        }
        // Only on the way to an error: what else is there?
        if config.int(forKey: key, isSecret: setting.isSecret) != nil { return .notText("a number") }
        if config.double(forKey: key, isSecret: setting.isSecret) != nil { return .notText("a number") }
        if config.bool(forKey: key, isSecret: setting.isSecret) != nil { return .notText("a boolean") }
        if config.stringArray(forKey: key, isSecret: setting.isSecret) != nil { return .notText("a list") }
        return .absent
    }
}
