// nghttp2's public header, for the HPACK fuzz target's independent decoder.
#ifndef CFUZZNGHTTP2_SHIM_H
#define CFUZZNGHTTP2_SHIM_H
#include <nghttp2/nghttp2.h>
#endif
