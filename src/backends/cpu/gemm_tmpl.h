/* The body of the blocked GEMM (gemm.c), one copy per element type (the *_tmpl.h idiom,
 * docs/design.md §7): gemm.c includes it after defining GT (element type), GS (name suffix)
 * and the G_* parameters (ISA levels, tail and direct-path switches); it #undefs them all at
 * its end. Its float-only parts are gemm_direct_tmpl.h, gemm_conv_tmpl.h and
 * gemm_gemv_tmpl.h, included from inside it. Include it nowhere else. */
#ifndef GT
#error "gemm_tmpl.h: define GT, GS and the G_* parameters, then include (gemm.c does)"
#endif
#define CAT_(a, b) a##_##b
#define CAT(a, b) CAT_(a, b)
#define F(name) CAT(name, GS)

typedef GT F(vec) __attribute__((vector_size(NR * sizeof(GT))));

/* C row segment cr[0..nr) gets alpha * r (+ beta * C on the first K slice, + C on later
 * slices): the one epilogue of every fp kernel here (packed micro-kernel and direct path),
 * so both give the same bits. */
static inline __attribute__((always_inline)) void F(store_row)(GT *restrict cr, const F(vec) * acc, int nr, GT alpha,
                                                               GT beta, int first) {
    F(vec) r = *acc;
    F(vec) vb = BCAST16(beta);
    /* alpha and beta are compared as floats (exact; the same result): a _Float16 comparison
     * is a libgcc call (__eqhf2) even with F16C */
    const int has_beta = (float)beta != 0.0f;
    if ((float)alpha != 1.0f) {
        F(vec) va = BCAST16(alpha);
        r = r * va;
        G_ROUNDED(r);
    }
    if (nr == NR) {
        F(vec) old;
        if (!first) {
            memcpy(&old, cr, sizeof old);
            r = old + r;
        } else if (has_beta) {
            memcpy(&old, cr, sizeof old);
            r = r + vb * old;
        }
        memcpy(cr, &r, sizeof r);
    } else if (G_VEC_TAIL) {
        /* a partial tile goes through the same vector expression as a full one, so
         * whether beta * C is fused does not depend on where the column's tile ends */
        F(vec) old = {0};
        if (!first || has_beta) memcpy(&old, cr, (size_t)nr * sizeof(GT));
        if (!first)
            r = old + r;
        else if (has_beta)
            r = r + vb * old;
        memcpy(cr, &r, (size_t)nr * sizeof(GT));
    } else {
        for (int j = 0; j < nr; j++) {
            GT v = r[j];
            if (!first)
                v = cr[j] + v;
            else if (has_beta)
                v = v + beta * cr[j];
            cr[j] = v;
        }
    }
}

/* acc = A panel (kc x MR) * B panel (kc x NR); then C (mr x nr visible part) gets
 * alpha*acc (+ beta*C on the first K slice, + C on later slices). */
