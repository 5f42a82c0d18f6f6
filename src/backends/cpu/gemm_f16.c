/* The _Float16 instantiation of the blocked GEMM (gemm.c says how the template works). */
#include "backends/cpu/gemm_inst.h"

/* Half: multiply and add stay two separately rounded operations (no contraction into FMA),
 * so the fp16 results are the same on every ISA level. */
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#define GT _Float16
#define GS f16
#define G_ISA_FAST "avx512fp16,avx512vl,avx512bw,avx512f"
#define G_ISA_FAST_CHECK __builtin_cpu_supports("avx512fp16")
#define G_ISA_MID "avx512f,f16c"
#define G_ISA_MID_CHECK __builtin_cpu_supports("avx512f")
#define G_NAME_FAST "avx512fp16"
#define G_NAME_MID "avx512f-f16c"
#define G_VEC_TAIL 0 /* half: the scalar tail, as before */
#define G_LANE_INT short
/* half: no direct paths (the emulated half arithmetic of the non-FP16 ISA levels makes
 * their unrolled tiles huge); every half product takes the packed path */
#define G_DIRECT 0
#define G_HALF 1
#define G_ROUNDED(v) (void)0 /* fp-contract is off for half anyway */
#include "gemm_tmpl.h"
#pragma GCC pop_options
