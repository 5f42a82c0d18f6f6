/* What both instantiation files of the GEMM template (gemm.c: float, gemm_f16.c: _Float16) set
 * before including gemm_tmpl.h: the blocking constants, the ISA switch and small helpers.
 * Two files so that the two instantiations compile in parallel (the half one, with its
 * emulated half tiles, is the slowest file of the project, the more so under the sanitizers);
 * both get the flags CMakeLists.txt gives the GEMM files. */
#ifndef CD_GEMM_INST_H
#define CD_GEMM_INST_H
#include "backends/cpu/gemm.h"
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MR 8
#define NR CD_GEMM_NR
#define KC 256
#define NCHUNK 256 /* B columns per work item (multiple of NR) */
/* Below CD_GEMM_ONE_THREAD_MACS (gemm.h; CLDIFF_GEMM_ONE_THREAD_MACS overrides it) a product
 * runs on one thread. */
#define SINGLE_THREAD_MACS ((double)cd_gemm_one_thread_macs())
/* The direct (unpacked) path takes products up to DIRECT_MAX_MACS whose B (K x N) fits in L2,
 * and, whatever N, those with K <= DIRECT_SHORT_K: a direct item reads a K x 64 block of B
 * (the DNV * NR columns of one item, 32 KiB at K = 128), which every row block of the item
 * reuses, so the total size of B does not matter there; packing it cost a copy of B and the
 * direct tiles were faster (ppocr_v3_det at 320x320, AVX-512: its 1x1 convs over 160x160 and
 * 80x80 maps, K = 8..40, and the 20x20 one with K = 336, 25-35% less time each;
 * docs/benchmarks.md "Fourth round: dense convolutions"). Larger reductions with a large B
 * stay packed (B panels reused from L1 by every A panel). Which path runs never shows in the
 * bits. */
#define DIRECT_MAX_MACS (16.0 * (1 << 20))
#define DIRECT_MAX_B ((size_t)512 << 10)
#define DIRECT_SHORT_K 512
#define DIRECT_FITS(M, N, K)                                                                                           \
    ((double)(M) * (N) * (K) <= DIRECT_MAX_MACS &&                                                                     \
     ((size_t)(K) * (N) * sizeof(GT) <= DIRECT_MAX_B || (K) <= DIRECT_SHORT_K))

/* The micro-kernel is compiled for several x86 ISA levels and chosen once per call with
 * __builtin_cpu_supports, so a portable build still uses AVX-512 / AVX2 / AVX512-FP16. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CD_GEMM_X86 1
#endif

#ifdef CD_GEMM_X86
#include <immintrin.h>
#endif

#define BCAST16(x)                                                                                                     \
    { x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x }

static inline int imin(int a, int b) { return a < b ? a : b; }

#endif
