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

/* The conv epilogue (gemm.h cd_gemm_epi) on a finished block of C: rows [r0, r1) (bias row =
 * row of C), columns [j0, j0 + ncols), right after the kernel stored it, while it is in L1:
 * per element the epilogue's operations (CD_GEMM_EPI_APPLY), 16 columns per vector, a partial
 * last vector copied in and out. Not inside the tiles: there it took registers from their
 * multiply-add loops (GCC then reloaded a weight-row pointer from the stack per step: the 3x3
 * direct convs of ppocr_v3_det 25% slower). w8: in 8-lane halves (AVX2 and portable builds,
 * where GCC turns 16-lane compares into scalar ones). */
static inline __attribute__((always_inline)) void F(epi_vec)(F(vec) * r, const cd_gemm_epi *ep, GT bv, const int w8) {
    typedef GT F(ev8) __attribute__((vector_size(8 * sizeof(GT))));
    typedef int F(em8) __attribute__((vector_size(8 * sizeof(int))));
    typedef int F(em16) __attribute__((vector_size(NR * sizeof(int))));
    if (w8) {
        F(ev8) h[2];
        memcpy(h, r, sizeof h);
        CD_GEMM_EPI_APPLY(F(ev8), F(em8), h[0], ep, bv);
        CD_GEMM_EPI_APPLY(F(ev8), F(em8), h[1], ep, bv);
        memcpy(r, h, sizeof h);
    } else {
        CD_GEMM_EPI_APPLY(F(vec), F(em16), *r, ep, bv);
    }
}

/* Rows of at least NR columns: the last vector is the NR columns ending the row, loaded before
 * the full vectors are written and stored after them (the columns it shares with the last full
 * vector are computed twice from the same values, as the conv epilogue's plane pass does); a
 * partial vector copied through memory stalled on store forwarding. */
static inline __attribute__((always_inline)) void F(epi_block_body)(GT *C, size_t ldc, int r0, int r1, int j0,
                                                                    int ncols, const cd_gemm_epi *ep, const int w8) {
    for (int i = r0; i < r1; i++) {
        const GT bv = ep->bias ? ep->bias[i] : (GT)0;
        GT *cr = C + (size_t)i * ldc + j0;
        F(vec) r;
        if (ncols >= NR) {
            F(vec) last;
            memcpy(&last, cr + ncols - NR, sizeof last);
            F(epi_vec)(&last, ep, bv, w8);
            for (int j = 0; j + NR < ncols; j += NR) {
                memcpy(&r, cr + j, sizeof r);
                F(epi_vec)(&r, ep, bv, w8);
                memcpy(cr + j, &r, sizeof r);
            }
            memcpy(cr + ncols - NR, &last, sizeof last);
        } else {
            r = (F(vec)){0};
            memcpy(&r, cr, (size_t)ncols * sizeof(GT));
            F(epi_vec)(&r, ep, bv, w8);
            memcpy(cr, &r, (size_t)ncols * sizeof(GT));
        }
    }
}
#define EPI_BLOCK_ARGS (GT * C, size_t ldc, int r0, int r1, int j0, int ncols, const cd_gemm_epi *ep)
typedef void(*F(epi_block_fn)) EPI_BLOCK_ARGS;
static void F(epi_block_w8) EPI_BLOCK_ARGS { F(epi_block_body)(C, ldc, r0, r1, j0, ncols, ep, 1); }
#ifdef CD_GEMM_X86
__attribute__((target(G_ISA_MID))) static void F(epi_block_mid) EPI_BLOCK_ARGS {
    F(epi_block_body)(C, ldc, r0, r1, j0, ncols, ep, 1);
}
__attribute__((target(G_ISA_FAST))) static void F(epi_block_fast) EPI_BLOCK_ARGS {
    F(epi_block_body)(C, ldc, r0, r1, j0, ncols, ep, 0);
}
#endif
#undef EPI_BLOCK_ARGS
/* the epilogue block function for this machine (the level cap of CLDIFF_GEMM_F32_KERNEL included) */
static F(epi_block_fn) F(pick_epi_block)(void) {
#ifdef CD_GEMM_X86
    __builtin_cpu_init();
    if (G_ISA_FAST_CHECK) return F(epi_block_fast);
    if (G_ISA_MID_CHECK) return F(epi_block_mid);
#endif
    return F(epi_block_w8);
}

#define DMR 4
#define DNV 4
static inline __attribute__((always_inline)) void F(direct_tile)(int kc, const GT *restrict a, size_t ars, size_t aks,
                                                                 const GT *restrict b, size_t ldb, GT *restrict c,
                                                                 int ldc, const int mr, const int nv, int ncols,
                                                                 int shift, GT alpha, GT beta, int first) {
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
 * store-to-load round trip per multiply-add); alone, all 16 stay in registers. Aligned to 64
 * bytes: its k loop (163 bytes) then starts at the same offset in a cache line whatever code is
 * linked before it; where the link put it 16 bytes later the loop spanned 4 lines instead of 3
 * and ocr_cls's 1x1 convs over 24x96 and 12x48 were 0.015 -> 0.018 and 0.015 -> 0.017 ms (Zen 4,
 * every process; docs/benchmarks.md "Fourth round: dense convolutions"). */
