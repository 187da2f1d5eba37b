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
#endif
