// Shim for libnghttp2 (Debian 12 ships 1.52). Newer calls are gated on
// NGHTTP2_VERSION_NUM so the package builds on older and newer systems alike.
#ifndef CNGHTTP2_SHIM_H
#define CNGHTTP2_SHIM_H
#include <nghttp2/nghttp2.h>
#endif
