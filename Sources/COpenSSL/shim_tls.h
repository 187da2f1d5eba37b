// TLS-side shims for OpenSSL 3: static inline wrappers, prefixed `capns_`, for the
// SSL_* calls that are macros in OpenSSL's headers (Swift cannot call a macro), and a
// PEM password callback that never prompts on a terminal.
#ifndef COPENSSL_SHIM_TLS_H
#define COPENSSL_SHIM_TLS_H
#include "shim.h"
#if OPENSSL_VERSION_NUMBER < 0x30000000L
#error "swift-apns needs OpenSSL 3.0 or later (providers, X509_VERIFY_PARAM host checks, TLS 1.3)"
#endif
#include <string.h>
#include <signal.h>
#include <pthread.h>
#ifdef __linux__
/* The transport's event loops wait with epoll(7) (Glibc's Swift module does not export it). */
#include <sys/epoll.h>
#endif
#include <openssl/provider.h>

/// `SSL_CTX_set_min_proto_version` (a macro over `SSL_CTX_ctrl`); 1 on success.
static inline int capns_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}

/// The lowest protocol this client accepts: TLS 1.2 (RFC 5246).
static inline int capns_TLS1_2_VERSION(void) { return TLS1_2_VERSION; }

/// `SSL_CTX_set_max_proto_version` (a macro over `SSL_CTX_ctrl`); 1 on success.
static inline int capns_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_max_proto_version(ctx, version);
}

/// TLS 1.0 and TLS 1.1: only the diagnostic probe of a server that refused TLS 1.2 offers them.
static inline int capns_TLS1_VERSION(void) { return TLS1_VERSION; }
static inline int capns_TLS1_1_VERSION(void) { return TLS1_1_VERSION; }

/// `SSL_CTX_set_mode` (a macro): partial writes and a write buffer that may move between
/// retries, which a non-blocking HTTP/2 writer needs, and record buffers released while
/// empty (an idle connection then holds no 16 KiB read and write buffers: with a thousand
/// idle connections that is tens of MiB). Returns the new mode bitmask.
static inline long capns_SSL_CTX_set_nonblocking_write_modes(SSL_CTX *ctx) {
    return SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
}

/// `SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF)`: a TCP EOF without
/// close_notify reads as a clean close (HTTP/2 framing detects truncation by itself).
static inline void capns_SSL_CTX_ignore_unexpected_eof(SSL_CTX *ctx) {
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
    SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
#endif
}

/// `SSL_set_tlsext_host_name` (a macro): the SNI host name (RFC 6066 §3); 1 on success.
static inline int capns_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

/// `SSL_CTX_add1_chain_cert` (a macro): adds an intermediate certificate sent after the
/// client certificate; the context takes its own reference. 1 on success.
static inline int capns_SSL_CTX_add1_chain_cert(SSL_CTX *ctx, X509 *cert) {
    return (int)SSL_CTX_add1_chain_cert(ctx, cert);
}

/// `sk_X509_num` (a macro) on the peer's certificate chain, or 0 for NULL.
static inline int capns_sk_X509_num(const STACK_OF(X509) *stack) {
    return stack == NULL ? 0 : sk_X509_num(stack);
}

/// `sk_X509_value` (a macro).
static inline X509 *capns_sk_X509_value(const STACK_OF(X509) *stack, int index) {
    return sk_X509_value(stack, index);
}

/// Pops and returns the first certificate of `stack`, or NULL when it is empty.
static inline X509 *capns_sk_X509_shift(STACK_OF(X509) *stack) {
    return stack == NULL ? NULL : sk_X509_shift(stack);
}

/// `sk_X509_pop_free(stack, X509_free)` (a macro).
static inline void capns_sk_X509_free_all(STACK_OF(X509) *stack) {
    if (stack != NULL) sk_X509_pop_free(stack, X509_free);
}

