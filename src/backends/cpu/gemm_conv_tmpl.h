/* ---- direct convolution for a short reduction (see cd_conv_direct_f32) ----
 * A tile is mr (<= 4) output channels x nv (1 to 5) vectors of one output row; for every
 * tap k (ic, ky, kx in order) the nv input vectors are loaded once (contiguous: stride 2 reads
 * a scratch whose rows are split into even and odd columns; lane by lane for other strides)
 * and multiply-added into every
 * channel's accumulators: acc += w * x, as the GEMM micro-kernel does, padding taps
 * included (w * 0).
 *
 * A part of gemm_tmpl.h's template body, not a header on its own: gemm_tmpl.h includes it
 * in the instantiations with the direct paths (G_DIRECT: float), with GT, GS and the G_*
 * parameters defined and F(vec), F(store_row), F(store_tile) and the other helpers before
 * the include in scope.
 * Include it nowhere else. */
#ifndef GT
#error "a part of gemm_tmpl.h's template body: included by gemm_tmpl.h only"
#endif

static inline __attribute__((always_inline)) void F(cd_load)(const GT *p, const int sw, F(vec) * out) {
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
    int Wh; /* 0, or (stride 2) each scratch row split into its even and its odd padded columns, Wh each */
    void (*split)(GT *d, int Wh, int pl, const GT *x, int W); /* F(cd_split_body) for this level */
    /* per k = (ic, ky, kx): its offset in the band scratch, ic * Hb * Wp + ky * dh * Wp + kx * dw
     * (split rows: + (kx * dw odd) * Wh + kx * dw / 2) */
    const int *tap;
    const cd_gemm_epi *epi; /* applied to each finished row of mr channels (F(cd_band_run)), or NULL */
    F(epi_block_fn) efn;
} F(cd_band);

/* mr output channels x nv vectors of one output row. K in the GEMM's KC slices (the sum of a
 * slice stored, later slices added to it: F(store_tile) with first = 0), so a conv with a
 * long reduction gives the im2col + GEMM bits too. */
static inline __attribute__((always_inline)) void F(cd_tile)(const F(cd_band) * bd, const GT *restrict x,
                                                             const GT *restrict w, int K, GT *restrict y, int ldy,
                                                             const int mr, const int nv, int ncols, const int sw) {
    const int *restrict tap = bd->tap;
    for (int k0 = 0; k0 < K; k0 += KC) {
        const int k1 = imin(K, k0 + KC);
        F(vec) acc[4][5];
#pragma GCC unroll 4
        for (int i = 0; i < mr; i++)
#pragma GCC unroll 5
            for (int v = 0; v < nv; v++) acc[i][v] = (F(vec)){0};
        for (int k = k0; k < k1; k++) {
            F(vec) xv[5];
            const GT *xk = x + tap[k];
#pragma GCC unroll 5
            for (int v = 0; v < nv; v++) F(cd_load)(xk + v * NR * sw, sw, &xv[v]);
#pragma GCC unroll 4
            for (int i = 0; i < mr; i++) {
                GT a = w[(size_t)i * K + k];
                F(vec) av = BCAST16(a);
#pragma GCC unroll 5
                for (int v = 0; v < nv; v++) acc[i][v] += av * xv[v];
            }
        }
        F(store_tile)(y, (size_t)ldy, &acc[0][0], 5, mr, nv, ncols, (GT)1, (GT)0, k0 == 0);
    }
}

#if defined(CD_GEMM_X86)
/* F(cd_tile) for one vector of a stride-1 row on AVX2 + FMA (mr <= 4 channels x 16 columns
 * in 8 accumulator registers): the same FMA per tap in the same order; the generic 16-lane
 * code kept its accumulators in memory there. */