#if defined(CD_GEMM_X86)
__attribute__((target(G_ISA_FAST), noinline, aligned(64))) static void
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

/* A one-vector tile (mr <= 4 rows x 16 columns) on AVX2 + FMA: F(direct_tile)'s arithmetic
 * through F(avx2_tile) (the generic 16-lane code kept its accumulators in memory there). */
__attribute__((target(G_ISA_MID), noinline)) static void
F(direct_tile_mid)(int kc, const GT *restrict a, size_t ars, size_t aks, const GT *restrict b, size_t ldb,
                   GT *restrict c, int ldc, int mr, int ncols, int shift, GT alpha, GT beta, int first) {
    F(vec) acc[DMR];
    F(avx2_tile)(kc, a, ars, aks, b - shift, ldb, mr, acc);
    if (shift)
        for (int i = 0; i < mr; i++) F(lanes_down)(&acc[i], shift);
    for (int i = 0; i < mr; i++) F(store_row)(c + (size_t)i * ldc, &acc[i], ncols, alpha, beta, first);
}
#endif

/* One work item of the direct path: rows [i0, i1) x columns [j0, j0+ncols) of C over all
 * of K (ncols <= DNV * NR). The columns of a partial last vector are copied, once per K
 * slice, into bpad (KC x NR, zero-padded). Row count and vector count are made constants
 * for the tile (the switches below). */
static inline __attribute__((always_inline)) void F(direct_item)(int K, const GT *A, size_t ars, size_t aks,
                                                                 const GT *B, int ldb, GT *C, int ldc, int i0, int i1,
                                                                 int j0, int ncols, GT alpha, GT beta,
                                                                 GT *restrict bpad, const int nvmax, const int avx2) {
    (void)avx2; /* x86: 1 in the AVX2 build, whose one-vector tiles go through F(direct_tile_mid) */
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
#if defined(CD_GEMM_X86)
#define DT(MRC, NVC, BB, LDB, CC, NC, SH)                                                                              \
    do {                                                                                                               \
        if (avx2 && (NVC) == 1)                                                                                        \
            F(direct_tile_mid)(kc, a, ars, aks, BB, LDB, CC, ldc, MRC, NC, SH, alpha, beta, first);                    \
        else                                                                                                           \
            F(direct_tile)(kc, a, ars, aks, BB, LDB, CC, ldc, MRC, NVC, NC, SH, alpha, beta, first);                   \
    } while (0)
#else
#define DT(MRC, NVC, BB, LDB, CC, NC, SH)                                                                              \
    F(direct_tile)(kc, a, ars, aks, BB, LDB, CC, ldc, MRC, NVC, NC, SH, alpha, beta, first)
#endif
/* 4 vectors: only the AVX-512 build gets there (nvmax); its 4-row tile is the separate
 * function above */
#if defined(CD_GEMM_X86)
#define DT4(MRC, BB, LDB, CC, NC, SH)                                                                                  \
    do {                                                                                                               \
        if ((MRC) == 4)                                                                                                \
            DT44(kc, a, ars, aks, BB, LDB, CC, ldc, NC, SH, alpha, beta, first);                                       \
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
                             GT *restrict);
#define DIRECT_ARGS                                                                                                    \
    (int K, const GT *A, size_t ars, size_t aks, const GT *B, int ldb, GT *C, int ldc, int i0, int i1, int j0,         \
     int ncols, GT alpha, GT beta, GT *restrict bpad)
#define DIRECT_CALL(NVMAX, AVX2)                                                                                       \
    F(direct_item)(K, A, ars, aks, B, ldb, C, ldc, i0, i1, j0, ncols, alpha, beta, bpad, NVMAX, AVX2)
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
    F(epi_block_fn) efn = epi ? F(pick_epi_block)() : NULL; /* applied to each finished item */
    const size_t ars = ta ? 1 : (size_t)lda, aks = ta ? (size_t)lda : 1;
    const int cw = DNV * NR; /* columns per item */
    const int rb = (M + DMR - 1) / DMR, cb = (N + cw - 1) / cw;
    int nt = threads < 1 ? 1 : threads;
    if (nt <= 1) {
        GT bpad[KC * NR];
        for (int q = 0; q < cb; q++) {
            fn(K, A, ars, aks, B, ldb, C, ldc, 0, M, q * cw, imin(cw, N - q * cw), alpha, beta, bpad);
            if (efn) efn(C, (size_t)ldc, 0, M, q * cw, imin(cw, N - q * cw), epi);
        }
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
            if (efn) efn(C, (size_t)ldc, i0, i1, q * cw, imin(cw, N - q * cw), epi);
        }
    }
}
