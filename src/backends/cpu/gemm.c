/* Blocked GEMM (see gemm.h). One template body, instantiated for float and _Float16 by
 * including this file into itself with GT (element type) and GS (name suffix) defined.
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
 * (micro_neon_f32, below); the generic vector-extension body stays the fallback for every
 * other target and for the half kernels. The half version
 * keeps multiply and add as two separately rounded operations (fp-contract off): with
 * AVX512-FP16 GCC would otherwise fuse them into one FMA and the fp16 results would
 * depend on the machine. */
#ifndef GT
#include "backends/cpu/gemm.h"
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MR 8
#define NR CD_GEMM_NR
#define KC 256
#define NCHUNK 256 /* B columns per work item (multiple of NR) */
/* Below CD_GEMM_ONE_THREAD_MACS (gemm.h) a product runs on one thread. */
#define SINGLE_THREAD_MACS CD_GEMM_ONE_THREAD_MACS
/* The direct (unpacked) path takes products up to this size whose B (K x N) fits in L2;
 * larger ones are faster packed (B panels reused from L1 by every A panel). */
#define DIRECT_MAX_MACS (16.0 * (1 << 20))
#define DIRECT_MAX_B ((size_t)512 << 10)

/* The micro-kernel is compiled for several x86 ISA levels and chosen once per call with
 * __builtin_cpu_supports, so a portable build still uses AVX-512 / AVX2 / AVX512-FP16. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CD_GEMM_X86 1
#endif

#define BCAST16(x) {x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x}

static inline int imin(int a, int b) { return a < b ? a : b; }

#if defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#define CD_GEMM_NEON 1

/* fp32 micro-kernel for aarch64: the MR x NR (8 x 16) tile as two 4 x 16 register tiles
 * (16 accumulators + 4 B vectors + 1 A vector of the 32 NEON registers; rows 4..7 are
 * skipped when the tile has mr <= 4). Per output element it does exactly what the x86
 * kernels compiled with FMA do: acc = fma(a[i][k], b[k][j], acc) for k in order from 0,
 * then alpha * acc, then + C (later K slices) or + beta * C as one fma (first slice), so
 * aarch64 and AVX2/AVX-512 give the same bits. The only fused operations are the vfmaq
 * ones written here: alpha * acc is kept a separate rounding by an empty asm (and, in GCC,
 * fp-contract is off for this function). */
#ifndef __clang__
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif
static void micro_neon_f32(int kc, const float *restrict a, const float *restrict b,
                           float *restrict c, int ldc, int mr, int nr, float alpha, float beta,
                           int first) {
    for (int r0 = 0; r0 < mr; r0 += 4) {
        float32x4_t c00 = vdupq_n_f32(0), c01 = c00, c02 = c00, c03 = c00;
        float32x4_t c10 = c00, c11 = c00, c12 = c00, c13 = c00;
        float32x4_t c20 = c00, c21 = c00, c22 = c00, c23 = c00;
        float32x4_t c30 = c00, c31 = c00, c32 = c00, c33 = c00;
        const float *ap = a + r0, *bp = b;
        for (int k = 0; k < kc; k++, ap += MR, bp += NR) {
            float32x4_t av = vld1q_f32(ap);
            float32x4_t b0 = vld1q_f32(bp), b1 = vld1q_f32(bp + 4);
            float32x4_t b2 = vld1q_f32(bp + 8), b3 = vld1q_f32(bp + 12);
            c00 = vfmaq_laneq_f32(c00, b0, av, 0);
            c01 = vfmaq_laneq_f32(c01, b1, av, 0);
            c02 = vfmaq_laneq_f32(c02, b2, av, 0);
            c03 = vfmaq_laneq_f32(c03, b3, av, 0);
            c10 = vfmaq_laneq_f32(c10, b0, av, 1);
            c11 = vfmaq_laneq_f32(c11, b1, av, 1);
            c12 = vfmaq_laneq_f32(c12, b2, av, 1);
            c13 = vfmaq_laneq_f32(c13, b3, av, 1);
            c20 = vfmaq_laneq_f32(c20, b0, av, 2);
            c21 = vfmaq_laneq_f32(c21, b1, av, 2);
            c22 = vfmaq_laneq_f32(c22, b2, av, 2);
            c23 = vfmaq_laneq_f32(c23, b3, av, 2);
            c30 = vfmaq_laneq_f32(c30, b0, av, 3);
            c31 = vfmaq_laneq_f32(c31, b1, av, 3);
            c32 = vfmaq_laneq_f32(c32, b2, av, 3);
            c33 = vfmaq_laneq_f32(c33, b3, av, 3);
        }
        float32x4_t acc[4][4] = {{c00, c01, c02, c03}, {c10, c11, c12, c13},
                                 {c20, c21, c22, c23}, {c30, c31, c32, c33}};
        float32x4_t va = vdupq_n_f32(alpha), vb = vdupq_n_f32(beta);
        int rows = imin(4, mr - r0);
        for (int i = 0; i < rows; i++) {
            float *cr = c + (size_t)(r0 + i) * ldc;
            float32x4_t r[4];
            for (int q = 0; q < 4; q++) {
                r[q] = acc[i][q];
                if (alpha != 1.0f) {
                    r[q] = vmulq_f32(r[q], va);
                    __asm__("" : "+w"(r[q])); /* rounded on its own, as in the generic kernel */
                }
            }
            /* a partial tile (nr < NR) goes through a zero-padded copy of its C row */
            float t[NR] = {0};
            float *cp = nr == NR ? cr : t;
            if (nr < NR && (!first || beta != 0.0f)) memcpy(t, cr, (size_t)nr * sizeof(float));
            for (int q = 0; q < 4; q++) {
                float32x4_t v = r[q];
                if (!first) v = vaddq_f32(vld1q_f32(cp + 4 * q), v);
                else if (beta != 0.0f) v = vfmaq_f32(v, vb, vld1q_f32(cp + 4 * q));
                vst1q_f32(cp + 4 * q, v);
            }
            if (nr < NR) memcpy(cr, t, (size_t)nr * sizeof(float));
        }
    }
}
#ifndef __clang__
#pragma GCC pop_options
#endif
#endif

#define GT float
#define GS f32
#define G_ISA_FAST "avx512f"
#define G_ISA_FAST_CHECK __builtin_cpu_supports("avx512f")
#define G_ISA_MID "avx2,fma"
#define G_ISA_MID_CHECK (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
#define G_NAME_FAST "avx512"
#define G_NAME_MID "avx2-fma"
#define G_VEC_TAIL 1
#define G_LANE_INT int /* integer of the element's size (shuffle masks) */
#define G_DIRECT 1   /* the direct paths (small products, short-K convs) */
/* alpha * acc is rounded on its own: the compiler may not fuse it into the following add
 * (whether it would depends on the surrounding code; the NEON kernel does the same) */
