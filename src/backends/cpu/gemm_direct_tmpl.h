/* ---- direct path: small products with a plain (non-transposed) B ----
 * No packing: a tile of mr (<= DMR) rows x nv (<= DNV) vectors of C is accumulated in
 * registers, A read in place (row stride ars, k stride aks: both transposes), B rows read in
 * place (ldb); K in the same KC slices as the packed path, each slice's sum stored through
 * F(store_row). Per element this is exactly the packed kernel's arithmetic (acc += a * b for
 * k in order within a slice, then the same epilogue), so the two paths give the same bits
 * and which one runs (or how many threads) does not show in the result. A partial last
 * vector of columns is read shifted back over the previous columns (see F(direct_item)), or,
 * in rows shorter than one vector, copied into a zero-padded kc x NR block.
 *
 * A part of gemm_tmpl.h's template body, not a header on its own: gemm_tmpl.h includes it
 * in the instantiations with the direct paths (G_DIRECT: float), with GT, GS and the G_*
 * parameters defined and F(vec), F(store_row), F(store_tile) and the other helpers before
 * the include in scope.
 * Include it nowhere else. */
#ifndef GT
#error "a part of gemm_tmpl.h's template body: included by gemm_tmpl.h only"
#endif

/* F(store_row) for alpha 1, beta 0 followed by the conv epilogue on row `row` of C: r = acc
 * (first K slice) or C + acc (later ones), then CD_GEMM_EPI_APPLY (gemm.h). Used only on the last K slice. w8:
 * in two halves of 8 lanes (the AVX2 and portable builds, where GCC turned the 16-lane
 * compares into scalar ones); the same operations per lane either way. */
static inline __attribute__((always_inline)) void
F(store_row_epi)(GT *restrict cr, const F(vec) * acc, int nr, int first, const cd_gemm_epi *ep, int row, const int w8) {
    F(vec) r = *acc;
    if (!first) {
        F(vec) old = {0};
        if (nr == NR) /* fixed-size copies: a variable length is a call to memcpy */
            memcpy(&old, cr, sizeof old);
        else
            memcpy(&old, cr, (size_t)nr * sizeof(GT));
        r = old + r;
    }
    const GT bv = ep->bias ? ep->bias[row] : (GT)0;
    if (w8) {
        typedef GT F(ev8) __attribute__((vector_size(8 * sizeof(GT))));
        typedef int F(em8) __attribute__((vector_size(8 * sizeof(int))));
        F(ev8) h[2];
        memcpy(h, &r, sizeof h);
        CD_GEMM_EPI_APPLY(F(ev8), F(em8), h[0], ep, bv);
        CD_GEMM_EPI_APPLY(F(ev8), F(em8), h[1], ep, bv);
        memcpy(&r, h, sizeof h);
    } else {
        typedef int F(em16) __attribute__((vector_size(NR * sizeof(int))));
        CD_GEMM_EPI_APPLY(F(vec), F(em16), r, ep, bv);
    }
    if (nr == NR)
        memcpy(cr, &r, sizeof r);
    else
        memcpy(cr, &r, (size_t)nr * sizeof(GT));
}

/* F(store_tile) (alpha 1, beta 0), through F(store_row_epi) where ep is set (rows row0 + i) */
static inline __attribute__((always_inline)) void F(store_tile_epi)(GT *restrict c, size_t ldc, const F(vec) * acc,
                                                                    const int as, const int mr, const int nv, int ncols,
                                                                    int first, const cd_gemm_epi *ep, int row0,
                                                                    const int w8) {
#pragma GCC unroll 4
    for (int i = 0; i < mr; i++)
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) {
            const int nr = ncols - v * NR;
            if (nr <= 0) break; /* never (ncols > (nv - 1) * NR): tells the compiler the range */
            GT *cr = c + (size_t)i * ldc + (size_t)v * NR;
            if (ep)
                F(store_row_epi)(cr, &acc[i * as + v], nr < NR ? nr : NR, first, ep, row0 + i, w8);
            else
                F(store_row)(cr, &acc[i * as + v], nr < NR ? nr : NR, (GT)1, (GT)0, first);
        }
}

