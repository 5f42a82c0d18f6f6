/* The body of ops_nn_conv.c's float and _Float16 variants (the *_tmpl.h idiom, docs/design.md
 * §7): ops_nn_conv.c includes it once per element type after defining NN_T, NN_S,
 * NN_IS_HALF, NN_ISA_FAST, NN_ISA_FAST_CHECK, NN_ISA_MID, NN_ISA_MID_CHECK; it #undefs them
 * at its end. Include it nowhere else. */
#ifndef NN_T
#error "ops_nn_conv_tmpl.h: define NN_T and NN_S, then include (ops_nn_conv.c does)"
#endif
#define CAT_(a, b) a##_##b
#define CAT(a, b) CAT_(a, b)
#define F(name) CAT(name, NN_S)
#define GEMM CAT(cd_gemm, NN_S)
#define GEMM_PB CAT(cd_gemm, CAT(NN_S, packed_b))
typedef NN_T F(real);

typedef struct {
    const NN_T *in; /* first channel of the group, batch n */
    int H, W, KH, KW, sh, sw, dh, dw, pt, pl, Wo;
} F(im2col_ctx);

/* One output-row segment of a panel column run: d[j] = tap (ky, kx) of output pixel
 * (oy, ox0 + j), j < len, 0 where the tap falls in padding. The valid j range is computed
 * once, so the copy has no per-element bounds test (and is a fixed-size copy when a whole
 * stride-1 panel is inside the row). */
static inline void F(im2col_seg)(const F(im2col_ctx) * x, const NN_T *plane, int oy, int ox0, int len, int ky, int kx,
                                 NN_T *d) {
    const int W = x->W, sw = x->sw;
    const int iy = oy * x->sh - x->pt + ky * x->dh;
    if (iy < 0 || iy >= x->H) {
        for (int j = 0; j < len; j++) d[j] = (NN_T)0;
        return;
    }
    const NN_T *row = plane + (size_t)iy * W;
    const int ixs = ox0 * sw - x->pl + kx * x->dw;
    int jlo, jhi;
    /* jhi is clamped at 0 when the segment starts past the right edge (ixs > W: right
     * padding of 2 or more): negative, the zero fill below would write before d, over the
     * previous tap's lanes */
    if (sw == 1) {
        jlo = ixs >= 0 ? 0 : -ixs;
        jhi = ixs > W ? 0 : W - ixs;
    } else {
        jlo = ixs >= 0 ? 0 : (-ixs + sw - 1) / sw;
        jhi = ixs > W - 1 ? 0 : (W - 1 - ixs) / sw + 1;
    }
    if (jhi > len) jhi = len;
    if (jlo > jhi) jlo = jhi;
    if (sw == 1 && jlo == 0 && jhi == CD_GEMM_NR) {
        memcpy(d, row + ixs, CD_GEMM_NR * sizeof(NN_T));
        return;
    }
    for (int j = 0; j < jlo; j++) d[j] = (NN_T)0;
    if (sw == 1)
        memcpy(d + jlo, row + ixs + jlo, (size_t)(jhi - jlo) * sizeof(NN_T));
    else
        for (int j = jlo; j < jhi; j++) d[j] = row[ixs + j * sw];
    for (int j = jhi; j < len; j++) d[j] = (NN_T)0;
}

/* cd_gemm_pack_fn: B[k][j] = input tap k = (ic, ky, kx) of output pixel j, 0 in padding.
 * A panel's NR pixels may span several output rows; each row segment is filled on its own. */
static void F(pack_im2col)(const void *ctxv, int k0, int kc, int n0, int nc, void *dstv) {
    const F(im2col_ctx) *x = ctxv;
    NN_T *dst = dstv;
    const int NR = CD_GEMM_NR, KHW = x->KH * x->KW, Wo = x->Wo;
    for (int p = 0; p * NR < nc; p++) {
        int j0 = n0 + p * NR, nr = nc - p * NR < NR ? nc - p * NR : NR;
        int seg_oy[CD_GEMM_NR], seg_ox[CD_GEMM_NR], seg_j[CD_GEMM_NR + 1], nseg = 0;
        for (int j = 0; j < nr;) {
            int oy = (j0 + j) / Wo, ox = (j0 + j) % Wo;
            seg_oy[nseg] = oy;
            seg_ox[nseg] = ox;
            seg_j[nseg] = j;
            nseg++;
            j += Wo - ox;
        }
        seg_j[nseg] = nr;
        int ic = k0 / KHW, r = k0 % KHW, ky = r / x->KW, kx = r % x->KW;
        NN_T *d = dst + (size_t)p * kc * NR;
        for (int kk = 0; kk < kc; kk++, d += NR) {
            const NN_T *plane = x->in + (size_t)ic * x->H * x->W;
            for (int sgi = 0; sgi < nseg; sgi++) {
                int js = seg_j[sgi], je = seg_j[sgi + 1] < nr ? seg_j[sgi + 1] : nr;
                F(im2col_seg)(x, plane, seg_oy[sgi], seg_ox[sgi], je - js, ky, kx, d + js);
            }
            for (int j = nr; j < NR; j++) d[j] = (NN_T)0;
            if (++kx == x->KW) {
                kx = 0;
                if (++ky == x->KH) {
                    ky = 0;
                    ic++;
                }
            }
        }
    }
}

/* ---- depthwise (groups with one input channel, channel multiplier m = Cout / groups) ----
 * Direct kernel, one output plane per task. The input plane is first copied into a
 * zero-padded scratch plane (padding, plus slack so the last vector of a row may read
 * past Wo), so every output column takes the same branch-free vector path: DW_VL columns
 * per vector, up to 8 vectors in flight (FMA latency), and for every tap (ky outer, kx
 * inner) acc = acc + w * x, x being a contiguous load (stride 1), an even-lane shuffle of
 * two loads (stride 2) or a lane-by-lane gather (other strides). Tap rows that fall wholly
 * in the top or bottom padding are skipped, as the OpenCL kernel and Paddle-Lite's skip
 * padding taps (on the 1- and 2-row maps of the text classifiers a 5x5 filter has 3-4 of
 * its 5 rows there); taps in the left and right padding add w * 0. Skipping a w * 0 term
 * changes nothing but, in the one case of a -0 sum followed by a +0 term, the sign of that
 * zero (and a NaN or Inf weight over padding no longer poisons the sum). fp16: one rounding per multiply and per add
 * (contraction off), so the bits do not depend on the ISA level chosen at run time. */
#define DW_VL 16
/* fp32 depthwise convs with output rows up to this long take cd_conv_ocv_dw_f32 (F(conv_fwd)) */
#ifndef DW_SMALL_WO
#define DW_SMALL_WO 24
#endif
typedef NN_T F(dwvec) __attribute__((vector_size(DW_VL * sizeof(NN_T))));

typedef struct {
    int Ho, Wo, KH, KW, sh, sw, dh, dw;
    int Wp;         /* scratch row length */
    const int *kyr; /* per output row oy: tap rows [kyr[2 oy], kyr[2 oy + 1]) are not all padding */
} F(dw_geo);

static inline __attribute__((always_inline)) void F(dw_load)(const NN_T *p, int sw, F(dwvec) * out) {
    F(dwvec) v;
    if (sw == 1) {
        memcpy(&v, p, sizeof v);
    } else if (sw == 2) {
        F(dwvec) a, b;
        memcpy(&a, p, sizeof a);
        memcpy(&b, p + DW_VL, sizeof b);
#if NN_IS_HALF
        typedef short F(dwidx) __attribute__((vector_size(DW_VL * sizeof(short))));
#else
        typedef int F(dwidx) __attribute__((vector_size(DW_VL * sizeof(int))));
#endif
#if defined(__clang__) /* clang spells the two-vector shuffle differently */
        v = __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
#else
        const F(dwidx) even = {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30};
        v = __builtin_shuffle(a, b, even);
#endif
    } else {
        for (int j = 0; j < DW_VL; j++) v[j] = p[(size_t)j * sw];
    }
    *out = v;
}

/* One run of nv (1..DW_NVMAX) vectors of output row yr, starting at the scratch position
 * xr0 (row oy*sh, column ox*sw); ncols (<= nv*DW_VL) columns are stored. Called with nv and
 * sw constant, so after inlining the accumulators are registers and the loads branch-free
 * (a version with a runtime vector count kept them on the stack: a store-forward round
 * trip per multiply-add). Every column gets acc = acc + w * x over the taps, ky outer,
 * kx inner, whatever run it belongs to. */
