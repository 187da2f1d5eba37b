// Not OpenSSL: the one processor hint the package's locks need, kept in this module
// because it is the lowest C module every Swift module of the package already imports.
#ifndef COPENSSL_SHIM_CPU_H
#define COPENSSL_SHIM_CPU_H

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

#endif
