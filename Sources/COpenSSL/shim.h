// Shim for OpenSSL 3 (Debian 12 ships 3.0). Functions that are macros in
// OpenSSL's headers get small static inline wrappers here, prefixed `capns_`.
#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H
#include <openssl/opensslv.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/ssl.h>
#include <openssl/pkcs12.h>
#include <openssl/rand.h>
#include <openssl/bio.h>
#include <openssl/core_names.h>

/// `EVP_EC_gen` is a macro over the variadic `EVP_PKEY_Q_keygen`, which Swift cannot
/// call: generates a fresh EC key on P-256 (prime256v1), or NULL on failure.
static inline EVP_PKEY *capns_EVP_EC_gen_P256(void) {
    return EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
}
#endif
