// TLS-side shims for OpenSSL 3: static inline wrappers, prefixed `capns_`, for the
// SSL_* calls that are macros in OpenSSL's headers.
#ifndef COPENSSL_SHIM_TLS_H
#define COPENSSL_SHIM_TLS_H
#include "shim.h"

/// SSL_CTX_set_min_proto_version (a macro over SSL_CTX_ctrl).
static inline long capns_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_min_proto_version(ctx, version);
}

/// SSL_set_min_proto_version (a macro over SSL_ctrl).
static inline long capns_SSL_set_min_proto_version(SSL *ssl, int version) {
    return SSL_set_min_proto_version(ssl, version);
}

/// SSL_CTX_set_mode (a macro over SSL_CTX_ctrl).
static inline long capns_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_mode(ctx, mode);
}

/// SSL_set_tlsext_host_name (a macro over SSL_ctrl): the SNI host name a client sends.
static inline long capns_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}

/// SSL_CTX_add_extra_chain_cert (a macro over SSL_CTX_ctrl); takes ownership of `x509`.
static inline long capns_SSL_CTX_add_extra_chain_cert(SSL_CTX *ctx, X509 *x509) {
    return SSL_CTX_add_extra_chain_cert(ctx, x509);
}

/// SSL_CTX_set_session_cache_mode (a macro over SSL_CTX_ctrl).
static inline long capns_SSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_session_cache_mode(ctx, mode);
}

/// BIO_get_mem_data (a macro over BIO_ctrl): the bytes of a memory BIO.
static inline long capns_BIO_get_mem_data(BIO *bio, char **data) {
    return BIO_get_mem_data(bio, data);
}

/// X509V3_set_ctx_nodb (a macro): an extension context without a config database.
static inline void capns_X509V3_set_ctx_nodb(X509V3_CTX *ctx) {
    X509V3_set_ctx_nodb(ctx);
}

/// SSL_OP_NO_RENEGOTIATION (built with a macro Swift cannot import).
static inline uint64_t capns_SSL_OP_NO_RENEGOTIATION(void) {
    return SSL_OP_NO_RENEGOTIATION;
}

/// SSL_OP_NO_COMPRESSION (built with a macro Swift cannot import).
static inline uint64_t capns_SSL_OP_NO_COMPRESSION(void) {
    return SSL_OP_NO_COMPRESSION;
}

#endif