#define G_ROUNDED(v) __asm__("" : "+m"(v))
#ifdef CD_GEMM_NEON
#define G_MICRO_ARCH micro_neon_f32
#define G_NAME_ARCH "neon-4x16"
#endif
#include "gemm.c"
#undef G_MICRO_ARCH
#undef G_NAME_ARCH
#undef G_NAME_FAST
#undef G_NAME_MID
#undef G_VEC_TAIL
#undef G_LANE_INT
#undef G_DIRECT
#undef G_ROUNDED
#undef GT
#undef GS
#undef G_ISA_FAST
#undef G_ISA_FAST_CHECK
#undef G_ISA_MID
#undef G_ISA_MID_CHECK

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
#define G_ROUNDED(v) (void)0 /* fp-contract is off for half anyway */
#include "gemm.c"
#undef G_NAME_FAST
#undef G_NAME_MID
#undef G_VEC_TAIL
#undef G_LANE_INT
#undef G_DIRECT
#undef G_ROUNDED
#undef GT
#undef GS
#undef G_ISA_FAST
#undef G_ISA_FAST_CHECK
#undef G_ISA_MID
#undef G_ISA_MID_CHECK
#pragma GCC pop_options

#else /* ---------------- template body: GT element type, GS suffix ---------------- */
#define CAT_(a, b) a##_##b
#define CAT(a, b) CAT_(a, b)
#define F(name) CAT(name, GS)

typedef GT F(vec) __attribute__((vector_size(NR * sizeof(GT))));

/* C row segment cr[0..nr) gets alpha * r (+ beta * C on the first K slice, + C on later
 * slices): the one epilogue of every fp kernel here (packed micro-kernel and direct path),
 * so both give the same bits. */
static inline __attribute__((always_inline)) void
F(store_row)(GT *restrict cr, const F(vec) *acc, int nr, GT alpha, GT beta, int first) {
    F(vec) r = *acc;
    F(vec) vb = BCAST16(beta);
    if (alpha != (GT)1) {
        F(vec) va = BCAST16(alpha);
        r = r * va;
        G_ROUNDED(r);
    }
    if (nr == NR) {
        F(vec) old;
        if (!first) {
            memcpy(&old, cr, sizeof old);
            r = old + r;
        } else if (beta != (GT)0) {
            memcpy(&old, cr, sizeof old);
            r = r + vb * old;
        }
        memcpy(cr, &r, sizeof r);
    } else if (G_VEC_TAIL) {
        /* a partial tile goes through the same vector expression as a full one, so
         * whether beta * C is fused does not depend on where the column's tile ends */
        F(vec) old = {0};
        if (!first || beta != (GT)0) memcpy(&old, cr, (size_t)nr * sizeof(GT));
        if (!first) r = old + r;
        else if (beta != (GT)0) r = r + vb * old;
        memcpy(cr, &r, (size_t)nr * sizeof(GT));
    } else {
        for (int j = 0; j < nr; j++) {
            GT v = r[j];
            if (!first) v = cr[j] + v;
            else if (beta != (GT)0) v = v + beta * cr[j];
            cr[j] = v;
        }
    }
}

/* acc = A panel (kc x MR) * B panel (kc x NR); then C (mr x nr visible part) gets
 * alpha*acc (+ beta*C on the first K slice, + C on later slices). */
static inline __attribute__((always_inline)) void
F(micro_body)(int kc, const GT *restrict a, const GT *restrict b, GT *restrict c, int ldc, int mr,
              int nr, GT alpha, GT beta, int first) {
    F(vec) acc[MR];
    for (int i = 0; i < MR; i++) acc[i] = (F(vec)){0};
    for (int k = 0; k < kc; k++) {
        F(vec) bv;
        memcpy(&bv, b + (size_t)k * NR, sizeof bv);
#pragma GCC unroll 8
        for (int i = 0; i < MR; i++) {
            GT x = a[(size_t)k * MR + i];
            F(vec) av = BCAST16(x);
            acc[i] += av * bv;
        }
    }
    for (int i = 0; i < mr; i++) F(store_row)(c + (size_t)i * ldc, &acc[i], nr, alpha, beta, first);
}

typedef void (*F(micro_fn))(int, const GT *restrict, const GT *restrict, GT *restrict, int, int,
                             int, GT, GT, int);
#define MICRO_ARGS                                                                                 \
    (int kc, const GT *restrict a, const GT *restrict b, GT *restrict c, int ldc, int mr, int nr,  \
     GT alpha, GT beta, int first)
#define MICRO_CALL F(micro_body)(kc, a, b, c, ldc, mr, nr, alpha, beta, first)
/* unused when an architecture kernel (G_MICRO_ARCH) replaces it */
__attribute__((unused)) static void F(micro_default) MICRO_ARGS { MICRO_CALL; }
#ifdef CD_GEMM_X86
__attribute__((target(G_ISA_FAST))) static void F(micro_fast) MICRO_ARGS { MICRO_CALL; }
__attribute__((target(G_ISA_MID))) static void F(micro_mid) MICRO_ARGS { MICRO_CALL; }
#endif
#undef MICRO_ARGS
#undef MICRO_CALL

/* The micro-kernel for this machine, and its name (cd_gemm_kernel_name). */
static F(micro_fn) F(pick_micro)(const char **name) {
#if defined(G_MICRO_ARCH)
    *name = G_NAME_ARCH;
    return G_MICRO_ARCH;
#else
#ifdef CD_GEMM_X86
    __builtin_cpu_init();
    if (G_ISA_FAST_CHECK) { *name = G_NAME_FAST; return F(micro_fast); }
    if (G_ISA_MID_CHECK) { *name = G_NAME_MID; return F(micro_mid); }
#endif
    *name = "generic";
    return F(micro_default);
#endif
}

const char *CAT(cd_gemm_kernel_name, GS)(void) {
    const char *name;
    (void)F(pick_micro)(&name);
    return name;
}

/* Stores an mr x nv tile of vector accumulators (acc[i * as + v]) to C, row i at
 * c + i * ldc, ncols columns, through F(store_row). Used by the direct GEMM and the direct
 * conv tiles. */
