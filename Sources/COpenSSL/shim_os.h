// Not OpenSSL: the few operating-system calls the package's Swift code cannot reach
// through Glibc (GNU extensions, a processor hint), kept in this module because it is the
// lowest C module every Swift module of the package already imports.
#ifndef COPENSSL_SHIM_OS_H
#define COPENSSL_SHIM_OS_H

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif

/// Tells the processor that the caller is in a spin-wait loop (`pause` on x86, `yield`
/// on ARM): the loop then takes less power and gives the other hardware thread of the
/// core its turn. Swift has no public spelling of it.
static inline void capns_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
    __asm__ __volatile__("yield");
#endif
}

#if defined(__linux__)
// GNU extensions of glibc (2.9 and 2.10), which Swift's Glibc module does not declare.
int accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen, int flags);
int pipe2(int pipefd[2], int flags);
#endif

/// Accepts a connection on `listener` as a non-blocking descriptor that is closed on
/// `exec`, atomically where the system allows it (`accept4`), so that a child process
/// started by another thread at that moment never inherits it. -1 and `errno` on failure.
static inline int capns_accept_nonblocking_cloexec(int listener) {
#if defined(__linux__)
    return accept4(listener, 0, 0, SOCK_NONBLOCK | SOCK_CLOEXEC);
#else
    int fd = accept(listener, 0, 0);
    if (fd >= 0) {
        fcntl(fd, F_SETFD, FD_CLOEXEC);
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    }
    return fd;
#endif
}

/// A pipe whose two ends are non-blocking and closed on `exec`, atomically where the
/// system allows it (`pipe2`). 0, or -1 and `errno`.
static inline int capns_pipe_nonblocking_cloexec(int fds[2]) {
#if defined(__linux__)
    return pipe2(fds, O_NONBLOCK | O_CLOEXEC);
#else
    if (pipe(fds) != 0) return -1;
    for (int i = 0; i < 2; i++) {
        fcntl(fds[i], F_SETFD, FD_CLOEXEC);
        fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
    }
    return 0;
#endif
}

/// A socket that is closed on `exec`, atomically where the system allows it
/// (`SOCK_CLOEXEC`). -1 and `errno` on failure.
static inline int capns_socket_cloexec(int family, int type, int protocol) {
#if defined(SOCK_CLOEXEC)
    return socket(family, type | SOCK_CLOEXEC, protocol);
#else
    int fd = socket(family, type, protocol);
    if (fd >= 0) fcntl(fd, F_SETFD, FD_CLOEXEC);
    return fd;
#endif
}

/// How many processors the calling thread may run on: the bits of its affinity mask
/// (`taskset`, a container's cpuset), read with the raw system call so that no GNU
/// extension of glibc is needed. -1 where the system has no such call or it fails.
static inline int capns_affinity_processor_count(void) {
#if defined(__linux__) && defined(SYS_sched_getaffinity)
    // Room for 8,192 processors; the kernel fails with EINVAL if its mask is larger.
    unsigned long mask[8192 / (8 * sizeof(unsigned long))];
    long written = syscall(SYS_sched_getaffinity, 0, sizeof(mask), mask);
    if (written <= 0) return -1;
    int count = 0;
    for (long i = 0; i < written / (long)sizeof(unsigned long); i++) count += __builtin_popcountl(mask[i]);
    return count;
#else
    return -1;
#endif
}

#endif