static inline __attribute__((always_inline)) void F(micro_body)(int kc, const GT *restrict a, const GT *restrict b,
                                                                GT *restrict c, int ldc, int mr, int nr, GT alpha,
                                                                GT beta, int first) {
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

/* F(micro_body) on two adjacent B panels (b, then b + kc * NR: the next NR columns, nr1 of
 * them visible) with one pass over the A panel: 2 * MR accumulators, one broadcast of each A
 * value for two B vectors. Per element the arithmetic is F(micro_body)'s (acc += a * b for k
 * in order, the same epilogue), so which kernel a column goes through does not show. For
 * targets with 32 vector registers (AVX-512): 16 accumulators, 2 B vectors and a broadcast
 * stay in registers, and a k step is 16 multiply-adds for 10 loads instead of 8 for 9. */
static inline __attribute__((always_inline)) void F(micro_body2)(int kc, const GT *restrict a, const GT *restrict b,
                                                                 GT *restrict c, int ldc, int mr, int nr1, GT alpha,
                                                                 GT beta, int first) {
    F(vec) acc0[MR], acc1[MR];
    const GT *restrict b1 = b + (size_t)kc * NR;
    for (int i = 0; i < MR; i++) acc0[i] = acc1[i] = (F(vec)){0};
    for (int k = 0; k < kc; k++) {
        F(vec) bv0, bv1;
        memcpy(&bv0, b + (size_t)k * NR, sizeof bv0);
        memcpy(&bv1, b1 + (size_t)k * NR, sizeof bv1);
#pragma GCC unroll 8
        for (int i = 0; i < MR; i++) {
            GT x = a[(size_t)k * MR + i];
            F(vec) av = BCAST16(x);
            acc0[i] += av * bv0;
            acc1[i] += av * bv1;
        }
    }
    for (int i = 0; i < mr; i++) {
        F(store_row)(c + (size_t)i * ldc, &acc0[i], NR, alpha, beta, first);
        F(store_row)(c + (size_t)i * ldc + NR, &acc1[i], nr1, alpha, beta, first);
    }
}

#if defined(CD_GEMM_X86) && !G_HALF
/* AVX2 + FMA, float: rows [0, mrc) (mrc <= 4, a constant after inlining) x 16 columns,
 * out[i] = sum over k < kc of a[i * ars + k * aks] * b[k * ldb + 0..15], one FMA per k in k
 * order from +0: the arithmetic of F(micro_body) and F(direct_tile), written with 256-bit
 * intrinsics because GCC kept the 16-lane vectors of the generic code in memory on AVX2 (a
 * store and a reload per multiply-add). 8 accumulators, 2 B registers, one broadcast. */
static inline __attribute__((always_inline, target(G_ISA_MID))) void F(avx2_tile4)(int kc, const float *restrict a,
                                                                                   size_t ars, size_t aks,
                                                                                   const float *restrict b, size_t ldb,
                                                                                   const int mrc, F(vec) * out) {
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
    for (int k = 0; k < kc; k++) {
        const float *bk = b + (size_t)k * ldb, *ak = a + (size_t)k * aks;
        const __m256 b0 = _mm256_loadu_ps(bk), b1 = _mm256_loadu_ps(bk + 8);
        __m256 x = _mm256_broadcast_ss(ak);
        c00 = _mm256_fmadd_ps(x, b0, c00);
        c01 = _mm256_fmadd_ps(x, b1, c01);
        if (mrc > 1) {
            x = _mm256_broadcast_ss(ak + ars);
            c10 = _mm256_fmadd_ps(x, b0, c10);
            c11 = _mm256_fmadd_ps(x, b1, c11);
        }
        if (mrc > 2) {
            x = _mm256_broadcast_ss(ak + 2 * ars);
            c20 = _mm256_fmadd_ps(x, b0, c20);
            c21 = _mm256_fmadd_ps(x, b1, c21);
        }
        if (mrc > 3) {
            x = _mm256_broadcast_ss(ak + 3 * ars);
            c30 = _mm256_fmadd_ps(x, b0, c30);
            c31 = _mm256_fmadd_ps(x, b1, c31);
        }
    }
    float *o = (float *)out;
    _mm256_storeu_ps(o, c00);
    _mm256_storeu_ps(o + 8, c01);
    if (mrc > 1) {
        _mm256_storeu_ps(o + NR, c10);
        _mm256_storeu_ps(o + NR + 8, c11);
    }
    if (mrc > 2) {
        _mm256_storeu_ps(o + 2 * NR, c20);
        _mm256_storeu_ps(o + 2 * NR + 8, c21);
    }
    if (mrc > 3) {
        _mm256_storeu_ps(o + 3 * NR, c30);
        _mm256_storeu_ps(o + 3 * NR + 8, c31);
    }
}

/* the same for a runtime row count mr (1..4) */
static inline __attribute__((always_inline, target(G_ISA_MID))) void F(avx2_tile)(int kc, const float *restrict a,
                                                                                  size_t ars, size_t aks,
                                                                                  const float *restrict b, size_t ldb,
                                                                                  int mr, F(vec) * out) {
    switch (mr) {
    case 1: F(avx2_tile4)(kc, a, ars, aks, b, ldb, 1, out); break;
    case 2: F(avx2_tile4)(kc, a, ars, aks, b, ldb, 2, out); break;
    case 3: F(avx2_tile4)(kc, a, ars, aks, b, ldb, 3, out); break;
    default: F(avx2_tile4)(kc, a, ars, aks, b, ldb, 4, out); break;
    }
}
#endif

typedef void (*F(micro_fn))(int, const GT *restrict, const GT *restrict, GT *restrict, int, int, int, GT, GT, int);
#define MICRO_ARGS                                                                                                     \
    (int kc, const GT *restrict a, const GT *restrict b, GT *restrict c, int ldc, int mr, int nr, GT alpha, GT beta,   \
     int first)
#define MICRO_CALL F(micro_body)(kc, a, b, c, ldc, mr, nr, alpha, beta, first)
/* unused when an architecture kernel (G_MICRO_ARCH) replaces it */
__attribute__((unused)) static void F(micro_default) MICRO_ARGS { MICRO_CALL; }
#ifdef CD_GEMM_X86
__attribute__((target(G_ISA_FAST))) static void F(micro_fast) MICRO_ARGS { MICRO_CALL; }
#if G_HALF
__attribute__((target(G_ISA_MID))) static void F(micro_mid) MICRO_ARGS { MICRO_CALL; }
#else
/* the packed micro-kernel on AVX2: the MR rows in passes of 4 (F(avx2_tile)) */
__attribute__((target(G_ISA_MID))) static void F(micro_mid) MICRO_ARGS {
    F(vec) out[MR];
    for (int h = 0; h < mr; h += 4) F(avx2_tile)(kc, a + h, 1, MR, b, NR, imin(4, mr - h), out + h);
    for (int i = 0; i < mr; i++) F(store_row)(c + (size_t)i * ldc, &out[i], nr, alpha, beta, first);
}
/* two panels at once (F(micro_body2)), nr = the second panel's visible columns */
__attribute__((target(G_ISA_FAST))) static void F(micro2_fast) MICRO_ARGS {
    F(micro_body2)(kc, a, b, c, ldc, mr, nr, alpha, beta, first);
}
#endif
#endif
#if G_HALF && defined(CD_GEMM_X86)
/* The half micro-kernel for AVX2 machines (no AVX-512): F(micro_body)'s arithmetic, element
 * for element, on 8 columns at a time. There GCC compiles the vector-extension half code
 * lane by lane (a scalar convert, multiply, convert back, convert, add, convert back per
 * element); here every one of those steps is one 8-lane F16C / AVX instruction. Per output
 * element and k in order, as the portable kernel: p = half(a * b), acc = half(p + acc) with
 * acc starting at +0, each rounding in the current MXCSR mode (imm 4, as GCC's conversions).
 * A float product of two halves is exact and a float sum of two halves rounded to half is
 * the correctly rounded half sum (24 >= 2 * 11 + 2 bits), so this is IEEE half arithmetic.
 * The operands keep GCC's order (a first in the multiply, the product first in the add):
 * where both are NaN, x86 returns the first one's payload. Accumulators hold the half
 * values widened to float; the epilogue is F(store_row), as in every other kernel. The two
 * 8-column halves of the panel run one after the other, so the 8 accumulators, the B vector
 * and the temporaries fit in 16 registers. */
#define RH(x) _mm256_cvtph_ps(_mm256_cvtps_ph((x), _MM_FROUND_CUR_DIRECTION))
__attribute__((target("avx2,f16c"))) static void F(micro_avx2) MICRO_ARGS {
    float af[KC * MR] __attribute__((aligned(32))); /* the A panel widened once, for both halves */
    for (int k = 0; k < kc; k++)
        _mm256_store_ps(af + (size_t)k * MR, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(a + (size_t)k * MR))));
    F(vec) out[MR];
    for (int h = 0; h < NR / 8; h++) {
        __m256 c0 = _mm256_setzero_ps(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
        const GT *bh = b + 8 * h;
        for (int k = 0; k < kc; k++) {
            const __m256 bv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(bh + (size_t)k * NR)));
            const float *ak = af + (size_t)k * MR;
#define STEP(ACC, I) ACC = RH(_mm256_add_ps(RH(_mm256_mul_ps(_mm256_broadcast_ss(ak + (I)), bv)), ACC))
            STEP(c0, 0);
            STEP(c1, 1);
            STEP(c2, 2);
            STEP(c3, 3);
            STEP(c4, 4);
            STEP(c5, 5);
            STEP(c6, 6);
            STEP(c7, 7);
#undef STEP
        }