static inline __attribute__((always_inline)) void
F(store_tile)(GT *restrict c, size_t ldc, const F(vec) *acc, const int as, const int mr, const int nv, int ncols,
              GT alpha, GT beta, int first) {
#pragma GCC unroll 4
    for (int i = 0; i < mr; i++)
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) {
            int nr = ncols - v * NR;
            F(store_row)(c + (size_t)i * ldc + (size_t)v * NR, &acc[i * as + v], nr < NR ? nr : NR, alpha, beta, first);
        }
}

/* Lanes shift..NR-1 of *v moved down to 0..NR-1-shift (the rest are left as they were):
 * the partial last vector of a shifted tile (F(direct_item)). Once per tile and K slice, so a
 * plain copy, which every compiler (clang has no variable-index vector shuffle) builds. */
static inline __attribute__((always_inline)) void F(lanes_down)(F(vec) *v, int shift) {
    GT t[NR];
    memcpy(t, v, sizeof t);
    memcpy(v, t + shift, (size_t)(NR - shift) * sizeof(GT));
}

/* ---- direct path: small products with a plain (non-transposed) B ----
 * No packing: a tile of mr (<= DMR) rows x nv (<= DNV) vectors of C is accumulated in
 * registers, A read in place (row stride ars, k stride aks: both transposes), B rows read in
 * place (ldb); K in the same KC slices as the packed path, each slice's sum stored through
 * F(store_row). Per element this is exactly the packed kernel's arithmetic (acc += a * b for
 * k in order within a slice, then the same epilogue), so the two paths give the same bits
 * and which one runs (or how many threads) does not show in the result. A partial last
 * vector of columns is read shifted back over the previous columns (see F(direct_item)), or,
 * in rows shorter than one vector, copied into a zero-padded kc x NR block. */
#if G_DIRECT
#define DMR 4
#define DNV 4
static inline __attribute__((always_inline)) void
F(direct_tile)(int kc, const GT *restrict a, size_t ars, size_t aks, const GT *restrict b, size_t ldb,
               GT *restrict c, int ldc, const int mr, const int nv, int ncols, int shift, GT alpha, GT beta,
               int first) {
    F(vec) acc[DMR][DNV];
    size_t off[DNV]; /* column offset of each vector; the last one starts `shift` columns early */
#pragma GCC unroll 4
    for (int v = 0; v < nv; v++) off[v] = (size_t)v * NR - (v == nv - 1 ? (size_t)shift : 0);
#pragma GCC unroll 4
    for (int i = 0; i < mr; i++)
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) acc[i][v] = (F(vec)){0};
    for (int k = 0; k < kc; k++) {
        F(vec) bv[DNV];
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) memcpy(&bv[v], b + (size_t)k * ldb + off[v], sizeof bv[v]);
#pragma GCC unroll 4
        for (int i = 0; i < mr; i++) {
            GT x = a[(size_t)i * ars + (size_t)k * aks];
            F(vec) av = BCAST16(x);
#pragma GCC unroll 4
            for (int v = 0; v < nv; v++) acc[i][v] += av * bv[v];
        }
    }
    if (shift) { /* the shifted vector's own columns are its lanes shift..NR-1: move them down */
#pragma GCC unroll 4
        for (int i = 0; i < mr; i++) F(lanes_down)(&acc[i][nv - 1], shift);
    }
    F(store_tile)(c, (size_t)ldc, &acc[0][0], DNV, mr, nv, ncols, alpha, beta, first);
}

/* The full 4-row x 4-vector tile of the AVX-512 build as a function of its own: inlined into
 * the large direct-path function, GCC kept a quarter of its 16 accumulators in memory (a
 * store-to-load round trip per multiply-add); alone, all 16 stay in registers. */
#if defined(CD_GEMM_X86)
__attribute__((target(G_ISA_FAST), noinline)) static void
F(direct_tile_4x4_fast)(int kc, const GT *restrict a, size_t ars, size_t aks, const GT *restrict b, size_t ldb,
                        GT *restrict c, int ldc, int ncols, int shift, GT alpha, GT beta, int first) {
    /* sixteen named accumulators: with an array GCC still kept a row of them in memory */
    F(vec) c00 = {0}, c01 = {0}, c02 = {0}, c03 = {0}, c10 = {0}, c11 = {0}, c12 = {0}, c13 = {0};
    F(vec) c20 = {0}, c21 = {0}, c22 = {0}, c23 = {0}, c30 = {0}, c31 = {0}, c32 = {0}, c33 = {0};
    const size_t o3 = (size_t)3 * NR - (size_t)shift; /* the last vector starts `shift` columns early */
    for (int k = 0; k < kc; k++) {
        const GT *bk = b + (size_t)k * ldb;
        F(vec) b0, b1, b2, b3;
        memcpy(&b0, bk, sizeof b0);
        memcpy(&b1, bk + NR, sizeof b1);
        memcpy(&b2, bk + 2 * NR, sizeof b2);
        memcpy(&b3, bk + o3, sizeof b3);
        const GT *ak = a + (size_t)k * aks;
        F(vec) x;
        x = (F(vec))BCAST16(ak[0]);
        c00 += x * b0; c01 += x * b1; c02 += x * b2; c03 += x * b3;
        x = (F(vec))BCAST16(ak[ars]);
        c10 += x * b0; c11 += x * b1; c12 += x * b2; c13 += x * b3;
        x = (F(vec))BCAST16(ak[2 * ars]);
        c20 += x * b0; c21 += x * b1; c22 += x * b2; c23 += x * b3;
        x = (F(vec))BCAST16(ak[3 * ars]);
        c30 += x * b0; c31 += x * b1; c32 += x * b2; c33 += x * b3;
    }
    if (shift) { /* as F(direct_tile): the last vector's own columns are lanes shift..NR-1 */
        F(lanes_down)(&c03, shift);
        F(lanes_down)(&c13, shift);
        F(lanes_down)(&c23, shift);
        F(lanes_down)(&c33, shift);
    }
    const int n3 = ncols - 3 * NR < NR ? ncols - 3 * NR : NR;
    const size_t l = (size_t)ldc;
    F(store_row)(c, &c00, NR, alpha, beta, first);
    F(store_row)(c + NR, &c01, NR, alpha, beta, first);
    F(store_row)(c + 2 * NR, &c02, NR, alpha, beta, first);
    F(store_row)(c + 3 * NR, &c03, n3, alpha, beta, first);
    F(store_row)(c + l, &c10, NR, alpha, beta, first);
    F(store_row)(c + l + NR, &c11, NR, alpha, beta, first);
    F(store_row)(c + l + 2 * NR, &c12, NR, alpha, beta, first);
    F(store_row)(c + l + 3 * NR, &c13, n3, alpha, beta, first);
    F(store_row)(c + 2 * l, &c20, NR, alpha, beta, first);
    F(store_row)(c + 2 * l + NR, &c21, NR, alpha, beta, first);
    F(store_row)(c + 2 * l + 2 * NR, &c22, NR, alpha, beta, first);
    F(store_row)(c + 2 * l + 3 * NR, &c23, n3, alpha, beta, first);
    F(store_row)(c + 3 * l, &c30, NR, alpha, beta, first);
    F(store_row)(c + 3 * l + NR, &c31, NR, alpha, beta, first);
    F(store_row)(c + 3 * l + 2 * NR, &c32, NR, alpha, beta, first);
    F(store_row)(c + 3 * l + 3 * NR, &c33, n3, alpha, beta, first);
}
#define DT44(...) F(direct_tile_4x4_fast)(__VA_ARGS__)
#endif

