// Shim for libnghttp2 (Debian 12 ships 1.52). Newer calls are gated on
// NGHTTP2_VERSION_NUM so the package builds on older and newer systems alike.
//
// When you change this header: CNGHTTP2 is a system-library target, and SwiftPM does not
// rebuild the Swift modules that inline its functions (the allocator below) when only the
// header changed. Touch the Swift files that `import CNGHTTP2`, or build from clean.
#ifndef CNGHTTP2_SHIM_H
#define CNGHTTP2_SHIM_H
#include <nghttp2/nghttp2.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

/// Asks the processor to bring the first `lines` 64-byte lines at `address` into its
/// cache for writing, without waiting for them: the mock server does this for a request
/// record it will touch a request later (see ServerConnection+Streams.swift). A hint
/// only; `address` is never dereferenced, so any value is safe.
static inline void capns_prefetch_for_write(const void *address, int lines) {
    for (int line = 0; line < lines; line++) __builtin_prefetch((const char *)address + 64 * line, 1, 3);
}

// MARK: A session's memory
//
// nghttp2 allocates several small blocks per request (the stream, the outbound item, the
// header copies) and frees them when the stream ends. With hundreds of streams in flight
// those blocks overflow glibc's per-thread cache (7 blocks per size) and every malloc and
// free takes its slow path. A session of the transport is used by one thread at a time,
// so it gets free lists of its own: blocks of 32 to 4,096 bytes (powers of two) are kept
// for reuse, up to `max_cached_bytes`; larger ones go to malloc. Each block starts with a
// 16-byte header (its size class, or -1, and its capacity). The cached blocks of a class
// are kept as an array of pointers, the last freed on top, rather than a list linked
// through the blocks: handing one out then reads only the array, which stays in the
// cache, and not the block, which a session with a thousand streams in flight freed long
// ago (under h2load at 4 x 1,000 streams, the mock server spent about 2 % of its CPU
// waiting for the link word of each block it took from a linked list).

// Under AddressSanitizer a cached block is poisoned until it is handed out again, so a
// use after nghttp2 freed it is still reported.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CAPNS_MEM_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define CAPNS_MEM_ASAN 1
#endif
#ifdef CAPNS_MEM_ASAN
void __asan_poison_memory_region(void const volatile *addr, size_t size);
void __asan_unpoison_memory_region(void const volatile *addr, size_t size);
#define CAPNS_MEM_POISON(addr, size) __asan_poison_memory_region((addr), (size))
#define CAPNS_MEM_UNPOISON(addr, size) __asan_unpoison_memory_region((addr), (size))
#else
#define CAPNS_MEM_POISON(addr, size) ((void)(addr), (void)(size))
#define CAPNS_MEM_UNPOISON(addr, size) ((void)(addr), (void)(size))
#endif

/// 1 when this shim was compiled under AddressSanitizer (cached blocks are poisoned).
static inline int capns_mem_poisons(void) {
#ifdef CAPNS_MEM_ASAN
    return 1;
#else
    return 0;
#endif
}

#ifdef CAPNS_MEM_ASAN
int __asan_address_is_poisoned(void const volatile *addr);
#endif

/// Whether AddressSanitizer holds `address` poisoned: 1 or 0, or -1 without ASan.
static inline int capns_mem_is_poisoned(const void *address) {
#ifdef CAPNS_MEM_ASAN
    return __asan_address_is_poisoned(address);
#else
    (void)address;
    return -1;
#endif
}

/// The number of size classes: 32, 64, ..., 4,096 bytes, header included.
#define CAPNS_MEM_CLASSES 8
/// The bytes before each block nghttp2 gets (keeps its 16-byte alignment).
#define CAPNS_MEM_HEADER 16

/// One session's free blocks: for each class, `depth` blocks in `stack` (room for
/// `capacity`; NULL until the first block of the class is cached).
typedef struct capns_mem_pool {
    void **stack[CAPNS_MEM_CLASSES];
    size_t depth[CAPNS_MEM_CLASSES];
    size_t capacity[CAPNS_MEM_CLASSES];
    size_t cached_bytes;
    size_t max_cached_bytes;
} capns_mem_pool;

/// The class of a block of `total` bytes (header included), or -1 when larger than 4,096.
static inline int capns_mem_class(size_t total) {
    if (total <= 32) return 0;
    int c = 64 - __builtin_clzll((unsigned long long)(total - 1)) - 5;
    return c < CAPNS_MEM_CLASSES ? c : -1;
}

