// APNsOpenSSL: the one layer of the SDK that owns OpenSSL handles.
//
// APNsCore (provider-token keys), APNsTransport (client TLS) and APNsMockServer (server
// TLS, its throwaway CA) all reach `EVP_PKEY`, `X509`, `X509_STORE`, `SSL_CTX` and `SSL`
// through the types here and nowhere else. It is a package-internal module, not a product:
// no C type appears in the SDK's public API.
//
// One lifetime rule for every handle:
//
// - one `final class` per C type (`EVPKey`, `X509Certificate`, `X509Store`, `SSLContext`,
//   `SSLSession`) owns one reference to its handle;
// - it takes that reference in `init(taking:)` (a handle fresh from OpenSSL, or one the
//   caller up-ref'd for it) and gives it back exactly once, in `deinit`;
// - it lends the handle out only inside a scoped `withUnsafeHandle` call; the pointer must
//   not escape the closure. OpenSSL functions that keep a handle (`SSL_CTX_use_certificate`,
//   `SSL_new`, `SSL_CTX_set_cert_store` after an up-ref) take their own reference, so the
//   wrapper may be released as soon as the call returns.
//
// One locking style: the handles that are shared between threads (`EVPKey`,
// `X509Certificate`, `X509Store`, `SSLContext`) keep the pointer inside a
// `Synchronization.Mutex`, which makes them `Sendable` without `@unchecked`: no two threads
// use one handle at once. (OpenSSL caches derived data inside `X509` and `EVP_PKEY` lazily;
// serialising costs nothing measurable, since none of them is used per request.)
// `SSLSession` is the exception on purpose: an `SSL *` is used by one connection, on its I/O
// path, so it is not `Sendable`; its owner (`TLSStream`, a server connection) serialises it.