/* One work item of the direct path: rows [i0, i1) x columns [j0, j0+ncols) of C over all
 * of K (ncols <= DNV * NR). The columns of a partial last vector are copied, once per K
 * slice, into bpad (KC x NR, zero-padded). Row count and vector count are made constants
 * for the tile (the switches below). */
static inline __attribute__((always_inline)) void
F(direct_item)(int K, const GT *A, size_t ars, size_t aks, const GT *B, int ldb, GT *C, int ldc, int i0,
               int i1, int j0, int ncols, GT alpha, GT beta, GT *restrict bpad, const int nvmax) {
    const int nfull = ncols / NR, tail = ncols % NR;
    /* A partial last vector is read as the NR columns ending at the item's last column when
     * the row has that many (j0 + ncols >= NR): it joins the full vectors' tile, and its
     * lanes are moved into place before the store. Otherwise it is copied into bpad. */
    const int shifted = tail && j0 + ncols >= NR, shift = shifted ? NR - tail : 0;
    const int nvec = nfull + (shifted ? 1 : 0);
    for (int k0 = 0; k0 < K; k0 += KC) {
        const int kc = imin(KC, K - k0), first = k0 == 0;
        const GT *b = B + (size_t)k0 * ldb + j0;
        if (tail && !shifted) {
            const GT *bt = b + nfull * NR;
            for (int k = 0; k < kc; k++) {
                GT *d = bpad + (size_t)k * NR;
                for (int j = 0; j < tail; j++) d[j] = bt[(size_t)k * ldb + j];
                for (int j = tail; j < NR; j++) d[j] = (GT)0;
            }
        }
        for (int r0 = i0; r0 < i1; r0 += DMR) {
            const int mr = imin(DMR, i1 - r0);
            const GT *a = A + (size_t)r0 * ars + (size_t)k0 * aks;
            GT *c = C + (size_t)r0 * ldc + j0;
#define DT(MRC, NVC, BB, LDB, CC, NC, SH) \
    F(direct_tile)(kc, a, ars, aks, BB, LDB, CC, ldc, MRC, NVC, NC, SH, alpha, beta, first)
/* 4 vectors: only the AVX-512 build gets there (nvmax); its 4-row tile is the separate
 * function above */
#if defined(CD_GEMM_X86)
#define DT4(MRC, BB, LDB, CC, NC, SH)                                                              \
    do {                                                                                           \
        if ((MRC) == 4) DT44(kc, a, ars, aks, BB, LDB, CC, ldc, NC, SH, alpha, beta, first);       \
        else DT(MRC, 4, BB, LDB, CC, NC, SH);                                                      \
    } while (0)
#else
#define DT4(MRC, BB, LDB, CC, NC, SH) DT(MRC, 4, BB, LDB, CC, NC, SH)
#endif
#define DT_NV(MRC)                                                                                 \
    for (int jv = 0; jv < nvec;) {                                                                 \
        const int nv = imin(nvmax, nvec - jv), last = jv + nv == nvec && shifted;                  \
        const int nc = last ? (nv - 1) * NR + tail : nv * NR, sh = last ? shift : 0;               \
        switch (nv) {                                                                              \
        case 1: DT(MRC, 1, b + jv * NR, ldb, c + jv * NR, nc, sh); break;                          \
        case 2: DT(MRC, 2, b + jv * NR, ldb, c + jv * NR, nc, sh); break;                          \
        case 3: DT(MRC, 3, b + jv * NR, ldb, c + jv * NR, nc, sh); break;                          \
        default: DT4(MRC, b + jv * NR, ldb, c + jv * NR, nc, sh); break;                           \
        }                                                                                          \
        jv += nv;                                                                                  \
    }                                                                                              \
    if (tail && !shifted) DT(MRC, 1, bpad, NR, c + nfull * NR, tail, 0);
            switch (mr) {
            case 1: DT_NV(1) break;
            case 2: DT_NV(2) break;
            case 3: DT_NV(3) break;
            default: DT_NV(4) break;
            }
#undef DT_NV
#undef DT4
#undef DT
        }
    }
}

typedef void (*F(direct_fn))(int, const GT *, size_t, size_t, const GT *, int, GT *, int, int, int, int, int,
                             GT, GT, GT *restrict);
#define DIRECT_ARGS                                                                                \
    (int K, const GT *A, size_t ars, size_t aks, const GT *B, int ldb, GT *C, int ldc, int i0, int i1, int j0, \
     int ncols, GT alpha, GT beta, GT *restrict bpad)
#define DIRECT_CALL(NVMAX) F(direct_item)(K, A, ars, aks, B, ldb, C, ldc, i0, i1, j0, ncols, alpha, beta, bpad, NVMAX)
/* vectors per tile: 4 where 32 registers hold 16 lanes each (AVX-512); fewer where a
 * 16-lane vector takes 2 (AVX2) or 4 (SSE, generic) registers */
__attribute__((unused)) static void F(direct_default) DIRECT_ARGS { DIRECT_CALL(1); }
#ifdef CD_GEMM_X86
__attribute__((target(G_ISA_FAST))) static void F(direct_fast) DIRECT_ARGS { DIRECT_CALL(DNV); }
__attribute__((target(G_ISA_MID))) static void F(direct_mid) DIRECT_ARGS { DIRECT_CALL(2); }
#endif
#undef DIRECT_ARGS
#undef DIRECT_CALL

/* The variant NAME_fast / NAME_mid / NAME_default for this machine, or NULL where the
 * architecture kernel (NEON) replaces the generic micro-kernel: there the packed path keeps
 * running (bits are the same anyway). Shared by the direct and the one-column paths. */