static inline __attribute__((always_inline, target(G_ISA_MID))) void
F(cd_tile_avx2_mr)(const F(cd_band) * bd, const GT *restrict x, const GT *restrict w, int K, GT *restrict y, int ldy,
                   const int mr, int ncols) {
    const int *restrict tap = bd->tap;
    for (int k0 = 0; k0 < K; k0 += KC) {
        const int k1 = imin(K, k0 + KC);
        __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
        for (int k = k0; k < k1; k++) {
            const GT *xk = x + tap[k], *wk = w + k;
            const __m256 b0 = _mm256_loadu_ps(xk), b1 = _mm256_loadu_ps(xk + 8);
            __m256 a = _mm256_broadcast_ss(wk);
            c00 = _mm256_fmadd_ps(a, b0, c00);
            c01 = _mm256_fmadd_ps(a, b1, c01);
            if (mr > 1) {
                a = _mm256_broadcast_ss(wk + K);
                c10 = _mm256_fmadd_ps(a, b0, c10);
                c11 = _mm256_fmadd_ps(a, b1, c11);
            }
            if (mr > 2) {
                a = _mm256_broadcast_ss(wk + 2 * (size_t)K);
                c20 = _mm256_fmadd_ps(a, b0, c20);
                c21 = _mm256_fmadd_ps(a, b1, c21);
            }
            if (mr > 3) {
                a = _mm256_broadcast_ss(wk + 3 * (size_t)K);
                c30 = _mm256_fmadd_ps(a, b0, c30);
                c31 = _mm256_fmadd_ps(a, b1, c31);
            }
        }
        F(vec) acc[4];
        float *o = (float *)acc;
        _mm256_storeu_ps(o, c00);
        _mm256_storeu_ps(o + 8, c01);
        _mm256_storeu_ps(o + NR, c10);
        _mm256_storeu_ps(o + NR + 8, c11);
        _mm256_storeu_ps(o + 2 * NR, c20);
        _mm256_storeu_ps(o + 2 * NR + 8, c21);
        _mm256_storeu_ps(o + 3 * NR, c30);
        _mm256_storeu_ps(o + 3 * NR + 8, c31);
        F(store_tile)(y, (size_t)ldy, acc, 1, mr, 1, ncols, (GT)1, (GT)0, k0 == 0);
    }
}

/* a function of its own (not inlined): the row bodies of the other ISA levels call it too */
__attribute__((noinline, target(G_ISA_MID))) static void F(cd_tile_avx2)(const F(cd_band) * bd, const GT *restrict x,
                                                                         const GT *restrict w, int K, GT *restrict y,
                                                                         int ldy, int mr, int ncols) {
    switch (mr) {
    case 1: F(cd_tile_avx2_mr)(bd, x, w, K, y, ldy, 1, ncols); break;
    case 2: F(cd_tile_avx2_mr)(bd, x, w, K, y, ldy, 2, ncols); break;
    case 3: F(cd_tile_avx2_mr)(bd, x, w, K, y, ldy, 3, ncols); break;
    default: F(cd_tile_avx2_mr)(bd, x, w, K, y, ldy, 4, ncols); break;
    }
}
#endif

/* Output channels [oc0, oc0+mr) of output row oy, whose taps start at band row rb. Tiles of up
 * to nvmax vectors (the scratch holds whole vectors past Wo); five remaining vectors go as
 * 3 + 2 rather than 4 + 1 (a one-vector tile has too few accumulators to hide the FMA
 * latency). On AVX-512 (nvmax 4) stride-1 rows take tiles of up to 5 vectors (4 x 5 = 20
 * accumulators of the 32 registers, 5 input loads and 4 broadcasts per tap where 3 + 2 tiles
 * made 5 and 8), longer rows split evenly. ppocr_v3_det's two 96 -> 24 3x3 convs over 80x80
 * (one 5-vector tile per row): 1% faster on an FMA-bound Zen 4 core (53 GMAC/s, 8 interleaved
 * pairs); the fewer loads per FMA are for cores with two 512-bit FMA units. Stride-2 rows read
 * a split scratch (bd->Wh) and are stride-1 rows here; other strides keep the 3 + 2 split.
 * avx2: stride-1 rows through F(cd_tile_avx2). */