#define DW_NVMAX 8
static inline __attribute__((always_inline)) void F(dw_run)(const F(dw_geo) * d, const NN_T *restrict xr0,
                                                            const NN_T *restrict wk, NN_T *restrict yr, const int nv,
                                                            const int sw, int ncols, int ky0, int ky1) {
    const int KW = d->KW, dw = d->dw;
    const size_t rstep = (size_t)d->dh * d->Wp;
    F(dwvec) acc[DW_NVMAX];
#pragma GCC unroll 8
    for (int v = 0; v < nv; v++) acc[v] = (F(dwvec)){0};
    for (int ky = ky0; ky < ky1; ky++) {
        const NN_T *xr = xr0 + (size_t)ky * rstep;
        for (int kx = 0; kx < KW; kx++) {
            const NN_T wt = wk[ky * KW + kx];
            const F(dwvec) wv = {wt, wt, wt, wt, wt, wt, wt, wt, wt, wt, wt, wt, wt, wt, wt, wt};
            const NN_T *xk = xr + kx * dw;
#pragma GCC unroll 8
            for (int v = 0; v < nv; v++) {
                F(dwvec) xv;
                F(dw_load)(xk + v * DW_VL * sw, sw, &xv);
                acc[v] = acc[v] + wv * xv;
            }
        }
    }
#pragma GCC unroll 8
    for (int v = 0; v < nv; v++) {
        int n = ncols - v * DW_VL;
        if (n >= DW_VL)
            memcpy(yr + v * DW_VL, &acc[v], sizeof acc[v]);
        else
            for (int j = 0; j < n; j++) yr[v * DW_VL + j] = acc[v][j];
    }
}

#if NN_IS_HALF && defined(NN_X86)
/* F(dw_run) for stride 1 on AVX2 + F16C machines, the way gemm_tmpl.h's micro_avx2 does the
 * half GEMM: GCC compiles the 16-lane half vector code of F(dw_run) lane by lane there; this
 * does every step on 8 lanes with one instruction, with the same arithmetic per column: for
 * each tap (ky outer, kx inner) p = half(w * x), acc = half(p + acc), acc from +0, the
 * conversions in the current MXCSR mode. NV vectors of 16 columns = 2 * NV float registers.
 * Where both operands of a multiply or an add are NaN, x86 returns the first one's payload:
 * the operand order is pinned (asm) to the one GCC gives the lane-by-lane code, x * w and
 * p + acc, which it would otherwise choose freely. */
#define RH(x) _mm256_cvtph_ps(_mm256_cvtps_ph((x), _MM_FROUND_CUR_DIRECTION))
#define DW_OP2(OP, A, B)                                                                                               \
    ({                                                                                                                 \
        __m256 r_;                                                                                                     \
        __asm__(OP " %2, %1, %0" : "=x"(r_) : "x"(A), "x"(B));                                                         \
        r_;                                                                                                            \
    })
static inline __attribute__((always_inline)) void F(dw_run_f16c_nv)(const F(dw_geo) * d, const NN_T *restrict xr0,
                                                                    const NN_T *restrict wk, NN_T *restrict yr,
                                                                    const int nv, int ncols, int ky0, int ky1) {
    const int KW = d->KW, dw = d->dw;
    const size_t rstep = (size_t)d->dh * d->Wp;
    __m256 acc[2 * DW_NVMAX / 2];
#pragma GCC unroll 8
    for (int u = 0; u < 2 * nv; u++) acc[u] = _mm256_setzero_ps();
    for (int ky = ky0; ky < ky1; ky++) {
        const NN_T *xr = xr0 + (size_t)ky * rstep;
        for (int kx = 0; kx < KW; kx++) {
            const __m256 wv = _mm256_set1_ps((float)wk[ky * KW + kx]);
            const NN_T *xk = xr + kx * dw;
#pragma GCC unroll 8
            for (int u = 0; u < 2 * nv; u++) {
                const __m256 xv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(xk + 8 * u)));
                acc[u] = RH(DW_OP2("vaddps", RH(DW_OP2("vmulps", xv, wv)), acc[u]));
            }
        }
    }
#pragma GCC unroll 8
    for (int u = 0; u < 2 * nv; u++) {
        const int n = ncols - 8 * u;
        const __m128i h = _mm256_cvtps_ph(acc[u], _MM_FROUND_CUR_DIRECTION);
        if (n >= 8)
            _mm_storeu_si128((__m128i *)(yr + 8 * u), h);
        else if (n > 0) {
            NN_T t[8];
            _mm_storeu_si128((__m128i *)t, h);
            memcpy(yr + 8 * u, t, (size_t)n * sizeof(NN_T));
        }
    }
}
#undef RH
#undef DW_OP2
__attribute__((target("avx2,f16c"), noinline)) static void F(dw_run_f16c)(const F(dw_geo) * d, const NN_T *restrict xr0,
                                                                          const NN_T *restrict wk, NN_T *restrict yr,
                                                                          int nv, int ncols, int ky0, int ky1) {
    switch (nv) {
    case 1: F(dw_run_f16c_nv)(d, xr0, wk, yr, 1, ncols, ky0, ky1); break;
    case 2: F(dw_run_f16c_nv)(d, xr0, wk, yr, 2, ncols, ky0, ky1); break;
    case 3: F(dw_run_f16c_nv)(d, xr0, wk, yr, 3, ncols, ky0, ky1); break;
    default: F(dw_run_f16c_nv)(d, xr0, wk, yr, 4, ncols, ky0, ky1); break;
    }
}
#endif

#if !NN_IS_HALF && defined(NN_X86)
/* F(dw_run) for float on AVX2 + FMA, strides 1 and 2: the generic 16-lane code kept its
 * accumulators in memory there (a store and a reload per multiply-add). The same arithmetic
 * per column: for each tap (ky outer, kx inner) acc = fma(w, x, acc) from +0, as the
 * contracted acc + w * x of F(dw_run). NV vectors of 16 columns = 2 * NV registers; stride 2
 * takes the even lanes of two loads per 8 columns. */
static inline __attribute__((always_inline, target(NN_ISA_MID))) void
F(dw_run_avx2_nv)(const F(dw_geo) * d, const NN_T *restrict xr0, const NN_T *restrict wk, NN_T *restrict yr,
                  const int nv, const int sw, int ncols, int ky0, int ky1) {
    const int KW = d->KW, dw = d->dw;
    const size_t rstep = (size_t)d->dh * d->Wp;
    __m256 acc[8];
#pragma GCC unroll 8
    for (int u = 0; u < 2 * nv; u++) acc[u] = _mm256_setzero_ps();
    for (int ky = ky0; ky < ky1; ky++) {
        const NN_T *xr = xr0 + (size_t)ky * rstep;
        for (int kx = 0; kx < KW; kx++) {
            const __m256 wv = _mm256_broadcast_ss(wk + ky * KW + kx);
            const NN_T *xk = xr + kx * dw;
#pragma GCC unroll 8
            for (int u = 0; u < 2 * nv; u++) {
                __m256 xv;
                if (sw == 1) {
                    xv = _mm256_loadu_ps(xk + 8 * u);
                } else {
                    const __m256 a = _mm256_loadu_ps(xk + 16 * u), b = _mm256_loadu_ps(xk + 16 * u + 8);
                    xv = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xd8));
                }
                acc[u] = _mm256_fmadd_ps(wv, xv, acc[u]);
            }
        }
    }
#pragma GCC unroll 8
    for (int u = 0; u < 2 * nv; u++) {
        const int n = ncols - 8 * u;
        if (n >= 8)
            _mm256_storeu_ps(yr + 8 * u, acc[u]);
        else if (n > 0) {
            float t[8];
            _mm256_storeu_ps(t, acc[u]);
            memcpy(yr + 8 * u, t, (size_t)n * sizeof(float));
        }
    }
}
__attribute__((target(NN_ISA_MID), noinline)) static void F(dw_run_avx2)(const F(dw_geo) * d, const NN_T *restrict xr0,
                                                                         const NN_T *restrict wk, NN_T *restrict yr,
                                                                         int nv, int sw, int ncols, int ky0, int ky1) {
#define DW_A2(NVC)                                                                                                     \
    if (sw == 1)                                                                                                       \
        F(dw_run_avx2_nv)(d, xr0, wk, yr, NVC, 1, ncols, ky0, ky1);                                                    \
    else                                                                                                               \
        F(dw_run_avx2_nv)(d, xr0, wk, yr, NVC, 2, ncols, ky0, ky1);
    switch (nv) {
    case 1: DW_A2(1) break;
    case 2: DW_A2(2) break;
    case 3: DW_A2(3) break;
    default: DW_A2(4) break;
    }
#undef DW_A2
}
#endif