#define DMR 4
#define DNV 4
static inline __attribute__((always_inline)) void F(direct_tile)(int kc, const GT *restrict a, size_t ars, size_t aks,
                                                                 const GT *restrict b, size_t ldb, GT *restrict c,
                                                                 int ldc, const int mr, const int nv, int ncols,
                                                                 int shift, GT alpha, GT beta, int first,
                                                                 const cd_gemm_epi *ep, int row0, const int w8) {
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
    if (ep)
        F(store_tile_epi)(c, (size_t)ldc, &acc[0][0], DNV, mr, nv, ncols, first, ep, row0, w8);
    else
        F(store_tile)(c, (size_t)ldc, &acc[0][0], DNV, mr, nv, ncols, alpha, beta, first);
}

/* The full 4-row x 4-vector tile of the AVX-512 build as a function of its own: inlined into
 * the large direct-path function, GCC kept a quarter of its 16 accumulators in memory (a
 * store-to-load round trip per multiply-add); alone, all 16 stay in registers. */
#if defined(CD_GEMM_X86)
__attribute__((target(G_ISA_FAST), noinline)) static void
F(direct_tile_4x4_fast)(int kc, const GT *restrict a, size_t ars, size_t aks, const GT *restrict b, size_t ldb,
                        GT *restrict c, int ldc, int ncols, int shift, GT alpha, GT beta, int first,
                        const cd_gemm_epi *ep, int row0) {
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
        c00 += x * b0;
        c01 += x * b1;
        c02 += x * b2;
        c03 += x * b3;
        x = (F(vec))BCAST16(ak[ars]);
        c10 += x * b0;
        c11 += x * b1;
        c12 += x * b2;
        c13 += x * b3;
        x = (F(vec))BCAST16(ak[2 * ars]);
        c20 += x * b0;
        c21 += x * b1;
        c22 += x * b2;
        c23 += x * b3;
        x = (F(vec))BCAST16(ak[3 * ars]);
        c30 += x * b0;
        c31 += x * b1;
        c32 += x * b2;
        c33 += x * b3;
    }
    if (shift) { /* as F(direct_tile): the last vector's own columns are lanes shift..NR-1 */
        F(lanes_down)(&c03, shift);
        F(lanes_down)(&c13, shift);
        F(lanes_down)(&c23, shift);
        F(lanes_down)(&c33, shift);
    }
    const int n3 = ncols - 3 * NR < NR ? ncols - 3 * NR : NR;
    const size_t l = (size_t)ldc;
#define ST44(I, V, ACC, N)                                                                                             \
    do {                                                                                                               \
        if (ep)                                                                                                        \
            F(store_row_epi)(c + (I)*l + (V)*NR, &ACC, N, first, ep, row0 + (I), 0);                                   \
        else                                                                                                           \
            F(store_row)(c + (I)*l + (V)*NR, &ACC, N, alpha, beta, first);                                             \
    } while (0)
    ST44(0, 0, c00, NR);
    ST44(0, 1, c01, NR);
    ST44(0, 2, c02, NR);
    ST44(0, 3, c03, n3);
    ST44(1, 0, c10, NR);
    ST44(1, 1, c11, NR);
    ST44(1, 2, c12, NR);
    ST44(1, 3, c13, n3);
    ST44(2, 0, c20, NR);
    ST44(2, 1, c21, NR);
    ST44(2, 2, c22, NR);
    ST44(2, 3, c23, n3);
    ST44(3, 0, c30, NR);
    ST44(3, 1, c31, NR);
    ST44(3, 2, c32, NR);
    ST44(3, 3, c33, n3);
#undef ST44
}
#define DT44(...) F(direct_tile_4x4_fast)(__VA_ARGS__)

/* A one-vector tile (mr <= 4 rows x 16 columns) on AVX2 + FMA: F(direct_tile)'s arithmetic
 * through F(avx2_tile) (the generic 16-lane code kept its accumulators in memory there). */