static inline size_t capns_mem_class_bytes(int c) { return (size_t)32 << c; }

static inline void *capns_mem_malloc(size_t size, void *user) {
    capns_mem_pool *pool = (capns_mem_pool *)user;
    // As glibc: no object larger than PTRDIFF_MAX.
    if (size > (size_t)PTRDIFF_MAX - CAPNS_MEM_HEADER) return NULL;
    size_t total = size + CAPNS_MEM_HEADER;
    int c = capns_mem_class(total);
    char *block = NULL;
    if (c >= 0 && pool->depth[c] > 0) {
        block = (char *)pool->stack[c][--pool->depth[c]];
        CAPNS_MEM_UNPOISON(block, capns_mem_class_bytes(c));
        pool->cached_bytes -= capns_mem_class_bytes(c);
    } else {
        total = c >= 0 ? capns_mem_class_bytes(c) : total;
        block = (char *)malloc(total);
        if (block == NULL) return NULL;
    }
    ((int64_t *)block)[0] = c;
    ((size_t *)block)[1] = (c >= 0 ? capns_mem_class_bytes(c) : total) - CAPNS_MEM_HEADER;
    return block + CAPNS_MEM_HEADER;
}

static inline void capns_mem_free(void *ptr, void *user) {
    if (ptr == NULL) return;
    capns_mem_pool *pool = (capns_mem_pool *)user;
    char *block = (char *)ptr - CAPNS_MEM_HEADER;
    int64_t c = ((int64_t *)block)[0];
    if (c >= 0 && pool->cached_bytes + capns_mem_class_bytes((int)c) <= pool->max_cached_bytes) {
        if (pool->depth[c] == pool->capacity[c]) {
            size_t capacity = pool->capacity[c] ? pool->capacity[c] * 2 : 64;
            void **grown = (void **)realloc(pool->stack[c], capacity * sizeof(void *));
            if (grown == NULL) {
                free(block);
                return;
            }
            pool->stack[c] = grown;
            pool->capacity[c] = capacity;
        }
        pool->stack[c][pool->depth[c]++] = block;
        pool->cached_bytes += capns_mem_class_bytes((int)c);
        // The block waits poisoned for its next use.
        CAPNS_MEM_POISON(block, capns_mem_class_bytes((int)c));
    } else {
        free(block);
    }
}

static inline void *capns_mem_calloc(size_t count, size_t size, void *user) {
    if (size != 0 && count > SIZE_MAX / size) return NULL;
    void *ptr = capns_mem_malloc(count * size, user);
    if (ptr != NULL) memset(ptr, 0, count * size);
    return ptr;
}

static inline void *capns_mem_realloc(void *ptr, size_t size, void *user) {
    if (ptr == NULL) return capns_mem_malloc(size, user);
    size_t capacity = ((size_t *)((char *)ptr - CAPNS_MEM_HEADER))[1];
    if (size <= capacity && size != 0) return ptr;
    if (size == 0) {
        capns_mem_free(ptr, user);
        return NULL;
    }
    void *moved = capns_mem_malloc(size, user);
    if (moved == NULL) return NULL;
    memcpy(moved, ptr, capacity);
    capns_mem_free(ptr, user);
    return moved;
}

/// Frees every cached block and the arrays that held them (the blocks nghttp2 holds
/// stay its own).
static inline void capns_mem_trim(capns_mem_pool *pool) {
    for (int c = 0; c < CAPNS_MEM_CLASSES; c++) {
        for (size_t index = 0; index < pool->depth[c]; index++) {
            void *block = pool->stack[c][index];
            CAPNS_MEM_UNPOISON(block, capns_mem_class_bytes(c));
            free(block);
        }
        free(pool->stack[c]);
        pool->stack[c] = NULL;
        pool->depth[c] = 0;
        pool->capacity[c] = 0;
    }
    pool->cached_bytes = 0;
}

/// The nghttp2 allocator over `pool`.
static inline nghttp2_mem capns_mem_allocator(capns_mem_pool *pool) {
    nghttp2_mem mem;
    mem.mem_user_data = pool;
    mem.malloc = capns_mem_malloc;
    mem.free = capns_mem_free;
    mem.calloc = capns_mem_calloc;
    mem.realloc = capns_mem_realloc;
    return mem;
}
#endif