#define DW_RUN_NV(SW)                                                                                                  \
    switch (nv) {                                                                                                      \
    case 1: F(dw_run)(d, xr0, wk, yr, 1, SW, ncols, ky0, ky1); break;                                                  \
    case 2: F(dw_run)(d, xr0, wk, yr, 2, SW, ncols, ky0, ky1); break;                                                  \
    case 3: F(dw_run)(d, xr0, wk, yr, 3, SW, ncols, ky0, ky1); break;                                                  \
    case 4: F(dw_run)(d, xr0, wk, yr, 4, SW, ncols, ky0, ky1); break;                                                  \
    case 5: F(dw_run)(d, xr0, wk, yr, 5, SW, ncols, ky0, ky1); break;                                                  \
    case 6: F(dw_run)(d, xr0, wk, yr, 6, SW, ncols, ky0, ky1); break;                                                  \
    case 7: F(dw_run)(d, xr0, wk, yr, 7, SW, ncols, ky0, ky1); break;                                                  \
    default: F(dw_run)(d, xr0, wk, yr, 8, SW, ncols, ky0, ky1); break;                                                 \
    }

/* xp: padded plane (row oy*sh + ky*dh, column ox*sw + kx*dw holds the tap). Each output row
 * is cut into runs of at most nvmax vectors (8 with 32 vector registers, fewer where a
 * 16-lane vector takes several registers). */
/* R output rows of nv vectors each in one run, every one of their tap rows inside the input
 * (ky over all of [0, KH)): on narrow maps one row holds only 1-3 accumulators, too few to
 * hide the FMA latency (two FMA ports of 4 cycles want 8 in flight); R rows of nv vectors give
 * R * nv (8 or 9: DW_ROWS_OF). Per column the same acc = acc + w * x over the taps, ky outer,
 * kx inner, as F(dw_run). */