__attribute__((target(G_ISA_MID), noinline)) static void
F(direct_tile_mid)(int kc, const GT *restrict a, size_t ars, size_t aks, const GT *restrict b, size_t ldb,
                   GT *restrict c, int ldc, int mr, int ncols, int shift, GT alpha, GT beta, int first,
                   const cd_gemm_epi *ep, int row0) {
    F(vec) acc[DMR];
    F(avx2_tile)(kc, a, ars, aks, b - shift, ldb, mr, acc);
    if (shift)
        for (int i = 0; i < mr; i++) F(lanes_down)(&acc[i], shift);
    for (int i = 0; i < mr; i++) {
        if (ep)
            F(store_row_epi)(c + (size_t)i * ldc, &acc[i], ncols, first, ep, row0 + i, 1);
        else
            F(store_row)(c + (size_t)i * ldc, &acc[i], ncols, alpha, beta, first);
    }
}
#endif

/* One work item of the direct path: rows [i0, i1) x columns [j0, j0+ncols) of C over all
 * of K (ncols <= DNV * NR). The columns of a partial last vector are copied, once per K
 * slice, into bpad (KC x NR, zero-padded). Row count and vector count are made constants
 * for the tile (the switches below). */
static inline __attribute__((always_inline)) void F(direct_item)(int K, const GT *A, size_t ars, size_t aks,
                                                                 const GT *B, int ldb, GT *C, int ldc, int i0, int i1,
                                                                 int j0, int ncols, GT alpha, GT beta,
                                                                 GT *restrict bpad, const cd_gemm_epi *epi,
                                                                 const int nvmax, const int avx2) {
    (void)avx2; /* x86: 1 in the AVX2 build, whose one-vector tiles go through F(direct_tile_mid) */
    const int nfull = ncols / NR, tail = ncols % NR;
    /* A partial last vector is read as the NR columns ending at the item's last column when
     * the row has that many (j0 + ncols >= NR): it joins the full vectors' tile, and its
     * lanes are moved into place before the store. Otherwise it is copied into bpad. */
    const int shifted = tail && j0 + ncols >= NR, shift = shifted ? NR - tail : 0;
    const int nvec = nfull + (shifted ? 1 : 0);
    for (int k0 = 0; k0 < K; k0 += KC) {
        const int kc = imin(KC, K - k0), first = k0 == 0;
        const cd_gemm_epi *ep = k0 + kc == K ? epi : NULL; /* the epilogue in the last slice's store */
        const int w8 = nvmax != DNV;                       /* F(store_row_epi): not the 32-register build */
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
#if defined(CD_GEMM_X86)
#define DT(MRC, NVC, BB, LDB, CC, NC, SH)                                                                              \
    do {                                                                                                               \
        if (avx2 && (NVC) == 1)                                                                                        \
            F(direct_tile_mid)(kc, a, ars, aks, BB, LDB, CC, ldc, MRC, NC, SH, alpha, beta, first, ep, r0);            \
        else                                                                                                           \
            F(direct_tile)(kc, a, ars, aks, BB, LDB, CC, ldc, MRC, NVC, NC, SH, alpha, beta, first, ep, r0, w8);       \
    } while (0)
#else
#define DT(MRC, NVC, BB, LDB, CC, NC, SH)                                                                              \
    F(direct_tile)(kc, a, ars, aks, BB, LDB, CC, ldc, MRC, NVC, NC, SH, alpha, beta, first, ep, r0, w8)
#endif
/* 4 vectors: only the AVX-512 build gets there (nvmax); its 4-row tile is the separate
 * function above */
#if defined(CD_GEMM_X86)
#define DT4(MRC, BB, LDB, CC, NC, SH)                                                                                  \
    do {                                                                                                               \
        if ((MRC) == 4)                                                                                                \
            DT44(kc, a, ars, aks, BB, LDB, CC, ldc, NC, SH, alpha, beta, first, ep, r0);                               \
        else                                                                                                           \
            DT(MRC, 4, BB, LDB, CC, NC, SH);                                                                           \
    } while (0)
#else
#define DT4(MRC, BB, LDB, CC, NC, SH) DT(MRC, 4, BB, LDB, CC, NC, SH)
#endif
#define DT_NV(MRC)                                                                                                     \
    for (int jv = 0; jv < nvec;) {                                                                                     \
        const int nv = imin(nvmax, nvec - jv), last = jv + nv == nvec && shifted;                                      \
        const int nc = last ? (nv - 1) * NR + tail : nv * NR, sh = last ? shift : 0;                                   \
        switch (nv) {                                                                                                  \
        case 1: DT(MRC, 1, b + jv * NR, ldb, c + jv * NR, nc, sh); break;                                              \
        case 2: DT(MRC, 2, b + jv * NR, ldb, c + jv * NR, nc, sh); break;                                              \
        case 3: DT(MRC, 3, b + jv * NR, ldb, c + jv * NR, nc, sh); break;                                              \
        default: DT4(MRC, b + jv * NR, ldb, c + jv * NR, nc, sh); break;                                               \
        }                                                                                                              \
        jv += nv;                                                                                                      \
    }                                                                                                                  \
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

typedef void (*F(direct_fn))(int, const GT *, size_t, size_t, const GT *, int, GT *, int, int, int, int, int, GT, GT,
                             GT *restrict, const cd_gemm_epi *);
#define DIRECT_ARGS                                                                                                    \
    (int K, const GT *A, size_t ars, size_t aks, const GT *B, int ldb, GT *C, int ldc, int i0, int i1, int j0,         \
     int ncols, GT alpha, GT beta, GT *restrict bpad, const cd_gemm_epi *epi)
#define DIRECT_CALL(NVMAX, AVX2)                                                                                       \
    F(direct_item)(K, A, ars, aks, B, ldb, C, ldc, i0, i1, j0, ncols, alpha, beta, bpad, epi, NVMAX, AVX2)
/* vectors per tile: 4 where 32 registers hold 16 lanes each (AVX-512); fewer where a
 * 16-lane vector takes 2 (AVX2) or 4 (SSE, generic) registers */
__attribute__((unused)) static void F(direct_default) DIRECT_ARGS { DIRECT_CALL(1, 0); }
#ifdef CD_GEMM_X86
__attribute__((target(G_ISA_FAST))) static void F(direct_fast) DIRECT_ARGS { DIRECT_CALL(DNV, 0); }
/* AVX2: one vector (2 registers) per row, 4 rows = 8 accumulator registers; 2 vectors per row
 * were 16 accumulator registers of the 16 there are, and GCC spilled them */
__attribute__((target(G_ISA_MID))) static void F(direct_mid) DIRECT_ARGS { DIRECT_CALL(1, 1); }
#endif
#undef DIRECT_ARGS
#undef DIRECT_CALL

/* The variant NAME_fast / NAME_mid / NAME_default for this machine, or NULL where the
 * architecture kernel (NEON) replaces the generic micro-kernel: there the packed path keeps
 * running (bits are the same anyway). Shared by the direct and the one-column paths. */
#if defined(G_MICRO_ARCH)
#define G_PICK_VARIANT(NAME) return NULL
#elif defined(CD_GEMM_X86)
#define G_PICK_VARIANT(NAME)                                                                                           \
    do {                                                                                                               \
        __builtin_cpu_init();                                                                                          \
        if (G_ISA_FAST_CHECK) return F(NAME##_fast);                                                                   \
        if (G_ISA_MID_CHECK) return F(NAME##_mid);                                                                     \
        return F(NAME##_default);                                                                                      \
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
static void F(gemm_direct)(F(direct_fn) fn, int M, int N, int K, GT alpha, const GT *A, int lda, bool ta, const GT *B,
                           int ldb, GT beta, GT *C, int ldc, int threads, const cd_gemm_epi *epi) {
    const size_t ars = ta ? 1 : (size_t)lda, aks = ta ? (size_t)lda : 1;
    const int cw = DNV * NR; /* columns per item */
    const int rb = (M + DMR - 1) / DMR, cb = (N + cw - 1) / cw;
    int nt = threads < 1 ? 1 : threads;
    if (nt <= 1) {
        GT bpad[KC * NR];
        for (int q = 0; q < cb; q++)
            fn(K, A, ars, aks, B, ldb, C, ldc, 0, M, q * cw, imin(cw, N - q * cw), alpha, beta, bpad, epi);
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
            fn(K, A, ars, aks, B, ldb, C, ldc, i0, i1, q * cw, imin(cw, N - q * cw), alpha, beta, bpad, epi);
        }
    }
}
