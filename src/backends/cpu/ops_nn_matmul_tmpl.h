/* The body of ops_nn_matmul.c's float and _Float16 variants (the *_tmpl.h idiom, docs/design.md
 * §7): ops_nn_matmul.c includes it once per element type after defining NN_T, NN_S;
 * it #undefs them at its end. Include it nowhere else. */
#ifndef NN_T
#error "ops_nn_matmul_tmpl.h: define NN_T and NN_S, then include (ops_nn_matmul.c does)"
#endif
#define CAT_(a, b) a##_##b
#define CAT(a, b) CAT_(a, b)
#define F(name) CAT(name, NN_S)
#define GEMM CAT(cd_gemm, NN_S)

static void F(fc_run)(cd_op_ctx *c, const fc_geo *g) {
    const NN_T *x = cd_in(c, "Input", 0)->data, *w = cd_in(c, "W", 0)->data;
    cd_value *bv = cd_in(c, "Bias", 0), *av = cd_in(c, "Alpha", 0);
    const NN_T *bias = bv ? bv->data : NULL, *alpha = av && g->act.kind == CD_ACT_PRELU ? av->data : NULL;
    NN_T *y = cd_out(c, "Out", 0)->data;
    GEMM((int)g->M, (int)g->N, (int)g->K, (NN_T)1, x, (int)g->K, false, w, (int)g->N, false, (NN_T)0, y, (int)g->N,
         c->threads);
    if (!bias && g->act.kind == CD_ACT_NONE) return;
    const int64_t M = g->M, N = g->N;
    const int64_t inner = prod(&g->out, 2, g->out.rank), C1 = g->out.d[1], per_sample = prod(&g->out, 1, g->out.rank);
    const cd_act act = g->act;
    const int threads = c->threads;
    CD_PAR_FOR(M * N > 65536, threads, int64_t, i, M, {
        NN_T *row = y + i * N;
        cd_act a = act;
        for (int64_t j = 0; j < N; j++) {
            NN_T v = row[j];
            if (bias) v = v + bias[j];
            if (act.kind == CD_ACT_RELU)
                v = v < (NN_T)0 ? (NN_T)0 : v;
            else if (act.kind == CD_ACT_PRELU) {
                int64_t e = i * N + j;
                a.a = (float)(g->prelu_mode == 0       ? alpha[0]
                                  : g->prelu_mode == 1 ? alpha[(e / inner) % C1]
                                                       : alpha[e % per_sample]);
                v = (NN_T)cd_act_apply(&a, (float)v);
            } else if (act.kind != CD_ACT_NONE)
                v = (NN_T)cd_act_apply(&a, (float)v);
            row[j] = v;
        }
    });
}

static void F(mul_run)(cd_op_ctx *c, const mul_geo *g) {
    const NN_T *x = cd_in(c, "X", 0)->data, *w = cd_in(c, "Y", 0)->data;
    NN_T *y = cd_out(c, "Out", 0)->data;
    GEMM((int)g->M, (int)g->N, (int)g->K, (NN_T)1, x, (int)g->K, false, w, (int)g->N, false, (NN_T)0, y, (int)g->N,
         c->threads);
}

/* True when batch b's X matrix is X's b-th (no X batch dim broadcast) and every batch reads Y's
 * one matrix (all Y batch dims broadcast). */
static bool F(mm_rows_stack)(const mm_geo *g) {
    for (int i = 0; i < g->brank; i++)
        if (g->yb[i] != 1 || g->xb[i] != g->bdims[i]) return false;
    return true;
}

static void F(mm_core)(const mm_geo *g, const NN_T *x, const NN_T *w, NN_T *out, NN_T alpha, int threads) {
    if (g->outer) {
        GEMM((int)g->M, (int)g->N, 1, alpha, x, 1, false, w, (int)g->N, false, (NN_T)0, out, (int)g->N, threads);
        return;
    }
    const int64_t M = g->M, N = g->N, K = g->K, xsz = M * K, ysz = K * N;
    /* leading dims of the stored (untransposed) matrices */
    const int lda = g->tx ? (int)M : (int)K, ldb = g->ty ? (int)K : (int)N;
    const int64_t batches = g->batches;
    /* one 2-D Y shared by every batch and X's batches stacked in place (untransposed, none
     * broadcast): the batches are one product of batches x M rows. Each element is the same dot
     * product over K in the same order (gemm.h: the paths and thread counts do not show in the
     * bits), one GEMM call instead of one per batch (picodet: 64 calls of 4 x 8 x 1). float only:
     * the half GEMM's paths were not checked for this. */
    if (sizeof(NN_T) == sizeof(float) && batches > 1 && !g->tx && F(mm_rows_stack)(g) && batches * M <= INT_MAX) {
        GEMM((int)(batches * M), (int)N, (int)K, alpha, x, lda, false, w, ldb, g->ty, (NN_T)0, out, (int)N, threads);
        return;
    }
    /* many small products: one thread per product; few large ones: threads inside GEMM */
    const bool small = M * N * K < 32768 && batches > 1;
    /* ... and the batches on threads only when all of them together are worth a team (gemm.h) */
    const bool par = small && (double)batches * (double)(M * N * K) >= (double)CD_GEMM_ONE_THREAD_MACS;
    CD_PAR_FOR(par, threads, int64_t, b, batches, {
        int64_t xo, yo;
        cd_mm_batch(g, b, &xo, &yo);
        GEMM((int)M, (int)N, (int)K, alpha, x + xo * xsz, lda, g->tx, w + yo * ysz, ldb, g->ty, (NN_T)0,
             out + b * M * N, (int)N, small ? 1 : threads);
    });
}

static void F(mm_run)(cd_op_ctx *c, const mm_geo *g) {
    F(mm_core)
    (g, cd_in(c, "X", 0)->data, cd_in(c, "Y", 0)->data, cd_out(c, "Out", 0)->data, (NN_T)g->alpha, c->threads);
}

#undef CAT_
#undef CAT
#undef F
#undef GEMM

#undef NN_T
#undef NN_S