#if defined(G_MICRO_ARCH)
#define G_PICK_VARIANT(NAME) return NULL
#elif defined(CD_GEMM_X86)
#define G_PICK_VARIANT(NAME)                                                                       \
    do {                                                                                           \
        __builtin_cpu_init();                                                                      \
        if (G_ISA_FAST_CHECK) return F(NAME##_fast);                                               \
        if (G_ISA_MID_CHECK) return F(NAME##_mid);                                                 \
        return F(NAME##_default);                                                                  \
    } while (0)
#else
#define G_PICK_VARIANT(NAME) return F(NAME##_default)
#endif

/* The direct path for this machine, or NULL (see G_PICK_VARIANT). */
static F(direct_fn) F(pick_direct)(void) { G_PICK_VARIANT(direct); }

/* C = alpha * op(A) * B + beta * C through the direct path, on up to `threads` threads (one
 * parallel region, no barrier inside: every item owns its C block over all of K). An item is
 * a run of DNV * NR columns x a range of row blocks; the rows are split only when there
 * are fewer column runs than threads. */
static void F(gemm_direct)(F(direct_fn) fn, int M, int N, int K, GT alpha, const GT *A, int lda, bool ta,
                           const GT *B, int ldb, GT beta, GT *C, int ldc, int threads) {
    const size_t ars = ta ? 1 : (size_t)lda, aks = ta ? (size_t)lda : 1;
    const int cw = DNV * NR; /* columns per item */
    const int rb = (M + DMR - 1) / DMR, cb = (N + cw - 1) / cw;
    int nt = threads < 1 ? 1 : threads;
    if (nt <= 1) {
        GT bpad[KC * NR];
        for (int q = 0; q < cb; q++)
            fn(K, A, ars, aks, B, ldb, C, ldc, 0, M, q * cw, imin(cw, N - q * cw), alpha, beta, bpad);
        return;
    }
    int rsplit = cb >= 2 * nt ? 1 : imin(rb, (2 * nt + cb - 1) / cb); /* row ranges per column run */
    const int rper = (rb + rsplit - 1) / rsplit;
    rsplit = (rb + rper - 1) / rper;
    const int items = cb * rsplit;
    if (nt > items) nt = items;
#pragma omp parallel num_threads(nt)
    {
        GT bpad[KC * NR];
#pragma omp for schedule(static) nowait
        for (int it = 0; it < items; it++) {
            int q = it / rsplit, rs = it % rsplit;
            int i0 = rs * rper * DMR, i1 = imin(M, i0 + rper * DMR);
            fn(K, A, ars, aks, B, ldb, C, ldc, i0, i1, q * cw, imin(cw, N - q * cw), alpha, beta, bpad);
        }
    }
}

#endif /* G_DIRECT */

/* Packs rows [i0, i0+MR) x k-slice [k0, k0+kc) of op(A) into one MR-interleaved panel. */
static void F(pack_a)(const GT *A, int lda, bool ta, int M, int i0, int k0, int kc, GT *dst) {
    int mr = imin(MR, M - i0);
    for (int k = 0; k < kc; k++) {
        GT *d = dst + (size_t)k * MR;
        if (!ta) {
            const GT *s = A + (size_t)i0 * lda + k0 + k;
            for (int i = 0; i < mr; i++) d[i] = s[(size_t)i * lda];
        } else {
            const GT *s = A + (size_t)(k0 + k) * lda + i0;
            for (int i = 0; i < mr; i++) d[i] = s[i];
        }
        for (int i = mr; i < MR; i++) d[i] = (GT)0;
    }
}

typedef struct { const GT *B; int ldb; bool tb; } F(bmat);

/* cd_gemm_pack_fn for an ordinary (possibly transposed) B matrix. */
static void F(pack_b_matrix)(const void *ctx, int k0, int kc, int n0, int nc, void *dstv) {
    const F(bmat) *m = ctx;
    GT *dst = dstv;
    for (int p = 0; p * NR < nc; p++) {
        int nr = imin(NR, nc - p * NR), j0 = n0 + p * NR;
        GT *d = dst + (size_t)p * NR * kc;
        if (!m->tb) {
            for (int k = 0; k < kc; k++) {
                const GT *s = m->B + (size_t)(k0 + k) * m->ldb + j0;
                GT *dk = d + (size_t)k * NR;
                if (nr == NR) memcpy(dk, s, NR * sizeof(GT));
                else {
                    for (int j = 0; j < nr; j++) dk[j] = s[j];
                    for (int j = nr; j < NR; j++) dk[j] = (GT)0;
                }
            }
        } else {
            for (int j = 0; j < NR; j++) {
                if (j < nr) {
                    const GT *s = m->B + (size_t)(j0 + j) * m->ldb + k0;
                    for (int k = 0; k < kc; k++) d[(size_t)k * NR + j] = s[k];
                } else {
                    for (int k = 0; k < kc; k++) d[(size_t)k * NR + j] = (GT)0;
                }
            }
        }
    }
}

static void F(scale_c)(int M, int N, GT beta, GT *C, int ldc) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++)
            C[(size_t)i * ldc + j] = beta == (GT)0 ? (GT)0 : beta * C[(size_t)i * ldc + j];
}

void CAT(cd_gemm, CAT(GS, packed_b))(int M, int N, int K, GT alpha, const GT *A, int lda, bool ta,
                                     cd_gemm_pack_fn pack, const void *pack_ctx, GT beta, GT *C,
                                     int ldc, int threads) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0) { F(scale_c)(M, N, beta, C, ldc); return; }
    int panels_m = (M + MR - 1) / MR;
    int nt = threads < 1 ? 1 : threads;
    /* Column chunk: at most NCHUNK, but small enough that every thread gets work. */
    int per_t = (N + nt - 1) / nt;
    int nchunk = imin(NCHUNK, ((per_t + NR - 1) / NR) * NR);
    int chunks_n = (N + nchunk - 1) / nchunk;
    /* When B has too few column chunks to feed the threads, also split the A panels. */
    int blocks_m = 1;
    if (chunks_n < 2 * nt) blocks_m = imin(panels_m, (2 * nt + chunks_n - 1) / chunks_n);
    int panels_per_block = (panels_m + blocks_m - 1) / blocks_m;
    blocks_m = (panels_m + panels_per_block - 1) / panels_per_block;
    int items = chunks_n * blocks_m;
    const char *micro_name;
    F(micro_fn) micro = F(pick_micro)(&micro_name);
    (void)micro_name;
    if (nt > items) nt = items;
    if ((double)M * N * K < SINGLE_THREAD_MACS) nt = 1;

    /* Packing buffers are small (A: M x KC, B: KC x NCHUNK per thread); an allocation
     * failure here means the machine is out of memory, and a plain triple loop still
     * gives the right answer, so fall back to it rather than failing the op. */
    GT *apack = malloc((size_t)panels_m * MR * KC * sizeof(GT));
    GT *bpack = malloc((size_t)nt * KC * nchunk * sizeof(GT));
    if (!apack || !bpack) {
        free(apack);
        free(bpack);
        GT *col = malloc((size_t)K * NR * sizeof(GT));
        if (!col) { /* last resort: element by element through the packer, one column */
            GT tmp[NR];
            for (int j = 0; j < N; j++)
                for (int i = 0; i < M; i++) {
                    GT s = (GT)0;
                    for (int k = 0; k < K; k++) {
                        pack(pack_ctx, k, 1, j, 1, tmp);
                        s += (ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k]) * tmp[0];
                    }
                    GT *cp = &C[(size_t)i * ldc + j];
                    *cp = beta == (GT)0 ? alpha * s : alpha * s + beta * *cp;
                }
            return;
        }
        for (int j0 = 0; j0 < N; j0 += NR) {
            int nr = imin(NR, N - j0);
            pack(pack_ctx, 0, K, j0, nr, col);
            for (int i = 0; i < M; i++)
                for (int j = 0; j < nr; j++) {
                    GT s = (GT)0;
                    for (int k = 0; k < K; k++)
                        s += (ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k]) * col[(size_t)k * NR + j];
                    GT *cp = &C[(size_t)i * ldc + j0 + j];
                    *cp = beta == (GT)0 ? alpha * s : alpha * s + beta * *cp;
                }
        }
        free(col);
        return;
    }

