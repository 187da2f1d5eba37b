/*
 * A heap-allocation counter for benchmarks, loaded with LD_PRELOAD (Linux, glibc).
 *
 * It counts every call of malloc, calloc, realloc, posix_memalign, aligned_alloc and
 * memalign, and attributes each to the shared object that called the allocator: the
 * return address of the call, looked up with dladdr(3). Calls from libnghttp2 are
 * nghttp2's own, calls from libssl or libcrypto OpenSSL's, and every other call (the
 * program, the Swift runtime and standard library, libc) counts as the program's. At
 * exit it appends one line to the file named by ALLOC_COUNTER_OUT (or writes it to
 * stderr), with its process id, since a child process inherits the preload:
 *
 *     allocations pid=<pid> total=<n> program=<n> nghttp2=<n> openssl=<n>
 *
 * The allocations themselves are glibc's (__libc_malloc and friends); only the counting
 * is added. Run a program twice with different amounts of work and divide the difference
 * by the difference in work to get the allocations per unit of work in steady state
 * (see Benchmarks/APNsBench/count-allocations.sh).
 *
 *     cc -O2 -shared -fPIC -o alloc_counter.so alloc_counter.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

enum { PROGRAM, NGHTTP2, OPENSSL, OWNERS };
static atomic_ulong counts[OWNERS];
/* Set while dladdr runs on this thread: its own allocations count as the program's
   without a look-up (no recursion). */
static __thread int looking_up;

/* The shared object at `address`, by its file name. */
static int owner_of(void *address) {
    if (looking_up) return PROGRAM;
    looking_up = 1;
    Dl_info info;
    int owner = PROGRAM;
    if (dladdr(address, &info) && info.dli_fname) {
        const char *name = strrchr(info.dli_fname, '/');
        name = name ? name + 1 : info.dli_fname;
        if (strncmp(name, "libnghttp2", 10) == 0) owner = NGHTTP2;
        else if (strncmp(name, "libssl", 6) == 0 || strncmp(name, "libcrypto", 9) == 0) owner = OPENSSL;
    }
    looking_up = 0;
    return owner;
}

#define COUNT() atomic_fetch_add_explicit(&counts[owner_of(__builtin_return_address(0))], 1, memory_order_relaxed)

void *malloc(size_t size) { COUNT(); return __libc_malloc(size); }
void *calloc(size_t count, size_t size) { COUNT(); return __libc_calloc(count, size); }
void *realloc(void *pointer, size_t size) { COUNT(); return __libc_realloc(pointer, size); }
void *memalign(size_t alignment, size_t size) { COUNT(); return __libc_memalign(alignment, size); }
void *aligned_alloc(size_t alignment, size_t size) { COUNT(); return __libc_memalign(alignment, size); }
int posix_memalign(void **result, size_t alignment, size_t size) {
    COUNT();
    if (alignment % sizeof(void *) != 0 || (alignment & (alignment - 1)) != 0) return EINVAL;
    void *pointer = __libc_memalign(alignment, size);
    if (!pointer) return ENOMEM;
    *result = pointer;
    return 0;
}

__attribute__((destructor)) static void report(void) {
    unsigned long program = atomic_load(&counts[PROGRAM]), nghttp2 = atomic_load(&counts[NGHTTP2]),
                  openssl = atomic_load(&counts[OPENSSL]);
    char line[160];
    int length = snprintf(line, sizeof line, "allocations pid=%ld total=%lu program=%lu nghttp2=%lu openssl=%lu\n",
                          (long)getpid(), program + nghttp2 + openssl, program, nghttp2, openssl);
    const char *path = getenv("ALLOC_COUNTER_OUT");
    int fd = path ? open(path, O_WRONLY | O_CREAT | O_APPEND, 0644) : 2;
    if (fd >= 0 && length > 0) {
        ssize_t ignored = write(fd, line, (size_t)length);
        (void)ignored;
        if (path) close(fd);
    }
}