#define PUT(ACC, I)                                                                                                    \
    _mm_storeu_si128((__m128i *)((char *)&out[I] + 16 * h), _mm256_cvtps_ph(ACC, _MM_FROUND_CUR_DIRECTION))
        PUT(c0, 0);
        PUT(c1, 1);
        PUT(c2, 2);
        PUT(c3, 3);
        PUT(c4, 4);
        PUT(c5, 5);
        PUT(c6, 6);
        PUT(c7, 7);
#undef PUT
    }
    for (int i = 0; i < mr; i++) F(store_row)(c + (size_t)i * ldc, &out[i], nr, alpha, beta, first);
}
#undef RH
#endif
#undef MICRO_ARGS
#undef MICRO_CALL

#if G_HALF
/* The half kernel levels, best first; each one's results are the portable kernel's, bit for
 * bit (test_gemm compares them). CLDIFF_GEMM_F16_KERNEL picks one (gemm.h). */
typedef struct {
    const char *name;
    F(micro_fn) fn;
} F(level);
static int F(levels)(F(level) * out) {
    int n = 0;
#ifdef CD_GEMM_X86
    __builtin_cpu_init();
    if (G_ISA_FAST_CHECK) out[n++] = (F(level)){G_NAME_FAST, F(micro_fast)};
    if (G_ISA_MID_CHECK) out[n++] = (F(level)){G_NAME_MID, F(micro_mid)};
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c"))
        out[n++] = (F(level)){"avx2-f16c", F(micro_avx2)};
#endif
    out[n++] = (F(level)){"generic", F(micro_default)};
    return n;
}
#endif