#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        GT *mybp = bpack + (size_t)omp_get_thread_num() * KC * nchunk;
        for (int k0 = 0; k0 < K; k0 += KC) {
            int kc = imin(KC, K - k0);
            int first = k0 == 0;
#pragma omp for schedule(static)
            for (int p = 0; p < panels_m; p++)
                F(pack_a)(A, lda, ta, M, p * MR, k0, kc, apack + (size_t)p * MR * kc);
            /* implicit barrier: A panels complete */
#pragma omp for schedule(dynamic, 1)
            for (int it = 0; it < items; it++) {
                int jc = it / blocks_m, bm = it % blocks_m;
                int n0 = jc * nchunk, nc = imin(nchunk, N - n0);
                int p0 = bm * panels_per_block, p1 = imin(panels_m, p0 + panels_per_block);
                pack(pack_ctx, k0, kc, n0, nc, mybp);
                for (int jp = 0; jp * NR < nc; jp++) {
                    int nr = imin(NR, nc - jp * NR);
                    const GT *bp = mybp + (size_t)jp * NR * kc;
                    for (int p = p0; p < p1; p++) {
                        int mr = imin(MR, M - p * MR);
                        micro(kc, apack + (size_t)p * MR * kc, bp,
                                 C + (size_t)p * MR * ldc + n0 + jp * NR, ldc, mr, nr, alpha, beta,
                                 first);
                    }
                }
            }
            /* implicit barrier: apack may be overwritten by the next slice */
        }
    }
    free(apack);
    free(bpack);
}

#if G_DIRECT
/* ---- direct convolution for a short reduction (see cd_conv_direct_f32) ----
 * A tile is mr (<= 4) output channels x nv (1 or 4) vectors of one output row; for every
 * tap k (ic, ky, kx in order) the nv input vectors are loaded once (contiguous, even lanes
 * of two loads for stride 2, lane by lane otherwise) and multiply-added into every
 * channel's accumulators: acc += w * x, as the GEMM micro-kernel does, padding taps
 * included (w * 0). */
static inline __attribute__((always_inline)) void F(cd_load)(const GT *p, const int sw, F(vec) *out) {
    F(vec) v;
    if (sw == 1) {
        memcpy(&v, p, sizeof v);
    } else if (sw == 2) {
        F(vec) a, b;
        memcpy(&a, p, sizeof a);
        memcpy(&b, p + NR, sizeof b);
#if defined(__clang__)
        v = __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
#else
        typedef G_LANE_INT F(idx) __attribute__((vector_size(NR * sizeof(G_LANE_INT))));
        const F(idx) even = {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30};
        v = __builtin_shuffle(a, b, even);
#endif
    } else {
        for (int j = 0; j < NR; j++) v[j] = p[(size_t)j * sw];
    }
    *out = v;
}

/* Band geometry: input rows of a band of output rows, zero-padded, in a scratch of Cin
 * planes x Hb rows x Wp columns (Wp leaves room for whole vectors past Wo). */
typedef struct {
    const cd_conv_direct_geo *g;
    int Hb, Wp;
} F(cd_band);

static inline __attribute__((always_inline)) void
F(cd_tile)(const F(cd_band) *bd, const GT *restrict x, const GT *restrict w, int K, GT *restrict y, int ldy,
           const int mr, const int nv, int ncols, const int sw) {
    const cd_conv_direct_geo *g = bd->g;
    F(vec) acc[4][4];
#pragma GCC unroll 4
    for (int i = 0; i < mr; i++)
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) acc[i][v] = (F(vec)){0};
    const size_t plane = (size_t)bd->Hb * bd->Wp, rstep = (size_t)g->dh * bd->Wp;
    const int KH = g->KH, KW = g->KW, dw = g->dw;
    int k = 0;
    for (int ic = 0; ic < g->Cin; ic++)
        for (int ky = 0; ky < KH; ky++) {
            const GT *xr = x + ic * plane + ky * rstep;
            for (int kx = 0; kx < KW; kx++, k++) {
                F(vec) xv[4];
#pragma GCC unroll 4
                for (int v = 0; v < nv; v++) F(cd_load)(xr + kx * dw + v * NR * sw, sw, &xv[v]);
#pragma GCC unroll 4
                for (int i = 0; i < mr; i++) {
                    GT a = w[(size_t)i * K + k];
                    F(vec) av = BCAST16(a);
#pragma GCC unroll 4
                    for (int v = 0; v < nv; v++) acc[i][v] += av * xv[v];
                }
            }
        }
    F(store_tile)(y, (size_t)ldy, &acc[0][0], 4, mr, nv, ncols, (GT)1, (GT)0, 1);
}

