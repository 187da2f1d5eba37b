import COpenSSL
import Synchronization

/// OpenSSL 3's "legacy" provider (RC2, RC4, DES…), loaded on first need.
///
/// `.p12` files exported by Keychain Access encrypt with RC2-40 or 3DES; OpenSSL 3 only
/// decrypts RC2 with the legacy provider loaded. Loading it explicitly also loads the
/// "default" provider, since an explicit load turns off OpenSSL's automatic one. Providers
/// stay loaded for the life of the process.
enum LegacyProvider {
    private static let loaded = Mutex<Bool?>(nil)

    /// Loads the providers once; whether the legacy provider is available.
    static func load() -> Bool {
        loaded.withLock { state in
            if let state { return state }
            let defaultProvider = OSSL_PROVIDER_load(nil, "default")
            let legacy = OSSL_PROVIDER_load(nil, "legacy")
            ERR_clear_error()
            let ok = defaultProvider != nil && legacy != nil
            state = ok
            return ok
        }
    }
}