/* The micro-kernel for this machine, and its name (cd_gemm_kernel_name). */
static F(micro_fn) F(pick_micro)(const char **name) {
#if defined(G_MICRO_ARCH)
    *name = G_NAME_ARCH;
    return G_MICRO_ARCH;
#elif G_HALF
    F(level) lv[4];
    int n = F(levels)(lv);
    const char *want = getenv("CLDIFF_GEMM_F16_KERNEL");
    for (int i = 0; want && i < n; i++)
        if (!strcmp(lv[i].name, want)) {
            *name = lv[i].name;
            return lv[i].fn;
        }
    *name = lv[0].name; /* no such level here (or none asked for): the best one */
    return lv[0].fn;
#else
#ifdef CD_GEMM_X86
    __builtin_cpu_init();
    if (G_ISA_FAST_CHECK) {
        *name = G_NAME_FAST;
        return F(micro_fast);
    }
    if (G_ISA_MID_CHECK) {
        *name = G_NAME_MID;
        return F(micro_mid);
    }
#endif
    *name = "generic";
    return F(micro_default);
#endif
}

/* The two-panel kernel (F(micro_body2)) where it pays (32 vector registers), or NULL. */
static F(micro_fn) F(pick_micro2)(void) {
#if defined(CD_GEMM_X86) && !G_HALF && !defined(G_MICRO_ARCH)
    __builtin_cpu_init();
    if (G_ISA_FAST_CHECK) return F(micro2_fast);
#endif
    return NULL;
}