/* Output channels [oc0, oc0+mr) of output row oy, whose taps start at band row rb. */
static inline __attribute__((always_inline)) void
F(cd_row_body)(const F(cd_band) *bd, const GT *xband, const GT *W, GT *Y, int oc0, int mr, int oy, int rb,
               const int nvmax) {
    const cd_conv_direct_geo *g = bd->g;
    const int K = g->Cin * g->KH * g->KW, Wo = g->Wo, sw = g->sw;
    const size_t HWo = (size_t)g->Ho * Wo;
    const GT *w = W + (size_t)oc0 * K;
    GT *yrow = Y + (size_t)oc0 * HWo + (size_t)oy * Wo;
    const GT *xrow = xband + (size_t)rb * bd->Wp;
    for (int ox = 0; ox < Wo;) {
        const int nv = nvmax == 4 && Wo - ox >= 4 * NR ? 4 : 1, ncols = imin(Wo - ox, nv * NR);
        const GT *x = xrow + (size_t)ox * sw;
        GT *y = yrow + ox;
#define CT(MRC, NVC, SWC) F(cd_tile)(bd, x, w, K, y, (int)HWo, MRC, NVC, ncols, SWC)
#define CT_SW(MRC, NVC)                                                                            \
    if (sw == 1) CT(MRC, NVC, 1);                                                                  \
    else if (sw == 2) CT(MRC, NVC, 2);                                                             \
    else CT(MRC, NVC, sw);
#define CT_MR(MRC)                                                                                 \
    if (nv == 4) { CT_SW(MRC, 4) }                                                                 \
    else { CT_SW(MRC, 1) }
        switch (mr) {
        case 1: CT_MR(1) break;
        case 2: CT_MR(2) break;
        case 3: CT_MR(3) break;
        default: CT_MR(4) break;
        }
#undef CT_MR
#undef CT_SW
#undef CT
        ox += ncols;
    }
}

#define CD_ROW_ARGS (const F(cd_band) *bd, const GT *xband, const GT *W, GT *Y, int oc0, int mr, int oy, int rb)
typedef void (*F(cd_row_fn)) CD_ROW_ARGS;
__attribute__((unused)) static void F(cd_row_default) CD_ROW_ARGS { F(cd_row_body)(bd, xband, W, Y, oc0, mr, oy, rb, 1); }
#ifdef CD_GEMM_X86
__attribute__((target(G_ISA_FAST))) static void F(cd_row_fast) CD_ROW_ARGS {
    F(cd_row_body)(bd, xband, W, Y, oc0, mr, oy, rb, 4);
}
__attribute__((target(G_ISA_MID))) static void F(cd_row_mid) CD_ROW_ARGS {
    F(cd_row_body)(bd, xband, W, Y, oc0, mr, oy, rb, 1);
}
#endif
#undef CD_ROW_ARGS

#define CD_BAND_ROWS 4 /* output rows per band (work item) */

/* One band: output rows [oy0, oy1), every output channel. xs: this thread's scratch, whose
 * columns outside the input window are zero. */
static void F(cd_band_run)(F(cd_row_fn) fn, const F(cd_band) *bd, GT *xs, const GT *W, GT *Y, int Cout, int oy0,
                           int oy1) {
    const cd_conv_direct_geo *g = bd->g;
    const GT *x = (const GT *)g->x;
    const int rows = (oy1 - oy0 - 1) * g->sh + (g->KH - 1) * g->dh + 1;
    for (int ic = 0; ic < g->Cin; ic++)
        for (int r = 0; r < rows; r++) {
            const int iy = oy0 * g->sh - g->pt + r;
            GT *d = xs + ((size_t)ic * bd->Hb + r) * bd->Wp + g->pl;
            if (iy >= 0 && iy < g->H) memcpy(d, x + ((size_t)ic * g->H + iy) * g->W, (size_t)g->W * sizeof(GT));
            else memset(d, 0, (size_t)g->W * sizeof(GT));
        }
    for (int oy = oy0; oy < oy1; oy++)
        for (int oc = 0; oc < Cout; oc += 4)
            fn(bd, xs, W, Y, oc, imin(4, Cout - oc), oy, (oy - oy0) * g->sh);
}

bool CAT(cd_conv_direct, GS)(const cd_conv_direct_geo *g, int Cout, const GT *W, GT *Y, int threads) {
    F(cd_row_fn) fn = F(cd_row_default);
#ifdef CD_GEMM_X86
    __builtin_cpu_init();
    if (G_ISA_FAST_CHECK) fn = F(cd_row_fast);
    else if (G_ISA_MID_CHECK) fn = F(cd_row_mid);
#endif
    const int Wo16 = (g->Wo + NR - 1) / NR * NR;
    int Wp = (Wo16 - 1) * g->sw + (g->KW - 1) * g->dw + 2;
    if (Wp < g->pl + g->W) Wp = g->pl + g->W;
    const F(cd_band) bd = {g, (CD_BAND_ROWS - 1) * g->sh + (g->KH - 1) * g->dh + 1, Wp};
    const size_t scratch = (size_t)g->Cin * bd.Hb * bd.Wp;
    const int bands = (g->Ho + CD_BAND_ROWS - 1) / CD_BAND_ROWS;
    const double macs = (double)Cout * g->Cin * g->KH * g->KW * g->Ho * g->Wo;
    int nt = threads < 1 || macs < SINGLE_THREAD_MACS ? 1 : threads;
    if (nt > bands) nt = bands;
    bool ok = true;
    if (nt == 1) { /* no OpenMP region (backends/cpu/par.h) */
        GT *xs = calloc(scratch, sizeof(GT));
        if (!xs) return false;
        for (int b = 0; b < bands; b++)
            F(cd_band_run)(fn, &bd, xs, W, Y, Cout, b * CD_BAND_ROWS, imin(g->Ho, (b + 1) * CD_BAND_ROWS));
        free(xs);
        return true;
    }
#pragma omp parallel num_threads(nt)
    {
        GT *xs = calloc(scratch, sizeof(GT));
        if (!xs) {
#pragma omp atomic write
            ok = false;
        }
#pragma omp barrier
        if (ok) {
#pragma omp for schedule(static)
            for (int b = 0; b < bands; b++)
                F(cd_band_run)(fn, &bd, xs, W, Y, Cout, b * CD_BAND_ROWS, imin(g->Ho, (b + 1) * CD_BAND_ROWS));
        }
        free(xs);
    }
    return ok;
}

