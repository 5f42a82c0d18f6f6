/* The float and _Float16 bodies of the RNN op (ops_rnn.c), the *_tmpl.h idiom (docs/design.md
 * §7): ops_rnn.c includes it once per element type after defining RNN_T (element type),
 * RNN_S (name suffix) and RNN_GEMM (the GEMM of that type); it #undefs them at its end.
 * Include it nowhere else. */
#ifndef RNN_T
#error "ops_rnn_tmpl.h: define RNN_T, RNN_S and RNN_GEMM, then include (ops_rnn.c does)"
#endif
#define CAT_(a, b) a##_##b
#define CAT(a, b) CAT_(a, b)
#define F(name) CAT(name, RNN_S)

/* One direction of one layer over the whole sequence.
 *   in [T, N, in_l]; out column block d*H of [T, N, D*H]; h, cst [N, H] hold the initial
 *   state on entry and the final state on exit; gx [T*N, G*H], gh [N, G*H] scratch. */
static void F(rnn_dir)(const rnn_cfg *r, int d, const RNN_T *in, int64_t in_l, const RNN_T *w_ih, const RNN_T *w_hh,
                       const RNN_T *b_ih, const RNN_T *b_hh, const RNN_T *w_ih_t, const RNN_T *w_hh_t,
                       const int64_t *len, RNN_T *out, RNN_T *h, RNN_T *cst, RNN_T *gx, RNN_T *gh, int threads) {
    const int64_t H = r->hidden, G = r->gates, GH = G * H, N = r->n, DH = r->dirs * H;
    /* All input projections at once: gx = in * W_ih^T + b_ih. With W_ih^T laid out at prepare
     * (w_ih_t, [in_l, G*H]) the GEMM reads B untransposed and takes its direct path instead of
     * packing W_ih at every run: the same products in the same order (direct and packed paths
     * give the same bits, test_gemm), so the same bits. */
    if (r->t * N > 0 && w_ih_t)
        RNN_GEMM((int)(r->t * N), (int)GH, (int)in_l, (RNN_T)1, in, (int)in_l, false, w_ih_t, (int)GH, false, (RNN_T)0,
                 gx, (int)GH, threads);
    else if (r->t * N > 0)
        RNN_GEMM((int)(r->t * N), (int)GH, (int)in_l, (RNN_T)1, in, (int)in_l, false, w_ih, (int)in_l, true, (RNN_T)0,
                 gx, (int)GH, threads);
    for (int64_t i = 0; i < r->t * N; i++)
        for (int64_t j = 0; j < GH; j++) gx[i * GH + j] += b_ih[j];
    /* W_hh^T laid out once per sequence ([H, G*H], row-major): each step's product then reads B
     * untransposed, which the GEMM runs without packing B again at every step (the packing was a
     * third of a CRNN's run); the products and their order are the same, so are the bits. The
     * prepared state has it already (w_hh_t); without it, laid out here; without the scratch,
     * the transposed read as before. */
    RNN_T *wt_own = !w_hh_t && r->t > 1 && N > 0 ? malloc((size_t)(H * GH) * sizeof *wt_own) : NULL;
    if (wt_own)
        for (int64_t j = 0; j < GH; j++)
            for (int64_t k = 0; k < H; k++) wt_own[k * GH + j] = w_hh[j * H + k];
    const RNN_T *wt = w_hh_t ? w_hh_t : wt_own;
    /* the phased cells' scratch: gate inputs in float, gates and tanh(c) in RNN_T (NULL: the
     * plain loop) */
    float *pa = malloc((size_t)GH * sizeof(float) + (size_t)(GH + H) * sizeof(RNN_T));
    RNN_T *ga = pa ? (RNN_T *)(pa + GH) : NULL;
    for (int64_t s = 0; s < r->t; s++) {
        int64_t t = d == 0 ? s : r->t - 1 - s;
        if (N > 0 && wt)
            RNN_GEMM((int)N, (int)GH, (int)H, (RNN_T)1, h, (int)H, false, wt, (int)GH, false, (RNN_T)0, gh, (int)GH,
                     threads);
        else if (N > 0)
            RNN_GEMM((int)N, (int)GH, (int)H, (RNN_T)1, h, (int)H, false, w_hh, (int)H, true, (RNN_T)0, gh, (int)GH,
                     threads);
        for (int64_t n = 0; n < N; n++) {
            RNN_T *o = out + (t * N + n) * DH + d * H;
            if (len && t >= len[n]) { /* padding step: state held, output zero */
                for (int64_t k = 0; k < H; k++) o[k] = (RNN_T)0;
                continue;
            }
            const RNN_T *x = gx + (t * N + n) * GH;
            const RNN_T *u = gh + n * GH;
            RNN_T *hn = h + n * H;
            if (pa && r->mode == RNN_LSTM) {
                /* The loop below in phases over the row, each value made by the same expression:
                 * the gate inputs (float, as the loop's casts take them), then the four gates'
                 * libm calls, then the cell, its tanhf, and h. The calls of a phase do not depend
                 * on one another, so they overlap; in the loop tanhf(c) waited for three. */
                RNN_T *gi = ga, *gf = ga + H, *gc = ga + 2 * H, *go = ga + 3 * H, *tc = ga + 4 * H;
                for (int64_t j = 0; j < GH; j++) pa[j] = (float)(x[j] + (u[j] + b_hh[j]));
                for (int64_t k = 0; k < H; k++) gi[k] = (RNN_T)sigmoid_f(pa[k]);
                for (int64_t k = 0; k < H; k++) gf[k] = (RNN_T)sigmoid_f(pa[H + k]);
                for (int64_t k = 0; k < H; k++) gc[k] = (RNN_T)tanhf(pa[2 * H + k]);
                for (int64_t k = 0; k < H; k++) go[k] = (RNN_T)sigmoid_f(pa[3 * H + k]);
                for (int64_t k = 0; k < H; k++) {
                    RNN_T cv = gf[k] * cst[n * H + k] + gi[k] * gc[k];
                    cst[n * H + k] = cv;
                }
                for (int64_t k = 0; k < H; k++) tc[k] = (RNN_T)tanhf((float)cst[n * H + k]);
                for (int64_t k = 0; k < H; k++) {
                    RNN_T hv = go[k] * tc[k];
                    o[k] = hv;
                }
                memcpy(hn, o, (size_t)H * sizeof(RNN_T));
                continue;
            }
            if (pa && r->mode == RNN_GRU) { /* the same phases for the GRU cell */
                RNN_T *gr = ga, *gz = ga + H, *gc = ga + 2 * H;
                for (int64_t j = 0; j < 2 * H; j++) pa[j] = (float)(x[j] + (u[j] + b_hh[j]));
                for (int64_t k = 0; k < H; k++) gr[k] = (RNN_T)sigmoid_f(pa[k]);
                for (int64_t k = 0; k < H; k++) gz[k] = (RNN_T)sigmoid_f(pa[H + k]);
                for (int64_t k = 0; k < H; k++)
                    gc[k] = (RNN_T)tanhf((float)(x[2 * H + k] + gr[k] * (u[2 * H + k] + b_hh[2 * H + k])));
                for (int64_t k = 0; k < H; k++) {
                    RNN_T hv = gz[k] * hn[k] + ((RNN_T)1 - gz[k]) * gc[k];
                    o[k] = hv;
                }
                memcpy(hn, o, (size_t)H * sizeof(RNN_T));
                continue;
            }
            for (int64_t k = 0; k < H; k++) {
                RNN_T hv;
                switch (r->mode) {
                case RNN_LSTM: {
                    RNN_T gi = (RNN_T)sigmoid_f((float)(x[k] + (u[k] + b_hh[k])));
                    RNN_T gf = (RNN_T)sigmoid_f((float)(x[H + k] + (u[H + k] + b_hh[H + k])));
                    RNN_T gc = (RNN_T)tanhf((float)(x[2 * H + k] + (u[2 * H + k] + b_hh[2 * H + k])));
                    RNN_T go = (RNN_T)sigmoid_f((float)(x[3 * H + k] + (u[3 * H + k] + b_hh[3 * H + k])));
                    RNN_T cv = gf * cst[n * H + k] + gi * gc;
                    cst[n * H + k] = cv;
                    hv = go * (RNN_T)tanhf((float)cv);
                    break;
                }
                case RNN_GRU: {
                    RNN_T gr = (RNN_T)sigmoid_f((float)(x[k] + (u[k] + b_hh[k])));
                    RNN_T gz = (RNN_T)sigmoid_f((float)(x[H + k] + (u[H + k] + b_hh[H + k])));
                    RNN_T gc = (RNN_T)tanhf((float)(x[2 * H + k] + gr * (u[2 * H + k] + b_hh[2 * H + k])));
                    hv = gz * hn[k] + ((RNN_T)1 - gz) * gc;
                    break;
                }
                case RNN_TANH: hv = (RNN_T)tanhf((float)(x[k] + (u[k] + b_hh[k]))); break;
                default: {
                    RNN_T a = x[k] + (u[k] + b_hh[k]);
                    hv = a < (RNN_T)0 ? (RNN_T)0 : a;
                    break;
                }
                }
                o[k] = hv;
            }
            /* h is read by every k above (GRU: hn[k] only, but the gemm of the next step reads
             * all of h), so the new state is copied in after the row is complete. */
            memcpy(hn, o, (size_t)H * sizeof(RNN_T));
        }
    }
    free(wt_own);
    free(pa);
}