const char *CAT(cd_gemm_kernel_name, GS)(void) {
    const char *name;
    (void)F(pick_micro)(&name);
    return name;
}

/* Stores an mr x nv tile of vector accumulators (acc[i * as + v]) to C, row i at
 * c + i * ldc, ncols columns, through F(store_row). Used by the direct GEMM and the direct
 * conv tiles. */
static inline __attribute__((always_inline)) void F(store_tile)(GT *restrict c, size_t ldc, const F(vec) * acc,
                                                                const int as, const int mr, const int nv, int ncols,
                                                                GT alpha, GT beta, int first) {
#pragma GCC unroll 4
    for (int i = 0; i < mr; i++)
#pragma GCC unroll 5
        for (int v = 0; v < nv; v++) {
            int nr = ncols - v * NR;
            if (nr <= 0) __builtin_unreachable(); /* a tile's vectors all hold columns */
            F(store_row)(c + (size_t)i * ldc + (size_t)v * NR, &acc[i * as + v], nr < NR ? nr : NR, alpha, beta, first);
        }
}

/* Lanes shift..NR-1 of *v moved down to 0..NR-1-shift (the rest are left as they were):
 * the partial last vector of a shifted tile (F(direct_item)). Once per tile and K slice, so a
 * plain copy, which every compiler (clang has no variable-index vector shuffle) builds. */
static inline __attribute__((always_inline)) void F(lanes_down)(F(vec) * v, int shift) {
    GT t[NR];
    memcpy(t, v, sizeof t);
    memcpy(v, t + shift, (size_t)(NR - shift) * sizeof(GT));
}

/* The direct path: small products with a plain B, no packing (float only). */
#if G_DIRECT
#include "gemm_direct_tmpl.h"
#endif

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

typedef struct {
    const GT *B;
    int ldb;
    bool tb;
} F(bmat);

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
                if (nr == NR)
                    memcpy(dk, s, NR * sizeof(GT));
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
        for (int j = 0; j < N; j++) C[(size_t)i * ldc + j] = beta == (GT)0 ? (GT)0 : beta * C[(size_t)i * ldc + j];
}

void CAT(cd_gemm, CAT(GS, packed_b))(int M, int N, int K, GT alpha, const GT *A, int lda, bool ta, cd_gemm_pack_fn pack,
                                     const void *pack_ctx, GT beta, GT *C, int ldc, int threads) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {
        F(scale_c)(M, N, beta, C, ldc);
        return;
    }
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
    F(micro_fn) micro = F(pick_micro)(&micro_name), micro2 = F(pick_micro2)();
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
            for (int p = 0; p < panels_m; p++) F(pack_a)(A, lda, ta, M, p * MR, k0, kc, apack + (size_t)p * MR * kc);
                /* implicit barrier: A panels complete */
#pragma omp for schedule(dynamic, 1)
            for (int it = 0; it < items; it++) {
                int jc = it / blocks_m, bm = it % blocks_m;
                int n0 = jc * nchunk, nc = imin(nchunk, N - n0);
                int p0 = bm * panels_per_block, p1 = imin(panels_m, p0 + panels_per_block);
                pack(pack_ctx, k0, kc, n0, nc, mybp);
                for (int jp = 0; jp * NR < nc;) {
                    int nr = imin(NR, nc - jp * NR);
                    const GT *bp = mybp + (size_t)jp * NR * kc;
                    if (micro2 && nr == NR && (jp + 1) * NR < nc) { /* two panels, the first one full */
                        const int nr1 = imin(NR, nc - (jp + 1) * NR);
                        for (int p = p0; p < p1; p++) {
                            int mr = imin(MR, M - p * MR);
                            micro2(kc, apack + (size_t)p * MR * kc, bp, C + (size_t)p * MR * ldc + n0 + jp * NR, ldc,
                                   mr, nr1, alpha, beta, first);
                        }
                        jp += 2;
                        continue;
                    }
                    for (int p = p0; p < p1; p++) {
                        int mr = imin(MR, M - p * MR);
                        micro(kc, apack + (size_t)p * MR * kc, bp, C + (size_t)p * MR * ldc + n0 + jp * NR, ldc, mr, nr,
                              alpha, beta, first);
                    }
                    jp++;
                }
            }
            /* implicit barrier: apack may be overwritten by the next slice */
        }
    }
    free(apack);
    free(bpack);
}