/* ---- one-column products with a k-major A: C[M x 1] = A^T[M x K] * B[K x 1] ----
 * A 1x1 conv on a 1x1 map (the squeeze-and-excitation convs) is a matrix-vector product:
 * the direct tile would spend 15 of its 16 lanes on the zero-padded column. When A is given
 * transposed (ta: column k of op(A) contiguous — conv keeps such a copy of its filter,
 * made at prepare time) 16 rows share a vector instead: acc[rows] += A^T[k][rows] * b[k] for
 * k in order within each KC slice, stored through F(store_row) into the contiguous column.
 * Per element this is the arithmetic of the other paths (one product-sum chain in k order
 * per KC slice, the same epilogue), so the same bits. */
#define GV_NV 4
static inline __attribute__((always_inline)) void
F(gemv_rows)(int K, const GT *At, size_t lda, const GT *B, int ldb, GT *C, int i0, int i1, GT alpha, GT beta,
             const int nvmax) {
    for (int r0 = i0; r0 < i1; r0 += nvmax * NR) {
        const int mrows = imin(nvmax * NR, i1 - r0), nv = (mrows + NR - 1) / NR;
        const int tail = mrows - (nv - 1) * NR; /* rows in the last vector */
        /* A partial last vector loads the NR rows ending at its last row when there are that
         * many (lanes before them compute rows already covered, and are dropped). */
        const int shift = tail < NR && r0 + mrows >= NR ? NR - tail : 0;
        for (int k0 = 0; k0 < K; k0 += KC) {
            const int kc = imin(KC, K - k0), first = k0 == 0;
            F(vec) acc[GV_NV];
#pragma GCC unroll 4
            for (int v = 0; v < nvmax; v++) acc[v] = (F(vec)){0};
            for (int k = 0; k < kc; k++) {
                const GT *a = At + (size_t)(k0 + k) * lda + r0;
                GT x = B[(size_t)(k0 + k) * ldb];
                F(vec) bv = BCAST16(x);
#pragma GCC unroll 4
                for (int v = 0; v < nvmax; v++) {
                    if (v >= nv) break;
                    F(vec) av;
                    if (v < nv - 1 || tail == NR) {
                        memcpy(&av, a + (size_t)v * NR, sizeof av);
                    } else if (shift) { /* the last NR rows: lanes NR-tail.. are this vector's */
                        memcpy(&av, a + (size_t)v * NR - shift, sizeof av);
                    } else {
                        av = (F(vec)){0};
                        for (int l = 0; l < tail; l++) av[l] = a[(size_t)v * NR + (size_t)l];
                    }
                    acc[v] += av * bv;
                }
            }
            if (shift)
                for (int l = 0; l < tail; l++) acc[nv - 1][l] = acc[nv - 1][l + shift];
            for (int v = 0; v < nv; v++)
                F(store_row)(C + r0 + v * NR, &acc[v], v == nv - 1 ? tail : NR, alpha, beta, first);
        }
    }
}

typedef void (*F(gemv_fn))(int, const GT *, size_t, const GT *, int, GT *, int, int, GT, GT);
#define GEMV_ARGS (int K, const GT *At, size_t lda, const GT *B, int ldb, GT *C, int i0, int i1, GT alpha, GT beta)
#define GEMV_CALL(NVMAX) F(gemv_rows)(K, At, lda, B, ldb, C, i0, i1, alpha, beta, NVMAX)
__attribute__((unused)) static void F(gemv_default) GEMV_ARGS { GEMV_CALL(GV_NV); }
#ifdef CD_GEMM_X86
__attribute__((target(G_ISA_FAST))) static void F(gemv_fast) GEMV_ARGS { GEMV_CALL(GV_NV); }
__attribute__((target(G_ISA_MID))) static void F(gemv_mid) GEMV_ARGS { GEMV_CALL(GV_NV); }
#endif
#undef GEMV_ARGS
#undef GEMV_CALL

/* The one-column path at the ISA level F(pick_direct) chooses (the same contraction rules),
 * or NULL where the direct path is not used. */
static F(gemv_fn) F(pick_gemv)(void) { G_PICK_VARIANT(gemv); }
#undef G_PICK_VARIANT

static void F(gemm_gemv)(F(gemv_fn) fn, int M, int K, GT alpha, const GT *At, int lda, const GT *B, int ldb,
                         GT beta, GT *C, int threads) {
    const int bw = GV_NV * NR, blocks = (M + bw - 1) / bw;
    const int nt = (double)M * K < SINGLE_THREAD_MACS || threads < 1 ? 1 : imin(threads, blocks);
    if (nt == 1) { /* no OpenMP region at all: entering even a one-thread one costs ~1 us */
        fn(K, At, (size_t)lda, B, ldb, C, 0, M, alpha, beta);
        return;
    }
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int b = 0; b < blocks; b++) fn(K, At, (size_t)lda, B, ldb, C, b * bw, imin(M, (b + 1) * bw), alpha, beta);
}
#undef GV_NV

#endif /* G_DIRECT */

void CAT(cd_gemm, GS)(int M, int N, int K, GT alpha, const GT *A, int lda, bool ta, const GT *B,
                      int ldb, bool tb, GT beta, GT *C, int ldc, int threads) {
    if (M <= 0 || N <= 0) return;
#if G_DIRECT
    if (N == 1 && ldc == 1 && ta && K > 0) { /* tb or not: a K x 1 B is read the same way (stride ldb, or 1) */
        F(gemv_fn) fn = F(pick_gemv)();
        if (fn) {
            F(gemm_gemv)(fn, M, K, alpha, A, lda, B, tb ? 1 : ldb, beta, C, threads);
            return;
        }
    }
    if (K > 0 && !tb && (double)M * N * K <= DIRECT_MAX_MACS && (size_t)K * N * sizeof(GT) <= DIRECT_MAX_B) {
        F(direct_fn) fn = F(pick_direct)();
        if (fn) {
            F(gemm_direct)(fn, M, N, K, alpha, A, lda, ta, B, ldb, beta, C, ldc,
                           (double)M * N * K < SINGLE_THREAD_MACS ? 1 : threads);
            return;
        }
    }
#endif
    F(bmat) m = {B, ldb, tb};
    CAT(cd_gemm, CAT(GS, packed_b))(M, N, K, alpha, A, lda, ta, F(pack_b_matrix), &m, beta, C, ldc,
                                    threads);
}

#undef CAT_
#undef CAT
#undef F
#endif

#ifndef GT
const char *cd_gemm_kernel_name(void) { return cd_gemm_kernel_name_f32(); }
#endif