/* The whole op for one element type: layers, directions, state copies. */
static cd_status F(rnn_run)(cd_op_ctx *c, const rnn_cfg *r, const int64_t *len, const rnn_state *st) {
    const int64_t H = r->hidden, N = r->n, GH = (int64_t)r->gates * H, DH = (int64_t)r->dirs * H;
    const int64_t TN = r->t * N;
    size_t words = (size_t)(TN * DH /* ping-pong layer buffer */ + TN * GH + N * GH + 2 * N * H);
    RNN_T *buf = cd_malloc((words ? words : 1) * sizeof(RNN_T), c->err);
    if (!buf) return CD_E_NOMEM;
    RNN_T *mid = buf, *gx = mid + TN * DH, *gh = gx + TN * GH, *h = gh + N * GH, *cs = h + N * H;
    const RNN_T *h0 = r->h0->data, *c0 = r->c0 ? r->c0->data : NULL;
    RNN_T *hs = r->h_out ? r->h_out->data : NULL, *csout = r->c_out ? r->c_out->data : NULL;
    const RNN_T *in = r->x->data;
    /* Layer outputs alternate between the scratch buffer and Out so that the last layer
     * lands in Out: layer l writes Out when (layers - 1 - l) is even. */
    for (int l = 0; l < r->layers; l++) {
        RNN_T *dst = ((r->layers - 1 - l) % 2 == 0) ? (RNN_T *)r->out->data : mid;
        int64_t in_l = l == 0 ? r->in : DH;
        for (int d = 0; d < r->dirs; d++) {
            int k = (l * r->dirs + d) * 2, kb = 2 * r->layers * r->dirs + k;
            int64_t sidx = (int64_t)l * r->dirs + d;
            memcpy(h, h0 + sidx * N * H, (size_t)(N * H) * sizeof(RNN_T));
            if (c0) memcpy(cs, c0 + sidx * N * H, (size_t)(N * H) * sizeof(RNN_T));
            const RNN_T *w_ih_t = NULL, *w_hh_t = NULL;
            if (st) {
                const char *base = RNN_STATE_DATA(st);
                size_t li = (size_t)sidx;
                w_ih_t = st->off_ih[li] ? (const RNN_T *)(base + st->off_ih[li] - 1) : NULL;
                w_hh_t = st->off_hh[li] ? (const RNN_T *)(base + st->off_hh[li] - 1) : NULL;
            }
            F(rnn_dir)
            (r, d, in, in_l, r->w[k]->data, r->w[k + 1]->data, r->w[kb]->data, r->w[kb + 1]->data, w_ih_t, w_hh_t, len,
             dst, h, cs, gx, gh, c->threads);
            if (hs) memcpy(hs + sidx * N * H, h, (size_t)(N * H) * sizeof(RNN_T));
            if (csout) memcpy(csout + sidx * N * H, cs, (size_t)(N * H) * sizeof(RNN_T));
        }
        in = dst;
    }
    free(buf);
    return CD_OK;
}

#undef CAT_
#undef CAT
#undef F

#undef RNN_T
#undef RNN_S
#undef RNN_GEMM
