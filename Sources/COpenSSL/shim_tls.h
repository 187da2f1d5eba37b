// TLS-side shims for OpenSSL 3: static inline wrappers, prefixed `capns_`, for the
// SSL_* calls that are macros in OpenSSL's headers.
#ifndef COPENSSL_SHIM_TLS_H
#define COPENSSL_SHIM_TLS_H
#include "shim.h"
#endif