/// `sk_GENERAL_NAME_num` / `sk_GENERAL_NAME_value` (macros), for reading subjectAltName.
static inline int capns_sk_GENERAL_NAME_num(const GENERAL_NAMES *names) {
    return names == NULL ? 0 : sk_GENERAL_NAME_num(names);
}
static inline const GENERAL_NAME *capns_sk_GENERAL_NAME_value(const GENERAL_NAMES *names, int index) {
    return sk_GENERAL_NAME_value(names, index);
}
/// `GENERAL_NAMES_free` for the result of `X509_get_ext_d2i(..., NID_subject_alt_name, ...)`.
static inline void capns_GENERAL_NAMES_free(GENERAL_NAMES *names) { GENERAL_NAMES_free(names); }
/// The DNS name in a GENERAL_NAME, or NULL if it is not a dNSName.
static inline const ASN1_IA5STRING *capns_GENERAL_NAME_dns(const GENERAL_NAME *name) {
    return name->type == GEN_DNS ? name->d.dNSName : NULL;
}
/// The IP address bytes in a GENERAL_NAME, or NULL if it is not an iPAddress.
static inline const ASN1_OCTET_STRING *capns_GENERAL_NAME_ip(const GENERAL_NAME *name) {
    return name->type == GEN_IPADD ? name->d.iPAddress : NULL;
}

/// `ERR_GET_LIB` / `ERR_GET_REASON` for an error code.
static inline int capns_ERR_GET_REASON(unsigned long code) { return ERR_GET_REASON(code); }
static inline int capns_ERR_GET_LIB(unsigned long code) { return ERR_GET_LIB(code); }

/// The passphrase handed to `capns_pem_password_cb` through its `u` argument.
typedef struct {
    const char *bytes;
    size_t count;
} capns_password;

/// A `pem_password_cb` that copies the passphrase from `u` (a `capns_password`), and
/// fails (instead of prompting on the terminal as OpenSSL's default does) when there is none.
static int capns_pem_password_cb(char *buf, int size, int rwflag, void *u) {
    (void)rwflag;
    const capns_password *password = (const capns_password *)u;
    if (password == NULL || password->bytes == NULL || size <= 0) return -1;
    if (password->count > (size_t)size) return -1;
    memcpy(buf, password->bytes, password->count);
    return (int)password->count;
}

/// `PEM_read_bio_PrivateKey` with a passphrase that never prompts: `password` may be NULL.
static inline EVP_PKEY *capns_PEM_read_bio_PrivateKey(BIO *bio, const capns_password *password) {
    return PEM_read_bio_PrivateKey(bio, NULL, capns_pem_password_cb, (void *)password);
}

/// Ignores SIGPIPE if its disposition is still the default (process termination), so a
/// write by OpenSSL to a socket the peer has closed fails with EPIPE instead of killing
/// the process. A handler the application installed is left alone.
static inline void capns_ignore_sigpipe_if_default(void) {
    struct sigaction current;
    if (sigaction(SIGPIPE, NULL, &current) == 0 && current.sa_handler == SIG_DFL
        && !(current.sa_flags & SA_SIGINFO)) {
        signal(SIGPIPE, SIG_IGN);
    }
}

/// Blocks SIGPIPE on the calling thread, whatever the process-wide disposition: a write
/// by OpenSSL (or anyone) on this thread to a socket the peer has closed then fails with
/// EPIPE, and the signal stays pending on this thread instead of ending the process. For
/// the threads the SDK owns (connection and mock server I/O threads), which never unblock
/// it and start no processes.
static inline void capns_block_sigpipe_on_this_thread(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/// `BIO_new_mem_buf` over `count` bytes (read-only; the bytes must outlive the BIO).
static inline BIO *capns_BIO_new_mem_buf(const void *bytes, int count) {
    return BIO_new_mem_buf(bytes, count);
}


/// SSL_set_min_proto_version (a macro over SSL_ctrl).
static inline long capns_SSL_set_min_proto_version(SSL *ssl, int version) {
    return SSL_set_min_proto_version(ssl, version);
}

/// SSL_CTX_set_mode (a macro over SSL_CTX_ctrl).
static inline long capns_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_mode(ctx, mode);
}

/// SSL_CTX_set_read_ahead (a macro over SSL_CTX_ctrl): with `yes` 1, a read from the
/// socket takes as much as the record buffer holds, not one record at a time.
static inline void capns_SSL_CTX_set_read_ahead(SSL_CTX *ctx, int yes) {
    SSL_CTX_set_read_ahead(ctx, yes);
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