/* Float only: the direct convolution for a short reduction, and one-column products with
 * a k-major A. */
#if G_DIRECT
#include "gemm_conv_tmpl.h"

#include "gemm_gemv_tmpl.h"
#endif /* G_DIRECT */

void CAT(cd_gemm, GS)(int M, int N, int K, GT alpha, const GT *A, int lda, bool ta, const GT *B, int ldb, bool tb,
                      GT beta, GT *C, int ldc, int threads) {
    if (M <= 0 || N <= 0) return;
#if G_DIRECT
    if (N == 1 && ldc == 1 && ta && K > 0) { /* tb or not: a K x 1 B is read the same way (stride ldb, or 1) */
        F(gemv_fn) fn = F(pick_gemv)();
        if (fn) {
            F(gemm_gemv)(fn, M, K, alpha, A, lda, B, tb ? 1 : ldb, beta, C, threads);
            return;
        }
    }
    if (K > 0 && !tb && DIRECT_FITS(M, N, K)) {
        F(direct_fn) fn = F(pick_direct)();
        if (fn) {
            F(gemm_direct)
            (fn, M, N, K, alpha, A, lda, ta, B, ldb, beta, C, ldc, (double)M * N * K < SINGLE_THREAD_MACS ? 1 : threads,
             NULL);
            return;
        }
    }
#endif
    F(bmat) m = {B, ldb, tb};
    CAT(cd_gemm, CAT(GS, packed_b))(M, N, K, alpha, A, lda, ta, F(pack_b_matrix), &m, beta, C, ldc, threads);
}

#if G_DIRECT
cd_gemm_epi_fn CAT(cd_gemm_epi_pick, GS)(void) { return F(pick_epi_block)(); }
bool CAT(cd_gemm_epi_blocks, GS)(void) {
#ifdef CD_GEMM_X86
    __builtin_cpu_init();
    return !G_ISA_FAST_CHECK;
#else
    return true;
#endif
}

bool CAT(cd_gemm, CAT(GS, epi))(int M, int N, int K, const GT *A, int lda, const GT *B, int ldb, GT *C, int ldc,
                                const cd_gemm_epi *epi, int threads) {
    /* the direct-path test of CAT(cd_gemm, GS) (ta and tb false: never the one-column path) */
    if (epi && M > 0 && N > 0 && K > 0 && DIRECT_FITS(M, N, K)) {
        F(direct_fn) fn = F(pick_direct)();
        if (fn) {
            F(gemm_direct)
            (fn, M, N, K, (GT)1, A, lda, false, B, ldb, (GT)0, C, ldc,
             (double)M * N * K < SINGLE_THREAD_MACS ? 1 : threads, epi);
            return true;
        }
    }
    CAT(cd_gemm, GS)(M, N, K, (GT)1, A, lda, false, B, ldb, false, (GT)0, C, ldc, threads);
    return false;
}
#endif

#undef CAT_
#undef CAT
#undef F

#undef G_MICRO_ARCH
#undef G_NAME_ARCH
#undef G_NAME_FAST
#undef G_NAME_MID
#undef G_VEC_TAIL
#undef G_LANE_INT
#undef G_DIRECT
#undef G_HALF
#undef G_ROUNDED
#undef GT
#undef GS
#undef G_ISA_FAST
#undef G_ISA_FAST_CHECK
#undef G_ISA_MID
#undef G_ISA_MID_CHECK
