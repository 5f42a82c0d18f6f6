/* ---- one-column products with a k-major A: C[M x 1] = A^T[M x K] * B[K x 1] ----
 * A 1x1 conv on a 1x1 map (the squeeze-and-excitation convs) is a matrix-vector product:
 * the direct tile would spend 15 of its 16 lanes on the zero-padded column. When A is given
 * transposed (ta: column k of op(A) contiguous — conv keeps such a copy of its filter,
 * made at prepare time) 16 rows share a vector instead: acc[rows] += A^T[k][rows] * b[k] for
 * k in order within each KC slice, stored through F(store_row) into the contiguous column.
 * Per element this is the arithmetic of the other paths (one product-sum chain in k order
 * per KC slice, the same epilogue), so the same bits.
 *
 * A part of gemm_tmpl.h's template body, not a header on its own: gemm_tmpl.h includes it
 * in the instantiations with the direct paths (G_DIRECT: float), with GT, GS and the G_*
 * parameters defined and F(vec), F(store_row), F(store_tile) and the other helpers before
 * the include in scope.
 * Include it nowhere else. */
#ifndef GT
#error "a part of gemm_tmpl.h's template body: included by gemm_tmpl.h only"
#endif

#define GV_NV 4
static inline __attribute__((always_inline)) void F(gemv_rows)(int K, const GT *At, size_t lda, const GT *B, int ldb,
                                                               GT *C, int i0, int i1, GT alpha, GT beta,
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

static void F(gemm_gemv)(F(gemv_fn) fn, int M, int K, GT alpha, const GT *At, int lda, const GT *B, int ldb, GT beta,
                         GT *C, int threads) {
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
