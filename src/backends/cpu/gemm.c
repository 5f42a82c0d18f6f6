/* Blocked GEMM (see gemm.h). One template body (gemm_tmpl.h), instantiated here for float and
 * in gemm_f16.c for _Float16, by including it with GT (element type), GS (name suffix) and
 * the G_* parameters defined (the common part: gemm_inst.h).
 *
 * Blocking: K is cut into KC-deep slices. For each slice the whole of op(A) is packed
 * into MR-row panels (shared by all threads), and work items (a chunk of B columns x a
 * block of A panels) are spread over the OpenMP threads; each item packs its B columns
 * into NR-wide panels and runs the MR x NR register-tiled micro-kernel over them, B panel
 * outer (it stays in L1) and A panels inner (they stream from L2).
 *
 * The micro-kernel is compiled for several x86 ISA levels (target attributes) and picked
 * per call with __builtin_cpu_supports, so the portable build still uses AVX-512 / AVX2 /
 * AVX512-FP16 where present. On aarch64 the fp32 kernel is written with NEON intrinsics
 * (micro_neon_f32, gemm_neon.h); the generic vector-extension body stays the fallback for every
 * other target and for the half kernels. The half version
 * keeps multiply and add as two separately rounded operations (fp-contract off): with
 * AVX512-FP16 GCC would otherwise fuse them into one FMA and the fp16 results would
 * depend on the machine.
 *
 * Files: this one holds the float instantiation, gemm_f16.c the half one (two translation
 * units that compile in parallel; gemm_inst.h what both set first); gemm_tmpl.h the template
 * body with the packed path; the float-only direct paths are parts of the same body, included
 * from it (gemm_direct_tmpl.h: small products; gemm_conv_tmpl.h: short-reduction convolutions;
 * gemm_gemv_tmpl.h: one-column products), built with the flags CMakeLists.txt gives the GEMM
 * files. */
#include "backends/cpu/gemm_inst.h"
/* the aarch64 fp32 micro-kernel: the float instantiation alone uses it */
#include "gemm_neon.h"
#include <stdatomic.h>

/* CLDIFF_GEMM_F32_KERNEL=avx2-fma or generic (gemm.h): the highest fp32 level allowed (2: any,
 * 1: AVX2 + FMA, 0: the portable code). Read from the environment once (the first pick; again
 * after cd_gemm_f32_level_reload), not at every kernel call: getenv walks the whole environment
 * with a string compare per entry, ~1% of a small model's warm run when every op paid it. An
 * atomic: threads that pick at once may each read the environment, all get the same value. */
static _Atomic int f32_cap = -1;

int cd_gemm_f32_level_cap(void) {
    int v = atomic_load_explicit(&f32_cap, memory_order_relaxed);
    if (v < 0) {
        const char *w = getenv("CLDIFF_GEMM_F32_KERNEL");
        v = !w ? 2 : !strcmp(w, "avx2-fma") ? 1 : !strcmp(w, "generic") ? 0 : 2;
        atomic_store_explicit(&f32_cap, v, memory_order_relaxed);
    }
    return v;
}

void cd_gemm_f32_level_reload(void) { atomic_store_explicit(&f32_cap, -1, memory_order_relaxed); }

/* CLDIFF_GEMM_ONE_THREAD_MACS (gemm.h), read once; 0 = not read yet */
static _Atomic long one_thread_macs = 0;

long cd_gemm_one_thread_macs(void) {
    long v = atomic_load_explicit(&one_thread_macs, memory_order_relaxed);
    if (v <= 0) {
        const char *e = getenv("CLDIFF_GEMM_ONE_THREAD_MACS");
        char *end = NULL;
        const long n = e ? strtol(e, &end, 10) : 0;
        v = e && end != e && !*end && n > 0 ? n : (long)CD_GEMM_ONE_THREAD_MACS;
        atomic_store_explicit(&one_thread_macs, v, memory_order_relaxed);
    }
    return v;
}

#define GT float
#define GS f32
#define G_ISA_FAST "avx512f"
#define G_ISA_FAST_CHECK (cd_gemm_f32_level_cap() >= 2 && __builtin_cpu_supports("avx512f"))
#define G_ISA_MID "avx2,fma"
#define G_ISA_MID_CHECK                                                                                                \
    (cd_gemm_f32_level_cap() >= 1 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
#define G_NAME_FAST "avx512"
#define G_NAME_MID "avx2-fma"
#define G_VEC_TAIL 1
#define G_LANE_INT int /* integer of the element's size (shuffle masks) */
#define G_DIRECT 1     /* the direct paths (small products, short-K convs) */
#define G_HALF 0       /* the AVX2 + F16C half micro-kernel and the forcing hook: half only */
/* alpha * acc is rounded on its own: the compiler may not fuse it into the following add
 * (whether it would depends on the surrounding code; the NEON kernel does the same) */
#define G_ROUNDED(v) __asm__("" : "+m"(v))
#ifdef CD_GEMM_NEON
#define G_MICRO_ARCH micro_neon_f32
#define G_NAME_ARCH "neon-4x16"
#endif
#include "gemm_tmpl.h"

const char *cd_gemm_kernel_name(void) { return cd_gemm_kernel_name_f32(); }