static inline __attribute__((always_inline)) void F(cd_row_body)(const F(cd_band) * bd, const GT *xband, const GT *W,
                                                                 GT *Y, int oc0, int mr, int oy, int rb,
                                                                 const int nvmax, const int avx2) {
    const cd_conv_direct_geo *g = bd->g;
    const int K = g->Cin * g->KH * g->KW, Wo = g->Wo, sw = bd->Wh ? 1 : g->sw;
    const size_t HWo = (size_t)g->Ho * Wo;
    const GT *w = W + (size_t)oc0 * K;
    GT *yrow = Y + (size_t)oc0 * HWo + (size_t)oy * Wo;
    const GT *xrow = xband + (size_t)rb * bd->Wp;
    (void)avx2;
    for (int ox = 0; ox < Wo;) {
        const int rem = (Wo - ox + NR - 1) / NR;
        /* AVX-512 stride-1 rows: up to 5 vectors per tile (20 accumulators), the rest split evenly
         * (6 = 3 + 3, 10 = 5 + 5); other rows as before */
        const int nv = nvmax == 4 && sw == 1 ? (rem <= 5 ? rem : (rem + (rem + 4) / 5 - 1) / ((rem + 4) / 5))
            : rem <= nvmax                   ? rem
            : nvmax == 4 && rem == 5         ? 3
                                             : nvmax;
        const int ncols = imin(Wo - ox, nv * NR);
        const GT *x = xrow + (size_t)ox * sw;
        GT *y = yrow + ox;
#if defined(CD_GEMM_X86)
        if (avx2 && sw == 1) {
            F(cd_tile_avx2)(bd, x, w, K, y, (int)HWo, mr, ncols);
            ox += ncols;
            continue;
        }
#endif
#define CT(MRC, NVC, SWC) F(cd_tile)(bd, x, w, K, y, (int)HWo, MRC, NVC, ncols, SWC)
#define CT_SW(MRC, NVC)                                                                                                \
    if (sw == 1)                                                                                                       \
        CT(MRC, NVC, 1);                                                                                               \
    else if (sw == 2)                                                                                                  \
        CT(MRC, NVC, 2);                                                                                               \
    else                                                                                                               \
        CT(MRC, NVC, sw);
#define CT_MR(MRC)                                                                                                     \
    switch (nv) {                                                                                                      \
    case 5: CT_SW(MRC, 5) break;                                                                                       \
    case 4: CT_SW(MRC, 4) break;                                                                                       \
    case 3: CT_SW(MRC, 3) break;                                                                                       \
    case 2: CT_SW(MRC, 2) break;                                                                                       \
    default: CT_SW(MRC, 1) break;                                                                                      \
    }
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

#define CD_ROW_ARGS (const F(cd_band) * bd, const GT *xband, const GT *W, GT *Y, int oc0, int mr, int oy, int rb)
typedef void(*F(cd_row_fn)) CD_ROW_ARGS;
__attribute__((unused)) static void F(cd_row_default) CD_ROW_ARGS {
    F(cd_row_body)(bd, xband, W, Y, oc0, mr, oy, rb, 1, 0);
}
#ifdef CD_GEMM_X86
__attribute__((target(G_ISA_FAST))) static void F(cd_row_fast) CD_ROW_ARGS {
    F(cd_row_body)(bd, xband, W, Y, oc0, mr, oy, rb, 4, 0);
}
__attribute__((target(G_ISA_MID))) static void F(cd_row_mid) CD_ROW_ARGS {
    F(cd_row_body)(bd, xband, W, Y, oc0, mr, oy, rb, 1, 1);
}
#endif
#undef CD_ROW_ARGS

#define CD_BAND_ROWS 4 /* output rows per band (work item) */

/* One input row x[0..W) (NULL: a padding row, zeros) into a split scratch row: padded column
 * c = pl + ix goes to d[(c & 1) * Wh + (c >> 1)]. Columns outside the input are never written
 * (they stay zero). 32 columns per step: the even and the odd lanes of two vectors. */
static inline __attribute__((always_inline)) void F(cd_split_body)(GT *d, int Wh, int pl, const GT *x, int W) {
    GT *pe = d + (pl & 1) * Wh + (pl >> 1), *po = d + ((pl + 1) & 1) * Wh + ((pl + 1) >> 1);
    int ix = 0;
    if (x) {
#if !defined(__clang__)
        typedef G_LANE_INT F(sidx) __attribute__((vector_size(NR * sizeof(G_LANE_INT))));
        const F(sidx) ev = {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30};
        const F(sidx) od = {1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31};
#endif
        for (; ix + 2 * NR <= W; ix += 2 * NR) {
            F(vec) a, b;
            memcpy(&a, x + ix, sizeof a);
            memcpy(&b, x + ix + NR, sizeof b);
#if defined(__clang__)
            const F(vec) e = __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
            const F(vec) o = __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
#else
            const F(vec) e = __builtin_shuffle(a, b, ev), o = __builtin_shuffle(a, b, od);
#endif
            memcpy(pe + ix / 2, &e, sizeof e);
            memcpy(po + ix / 2, &o, sizeof o);
        }
    }
    for (; ix < W; ix += 2) {
        pe[ix / 2] = x ? x[ix] : (GT)0;
        if (ix + 1 < W) po[ix / 2] = x ? x[ix + 1] : (GT)0;
    }
}

typedef void (*F(cd_split_fn))(GT *d, int Wh, int pl, const GT *x, int W);
__attribute__((unused)) static void F(cd_split_default)(GT *d, int Wh, int pl, const GT *x, int W) {
    F(cd_split_body)(d, Wh, pl, x, W);
}
#ifdef CD_GEMM_X86
__attribute__((target(G_ISA_FAST))) static void F(cd_split_fast)(GT *d, int Wh, int pl, const GT *x, int W) {
    F(cd_split_body)(d, Wh, pl, x, W);
}
__attribute__((target(G_ISA_MID))) static void F(cd_split_mid)(GT *d, int Wh, int pl, const GT *x, int W) {
    F(cd_split_body)(d, Wh, pl, x, W);
}
#endif

/* One band: output rows [oy0, oy1), every output channel. xs: this thread's scratch, whose
 * columns outside the input window are zero. */
static void F(cd_band_run)(F(cd_row_fn) fn, const F(cd_band) * bd, GT *xs, const GT *W, GT *Y, int Cout, int oy0,
                           int oy1) {
    const cd_conv_direct_geo *g = bd->g;
    const GT *x = (const GT *)g->x;
    const int rows = (oy1 - oy0 - 1) * g->sh + (g->KH - 1) * g->dh + 1;
    for (int ic = 0; ic < g->Cin; ic++)
        for (int r = 0; r < rows; r++) {
            const int iy = oy0 * g->sh - g->pt + r;
            if (bd->Wh) {
                bd->split(xs + ((size_t)ic * bd->Hb + r) * bd->Wp, bd->Wh, g->pl,
                          iy >= 0 && iy < g->H ? x + ((size_t)ic * g->H + iy) * g->W : NULL, g->W);
                continue;
            }
            GT *d = xs + ((size_t)ic * bd->Hb + r) * bd->Wp + g->pl;
            if (iy >= 0 && iy < g->H)
                memcpy(d, x + ((size_t)ic * g->H + iy) * g->W, (size_t)g->W * sizeof(GT));
            else
                memset(d, 0, (size_t)g->W * sizeof(GT));
        }
    for (int oy = oy0; oy < oy1; oy++)
        for (int oc = 0; oc < Cout; oc += 4) {
            fn(bd, xs, W, Y, oc, imin(4, Cout - oc), oy, (oy - oy0) * g->sh);
            if (bd->epi) /* the row of these channels is in L1: [Cout][Ho * Wo] rows oc.., columns oy * Wo.. */
                bd->efn(Y, (size_t)g->Ho * g->Wo, oc, oc + imin(4, Cout - oc), oy * g->Wo, g->Wo, bd->epi);
        }
}

bool CAT(cd_conv_direct, GS)(const cd_conv_direct_geo *g, int Cout, const GT *W, GT *Y, int threads) {
    return CAT(cd_conv_direct_epi, GS)(g, Cout, W, Y, NULL, threads);
}

bool CAT(cd_conv_direct_epi, GS)(const cd_conv_direct_geo *g, int Cout, const GT *W, GT *Y, const cd_gemm_epi *epi,
                                 int threads) {
    F(cd_row_fn) fn = F(cd_row_default);
    F(cd_split_fn) split = F(cd_split_default);
#ifdef CD_GEMM_X86
    __builtin_cpu_init();
    if (G_ISA_FAST_CHECK) {
        fn = F(cd_row_fast);
        split = F(cd_split_fast);
    } else if (G_ISA_MID_CHECK) {
        fn = F(cd_row_mid);
        split = F(cd_split_mid);
    }
#endif
    const int Wo16 = (g->Wo + NR - 1) / NR * NR;
    int Wp = (Wo16 - 1) * g->sw + (g->KW - 1) * g->dw + 2;
    if (Wp < g->pl + g->W) Wp = g->pl + g->W;
    /* stride 2: every scratch row as its even padded columns, then its odd ones (F(cd_split_body)),
     * so that a tap's 16 inputs are 16 adjacent floats and the row runs the stride-1 tiles (one
     * load per vector and tap where it was the even lanes of two loads and a permute; on AVX2 the
     * 256-bit tiles where the generic 16-lane code kept its accumulators in memory): the 3-channel
     * first layers (K = 27) of ocr_cls, picodet, keypoint and ppocr_v3_det 10-35% faster on
     * AVX-512, 4.5-5x on AVX2 + FMA, 2x at the portable level. The same taps in the same order,
     * so the same bits. */
    int Wh = 0;
    if (g->sw == 2) {
        Wh = Wo16 + (g->KW - 1) * g->dw / 2 + 1;
        if (Wh < (g->pl + g->W + 1) / 2) Wh = (g->pl + g->W + 1) / 2;
        Wp = 2 * Wh;
    }
    const int Hb = (CD_BAND_ROWS - 1) * g->sh + (g->KH - 1) * g->dh + 1, K = g->Cin * g->KH * g->KW;
    int *tap = malloc((size_t)K * sizeof *tap);
    if (!tap) return false;
    for (int ic = 0, k = 0; ic < g->Cin; ic++)
        for (int ky = 0; ky < g->KH; ky++)
            for (int kx = 0; kx < g->KW; kx++, k++)
                tap[k] = (ic * Hb + ky * g->dh) * Wp + (Wh ? (kx * g->dw & 1) * Wh + (kx * g->dw >> 1) : kx * g->dw);
    const F(cd_band) bd = {g, Hb, Wp, Wh, split, tap, epi, epi ? F(pick_epi_block)() : NULL};
    const size_t scratch = (size_t)g->Cin * bd.Hb * bd.Wp;
    const int bands = (g->Ho + CD_BAND_ROWS - 1) / CD_BAND_ROWS;
    const double macs = (double)Cout * g->Cin * g->KH * g->KW * g->Ho * g->Wo;
    int nt = threads < 1 || macs < SINGLE_THREAD_MACS ? 1 : threads;
    if (nt > bands) nt = bands;
    bool ok = true;
    if (nt == 1) { /* no OpenMP region (backends/cpu/par.h) */
        GT *xs = calloc(scratch, sizeof(GT));
        const bool got = xs != NULL;
        if (got)
            for (int b = 0; b < bands; b++)
                F(cd_band_run)(fn, &bd, xs, W, Y, Cout, b * CD_BAND_ROWS, imin(g->Ho, (b + 1) * CD_BAND_ROWS));
        free(xs);
        free(tap);
        return got;
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
    free(tap);
    return ok;
}

/* Whether the direct conv should run this (float) conv instead of im2col + GEMM: short
 * reductions always (the first layer over 3 channels: building panels cost more than the
 * arithmetic); longer ones where output rows fill its vectors (Wo >= 32) and the machine runs
 * its wide tiles (AVX-512, or AVX2 + FMA on stride-1 rows): no im2col panels are built, and
 * the bits are the GEMM's either way. */
bool CAT(cd_conv_direct_fits, GS)(const cd_conv_direct_geo *g, int Cout) {
    (void)Cout;
    const int K = g->Cin * g->KH * g->KW;
    if (K <= CD_CONV_DIRECT_SHORT_K) return true;
    if (g->Wo < 32) return false;
#if defined(CD_GEMM_X86)
    __builtin_cpu_init();
    if (G_ISA_FAST_CHECK) return true;
    if (G_ISA_MID_CHECK) return g->sw == 1;
#endif
    return false;
}