#define DW_RMAX 8
static inline __attribute__((always_inline)) void F(dw_run_rows)(const F(dw_geo) * d, const NN_T *restrict xr0,
                                                                 const NN_T *restrict wk, NN_T *restrict yr0,
                                                                 const int R, const int nv, const int sw, int ncols) {
    const int KH = d->KH, KW = d->KW, dw = d->dw, Wo = d->Wo;
    const size_t rstep = (size_t)d->dh * d->Wp, ostep = (size_t)d->sh * d->Wp;
    F(dwvec) acc[DW_RMAX + 1];
#pragma GCC unroll 9
    for (int u = 0; u < R * nv; u++) acc[u] = (F(dwvec)){0};
    for (int ky = 0; ky < KH; ky++) {
        const NN_T *xr = xr0 + (size_t)ky * rstep;
        for (int kx = 0; kx < KW; kx++) {
            const NN_T wt = wk[ky * KW + kx];
            const F(dwvec) wv = {wt, wt, wt, wt, wt, wt, wt, wt, wt, wt, wt, wt, wt, wt, wt, wt};
            const NN_T *xk = xr + kx * dw;
#pragma GCC unroll 8
            for (int r = 0; r < R; r++)
#pragma GCC unroll 4
                for (int v = 0; v < nv; v++) {
                    F(dwvec) xv;
                    F(dw_load)(xk + r * ostep + v * DW_VL * sw, sw, &xv);
                    acc[r * nv + v] = acc[r * nv + v] + wv * xv;
                }
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) {
            NN_T *yr = yr0 + (size_t)r * Wo + v * DW_VL;
            const int n = ncols - v * DW_VL;
            if (n >= DW_VL)
                memcpy(yr, &acc[r * nv + v], sizeof acc[0]);
            else
                for (int jj = 0; jj < n; jj++) yr[jj] = acc[r * nv + v][jj];
        }
}

/* The rows a run of F(dw_run_rows) takes for nv vectors per row: 8 x 1, 4 x 2, 3 x 3, 2 x 4 */
#define DW_ROWS_OF(nv) ((nv) == 1 ? 8 : (nv) == 2 ? 4 : (nv) == 3 ? 3 : 2)

/* F(dw_run_rows) with R and nv constant: R at most the rows left (n), halved (nv 1, 2, 4) or
 * down to 2 (nv 3) until it fits; returns the rows done (0: fewer than 2 interior rows left) */
static inline __attribute__((always_inline)) int F(dw_rows_any)(const F(dw_geo) * d, const NN_T *restrict xr0,
                                                                const NN_T *restrict wk, NN_T *restrict yr0, int nv,
                                                                const int sw, int n) {
    const int Wo = d->Wo;
#define DW_RR(RC, NVC)                                                                                                 \
    do {                                                                                                               \
        F(dw_run_rows)(d, xr0, wk, yr0, RC, NVC, sw, Wo);                                                              \
        return RC;                                                                                                     \
    } while (0)
    switch (nv) {
    case 1:
        if (n >= 8) DW_RR(8, 1);
        if (n >= 4) DW_RR(4, 1);
        if (n >= 2) DW_RR(2, 1);
        break;
    case 2:
        if (n >= 4) DW_RR(4, 2);
        if (n >= 2) DW_RR(2, 2);
        break;
    case 3:
        if (n >= 3) DW_RR(3, 3);
        if (n >= 2) DW_RR(2, 3);
        break;
    default:
        if (n >= 2) DW_RR(2, 4);
        break;
    }
#undef DW_RR
    return 0;
}

static inline __attribute__((always_inline)) void F(dw_plane_body)(const F(dw_geo) * d, const NN_T *restrict xp,
                                                                   const NN_T *restrict wk, NN_T *restrict y,
                                                                   const int nvmax, const int f16c) {
    const int Wo = d->Wo, sw = d->sw, Wp = d->Wp;
    for (int oy = 0; oy < d->Ho; oy++) {
        /* maps up to 64 wide on the 32-register build: runs of interior rows (F(dw_rows_any)) */
        if (nvmax >= 8 && Wo <= 4 * DW_VL && sw <= 2 && d->kyr[2 * oy] == 0 && d->kyr[2 * oy + 1] == d->KH) {
            int n = 1; /* interior rows from oy on, up to the run's most */
            const int nvr = (Wo + DW_VL - 1) / DW_VL;
            while (n < DW_ROWS_OF(nvr) && oy + n < d->Ho && d->kyr[2 * (oy + n)] == 0 &&
                   d->kyr[2 * (oy + n) + 1] == d->KH)
                n++;
            const NN_T *xr0 = xp + (size_t)oy * d->sh * Wp;
            NN_T *yr0 = y + (size_t)oy * Wo;
            const int done =
                sw == 1 ? F(dw_rows_any)(d, xr0, wk, yr0, nvr, 1, n) : F(dw_rows_any)(d, xr0, wk, yr0, nvr, 2, n);
            if (done) {
                oy += done - 1;
                continue;
            }
        }
        NN_T *yrow = y + (size_t)oy * Wo;
        const int ky0 = d->kyr[2 * oy], ky1 = d->kyr[2 * oy + 1];
        for (int ox = 0; ox < Wo;) {
            int nv = (Wo - ox + DW_VL - 1) / DW_VL;
            if (nv > nvmax) nv = nvmax;
            const int ncols = Wo - ox < nv * DW_VL ? Wo - ox : nv * DW_VL;
            const NN_T *xr0 = xp + (size_t)oy * d->sh * Wp + (size_t)ox * sw;
            NN_T *yr = yrow + ox;
#if NN_IS_HALF && defined(NN_X86)
            if (f16c && sw == 1)
                F(dw_run_f16c)(d, xr0, wk, yr, nv, ncols, ky0, ky1);
            else
#elif defined(NN_X86)
            if (f16c && sw <= 2) /* float: the AVX2 + FMA build (f16c: "the mid level's own runs") */
                F(dw_run_avx2)(d, xr0, wk, yr, nv, sw, ncols, ky0, ky1);
            else
#endif
                if (sw == 1) {
                DW_RUN_NV(1)
            } else if (sw == 2) {
                DW_RUN_NV(2)
            } else {
                DW_RUN_NV(sw)
            }
            ox += nv * DW_VL;
        }
    }
}
#undef DW_RUN_NV

/* Everything a run of output planes needs: the geometry, the tensors and the scratch
 * layout (see F(conv_direct)). */
typedef struct {
    F(dw_geo) d;
    const NN_T *in, *w;
    NN_T *out;
    int64_t Cin, Cout, m, H, W, HW, HWo, KHW, pt, pl, Wp, Hc;
    float qinv; /* fp32, int8 layers (cd_nn_depthwise_sums_f32): the copy quantizes (x * qinv), 0: copies */
    /* fp32: the conv epilogue, applied to each finished plane (in L1/L2) by efn, or NULL */
    const cd_gemm_epi *epi;
    cd_gemm_epi_fn efn;
} F(dw_job);

/* n values from s to d in DW_VL-value blocks, the last one overlapping the one before (values
 * rewritten with themselves): the copy is inline vector moves, where a memcpy call per row of a
 * 16-48 wide map cost more than the row's multiply-adds. Writes nothing outside [d, d + n). */
static inline __attribute__((always_inline)) void F(dw_copy_row)(NN_T *restrict d, const NN_T *restrict s, int64_t n) {
    if (n >= DW_VL) {
        int64_t i = 0;
        for (; i + DW_VL <= n; i += DW_VL) memcpy(d + i, s + i, DW_VL * sizeof(NN_T));
        if (i < n) memcpy(d + n - DW_VL, s + n - DW_VL, DW_VL * sizeof(NN_T));
    } else {
        int64_t i = 0;
        if (n >= DW_VL / 2) {
            memcpy(d, s, DW_VL / 2 * sizeof(NN_T));
            memcpy(d + n - DW_VL / 2, s + n - DW_VL / 2, DW_VL / 2 * sizeof(NN_T));
            return;
        }
        for (; i < n; i++) d[i] = s[i];
    }
}

/* Output planes [t0, t1) with the thread's scratch plane xp. Each plane's input channel is
 * copied into the scratch (zeros stay in the padding; only the input window is rewritten)
 * unless the previous plane used the same one (channel multiplier > 1). One call per
 * thread and op: a call per plane through a function pointer cost as much as a plane of a
 * 1x50 map. */
static inline __attribute__((always_inline)) void
F(dw_planes_body)(const F(dw_job) * j, int64_t t0, int64_t t1, NN_T *restrict xp, const int nvmax, const int f16c) {
    int64_t last_ic = -1;
    const int64_t cols = imin64(j->W, j->Wp - j->pl);
    for (int64_t t = t0; t < t1; t++) {
        const int64_t n = t / j->Cout, oc = t % j->Cout, ic = n * j->Cin + oc / j->m;
        if (ic != last_ic) {
            const NN_T *x = j->in + ic * j->HW;
            for (int64_t iy = imax64(0, -j->pt); iy < j->Hc; iy++) {
#if !NN_IS_HALF
                if (j->qinv != 0.0f) {
                    /* the int8 layer's own quantization, done in this copy (int8_quant.h) */
                    cd_q8f_row(xp + (iy + j->pt) * j->Wp + j->pl, x + iy * j->W, cols, j->qinv);
                    continue;
                }
#endif
                F(dw_copy_row)(xp + (iy + j->pt) * j->Wp + j->pl, x + iy * j->W, cols);
            }
            last_ic = ic;
        }
        F(dw_plane_body)(&j->d, xp, j->w + oc * j->KHW, j->out + t * j->HWo, nvmax, f16c);
        /* plane t is row oc of image n's [Cout][HWo] (the bias row); not inside the runs, whose
         * multiply-add loops would lose registers to it */
#if !NN_IS_HALF
        if (j->epi) j->efn(j->out + n * j->Cout * j->HWo, (size_t)j->HWo, (int)oc, (int)oc + 1, 0, (int)j->HWo, j->epi);
#endif
    }
}

typedef void (*F(dw_planes_fn))(const F(dw_job) *, int64_t, int64_t, NN_T *restrict);
#define DW_ARGS (const F(dw_job) * j, int64_t t0, int64_t t1, NN_T *restrict xp)
static void F(dw_planes_default) DW_ARGS { F(dw_planes_body)(j, t0, t1, xp, 2, 0); }
#ifdef NN_X86
__attribute__((target(NN_ISA_FAST))) static void F(dw_planes_fast) DW_ARGS {
    F(dw_planes_body)(j, t0, t1, xp, DW_NVMAX, 0);
}
/* half: NN_ISA_MID is AVX2 + F16C, whose stride-1 runs go through F(dw_run_f16c); float: AVX2 +
 * FMA, whose stride-1 and -2 runs go through F(dw_run_avx2) */
__attribute__((target(NN_ISA_MID))) static void F(dw_planes_mid) DW_ARGS { F(dw_planes_body)(j, t0, t1, xp, 4, 1); }
#endif
#undef DW_ARGS

static cd_status F(conv_direct)(cd_op_ctx *c, const conv_geo *g, const NN_T *in, const NN_T *w, NN_T *out, float qinv,
                                const cd_gemm_epi *epi) {
    const int threads = c->threads;
    /* scratch geometry: rows cover every tap row, columns every tap column of every vector
     * (including the part of the last vector past Wo) plus the stride-2 load's extra value */
    const int64_t Wo_v = (g->Wo + DW_VL - 1) / DW_VL * DW_VL;
    const int64_t Hp = (g->Ho - 1) * g->sh + (g->KH - 1) * g->dh + 1;
    int64_t Wp = (Wo_v - 1) * g->sw + (g->KW - 1) * g->dw + 1 + (g->sw == 2 ? 1 : 0);
    if (Wp < g->pl + g->W) Wp = g->pl + g->W;
    const int64_t Hc = imin64(g->H, Hp - g->pt); /* input rows that land in the scratch */
    if (Hp * Wp > INT32_MAX)
        return cd_op_fail(c, CD_E_UNSUPPORTED, "depthwise padded plane %lldx%lld is too large", (long long)Hp,
                          (long long)Wp);
    /* per output row, the tap rows whose scratch row oy*sh + ky*dh is an input row, i.e. in
     * [pt, pt + H): the same for every plane, so computed once here */
    int *kyr = malloc((size_t)g->Ho * 2 * sizeof(int));
    if (!kyr) return cd_op_fail(c, CD_E_NOMEM, "out of memory for the depthwise row table");
    for (int64_t oy = 0; oy < g->Ho; oy++) {
        const int64_t r0 = oy * g->sh, lo = g->pt - r0, hi = g->pt + g->H - r0;
        const int64_t ky0 = lo <= 0 ? 0 : (lo + g->dh - 1) / g->dh, ky1 = hi <= 0 ? 0 : (hi + g->dh - 1) / g->dh;
        kyr[2 * oy] = (int)imin64(ky0, g->KH);
        kyr[2 * oy + 1] = (int)imin64(ky1, g->KH);
    }
    F(dw_job)
    j = {{(int)g->Ho, (int)g->Wo, (int)g->KH, (int)g->KW, (int)g->sh, (int)g->sw, (int)g->dh, (int)g->dw, (int)Wp, kyr},
         in,
         w,
         out,
         g->Cin,
         g->Cout,
         g->Cout / g->groups,
         g->H,
         g->W,
         g->H * g->W,
         g->Ho * g->Wo,
         g->KH * g->KW,
         g->pt,
         g->pl,
         Wp,
         Hc,
         qinv,
         NN_IS_HALF ? NULL : epi,
         !NN_IS_HALF && epi ? cd_gemm_epi_pick_f32() : NULL};
    F(dw_planes_fn) planes = F(dw_planes_default);
#ifdef NN_X86
    __builtin_cpu_init();
    if (NN_ISA_FAST_CHECK)
        planes = F(dw_planes_fast);
    else if (NN_ISA_MID_CHECK)
        planes = F(dw_planes_mid);
#endif
    const int64_t total = g->N * g->Cout;
    const bool par = threads > 1 && total > 1 && total * j.HWo * j.KHW >= NN_DW_PAR_MIN_MACS;
    bool ok = true;
    if (!par) { /* no OpenMP region at all (backends/cpu/par.h) */
        NN_T *xp = calloc((size_t)(Hp * Wp), sizeof(NN_T));
        ok = xp != NULL;
        if (ok) planes(&j, 0, total, xp);
        free(xp);
    } else {
        /* planes in chunks of 8, handed out dynamically (layers are small and threads may be
         * delayed); every plane is computed the same way whichever thread takes it */
        const int64_t chunks = (total + 7) / 8;
#pragma omp parallel num_threads(threads)
        {
            NN_T *xp = calloc((size_t)(Hp * Wp), sizeof(NN_T));
            if (!xp) {
#pragma omp atomic write
                ok = false;
            }
#pragma omp for schedule(dynamic, 1)
            for (int64_t k = 0; k < chunks; k++)
                if (xp) planes(&j, k * 8, imin64(total, (k + 1) * 8), xp);
            free(xp);
        }
    }
    free(kyr);
    if (!ok)
        return cd_op_fail(c, CD_E_NOMEM, "out of memory for the %lldx%lld depthwise scratch plane", (long long)Hp,
                          (long long)Wp);
    return CD_OK;
}

/* Bias, activation, residual add: one pass per output plane, per element in this order
 * y = act(y + bias) (+ SecondInput, then relu for the add+activation fusion). */
typedef struct {
    const NN_T *bias, *alpha, *second;
    cd_act act;
    int prelu_mode;
    bool residual_relu;
    int64_t HWo, Cout;
} F(epi_ctx);

#define EPI_LOOP(ACT)                                                                                                  \
    for (int64_t i = 0; i < HWo; i++) {                                                                                \
        NN_T v = y[i];                                                                                                 \
        if (bias) v = v + b;                                                                                           \
        ACT;                                                                                                           \
        if (s2) {                                                                                                      \
            v = v + s2[i];                                                                                             \
            if (rr) v = v < (NN_T)0 ? (NN_T)0 : v;                                                                     \
        }                                                                                                              \
        y[i] = v;                                                                                                      \
    }

#if !NN_IS_HALF
/* fp32 planes without a residual input, for the activations below: written with 16-lane
 * vectors and a partial last vector, because on the narrow maps of mobile networks (50 or
 * 100 values per plane) the compiler's vectorised loop left a third of each plane to its
 * scalar remainder loop (a division per element for hard_swish). Per lane this is exactly
 * the scalar EPI_LOOP expression: the same operations in the same order, comparisons that
 * are false for NaN keep v, and the contraction rules of cd_act_apply (EPI_NOFMA below). */
typedef float F(ev) __attribute__((vector_size(64)));
typedef int F(evi) __attribute__((vector_size(64)));
typedef float F(ev8) __attribute__((vector_size(32)));
typedef int F(evi8) __attribute__((vector_size(32)));
#define EV_SEL_T(VT, MT, m, a, b) ((VT)(((m) & (MT)(a)) | (~(m) & (MT)(b))))
/* The activation of one vector of type VT (int lanes MT) at vp, in place (bias already added). */
#define EV_ACT(VT, MT, vp)                                                                                             \
    do {                                                                                                               \
        const VT z = {0}, v = *(vp);                                                                                   \
        switch (e->act.kind) {                                                                                         \
        case CD_ACT_RELU: *(vp) = EV_SEL_T(VT, MT, v < z, z, v); break;                                                \
        case CD_ACT_RELU6: {                                                                                           \
            const VT th = z + e->act.a;                                                                                \
            *(vp) = EV_SEL_T(VT, MT, v < z, z, EV_SEL_T(VT, MT, v > th, th, v));                                       \
            break;                                                                                                     \
        }                                                                                                              \
        case CD_ACT_HARD_SWISH: {                                                                                      \
            const VT th = z + e->act.a, sc = z + e->act.b, off = z + e->act.c;                                         \
            VT tt = v + off;                                                                                           \
            tt = EV_SEL_T(VT, MT, tt < z, z, EV_SEL_T(VT, MT, tt > th, th, tt));                                       \
            *(vp) = v * tt / sc;                                                                                       \
            break;                                                                                                     \
        }                                                                                                              \
        case CD_ACT_HARD_SIGMOID: {                                                                                    \
            const VT sa = z + e->act.a, sb = z + e->act.b, one = z + 1.0f;                                             \
            const VT tt = sa * v + sb;                                                                                 \
            *(vp) = EV_SEL_T(VT, MT, tt < z, z, EV_SEL_T(VT, MT, tt > one, one, tt));                                  \
            break;                                                                                                     \
        }                                                                                                              \
        case CD_ACT_LEAKY_RELU: *(vp) = EV_SEL_T(VT, MT, v < z, (z + e->act.a) * v, v); break;                         \
        default: break; /* CD_ACT_NONE (F(epi_vec_ok) admits no other kind) */                                         \
        }                                                                                                              \
    } while (0)
/* The activation of one vector, in place (bias already added). Vectors go by pointer: a
 * 64-byte vector returned by value would have an ABI that depends on the ISA level. w8: as two
 * 8-lane halves (the AVX2 and portable builds: GCC compiled the 16-lane compares there as one
 * scalar compare per lane); the same operations per lane. */
static inline __attribute__((always_inline)) void F(ev_act)(const F(epi_ctx) * e, F(ev) * vp, const int w8) {
    if (w8) {
        F(ev8) h[2];
        memcpy(h, vp, sizeof h);
        EV_ACT(F(ev8), F(evi8), &h[0]);
        EV_ACT(F(ev8), F(evi8), &h[1]);
        memcpy(vp, h, sizeof h);
    } else {
        EV_ACT(F(ev), F(evi), vp);
    }
}
#undef EV_ACT
#define EV_SEL(m, a, b) EV_SEL_T(F(ev), F(evi), m, a, b)

static inline __attribute__((always_inline)) bool F(epi_vec_ok)(const F(epi_ctx) * e) {
    switch (e->act.kind) {
    case CD_ACT_NONE:
    case CD_ACT_RELU:
    case CD_ACT_RELU6:
    case CD_ACT_HARD_SWISH:
    case CD_ACT_HARD_SIGMOID:
    case CD_ACT_LEAKY_RELU: return !e->second;
    default: return false;
    }
}

/* Plane t (HWo values at y). With at least 16 values the last vector is the 16 ending the
 * plane, loaded before the full vectors are written and stored after them: the values it
 * shares with the last full vector are computed twice from the same inputs. Shorter planes
 * go through one partial vector. */
static inline __attribute__((always_inline)) void F(epi_plane_vec)(const F(epi_ctx) * e, int64_t t, float *restrict y,
                                                                   const int w8) {
    const int64_t HWo = e->HWo;
    const bool hb = e->bias != NULL;
    const float b = hb ? e->bias[t % e->Cout] : 0.0f;
    F(ev) v;
    if (HWo >= 16) {
        F(ev) last;
        memcpy(&last, y + HWo - 16, sizeof last);
        if (hb) last = last + b;
        F(ev_act)(e, &last, w8);
        for (int64_t i = 0; i + 16 < HWo; i += 16) {
            memcpy(&v, y + i, sizeof v);
            if (hb) v = v + b;
            F(ev_act)(e, &v, w8);
            memcpy(y + i, &v, sizeof v);
        }
        memcpy(y + HWo - 16, &last, sizeof last);
    } else {
        const size_t n = (size_t)HWo * sizeof(float);
        v = (F(ev)){0};
        memcpy(&v, y, n);
        if (hb) v = v + b;
        F(ev_act)(e, &v, w8);
        memcpy(y, &v, n);
    }
}

/* Planes [t0, t1) of one value each (1x1 maps), contiguous in y = out + t0: 16 planes per
 * vector with their 16 biases, within one batch item; the rest one by one. */
static inline __attribute__((always_inline)) void F(epi_flat_vec)(const F(epi_ctx) * e, int64_t t0, int64_t t1,
                                                                  float *restrict out, const int w8) {
    const int64_t C = e->Cout;
    int64_t t = t0;
    while (t < t1) {
        const int64_t oc = t % C;
        if (oc + 16 <= C && t + 16 <= t1) {
            F(ev) v, bv = {0};
            memcpy(&v, out + t, sizeof v);
            if (e->bias) {
                memcpy(&bv, e->bias + oc, sizeof bv);
                v = v + bv;
            }
            F(ev_act)(e, &v, w8);
            memcpy(out + t, &v, sizeof v);
            t += 16;
        } else {
            F(epi_plane_vec)(e, t, out + t, w8);
            t++;
        }
    }
}
#undef EV_SEL
#undef EV_SEL_T
#endif

static inline __attribute__((always_inline)) void F(epi_plane_body)(const F(epi_ctx) * e, int64_t t, NN_T *restrict y,
                                                                    const int w8) {
    (void)w8; /* fp32 vector path only */
#if !NN_IS_HALF
    if (F(epi_vec_ok)(e)) {
        F(epi_plane_vec)(e, t, y, w8);
        return;
    }
#endif
    const int64_t HWo = e->HWo, oc = t % e->Cout;
    const NN_T *bias = e->bias, *s2 = e->second ? e->second + t * HWo : NULL;
    const NN_T b = bias ? bias[oc] : (NN_T)0;
    const bool rr = e->residual_relu;
    switch (e->act.kind) {
    case CD_ACT_NONE: EPI_LOOP((void)0) break;
    case CD_ACT_RELU: EPI_LOOP(v = v < (NN_T)0 ? (NN_T)0 : v) break;
    case CD_ACT_RELU6: {
        const NN_T th = (NN_T)e->act.a;
        EPI_LOOP(v = v < (NN_T)0 ? (NN_T)0 : (v > th ? th : v))
        break;
    }
    /* hard_swish and leaky_relu inline, in float exactly as cd_act_apply writes them (no
     * multiply-add pair that could be contracted): the call per element dominated small
     * convs. */
    case CD_ACT_HARD_SWISH: {
        const float hs_th = e->act.a, hs_scale = e->act.b, hs_off = e->act.c;
        EPI_LOOP(float xf = (float)v; float tt = xf + hs_off; tt = tt < 0.0f ? 0.0f : (tt > hs_th ? hs_th : tt);
                 v = (NN_T)(xf * tt / hs_scale))
        break;
    }
    case CD_ACT_LEAKY_RELU: {
        const float lr = e->act.a;
        EPI_LOOP(float xf = (float)v; v = (NN_T)(xf < 0.0f ? lr * xf : xf))
        break;
    }
    case CD_ACT_HARD_SIGMOID: { /* multiply and add with cd_act_apply's contraction (EPI_NOFMA) */
        const float hs_a = e->act.a, hs_b = e->act.b;
        EPI_LOOP(float tt = hs_a * (float)v + hs_b; v = (NN_T)(tt < 0.0f ? 0.0f : (tt > 1.0f ? 1.0f : tt)))
        break;
    }
    case CD_ACT_PRELU: {
        cd_act a = e->act;
        const NN_T *al = e->alpha;
        const int mode = e->prelu_mode;
        EPI_LOOP(a.a = (float)(mode == 0       ? al[0]
                                   : mode == 1 ? al[oc]
                                               : al[oc * HWo + i]);
                 v = (NN_T)cd_act_apply(&a, (float)v))
        break;
    }
    default: {
        const cd_act a = e->act;
        EPI_LOOP(v = (NN_T)cd_act_apply(&a, (float)v))
    }
    }
}
#undef EPI_LOOP

/* Planes [t0, t1) of out. One call per thread: the per-plane call through a function
 * pointer cost as much as a 50-value plane's arithmetic. */
static inline __attribute__((always_inline)) void F(epi_range_body)(const F(epi_ctx) * e, int64_t t0, int64_t t1,
                                                                    NN_T *restrict out, const int w8) {
#if !NN_IS_HALF
    if (e->HWo == 1 && F(epi_vec_ok)(e)) {
        F(epi_flat_vec)(e, t0, t1, out, w8);
        return;
    }
#endif
    for (int64_t t = t0; t < t1; t++) F(epi_plane_body)(e, t, out + t * e->HWo, w8);
}

typedef void (*F(epi_range_fn))(const F(epi_ctx) *, int64_t, int64_t, NN_T *restrict);
/* A multiply-add written in an activation (hard_sigmoid) is rounded as in cd_act_apply,
 * whichever ISA level the epilogue is built for. On x86-64 cd_act_apply is built for the
 * baseline ISA, which has no FMA, so the epilogue's AVX2/AVX-512 builds must not contract
 * either. Elsewhere (aarch64: FMA in the baseline) the epilogue is built for the same ISA as
 * cd_act_apply and contracts as it does (the aarch64 cross test checks it under qemu). */
#ifdef NN_X86
#define EPI_NOFMA __attribute__((optimize("fp-contract=off")))
#else
#define EPI_NOFMA
#endif
#define EPI_ARGS (const F(epi_ctx) * e, int64_t t0, int64_t t1, NN_T *restrict out)
EPI_NOFMA static void F(epi_range_default) EPI_ARGS { F(epi_range_body)(e, t0, t1, out, 1); }
/* The half epilogue is not built for AVX512-FP16: GCC 12 turns its scalar selects into
 * masked vmovsh forms the installed assembler rejects; the F16C build (convert, add in
 * float, round to half: exact for one half + half) is as fast for this memory-bound pass. */
#if defined(NN_X86) && !NN_IS_HALF
EPI_NOFMA __attribute__((target(NN_ISA_FAST))) static void F(epi_range_fast) EPI_ARGS {
    F(epi_range_body)(e, t0, t1, out, 0);
}
#endif
#ifdef NN_X86
EPI_NOFMA __attribute__((target(NN_ISA_MID))) static void F(epi_range_mid) EPI_ARGS {
    F(epi_range_body)(e, t0, t1, out, 1);
}
#endif
#undef EPI_ARGS

static void F(epilogue)(cd_op_ctx *c, const conv_geo *g, NN_T *out) {
    cd_value *bv = cd_in(c, "Bias", 0), *av = cd_in(c, "Prelu_alpha", 0), *sv = cd_in(c, "SecondInput", 0);
    F(epi_ctx)
    e = {bv ? bv->data : NULL,
         av ? av->data : NULL,
         g->residual ? sv->data : NULL,
         g->act,
         g->prelu_mode,
         g->residual_relu,
         g->Ho * g->Wo,
         g->Cout};
    if (!e.bias && e.act.kind == CD_ACT_NONE && !e.second) return;
    F(epi_range_fn) range = F(epi_range_default);
#ifdef NN_X86
    __builtin_cpu_init();
#if !NN_IS_HALF
    if (NN_ISA_FAST_CHECK)
        range = F(epi_range_fast);
    else
#endif
        if (NN_ISA_MID_CHECK)
        range = F(epi_range_mid);
#endif
    const int64_t total = g->N * g->Cout;
    const int threads = c->threads;
    const bool par = threads > 1 && total > 1 && total * e.HWo >= NN_PAR_MIN_WORK;
    const int64_t parts = par ? threads : 1;
    CD_PAR_FOR(par, threads, int64_t, p, parts, { range(&e, total * p / parts, total * (p + 1) / parts, out); });
}

/* *fused: set when the kernel applied bias and activation in its store (the epilogue is then
 * skipped). */
static cd_status F(conv_fwd)(cd_op_ctx *c, const conv_geo *g, const NN_T *in, const NN_T *w, NN_T *out, bool *fused) {
    *fused = false;
    const int64_t cig = g->Cin / g->groups, cog = g->Cout / g->groups, HWo = g->Ho * g->Wo;
    const int K = (int)(cig * g->KH * g->KW);
#if !NN_IS_HALF
    /* depthwise on maps whose rows are up to DW_SMALL_WO long: the vector over channels
     * (conv_ocv.h), bias and activation in its store; the same bits as F(conv_direct) */
    if (cig == 1 && g->groups > 1 && g->Cout == g->groups && g->Wo <= DW_SMALL_WO && cd_conv_ocv_level()) {
        const cd_value *bv = cd_in(c, "Bias", 0);
        const bool fuse = !g->residual && cd_conv_ocv_epi_ok(&g->act);
        const cd_conv_ocv_epi epi = {bv ? (const float *)bv->data : NULL, g->act};
        const cd_conv_direct_geo dg = {in,         (int)g->Cin, (int)g->H,  (int)g->W,  (int)g->KH,
                                       (int)g->KW, (int)g->sh,  (int)g->sw, (int)g->dh, (int)g->dw,
                                       (int)g->pt, (int)g->pl,  (int)g->Ho, (int)g->Wo};
        const bool par = c->threads > 1 && g->N * g->Cout * HWo * g->KH * g->KW >= NN_DW_PAR_MIN_MACS;
        if (!cd_conv_ocv_dw_f32(&dg, (int)g->N, w, out, fuse ? &epi : NULL, par ? c->threads : 1))
            return cd_op_fail(c, CD_E_NOMEM, "out of memory for the depthwise conv's channel-block scratch");
        *fused = fuse;
        return CD_OK;
    }
#endif
    if (cig == 1 && g->groups > 1) {
#if !NN_IS_HALF
        /* the epilogue on each finished plane: the same bits as the separate pass */
        cd_gemm_epi de;
        const conv_state *dcs = c->state;
        const bool dfuse = dcs && dcs->blk_epi && gemm_epi_of(g, cd_in(c, "Bias", 0), 0, &de) &&
            (de.bias || de.act != CD_GEMM_EPI_NONE);
        cd_status ds = F(conv_direct)(c, g, in, w, out, 0.0f, dfuse ? &de : NULL);
        *fused = !ds && dfuse;
        return ds;
#else
        return F(conv_direct)(c, g, in, w, out, 0.0f, NULL);
#endif
    }
    bool pointwise = conv_pointwise(g);
    /* Short reductions (a first layer over 3 channels: K = 27) run the direct kernel: building
     * im2col panels cost more than the arithmetic. Same bits as the GEMM path
     * (cd_conv_direct_f32). */
#if !NN_IS_HALF
    const cd_conv_direct_geo fg = {NULL,       (int)cig,   (int)g->H,  (int)g->W,  (int)g->KH, (int)g->KW, (int)g->sh,
                                   (int)g->sw, (int)g->dh, (int)g->dw, (int)g->pt, (int)g->pl, (int)g->Ho, (int)g->Wo};
    const bool direct = !pointwise && cd_conv_direct_fits_f32(&fg, (int)cog);
    /* the filter packed at prepare for cd_conv_ocv_f32 (conv_ocv.h), used where the level that
     * packed it still runs (CLDIFF_GEMM_F32_KERNEL is read at every call) */
    const conv_state *cs = c->state;
    const float *ocv_wp = cs && cs->wp && cd_conv_ocv_level() ? cs->wp : NULL;
    const size_t ocv_group = cs ? cs->wp_group : 0;
    /* the epilogue on each finished block of the direct conv and of the direct GEMM (1x1 convs of
     * one group, where the product takes the direct path): the same bits as the separate pass */
    const cd_value *bias_v = cs && cs->blk_epi ? cd_in(c, "Bias", 0) : NULL; /* looked up only where used */
    cd_gemm_epi gepi;
    const bool gfuse = (direct || (pointwise && g->groups == 1)) && cs && cs->blk_epi &&
        gemm_epi_of(g, bias_v, 0, &gepi) && (gepi.bias || gepi.act != CD_GEMM_EPI_NONE);
    bool pw_fused = false, pw_plain = false;
#endif
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t gr = 0; gr < g->groups; gr++) {
            const NN_T *x = in + (n * g->Cin + gr * cig) * g->H * g->W;
            const NN_T *a = w + gr * cog * K;
            NN_T *y = out + (n * g->Cout + gr * cog) * HWo;
#if !NN_IS_HALF
            if (direct) {
                cd_conv_direct_geo dg = {x,          (int)cig,   (int)g->H,  (int)g->W,  (int)g->KH,
                                         (int)g->KW, (int)g->sh, (int)g->sw, (int)g->dh, (int)g->dw,
                                         (int)g->pt, (int)g->pl, (int)g->Ho, (int)g->Wo};
                cd_gemm_epi ge;
                const bool fz = gfuse && gemm_epi_of(g, bias_v, gr * cog, &ge);
                if (!cd_conv_direct_epi_f32(&dg, (int)cog, a, y, fz ? &ge : NULL, c->threads))
                    return cd_op_fail(c, CD_E_NOMEM, "out of memory for the direct conv's scratch rows");
                *fused = fz;
                continue;
            }
#endif
#if !NN_IS_HALF
            const float *wt = c->state ? ((const conv_state *)c->state)->wt : NULL;
            if (wt) { /* prepared: the filter k-major, for the one-column product */
                GEMM((int)cog, 1, K, (NN_T)1, wt, (int)g->Cout, true, x, 1, false, (NN_T)0, y, 1, c->threads);
                continue;
            }
#endif
#if !NN_IS_HALF
            if (ocv_wp) { /* prepared: the filter packed for the channel-vector conv */
                const cd_value *bv = cd_in(c, "Bias", 0);
                const bool fuse = !g->residual && cd_conv_ocv_epi_ok(&g->act);
                const cd_conv_ocv_epi epi = {bv ? (const float *)bv->data + gr * cog : NULL, g->act};
                const cd_conv_direct_geo og = {x,          (int)cig,   (int)g->H,  (int)g->W,  (int)g->KH,
                                               (int)g->KW, (int)g->sh, (int)g->sw, (int)g->dh, (int)g->dw,
                                               (int)g->pt, (int)g->pl, (int)g->Ho, (int)g->Wo};
                if (!cd_conv_ocv_f32(&og, (int)cog, ocv_wp + (size_t)gr * ocv_group, y, fuse ? &epi : NULL, c->threads))
                    return cd_op_fail(c, CD_E_NOMEM, "out of memory for the conv's padded input copy");
                *fused = fuse;
                continue;
            }
#endif
#if !NN_IS_HALF
            if (pointwise && gfuse) { /* one group: n runs over the batch, the same decision each time */
                if (cd_gemm_f32_epi((int)cog, (int)HWo, K, a, K, x, (int)HWo, y, (int)HWo, &gepi, c->threads))
                    pw_fused = true;
                else
                    pw_plain = true;
                continue;
            }
#endif
            if (pointwise) {
                GEMM((int)cog, (int)HWo, K, (NN_T)1, a, K, false, x, (int)HWo, false, (NN_T)0, y, (int)HWo, c->threads);
            } else {
                F(im2col_ctx)
                ix = {x,          (int)g->H,  (int)g->W,  (int)g->KH, (int)g->KW, (int)g->sh,
                      (int)g->sw, (int)g->dh, (int)g->dw, (int)g->pt, (int)g->pl, (int)g->Wo};
                GEMM_PB((int)cog, (int)HWo, K, (NN_T)1, a, K, false, F(pack_im2col), &ix, (NN_T)0, y, (int)HWo,
                        c->threads);
            }
        }
#if !NN_IS_HALF
    if (pw_fused && pw_plain) /* cannot happen (the decision depends on the dims only) */
        return cd_op_fail(c, CD_E_INTERNAL, "the 1x1 conv's epilogue was fused for some images only");
    if (pw_fused) *fused = true;
#endif
    return CD_OK;
}

