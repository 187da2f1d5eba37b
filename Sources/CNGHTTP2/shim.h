// Shim for libnghttp2 (Debian 12 ships 1.52). Newer calls are gated on
// NGHTTP2_VERSION_NUM so the package builds on older and newer systems alike.
#ifndef CNGHTTP2_SHIM_H
#define CNGHTTP2_SHIM_H
#include <nghttp2/nghttp2.h>

/// The id of SETTINGS_NO_RFC7540_PRIORITIES (RFC 9218 §2.1), which tells the server
/// that this client never uses RFC 7540 priorities; -1 when this nghttp2 (before 1.49)
/// does not know the setting, in which case the client simply does not send it.
static inline int32_t capns_settings_no_rfc7540_priorities(void) {
#if NGHTTP2_VERSION_NUM >= 0x013100
    return NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES;
#else
    return -1;
#endif
}
#endif
