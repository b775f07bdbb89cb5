/* librocm_sysdeps_z.so.1 / librocm_sysdeps_zstd.so.1 for the offline AMD toolchain (tools/amd/setup.sh).

   The libLLVM.so bundled in PyPI's rocm-bindings-compiler links against TheRock's renamed
   zlib and zstd, whose symbols carry the version AMDROCM_SYSDEPS_1.0. Debian has the same
   libraries under their own names: these stand-ins export the few functions libLLVM imports
   (nm -D --undefined-only libLLVM.so | grep AMDROCM) under that version and forward each call
   to Debian's libz.so.1 / libzstd.so.1, looked up once with dlopen/dlsym.
   Build: gcc -DSYSDEPS_Z (or -DSYSDEPS_ZSTD) -shared -fPIC with a version script naming
   AMDROCM_SYSDEPS_1.0 (setup.sh does it). */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#if defined(SYSDEPS_Z)
#define TARGET "libz.so.1"
#elif defined(SYSDEPS_ZSTD)
#define TARGET "libzstd.so.1"
#else
#error "define SYSDEPS_Z or SYSDEPS_ZSTD"
#endif

static void *sym(const char *name) {
    static void *lib;
    if (!lib && !(lib = dlopen(TARGET, RTLD_NOW | RTLD_LOCAL))) {
        fprintf(stderr, "rocsample sysdeps: cannot load %s: %s\n", TARGET, dlerror());
        abort();
    }
    void *f = dlsym(lib, name);
    if (!f) {
        fprintf(stderr, "rocsample sysdeps: %s has no %s\n", TARGET, name);
        abort();
    }
    return f;
}

/* FORWARD(return type, name, (parameters), (arguments)) */
#define FORWARD(R, NAME, PARAMS, ARGS)                       \
    R NAME PARAMS {                                          \
        static R(*real) PARAMS;                              \
        if (!real) real = (R(*) PARAMS)sym(#NAME);           \
        return real ARGS;                                    \
    }

#if defined(SYSDEPS_Z)
FORWARD(int, compress2, (unsigned char *d, unsigned long *dn, const unsigned char *s, unsigned long sn, int lv),
        (d, dn, s, sn, lv))
FORWARD(unsigned long, compressBound, (unsigned long sn), (sn))
FORWARD(unsigned long, crc32, (unsigned long crc, const unsigned char *b, unsigned int n), (crc, b, n))
FORWARD(int, uncompress, (unsigned char *d, unsigned long *dn, const unsigned char *s, unsigned long sn),
        (d, dn, s, sn))
#else
FORWARD(void *, ZSTD_createCCtx, (void), ())
FORWARD(size_t, ZSTD_freeCCtx, (void *c), (c))
FORWARD(size_t, ZSTD_CCtx_setParameter, (void *c, int p, int v), (c, p, v))
FORWARD(size_t, ZSTD_compress2, (void *c, void *d, size_t dn, const void *s, size_t sn), (c, d, dn, s, sn))
FORWARD(size_t, ZSTD_compressBound, (size_t sn), (sn))
FORWARD(size_t, ZSTD_decompress, (void *d, size_t dn, const void *s, size_t sn), (d, dn, s, sn))
FORWARD(unsigned, ZSTD_isError, (size_t code), (code))
FORWARD(const char *, ZSTD_getErrorName, (size_t code), (code))
#endif