/* Transposed conv: per group, col[(oc,ky,kx)][pixel] = W_g^T x X_g over chunks of input
 * pixels, then col2im scatters the taps into the output. */
static cd_status F(conv_transpose_fwd)(cd_op_ctx *c, const conv_geo *g, const NN_T *in, const NN_T *w, NN_T *out) {
    const int64_t cig = g->Cin / g->groups, cog = g->Cout / g->groups, HW = g->H * g->W, HWo = g->Ho * g->Wo;
    const int64_t Mrows = cog * g->KH * g->KW;
    /* bound the column buffer to ~16 MiB of elements */
    int64_t chunk = imax64(1, imin64(HW, (int64_t)(4 << 20) / imax64(1, Mrows)));
    NN_T *col = malloc((size_t)Mrows * chunk * sizeof(NN_T));
    if (!col)
        return cd_op_fail(c, CD_E_NOMEM, "out of memory for the %lld x %lld column buffer", (long long)Mrows,
                          (long long)chunk);
    for (int64_t i = 0; i < g->N * g->Cout * HWo; i++) out[i] = (NN_T)0;
    /* One chunk (all input pixels in col): each output element's sum gathered in a register, its
     * taps in the (ky, kx) order the scatter below adds them in (ky, then kx, ascending: each tap
     * reaches an output element from one input pixel at most), from 0: the same additions, so
     * the same bits, without the scatter's read-modify-write of the output per tap and its
     * per-(tap, input row) loop setup (keypoint: 3- and 6-pixel input rows). Tables: per output
     * row its (ky, iy) taps as offsets into col, per output column its (kx, ix) ones. col is then
     * the transposed product, X^T x W_g ([pixel][(oc, ky, kx)]): each element the same products
     * (a * b = b * a exactly) summed over the input channels in the same order and KC slices
     * (gemm.h: the paths do not show in the bits), with the (oc, ky, kx) rows (hundreds) as the
     * vector axis instead of the input pixels (keypoint: 12 and 48, under one 16-lane vector
     * or three, one column of the register tile). Only where the rows are at least as many as
     * the pixels: ppocr_v3_det's 2x2 deconvs (96 and 4 rows, 6400 and 25600 pixels) were slower
     * this way (1.8 -> 2.4 ms: a row vector and a half, 2-tap sums). float only (the half one
     * keeps the scatter). */
    int64_t *ytab = NULL, *xtab = NULL;
    int *yn = NULL, *xn = NULL;
#if !NN_IS_HALF
    /* the gather pass on AVX-512 or AVX2 (cd_convt_gather_f32: up to 16 taps, 32-bit offsets) */
    const bool ctv = cd_conv_ocv_level() && g->KH * g->KW <= 16 && g->Ho * g->Wo <= INT32_MAX / 16 &&
        g->H * g->W * g->Cout * g->KH * g->KW <= INT32_MAX;
#endif
    if (!NN_IS_HALF && chunk >= HW && Mrows >= HW) {
        ytab = malloc((size_t)(g->Ho * g->KH + g->Wo * g->KW) * sizeof(int64_t));
        yn = malloc((size_t)(g->Ho + g->Wo) * sizeof(int));
        if (ytab && yn) {
            xtab = ytab + g->Ho * g->KH;
            xn = yn + g->Ho;
            for (int64_t oy = 0; oy < g->Ho; oy++) {
                int k = 0;
                for (int64_t ky = 0; ky < g->KH; ky++) {
                    const int64_t t = oy + g->pt - ky * g->dh;
                    if (t < 0 || t % g->sh || t / g->sh >= g->H) continue;
                    ytab[oy * g->KH + k++] = ky * g->KW + t / g->sh * g->W * Mrows;
                }
                yn[oy] = k;
            }
            for (int64_t ox = 0; ox < g->Wo; ox++) {
                int k = 0;
                for (int64_t kx = 0; kx < g->KW; kx++) {
                    const int64_t t = ox + g->pl - kx * g->dw;
                    if (t < 0 || t % g->sw || t / g->sw >= g->W) continue;
                    xtab[ox * g->KW + k++] = kx + t / g->sw * Mrows;
                }
                xn[ox] = k;
            }
        } else {
            free(ytab);
            free(yn);
            ytab = NULL;
            yn = NULL;
        }
    }
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t gr = 0; gr < g->groups; gr++) {
            const NN_T *x = in + (n * g->Cin + gr * cig) * HW;
            const NN_T *a = w + gr * cig * Mrows; /* [cig x Mrows] row-major */
            NN_T *y = out + (n * g->Cout + gr * cog) * HWo;
            for (int64_t p0 = 0; p0 < HW; p0 += chunk) {
                int64_t pc = imin64(chunk, HW - p0);
                if (ytab) { /* col transposed: [pixel][(oc, ky, kx)] */
                    GEMM((int)HW, (int)Mrows, (int)cig, (NN_T)1, x, (int)HW, true, a, (int)Mrows, false, (NN_T)0, col,
                         (int)Mrows, c->threads);
                } else
                    GEMM((int)Mrows, (int)pc, (int)cig, (NN_T)1, a, (int)Mrows, true, x + p0, (int)HW, false, (NN_T)0,
                         col, (int)pc, c->threads);
                const int threads = c->threads;
                if (ytab) {
                    const int64_t KH = g->KH, KW = g->KW, Ho = g->Ho, Wo = g->Wo, tap = KH * KW;
                    const int nt = (double)cog * HWo * KH * KW < 65536.0 ? 1 : threads;
#if !NN_IS_HALF
                    /* 16 (AVX2: 8) channels per vector (conv_ocv.h cd_convt_gather_f32), the same sums */
                    if (ctv) {
                        const int64_t nb = (cog + CD_OCV_BLOCK - 1) / CD_OCV_BLOCK;
                        bool cok = true;
#pragma omp parallel for num_threads(nb > 1 ? nt : 1) schedule(static)
                        for (int64_t b = 0; b < nb; b++)
                            if (!cd_convt_gather_f32(col, y, (int)(b * CD_OCV_BLOCK), (int)cog, (int)g->H, (int)g->W,
                                                     (int)Ho, (int)Wo, (int)KH, (int)KW, (int)g->sh, (int)g->sw,
                                                     (int)g->dh, (int)g->dw, (int)g->pt, (int)g->pl)) {
#pragma omp atomic write
                                cok = false;
                            }
                        if (cok) continue;
                    }
#endif
#pragma omp parallel for num_threads(nt) schedule(static)
                    for (int64_t oc = 0; oc < cog; oc++) {
                        const NN_T *co = col + oc * tap;
                        NN_T *yp = y + oc * HWo;
                        for (int64_t oy = 0; oy < Ho; oy++) {
                            const int64_t *yl = ytab + oy * KH;
                            const int ny = yn[oy];
                            NN_T *yr = yp + oy * Wo;
                            for (int64_t ox = 0; ox < Wo; ox++) {
                                const int64_t *xl = xtab + ox * KW;
                                const int nx = xn[ox];
                                NN_T acc = (NN_T)0;
                                for (int i = 0; i < ny; i++) {
                                    const NN_T *cy = co + yl[i];
                                    for (int j = 0; j < nx; j++) acc += cy[xl[j]];
                                }
                                yr[ox] = acc;
                            }
                        }
                    }
                    continue;
                }
                /* 2-wide taps at stride 2, no padding or dilation across: each output column gets
                 * one kx tap (even columns kx 0, odd kx 1), so an input row's two taps can be added
                 * in one interleaved pass, the order per element unchanged (ky outer, one kx);
                 * ppocr_v3_det's 2x2 deconvs, a strided read-modify-write per tap before. */
                const bool pair2 = g->KW == 2 && g->sw == 2 && g->dw == 1 && g->pl == 0 && 2 * g->W <= g->Wo;
                /* parallel over output channels: each writes only its own plane */
#pragma omp parallel for num_threads(threads) schedule(static)
                for (int64_t oc = 0; oc < cog; oc++) {
                    NN_T *yp = y + oc * HWo;
                    for (int64_t ky = 0; ky < g->KH; ky++) {
                        if (pair2) { /* both kx taps of an input row in one pass (see pair2) */
                            const NN_T *c0 = col + (oc * g->KH + ky) * 2 * pc, *c1 = c0 + pc;
                            int64_t iy = p0 / g->W, ix0 = p0 % g->W;
                            for (int64_t q = 0; q < pc; iy++, ix0 = 0) {
                                const int64_t n = imin64(g->W - ix0, pc - q), oy = iy * g->sh - g->pt + ky * g->dh;
                                if (oy >= 0 && oy < g->Ho) {
                                    NN_T *yr = yp + oy * g->Wo;
                                    const NN_T *a0 = c0 + q - ix0, *a1 = c1 + q - ix0;
                                    for (int64_t ix = ix0; ix < ix0 + n; ix++) {
                                        yr[2 * ix] += a0[ix];
                                        yr[2 * ix + 1] += a1[ix];
                                    }
                                }
                                q += n;
                            }
                            continue;
                        }
                        for (int64_t kx = 0; kx < g->KW; kx++) {
                            const NN_T *cr = col + ((oc * g->KH + ky) * g->KW + kx) * pc;
                            /* input pixel (iy, ix) -> output (iy*sh - pt + ky*dh, ix*sw + off): the
                             * columns inside the output are one range [lo, hi) of ix for every row */
                            const int64_t off = kx * g->dw - g->pl, sw = g->sw;
                            const int64_t lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
                            const int64_t hi = g->Wo - off <= 0 ? 0 : (g->Wo - off - 1) / sw + 1;
                            int64_t iy = p0 / g->W, ix0 = p0 % g->W;
                            for (int64_t q = 0; q < pc; iy++, ix0 = 0) {
                                const int64_t n = imin64(g->W - ix0, pc - q), oy = iy * g->sh - g->pt + ky * g->dh;
                                if (oy >= 0 && oy < g->Ho) {
                                    NN_T *yr = yp + oy * g->Wo + off;
                                    const NN_T *cq = cr + q - ix0; /* cq[ix]: the value of input column ix */
                                    const int64_t a = imax64(ix0, lo), b = imin64(ix0 + n, hi);
                                    for (int64_t ix = a; ix < b; ix++) yr[ix * sw] += cq[ix];
                                }
                                q += n;
                            }
                        }
                    }
                }
            }
        }
    free(col);
    free(ytab);
    free(yn);
    return CD_OK;
}

static cd_status F(conv_run)(cd_op_ctx *c, const conv_geo *g) {
    const NN_T *in = cd_in(c, "Input", 0)->data, *w = cd_in(c, "Filter", 0)->data;
    NN_T *out = cd_out(c, "Output", 0)->data;
    bool fused = false;
    cd_status s = g->transpose ? F(conv_transpose_fwd)(c, g, in, w, out) : F(conv_fwd)(c, g, in, w, out, &fused);
    if (s) return s;
    if (!fused) F(epilogue)(c, g, out);
    return CD_OK;
}

#undef CAT_
#undef CAT
#undef F
#undef GEMM
#undef GEMM_PB

#undef NN_T
#undef NN_S
#undef NN_IS_HALF
#undef NN_ISA_FAST
#undef NN_ISA_FAST_CHECK
#undef NN_ISA_MID
#undef NN_ISA_MID_CHECK
